"""MockProvider: in process, scripted, on any clock."""

from __future__ import annotations

import pytest

from turnout.errors import ConfigError, ProviderError, ProviderTimeout, RateLimited
from turnout.providers import MockProvider
from turnout.routing.clock import FakeClock
from turnout.routing.health import Health
from turnout.routing.route import Route
from turnout.routing.target import Target
from turnout.wire.model import ChatRequest, Message


def ask(model: str = "gpt-4o-mini") -> ChatRequest:
    """A one-message request for `model`."""
    return ChatRequest([Message.user("hi")], model=model)


async def test_script_fails_then_answers() -> None:
    """Scripted steps play on the next calls, whatever the model; then calls answer."""
    provider = MockProvider(script=["status=429;retry_after=8", "ok"])
    with pytest.raises(RateLimited) as caught:
        await provider.complete(ask())
    assert caught.value.retry_after == 8.0
    assert (await provider.complete(ask())).text == "mock answer from gpt-4o-mini"
    provider.script("status=503")
    with pytest.raises(ProviderError) as failed:
        await provider.complete(ask())
    assert failed.value.status == 503
    assert [r.fault.spec if r.fault else None for r in provider.requests] == [
        "status=429;retry_after=8",
        "ok",
        "status=503",
    ]


async def test_delays_run_on_the_given_clock() -> None:
    """Latency sleeps on the provider's clock: a FakeClock runs a 30 s delay instantly."""
    clock = FakeClock()
    provider = MockProvider(clock=clock)
    response = await clock.run(provider.complete(ask("m/fault:latency=30")))
    assert response.text == "mock answer from m"
    assert clock.now() == 30.0


async def test_hang_times_out_through_a_route_on_a_fake_clock() -> None:
    """A hung mock call is ended by the route's timeout, in fake time."""
    clock = FakeClock()
    provider = MockProvider(clock=clock)
    route = Route(
        "r",
        [Target("only", provider, "mock-hang", timeout=5)],
        clock=clock,
        health=Health(clock=clock),
    )
    with pytest.raises(ProviderTimeout):
        await clock.run(route.complete([Message.user("hi")]))
    assert clock.now() == 5.0


async def test_failover_between_two_mocks() -> None:
    """A route fails over from a failing mock to a healthy one."""
    clock = FakeClock()
    primary = MockProvider("primary", script=["status=503"])
    backup = MockProvider("backup")
    route = Route(
        "r",
        [Target("primary", primary, "gpt-4o"), Target("backup", backup, "gpt-4o-mini")],
        clock=clock,
        health=Health(clock=clock),
    )
    response = await clock.run(route.complete([Message.user("hi")]))
    assert response.text == "mock answer from gpt-4o-mini"
    assert [e.outcome for e in response.routing.attempts] == ["failed", "answered"]  # type: ignore[union-attr]


async def test_anthropic_wire_and_bad_wire() -> None:
    """A mock may speak Anthropic Messages (no embeddings then); other wires are refused."""
    provider = MockProvider(wire="anthropic-messages")
    response = await provider.complete(ask("claude-x"))
    assert response.text == "mock answer from claude-x"
    assert provider.requests[0].path.endswith("/v1/messages")
    assert not provider.supports_embeddings
    with pytest.raises(ConfigError, match="wire"):
        MockProvider(wire="grpc")


async def test_aclose_cancels_running_handlers() -> None:
    """aclose() ends a stalled call: its reader sees a dropped connection, not a hang."""
    provider = MockProvider()
    stream = provider.stream(ask("m/fault:stall=1"))
    first = [await anext(stream), await anext(stream)]
    assert first[1].delta == "mock"
    await provider.aclose()
    with pytest.raises(ProviderError) as caught:
        await anext(stream)
    assert caught.value.reason == "connection"
