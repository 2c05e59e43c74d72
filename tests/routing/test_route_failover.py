"""Failover, classification, same-target retries, deadlines and budgets."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

import pytest

from turnout import errors
from turnout.routing.backoff import BACKOFF_CAP
from turnout.routing.route import Route, Target
from turnout.testing import ScriptedModel, isolated_health, turn
from turnout.wire.model import (
    ChatRequest,
    ImagePart,
    Message,
    NativeBlock,
    TextPart,
    Tool,
    Usage,
)

if TYPE_CHECKING:
    from turnout.record import RoutingRecord
    from turnout.testing import IsolatedHealth

QUESTION = [Message.user("Why is checkout failing?")]


def model(provider: str, *turns: object, name: str | None = None, **kw: object) -> ScriptedModel:
    """A scripted model named after its provider."""
    return ScriptedModel(provider, name or f"{provider}-m", list(turns), **kw)  # type: ignore[arg-type]


async def ask(route: Route, health: IsolatedHealth, **kw: Any) -> RoutingRecord:
    """Complete QUESTION on the health's fake clock and return the routing record."""
    response = await health.clock.run(route.complete(QUESTION, **kw))
    assert response.routing is not None
    return response.routing


async def test_max_retries_2_makes_three_calls_on_that_target() -> None:
    """SOAT: max_retries 2 issues 3 calls on the target before moving on, waiting backoff."""
    health = isolated_health()
    primary = model("northwind", turn.fail(503), turn.fail(503), turn.fail(503))
    backup = model("local", turn.answer("ok"))
    route = Route(
        "r",
        [Target("primary", primary, max_retries=2), Target("backup", backup)],
        health=health,
        rng=random.Random(7),
    )
    record = await ask(route, health)
    assert primary.calls == 3
    assert record.outcomes() == [("primary", "failed")] * 3 + [("backup", "answered")]
    assert 0 < health.clock.now() <= 0.25 + 0.5
    assert record.fallbacks == 1


async def test_a_retry_after_longer_than_the_backoff_replaces_it() -> None:
    """A 429 with Retry-After 2 s waits exactly 2 s before the same-target retry."""
    health = isolated_health()
    primary = model("northwind", turn.fail(429, retry_after=2), turn.answer("ok"))
    route = Route("r", [Target("primary", primary, max_retries=1)], health=health)
    record = await ask(route, health)
    assert health.clock.now() == 2.0
    assert record.outcomes() == [("primary", "failed"), ("primary", "answered")]


async def test_a_retry_after_over_8_seconds_moves_on_at_once() -> None:
    """Retry-After 9 s is longer than any in-request wait: no retry, next target at once."""
    health = isolated_health()
    primary = model("northwind", turn.fail(429, retry_after=9), turn.answer("never"))
    backup = model("local", turn.answer("ok"))
    route = Route(
        "r", [Target("primary", primary, max_retries=3), Target("backup", backup)], health=health
    )
    record = await ask(route, health)
    assert primary.calls == 1
    assert health.clock.now() == 0.0
    assert record.outcomes() == [("primary", "failed"), ("backup", "answered")]
    assert BACKOFF_CAP == 8.0


async def test_a_retry_is_not_made_past_the_request_deadline() -> None:
    """A wait that would pass request_timeout is not made; the route moves on."""
    health = isolated_health()
    primary = model("northwind", turn.fail(503, retry_after=4), turn.answer("never"))
    backup = model("local", turn.answer("ok"))
    route = Route(
        "r",
        [Target("primary", primary, max_retries=1), Target("backup", backup)],
        request_timeout=3,
        health=health,
    )
    record = await ask(route, health)
    assert primary.calls == 1
    assert record.answered == "backup"


async def test_a_timeout_never_retries_the_same_target() -> None:
    """A hung call times out after `timeout` and moves on, whatever max_retries says."""
    health = isolated_health()
    primary = model("northwind", turn.hang(), turn.answer("never"))
    backup = model("local", turn.answer("ok"))
    route = Route(
        "r",
        [Target("primary", primary, timeout=5, max_retries=3), Target("backup", backup)],
        health=health,
    )
    record = await ask(route, health)
    assert primary.calls == 1
    assert health.clock.now() == 5.0
    first = record.attempts[0]
    assert (first.outcome, first.error_class, first.reason) == (
        "failed",
        "timeout",
        "timed out after 5 s",
    )
    assert first.duration_ms == 5000


async def test_quota_exhausted_and_auth_are_not_retried_on_the_same_target() -> None:
    """max_retries covers rate_limited and provider_error only: a 402 moves on at once."""
    health = isolated_health()
    primary = model("northwind", turn.fail(402), turn.answer("never"))
    route = Route(
        "r",
        [Target("primary", primary, max_retries=2), Target("b", model("local", turn.answer("ok")))],
        health=health,
    )
    record = await ask(route, health)
    assert primary.calls == 1
    assert record.attempts[0].error_class == "quota_exhausted"


async def test_max_attempts_caps_calls_and_leaves_the_rest_not_tried() -> None:
    """max_attempts=2 stops after two calls; the third target is not_tried (max_attempts)."""
    health = isolated_health()
    third = model("c", turn.answer("never"))
    with pytest.warns(UserWarning, match="allow 3 attempts in total but max_attempts is 2"):
        route = Route(
            "r",
            [
                Target("a", model("a", turn.fail(503))),
                Target("b", model("b", turn.fail(503))),
                Target("c", third),
            ],
            max_attempts=2,
            health=health,
        )
    with pytest.raises(errors.RouteExhausted) as caught:
        await health.clock.run(route.complete(QUESTION))
    record = caught.value.routing
    assert record is not None
    assert record.outcomes() == [("a", "failed"), ("b", "failed"), ("c", "not_tried")]
    assert record.attempts[2].reason == "max_attempts"
    assert record.remaining_attempts == 0
    assert third.calls == 0


async def test_request_timeout_bounds_the_whole_request() -> None:
    """A hung call is cut at request_timeout (not its own 600 s); later targets not_tried."""
    health = isolated_health()
    route = Route(
        "r",
        [Target("a", model("a", turn.hang())), Target("b", model("b", turn.answer("late")))],
        request_timeout=5,
        health=health,
    )
    with pytest.raises(errors.ProviderTimeout) as caught:
        await health.clock.run(route.complete(QUESTION))
    assert health.clock.now() == 5.0
    assert caught.value.routing is not None
    assert caught.value.routing.outcomes() == [("a", "failed"), ("b", "not_tried")]
    assert caught.value.routing.attempts[1].reason == "request_timeout"


async def test_retry_on_without_rate_limited_makes_a_429_terminal() -> None:
    """A retryable class left out of retry_on is terminal: the 429 is raised as is."""
    health = isolated_health()
    route = Route(
        "r",
        [Target("a", model("a", turn.fail(429))), Target("b", model("b", turn.answer("ok")))],
        retry_on=["provider_error", "timeout"],
        health=health,
    )
    with pytest.raises(errors.RateLimited):
        await health.clock.run(route.complete(QUESTION))


async def test_auth_in_retry_on_fails_over_only_to_another_credential() -> None:
    """With auth in retry_on, a 401 skips later targets of the same provider."""
    health = isolated_health()
    same = model("northwind", turn.answer("never"), name="nw-small")
    route = Route(
        "r",
        [
            Target("a", model("northwind", turn.fail(401), name="nw-large")),
            Target("b", same),
            Target("c", model("local", turn.answer("ok"))),
        ],
        retry_on=["provider_error", "timeout", "rate_limited", "quota_exhausted", "auth"],
        health=health,
    )
    record = await ask(route, health)
    assert record.outcomes() == [("a", "failed"), ("b", "not_tried"), ("c", "answered")]
    assert record.attempts[1].reason == "same credential"
    assert same.calls == 0


async def test_retryable_statuses_narrow_provider_error() -> None:
    """retryable_statuses=[502, 503, 504] makes a 500 terminal (invalid_request)."""
    health = isolated_health()
    route = Route(
        "r",
        [Target("a", model("a", turn.fail(500))), Target("b", model("b", turn.answer("ok")))],
        retryable_statuses=[502, 503, 504],
        health=health,
    )
    with pytest.raises(errors.ProviderError) as caught:
        await health.clock.run(route.complete(QUESTION))
    assert caught.value.status == 500
    assert caught.value.routing is not None
    assert caught.value.routing.attempts[0].error_class == "invalid_request"


async def test_fault_classifier_reclassifies_before_the_errors_own_class() -> None:
    """A fault_classifier turning a 400 into provider_error makes the route fail over."""
    health = isolated_health()
    route = Route(
        "r",
        [Target("a", model("a", turn.fail(400))), Target("b", model("b", turn.answer("ok")))],
        fault_classifier=lambda target, error: "provider_error" if target.name == "a" else None,
        health=health,
    )
    record = await ask(route, health)
    assert record.attempts[0].error_class == "provider_error"
    assert record.answered == "b"


async def test_a_refusal_is_returned_when_fail_over_on_refusal_is_off() -> None:
    """fail_over_on_refusal=False returns a content_filter answer as a normal answer."""
    health = isolated_health()
    route = Route(
        "r",
        [Target("a", model("a", turn.refuse())), Target("b", model("b", turn.answer("ok")))],
        fail_over_on_refusal=False,
        health=health,
    )
    response = await health.clock.run(route.complete(QUESTION))
    assert response.finish_reason == "content_filter"
    assert response.routing is not None
    assert response.routing.answered == "a"


async def test_endings_and_rejections_do_not_count_for_health() -> None:
    """A refused and a rejected answer leave the keys' failures in a row at 0."""
    health = isolated_health()
    route = Route(
        "r",
        [
            Target("a", model("a", turn.refuse())),
            Target("b", model("b", turn.answer("meh"))),
            Target("c", model("c", turn.answer("good"))),
        ],
        accept=lambda r: None if r.text == "good" else "not good",
        health=health,
    )
    await ask(route, health)
    assert all(view.failures == 0 and view.state == "available" for view in health.snapshot())


async def test_capabilities_make_a_target_ineligible_for_tools_vision_and_schemas() -> None:
    """A request with tools, an image or a json_schema skips targets lacking that capability."""
    health = isolated_health()
    route = Route(
        "r",
        [
            Target("plain", model("a", turn.answer("never")), capabilities=set()),
            Target(
                "full",
                model("b", turn.answer("ok"), turn.answer("ok"), turn.answer("ok")),
                capabilities={"tools", "vision", "json_schema"},
            ),
        ],
        health=health,
    )
    tools = ChatRequest(QUESTION, tools=[Tool("lookup")])
    image = ChatRequest(
        [Message("user", [TextPart("what is this"), ImagePart(url="https://x/y.png")])]
    )
    schema = ChatRequest(QUESTION, response_format={"type": "json_schema", "json_schema": {}})
    reasons = []
    for request in (tools, image, schema):
        response = await health.clock.run(route.complete(request))
        assert response.routing is not None
        reasons.append(response.routing.attempts[0].reason)
    assert reasons == ["it lacks tools", "it lacks vision", "it lacks json_schema"]


async def test_context_window_makes_a_target_ineligible() -> None:
    """Estimated prompt tokens (chars/4) + max_tokens over context_window -> ineligible."""
    health = isolated_health()
    route = Route(
        "r",
        [
            Target("small", model("a", turn.answer("never")), context_window=100),
            Target("large", model("b", turn.answer("ok"))),
        ],
        health=health,
    )
    record = await ask(route, health, max_tokens=100)
    assert record.attempts[0].outcome == "ineligible"
    assert record.attempts[0].reason == "context window 100 < estimated 106 tokens"


async def test_cost_budget_skips_a_target_whose_estimate_passes_it() -> None:
    """An expensive target is not_tried (cost_budget); a cheap one answers; cost is billed."""
    health = isolated_health()
    expensive = model("a", turn.answer("never"), prices={"a-m": (10.0, 100.0)})
    cheap = model("b", turn.answer("ok", usage=Usage(1000, 500)), prices={"b-m": (1.0, 2.0)})
    route = Route(
        "r", [Target("a", expensive), Target("b", cheap)], cost_budget=0.05, health=health
    )
    record = await ask(route, health, max_tokens=1000)
    assert record.outcomes() == [("a", "not_tried"), ("b", "answered")]
    assert record.attempts[0].reason == "cost_budget"
    assert record.cost == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1e6)


async def test_cost_budget_counts_what_earlier_calls_spent() -> None:
    """Spent so far (a refused answer's usage) plus the estimate passing the budget skips."""
    health = isolated_health()
    prices = {"a-m": (10.0, 10.0), "b-m": (10.0, 10.0)}
    first = ScriptedModel("a", "a-m", [turn.refuse()], prices=prices)
    second = ScriptedModel("b", "b-m", [turn.answer("never")], prices=prices)
    refused_usage = Usage(4000, 1000)
    first.turns = [turn.answer("no", usage=refused_usage, finish_reason="content_filter")]
    route = Route("r", [Target("a", first), Target("b", second)], cost_budget=0.06, health=health)
    with pytest.raises(errors.RouteExhausted) as caught:
        await health.clock.run(route.complete(QUESTION, max_tokens=1000))
    assert caught.value.routing is not None
    assert caught.value.routing.outcomes() == [("a", "refused"), ("b", "not_tried")]
    assert second.calls == 0


async def test_cost_budget_does_not_check_without_max_tokens_or_price() -> None:
    """No max_tokens, or no price: the target is not checked against the budget."""
    health = isolated_health()
    route = Route(
        "r",
        [Target("a", model("a", turn.answer("ok"), prices={"a-m": (1e9, 1e9)}))],
        cost_budget=0.0,
        health=health,
    )
    record = await ask(route, health)
    assert record.answered == "a"


async def test_paused_targets_are_recorded_and_never_called() -> None:
    """A paused target gets a `paused` entry and no call."""
    health = isolated_health()
    paused = model("a", turn.answer("never"))
    route = Route(
        "r",
        [Target("a", paused, paused=True), Target("b", model("b", turn.answer("ok")))],
        health=health,
    )
    record = await ask(route, health)
    assert record.outcomes() == [("b", "answered"), ("a", "paused")]
    assert paused.calls == 0


async def test_target_model_replaces_the_requests_model_on_the_wire() -> None:
    """Target.model is what the client receives; the record keeps the requested model."""
    health = isolated_health()
    client = model("a", turn.answer("ok"))
    route = Route("r", [Target("a", client, model="wire-model")], health=health)
    response = await health.clock.run(route.complete(ChatRequest(QUESTION, model="asked")))
    assert client.requests[0].model == "wire-model"
    assert response.routing is not None
    assert response.routing.requested_model == "asked"
    assert response.routing.served_model == "wire-model"
    assert response.routing.visited_models == ["wire-model"]


async def test_the_record_bills_only_the_serving_call() -> None:
    """usage/cost are the serving call's; a refused call's usage goes to discarded_usage."""
    health = isolated_health()
    route = Route(
        "r",
        [
            Target(
                "a",
                model("a", turn.answer("no", usage=Usage(10, 5), finish_reason="content_filter")),
            ),
            Target(
                "b", model("b", turn.answer("ok", usage=Usage(20, 7)), prices={"b-m": (1.0, 1.0)})
            ),
        ],
        health=health,
    )
    record = await ask(route, health, session_id="s-1")
    assert record.usage == Usage(20, 7)
    assert record.discarded_usage == Usage(10, 5)
    assert record.cost == pytest.approx(27 / 1e6)
    assert record.session_id == "s-1"
    assert record.remaining_attempts == 8
    assert len(record.request_id) == 32


async def test_strategy_reason_and_latency_reach_the_strategy() -> None:
    """The strategy picks the start, its reason is recorded, answered latency is reported."""

    class Spy:
        type = "spy"

        def __init__(self) -> None:
            self.latencies: list[tuple[object, float]] = []
            self.in_flight = 0

        def pick_start(self, candidates: object, **kw: object) -> tuple[int, str]:
            return 1, "spy: second"

        def call_started(self, key: object) -> None:
            self.in_flight += 1

        def call_finished(self, key: object) -> None:
            self.in_flight -= 1

        def record_latency(self, key: object, seconds: float, now: float) -> None:
            self.latencies.append((key, seconds))

    health = isolated_health()
    spy = Spy()
    route = Route(
        "r",
        [
            Target("a", model("a", turn.answer("ok"))),
            Target("b", model("b", turn.answer("ok", delay=1.5), clock=health.clock)),
        ],
        strategy=spy,
        health=health,
    )
    record = await ask(route, health)
    assert (record.strategy, record.strategy_reason) == ("spy", "spy: second")
    assert record.outcomes() == [("b", "answered"), ("a", "not_tried")]
    assert spy.latencies == [(("r", "b"), 1.5)]
    assert spy.in_flight == 0


async def test_round_robin_rotates_the_start_target() -> None:
    """strategy round-robin starts successive requests on successive targets."""
    health = isolated_health()
    route = Route(
        "r",
        [
            Target("a", model("a", turn.answer("1"), turn.answer("3"))),
            Target("b", model("b", turn.answer("2"))),
        ],
        strategy="round-robin",
        health=health,
    )
    answered = [(await ask(route, health)).answered for _ in range(3)]
    assert answered == ["a", "b", "a"]


async def test_a_route_is_a_chat_client_and_can_be_a_target() -> None:
    """An inner route's exhaustion is one provider_error call for the outer route."""
    health = isolated_health()
    inner = Route(
        "inner",
        [Target("x", model("x", turn.fail(503))), Target("y", model("y", turn.fail(503)))],
        health=health,
    )
    outer = Route(
        "outer", [Target("inner", inner), Target("z", model("z", turn.answer("ok")))], health=health
    )
    record = await ask(outer, health)
    assert record.outcomes() == [("inner", "failed"), ("z", "answered")]
    assert record.attempts[0].error_class == "provider_error"
    assert record.attempts[0].provider == "inner"
    assert health.snapshot().get("inner") is not None


async def test_an_inner_route_ineligible_is_invalid_request_for_the_outer() -> None:
    """An inner route's RouteIneligible is terminal (invalid_request) for the outer route."""
    health = isolated_health()
    inner = Route("inner", [Target("x", model("x"), eligible=lambda r, c: "never")], health=health)
    outer = Route(
        "outer", [Target("inner", inner), Target("z", model("z", turn.answer("ok")))], health=health
    )
    with pytest.raises(errors.InvalidRequest) as caught:
        await health.clock.run(outer.complete(QUESTION))
    assert caught.value.status == 400
    assert caught.value.routing is not None
    assert caught.value.routing.attempts[0].error_class == "invalid_request"


class _SpeaksFormat(ScriptedModel):
    """A scripted model that says which wire format it speaks, as a provider adapter does."""

    def __init__(self, wire_format: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.wire_format = wire_format


async def test_server_tools_make_targets_of_another_format_ineligible() -> None:
    """A request carrying an Anthropic server tool skips an OpenAI-format target (ineligible,
    naming the tool) instead of having the tool dropped in translation; an Anthropic-format
    target takes it, and a plain function tool never makes a target ineligible."""
    health = isolated_health()
    openai_side = _SpeaksFormat("openai-chat", "oai", "gpt", [turn.answer("plain tool ok")])
    anthropic_side = _SpeaksFormat("anthropic-messages", "ant", "claude", [turn.answer("ok")])
    route = Route(
        "r",
        [Target("gpt", openai_side), Target("claude", anthropic_side)],
        health=health,
    )
    search = Tool(
        "web_search",
        native=NativeBlock(
            "anthropic-messages", {"type": "web_search_20250305", "name": "web_search"}
        ),
    )
    served = await health.clock.run(route.complete(ChatRequest(QUESTION, tools=[search])))
    record = served.routing
    assert record is not None
    assert record.answered == "claude"
    assert record.attempts[0].outcome == "ineligible"
    assert record.attempts[0].reason == (
        "it cannot carry the server tool web_search (web_search_20250305)"
    )
    assert openai_side.calls == 0
    plain = await health.clock.run(route.complete(ChatRequest(QUESTION, tools=[Tool("lookup")])))
    assert plain.routing is not None
    assert plain.routing.answered == "gpt"
