"""How a request ends when no answer is accepted (docs/library.md): every rule."""

from __future__ import annotations

import pytest

from turnout import errors
from turnout.routing.health import Breaker
from turnout.routing.route import Route, Target
from turnout.testing import IsolatedHealth, ScriptedModel, isolated_health, turn
from turnout.wire.model import Message

QUESTION = [Message.user("Why is checkout failing?")]


def target(name: str, *turns: object, **options: object) -> Target:
    """A target over a scripted model whose provider is the target's name."""
    return Target(name, ScriptedModel(name, f"{name}-m", list(turns)), **options)  # type: ignore[arg-type]


async def exhaust(route: Route, health: IsolatedHealth) -> errors.RouteExhausted:
    """Run the route on the health's fake clock and return the RouteExhausted it raises."""
    with pytest.raises(errors.RouteExhausted) as caught:
        await health.clock.run(route.complete(QUESTION))
    return caught.value


async def test_a_terminal_failure_raises_its_own_error_whatever_failed_before() -> None:
    """503 then 404: the 404's own InvalidRequest is raised, with the record attached."""
    health = isolated_health()
    route = Route(
        "r",
        [
            target("a", turn.fail(503)),
            target("b", turn.fail(404, message="no such model")),
            target("c", turn.answer("never")),
        ],
        health=health,
    )
    with pytest.raises(errors.InvalidRequest) as caught:
        await health.clock.run(route.complete(QUESTION))
    assert (caught.value.status, caught.value.message) == (404, "no such model")
    assert caught.value.routing is not None
    assert caught.value.routing.outcomes() == [("a", "failed"), ("b", "failed"), ("c", "not_tried")]
    assert caught.value.routing.error == {
        "status": 404,
        "code": "invalid_request",
        "message": "no such model",
    }


async def test_a_context_length_failure_without_a_fallback_is_terminal() -> None:
    """A 400 naming the context length is not passed to the next target (no fallback)."""
    health = isolated_health()
    route = Route(
        "r",
        [
            target(
                "a", turn.fail(400, message="This model's maximum context length is 8192 tokens")
            ),
            target("b", turn.answer("never")),
        ],
        health=health,
    )
    with pytest.raises(errors.ContextLengthExceeded):
        await health.clock.run(route.complete(QUESTION))


async def test_one_retryable_call_returns_its_own_status_message_and_retry_after() -> None:
    """Exactly one call failed retryably: that call's own error (status, Retry-After)."""
    health = isolated_health()
    route = Route("r", [target("a", turn.fail(503, retry_after=2, message="busy"))], health=health)
    with pytest.raises(errors.ProviderUnavailable) as caught:
        await health.clock.run(route.complete(QUESTION))
    assert (caught.value.status, caught.value.message, caught.value.retry_after) == (503, "busy", 2)
    assert caught.value.routing is not None


async def test_every_call_timed_out_is_504_upstream_timeout() -> None:
    """Two timeouts: RouteExhausted 504 upstream_timeout."""
    health = isolated_health()
    route = Route(
        "r", [target("a", turn.hang(), timeout=1), target("b", turn.timeout())], health=health
    )
    error = await exhaust(route, health)
    assert (error.status, error.code) == (504, "upstream_timeout")


async def test_no_http_response_at_all_is_502_upstream_unreachable() -> None:
    """Two connection failures (no HTTP status): 502 upstream_unreachable."""
    health = isolated_health()
    route = Route(
        "r", [target("a", turn.conn_error()), target("b", turn.conn_error())], health=health
    )
    error = await exhaust(route, health)
    assert (error.status, error.code) == (502, "upstream_unreachable")
    assert error.last_error == (None, "the connection was refused")


async def test_every_response_with_one_status_gives_that_status() -> None:
    """Two 429s (and a connection error, which had no response): 429 UPSTREAM_POOL_EXHAUSTED."""
    health = isolated_health()
    route = Route(
        "r",
        [target("a", turn.fail(429)), target("b", turn.conn_error()), target("c", turn.fail(429))],
        health=health,
    )
    error = await exhaust(route, health)
    assert (error.status, error.code) == (429, "UPSTREAM_POOL_EXHAUSTED")


async def test_mixed_statuses_give_503() -> None:
    """A 429 and a 503: 503 UPSTREAM_POOL_EXHAUSTED; last_error is the last call's."""
    health = isolated_health()
    route = Route(
        "r",
        [target("a", turn.fail(429)), target("b", turn.fail(503, message="down"))],
        health=health,
    )
    error = await exhaust(route, health)
    assert (error.status, error.code) == (503, "UPSTREAM_POOL_EXHAUSTED")
    assert error.last_error == (503, "down")
    assert error.retry_after is None


async def test_refused_and_rejected_answers_alone_give_502() -> None:
    """Only a refusal and a rejection: they count as failed calls, status 502."""
    health = isolated_health()
    route = Route(
        "r",
        [target("a", turn.refuse()), target("b", turn.answer("meh"))],
        accept=lambda r: "no reason given",
        health=health,
    )
    error = await exhaust(route, health)
    assert (error.status, error.code) == (502, "UPSTREAM_POOL_EXHAUSTED")
    assert str(error) == 'every target of route "r" failed (a: refused, b: rejected)'
    assert error.last_error == (None, "no reason given")


async def test_a_single_refusal_is_route_exhausted_502() -> None:
    """One refused answer has no error of its own: RouteExhausted 502."""
    health = isolated_health()
    error = await exhaust(Route("r", [target("a", turn.refuse())], health=health), health)
    assert error.status == 502


async def test_zero_calls_is_503_route_exhausted_with_the_retry_hint() -> None:
    """when_all_unhealthy=fail and every key cooling: no call, 503 route_exhausted + hint."""
    health = isolated_health()
    warm = Route(
        "warm",
        [target("a", turn.fail(429, retry_after=30)), target("b", turn.fail(429, retry_after=10))],
        health=health,
    )
    await exhaust(warm, health)
    health.clock.advance(4)
    cold = Route(
        "cold",
        [Target("a", warm.targets[0].client), Target("b", warm.targets[1].client)],
        when_all_unhealthy="fail",
        health=health,
    )
    error = await exhaust(cold, health)
    assert (error.status, error.code) == (503, "route_exhausted")
    assert error.retry_after == 6
    assert error.routing is not None
    assert [(e.outcome, e.reason) for e in error.attempts] == [
        ("cooling_down", "cooling down, 26 s left"),
        ("cooling_down", "cooling down, 6 s left"),
    ]
    assert error.routing.remaining_attempts == 10


async def test_the_retry_hint_includes_a_breaker_opened_by_this_request() -> None:
    """A failure that opens the breaker makes retry_after the time until half-open."""
    health = isolated_health(breaker=Breaker(failures=1, open_for=20))
    route = Route("r", [target("a", turn.fail(503)), target("b", turn.fail(500))], health=health)
    error = await exhaust(route, health)
    assert error.retry_after == 20


async def test_every_target_paused_is_no_deployment_available() -> None:
    """Every target paused: 503 no_deployment_available before any call."""
    health = isolated_health()
    route = Route("r", [target("a", paused=True), target("b", paused=True)], health=health)
    with pytest.raises(errors.NoTargetAvailable) as caught:
        await health.clock.run(route.complete(QUESTION))
    assert (caught.value.status, caught.value.code) == (503, "no_deployment_available")
    assert caught.value.routing is not None


async def test_weighted_with_only_paused_positive_weights_is_no_deployment_available() -> None:
    """Under weighted, no unpaused target with a positive weight: no_deployment_available."""
    health = isolated_health()
    route = Route(
        "r",
        [target("a", weight=5, paused=True), target("b", weight=0)],
        strategy="weighted",
        health=health,
    )
    with pytest.raises(errors.NoTargetAvailable, match="positive weight"):
        await health.clock.run(route.complete(QUESTION))


async def test_paused_is_checked_before_ineligible() -> None:
    """Paused and ineligible targets together: the remaining (unpaused) ones are ineligible."""
    health = isolated_health()
    route = Route(
        "r",
        [target("a", paused=True), target("b", eligible=lambda r, c: "not today")],
        health=health,
    )
    with pytest.raises(errors.RouteIneligible, match=r"b is ineligible \(not today\)"):
        await health.clock.run(route.complete(QUESTION))
