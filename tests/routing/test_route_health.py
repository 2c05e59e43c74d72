"""The driver and health together: skips, when_all_unhealthy, probes, parking."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from turnout import errors
from turnout.routing.health import Breaker
from turnout.routing.route import Route, Target
from turnout.testing import FakeClock, IsolatedHealth, ScriptedModel, isolated_health, turn
from turnout.wire.model import Message

if TYPE_CHECKING:
    from collections.abc import Hashable

QUESTION = [Message.user("Why is checkout failing?")]


def scripted(name: str, *turns: object, clock: FakeClock | None = None) -> ScriptedModel:
    """A scripted model whose provider is `name`."""
    return ScriptedModel(name, f"{name}-m", list(turns), clock=clock)  # type: ignore[arg-type]


async def cool_both(health: IsolatedHealth, a: ScriptedModel, b: ScriptedModel) -> None:
    """Fail a and b once each with their scripted Retry-After (they cool down)."""
    warm = Route("warm", [Target("a", a), Target("b", b)], health=health)
    with pytest.raises(errors.RouteExhausted):
        await health.clock.run(warm.complete(QUESTION))


async def test_probe_first_calls_the_first_target_anyway() -> None:
    """Every target cooling: probe_first (default) calls the first in try order anyway."""
    health = isolated_health()
    a = scripted("a", turn.fail(429, retry_after=30), turn.answer("ok"))
    b = scripted("b", turn.fail(429, retry_after=10))
    await cool_both(health, a, b)
    route = Route("r", [Target("a", a), Target("b", b)], health=health)
    response = await health.clock.run(route.complete(QUESTION))
    assert response.routing is not None
    assert response.routing.outcomes() == [
        ("a", "cooling_down"),
        ("b", "cooling_down"),
        ("a", "answered"),
    ]


async def test_probe_soonest_calls_the_target_whose_skip_ends_first() -> None:
    """probe_soonest calls the target whose cooldown ends soonest."""
    health = isolated_health()
    a = scripted("a", turn.fail(429, retry_after=30))
    b = scripted("b", turn.fail(429, retry_after=10), turn.answer("ok"))
    await cool_both(health, a, b)
    route = Route(
        "r", [Target("a", a), Target("b", b)], when_all_unhealthy="probe_soonest", health=health
    )
    response = await health.clock.run(route.complete(QUESTION))
    assert response.routing is not None
    assert response.routing.answered == "b"
    assert a.calls == 1


async def test_try_all_calls_every_skipped_target_in_order() -> None:
    """try_all calls each health-skipped target in try order until one answers."""
    health = isolated_health()
    a = scripted("a", turn.fail(429, retry_after=30), turn.fail(503))
    b = scripted("b", turn.fail(429, retry_after=10), turn.answer("ok"))
    await cool_both(health, a, b)
    route = Route(
        "r", [Target("a", a), Target("b", b)], when_all_unhealthy="try_all", health=health
    )
    response = await health.clock.run(route.complete(QUESTION))
    assert response.routing is not None
    assert response.routing.outcomes()[2:] == [("a", "failed"), ("b", "answered")]


async def test_only_one_forced_probe_per_key_is_in_flight() -> None:
    """While a forced probe is in flight, another request gets route_exhausted with the hint."""
    clock = FakeClock()
    health = isolated_health(clock=clock)
    a = scripted("a", turn.fail(429, retry_after=30), turn.answer("ok", delay=5), clock=clock)
    await cool_both(health, a, scripted("b", turn.fail(429, retry_after=30)))
    route = Route("r", [Target("a", a)], health=health)
    first = asyncio.ensure_future(route.complete(QUESTION))
    await clock.settle()
    with pytest.raises(errors.RouteExhausted) as caught:
        await clock.run(route.complete(QUESTION))
    assert caught.value.code == "route_exhausted"
    assert caught.value.retry_after == 30
    response = await clock.run(first)
    assert response.text == "ok"
    assert a.calls == 2


async def test_a_parked_target_that_is_the_last_one_left_is_called() -> None:
    """After the earlier targets failed, a parked last target is called anyway."""
    health = isolated_health()
    last = scripted("b", turn.fail(402), turn.answer("ok"))
    route = Route(
        "r",
        [Target("a", scripted("a", turn.fail(503), turn.fail(503))), Target("b", last)],
        health=health,
    )
    with pytest.raises(errors.RouteExhausted):
        await health.clock.run(route.complete(QUESTION))
    assert health.snapshot().get(("b", "b-m")).state == "parked"  # type: ignore[union-attr]
    response = await health.clock.run(route.complete(QUESTION))
    assert response.routing is not None
    assert response.routing.outcomes()[-1] == ("b", "answered")


async def test_a_parked_target_with_targets_after_it_is_skipped() -> None:
    """A parked target that is not the last one left is skipped with the seconds left."""
    health = isolated_health()
    parked = scripted("a", turn.fail(402, retry_after=120))
    route = Route(
        "r",
        [Target("a", parked), Target("b", scripted("b", turn.answer("1"), turn.answer("2")))],
        health=health,
    )
    await health.clock.run(route.complete(QUESTION))
    response = await health.clock.run(route.complete(QUESTION))
    assert response.routing is not None
    assert [(e.outcome, e.reason) for e in response.routing.attempts] == [
        ("parked", "parked, 120 s left"),
        ("answered", None),
    ]


async def test_a_routes_own_breaker_skips_at_its_own_threshold() -> None:
    """A route with circuit_breaker failures=1 skips after one failure; another route using the
    registry default (3) still calls the same key."""
    health = isolated_health()
    shared = scripted("a", turn.fail(503), turn.answer("ok"))
    strict = Route(
        "strict",
        [Target("a", shared), Target("b", scripted("b", turn.answer("1"), turn.answer("2")))],
        circuit_breaker=Breaker(failures=1, open_for=30),
        health=health,
    )
    lenient = Route("lenient", [Target("a", shared)], health=health)
    await health.clock.run(strict.complete(QUESTION))
    again = await health.clock.run(strict.complete(QUESTION))
    assert again.routing is not None
    assert (again.routing.attempts[0].outcome, again.routing.attempts[0].reason) == (
        "breaker_open",
        "breaker open, 30 s left",
    )
    response = await health.clock.run(lenient.complete(QUESTION))
    assert response.text == "ok"


async def test_100_concurrent_requests_send_exactly_one_probe_to_a_half_open_key() -> None:
    """Through one half-open breaker, 100 concurrent requests send one probe; 99 fail over."""
    clock = FakeClock()
    health = isolated_health(clock=clock, breaker=Breaker(failures=1, open_for=10))
    flaky = scripted("flaky", turn.fail(503), turn.answer("probe ok", delay=1), clock=clock)
    steady = scripted("steady", *[turn.answer("ok")] * 100)
    route = Route("r", [Target("flaky", flaky), Target("steady", steady)], health=health)
    await clock.run(route.complete(QUESTION))
    clock.advance(10)
    responses = await clock.run(asyncio.gather(*(route.complete(QUESTION) for _ in range(100))))
    assert flaky.calls == 2
    assert steady.calls == 1 + 99  # the warm-up request, then every request but the probe
    assert sum(r.text == "probe ok" for r in responses) == 1
    assert health.snapshot().get(("flaky", "flaky-m")).state == "available"  # type: ignore[union-attr]


async def test_a_cancelled_probe_frees_the_slot_without_counting() -> None:
    """The caller cancels the half-open probe: the next request may probe at once."""
    clock = FakeClock()
    health = isolated_health(clock=clock, breaker=Breaker(failures=1, open_for=10))
    flaky = scripted("flaky", turn.fail(503), turn.hang(), turn.answer("ok"), clock=clock)
    route = Route("r", [Target("flaky", flaky)], health=health)
    with pytest.raises(errors.ProviderUnavailable):
        await clock.run(route.complete(QUESTION))
    clock.advance(10)
    probe = asyncio.ensure_future(route.complete(QUESTION))
    await clock.settle()
    probe.cancel()
    with pytest.raises(asyncio.CancelledError):
        await probe
    response = await clock.run(route.complete(QUESTION))
    assert response.text == "ok"
    assert clock.now() == 10.0


async def test_a_call_in_flight_when_the_breaker_opens_cannot_close_it() -> None:
    """A slow call admitted before three failures open the breaker answers afterwards: the
    breaker stays open for its cooldown, and the next request skips the key."""
    clock = FakeClock()
    health = isolated_health(clock=clock, breaker=Breaker(failures=3, open_for=5))
    flaky = scripted(
        "flaky",
        turn.answer("slow ok", delay=1),
        *[turn.fail(503)] * 3,
        turn.answer("too soon"),
        clock=clock,
    )
    steady = scripted("steady", *[turn.answer("ok")] * 4)
    route = Route("r", [Target("flaky", flaky), Target("steady", steady)], health=health)
    slow = asyncio.ensure_future(route.complete(QUESTION))
    await clock.settle()
    for _ in range(3):
        await clock.run(route.complete(QUESTION))
    clock.advance(1)
    assert (await slow).text == "slow ok"
    response = await clock.run(route.complete(QUESTION))
    assert response.routing is not None
    assert response.routing.outcomes() == [("flaky", "breaker_open"), ("steady", "answered")]
    assert health.snapshot().get(("flaky", "flaky-m")).state == "open"  # type: ignore[union-attr]


class _HeldElsewhere:
    """A probe gate whose claims find the lease held by another replica for 30 s more."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.claims = 0

    def held_until(self, key: Hashable) -> float | None:
        return None

    async def claim(self, key: Hashable, lease: float) -> float | None:
        self.claims += 1
        return self.clock.now() + 30

    def probe_ended(self, key: Hashable) -> None:
        raise AssertionError("no probe ran here")


async def test_a_probe_claimed_by_another_replica_is_skipped_with_that_reason() -> None:
    """The request due for the probe whose claim finds another replica holding the lease skips
    the target, its entry saying the probe is in flight on another replica, and fails over."""
    clock = FakeClock()
    health = isolated_health(clock=clock, breaker=Breaker(failures=1, open_for=10))
    flaky = scripted("flaky", turn.fail(503), turn.answer("not me"))
    steady = scripted("steady", *[turn.answer("ok")] * 2)
    route = Route("r", [Target("flaky", flaky), Target("steady", steady)], health=health)
    await clock.run(route.complete(QUESTION))
    clock.advance(10)
    gate = _HeldElsewhere(clock)
    health.probe_gate = gate
    response = await clock.run(route.complete(QUESTION))
    assert response.routing is not None
    first = response.routing.attempts[0]
    assert (first.target, first.outcome) == ("flaky", "breaker_open")
    assert first.reason == "breaker open, probe in flight on another replica"
    assert (response.text, flaky.calls, gate.claims) == ("ok", 1, 1)
