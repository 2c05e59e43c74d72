"""`RouteOptions` and `Route.from_options`: a route's policy as one validated value, built once
and shared by every route that needs it."""

from __future__ import annotations

import random
from typing import Any

import pytest

from turnout.errors import ConfigError, RouteExhausted
from turnout.routing.health import Breaker
from turnout.routing.options import RetryPolicy, RouteOptions, Timeouts
from turnout.routing.route import Route, Target
from turnout.routing.strategies import Failover
from turnout.testing import ScriptedModel, isolated_health, turn
from turnout.wire.model import Message

POLICY: dict[str, Any] = {
    "strategy": {"type": "lowest-latency", "window_minutes": 5},
    "retry_on": ["timeout", "provider_error"],
    "retryable_statuses": [502, 503],
    "fail_over_on_refusal": False,
    "max_attempts": 4,
    "request_timeout": 30,
    "stream_idle_timeout": 10,
    "cost_budget": 0.5,
    "hedge_after": 2,
    "when_all_unhealthy": "try_all",
    "circuit_breaker": {"failure_threshold": 5, "cooldown_seconds": 30},
}


def t(name: str, *turns: Any, **options: Any) -> Target:
    """A target over a scripted model."""
    return Target(name, ScriptedModel(name, f"{name}-m", list(turns)), **options)


def _policy(route: Route) -> tuple[Any, ...]:
    """What a route keeps of its options."""
    breaker = route.breaker
    return (
        route.strategy.type,
        route.retry,
        route.timeouts,
        route.cost_budget,
        route.when_all_unhealthy,
        None if breaker is None else (breaker.failures, breaker.open_for),
    )


def test_from_options_keeps_the_policy_the_keywords_give() -> None:
    """A route from built options has the policy the keyword constructor gives it."""
    health = isolated_health()
    by_keywords = Route("r", [t("a")], health=health, **POLICY)
    by_options = Route.from_options("r", [t("a")], RouteOptions.build(**POLICY), health=health)
    assert _policy(by_options) == _policy(by_keywords)
    assert _policy(by_options)[1:] == (
        RetryPolicy(frozenset({"timeout", "provider_error"}), frozenset({502, 503}), False, 4),
        Timeouts(30.0, 10.0, 2.0),
        0.5,
        "try_all",
        (5, 30.0),
    )


def test_default_options_are_the_routes_defaults() -> None:
    """`RouteOptions()` and `RouteOptions.build()` hold the defaults `Route` documents."""
    plain = Route("r", [t("a")], health=isolated_health())
    for options in (RouteOptions(), RouteOptions.build()):
        assert isinstance(options.strategy, Failover)
        built = Route.from_options("r", [t("a")], options, health=isolated_health())
        assert _policy(built) == _policy(plain)
        assert (built.accept, built.on_routed, built.fault_classifier) == (None, None, None)


def test_routes_from_one_options_share_its_strategy() -> None:
    """Every route built from one `RouteOptions` keeps its statistics in one strategy."""
    options = RouteOptions.build(strategy="round-robin")
    first = Route.from_options("r", [t("a"), t("b")], options, health=isolated_health())
    second = Route.from_options("r", [t("b")], options, health=isolated_health())
    assert first.strategy is second.strategy is options.strategy


def test_the_rng_drives_a_strategy_built_from_a_spec() -> None:
    """Two weighted strategies built on equally seeded randomness pick the same starts."""
    targets = [t("a", weight=1), t("b", weight=3)]
    starts = []
    for _ in range(2):
        options = RouteOptions.build(strategy="weighted", rng=random.Random(7))
        route = Route.from_options("r", targets, options, health=isolated_health())
        starts.append([route.start_order(None)[0][0] for _ in range(20)])
    assert starts[0] == starts[1]
    assert set(starts[0]) == {0, 1}


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("max_attempts", 0),
        ("retry_on", ["invalid_request"]),
        ("request_timeout", -1),
        ("stream_idle_timeout", 0),
        ("cost_budget", -0.5),
        ("when_all_unhealthy", "wait"),
        ("circuit_breaker", 3),
        ("session_pin_ttl_seconds", 0),
        ("strategy", "fastest"),
        ("accept", "yes"),
    ],
)
def test_invalid_options_are_refused_with_the_routes_own_words(option: str, value: Any) -> None:
    """`RouteOptions.build` refuses what `Route` refuses, with the same message and path."""
    with pytest.raises(ConfigError) as by_route:
        Route("r", [t("a")], **{option: value})
    with pytest.raises(ConfigError) as by_options:
        RouteOptions.build(**{option: value})
    assert (str(by_options.value), by_options.value.errors) == (
        str(by_route.value),
        by_route.value.errors,
    )


def test_from_options_checks_the_name_and_targets() -> None:
    """The name, the target list, the static budget and the weights are checked per route."""
    options = RouteOptions()
    with pytest.raises(ConfigError, match="name must be a non-empty string"):
        Route.from_options("", [t("a")], options)
    with pytest.raises(ConfigError, match="targets must hold at least one target"):
        Route.from_options("r", [], options)
    with pytest.raises(ConfigError, match="total attempts 11 exceeds the maximum of 10"):
        Route.from_options("r", [t("a", max_retries=9), t("b")], options)
    weighted = RouteOptions.build(strategy="weighted")
    with pytest.raises(ConfigError, match="with a weight above 0"):
        Route.from_options("r", [t("a", weight=0)], weighted)


def test_from_options_warns_at_the_callers_line() -> None:
    """The static-budget warning points at the code that built the route."""
    options = RouteOptions.build(max_attempts=2)
    with pytest.warns(UserWarning, match="max_attempts is 2") as caught:
        Route.from_options("r", [t("a", max_retries=3)], options, health=isolated_health())
    assert caught[0].filename == __file__


async def test_a_generated_route_is_never_refused_for_its_size() -> None:
    """A generated route over 12 targets is built without an error or a warning, and its
    `max_attempts` stops each request after 10 calls (the rest `not_tried`)."""
    health = isolated_health()
    targets = [t(f"p{i}", turn.fail(503)) for i in range(12)]
    route = Route.from_options("family", targets, RouteOptions(), health=health, generated=True)
    with pytest.raises(RouteExhausted) as caught:
        await health.clock.run(route.complete([Message.user("hello?")]))
    record = caught.value.routing
    assert record is not None
    assert [entry.outcome for entry in record.attempts] == ["failed"] * 10 + ["not_tried"] * 2
    assert record.attempts[-1].reason == "max_attempts"


async def test_a_route_from_options_serves_under_them() -> None:
    """A route built from options fails over and keeps its own breaker thresholds."""
    health = isolated_health()
    options = RouteOptions(breaker=Breaker(failures=1, open_for=60))
    route = Route.from_options(
        "r", [t("a", turn.fail(503)), t("b", turn.answer("hi"))], options, health=health
    )
    response = await health.clock.run(route.complete([Message.user("hello?")]))
    assert response.text == "hi"
    assert response.routing is not None
    assert response.routing.outcomes() == [("a", "failed"), ("b", "answered")]
    assert route.breaker is options.breaker
