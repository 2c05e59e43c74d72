"""Route and Target validation: every invalid option is a ConfigError naming field and rule."""

from __future__ import annotations

from typing import Any

import pytest

from turnout.errors import ConfigError
from turnout.routing.client import ChatClient
from turnout.routing.health import Breaker
from turnout.routing.route import Route, Target
from turnout.testing import ScriptedModel, isolated_health


def t(name: str, **options: Any) -> Target:
    """A target over an idle scripted model."""
    return Target(name, ScriptedModel(name, f"{name}-m", []), **options)


def test_an_empty_target_list_is_refused() -> None:
    """Route refuses no targets (a ValueError, as ConfigError is one)."""
    with pytest.raises(ValueError, match="targets must hold at least one target"):
        Route("r", [])


def test_two_targets_with_one_name_are_refused() -> None:
    """Duplicate target names are refused, naming the position and the name."""
    with pytest.raises(ConfigError, match=r"targets\[1\]\.name 'a' is used twice"):
        Route("r", [t("a"), t("a")])


def test_a_static_budget_over_10_names_the_total() -> None:
    """Σ(1 + max_retries) = 11 is refused with a message naming the total."""
    with pytest.raises(ConfigError, match="total attempts 11 exceeds the maximum of 10"):
        Route("r", [t("a", max_retries=9), t("b", max_retries=0)])


def test_one_target_over_the_budget_names_the_total() -> None:
    """A lone target with max_retries 10 is refused by the total, not by a per-target bound."""
    with pytest.raises(ConfigError, match="total attempts 11 exceeds the maximum of 10"):
        Route("r", [t("a", max_retries=10)])


def test_a_static_total_over_max_attempts_warns_naming_both_numbers() -> None:
    """Static total 4 with max_attempts 3 is accepted with a warning naming 4 and 3."""
    with pytest.warns(UserWarning, match="allow 4 attempts in total but max_attempts is 3"):
        route = Route("r", [t("a", max_retries=3)], max_attempts=3)
    assert route.retry.max_attempts == 3


@pytest.mark.parametrize("value", [0, 11, 2.5])
def test_max_attempts_must_be_1_to_10(value: object) -> None:
    """max_attempts outside 1-10 is refused."""
    with pytest.raises(ConfigError, match="max_attempts must be from 1 to 10"):
        Route("r", [t("a")], max_attempts=value)  # type: ignore[arg-type]


def test_unknown_when_all_unhealthy_is_refused() -> None:
    """when_all_unhealthy must be one of the four policies."""
    with pytest.raises(ConfigError, match="when_all_unhealthy must be one of probe_first"):
        Route("r", [t("a")], when_all_unhealthy="wait")


def test_retry_on_accepts_only_the_four_classes_and_auth() -> None:
    """retry_on with invalid_request is refused; auth is accepted."""
    with pytest.raises(ConfigError, match="retry_on has unknown class 'invalid_request'"):
        Route("r", [t("a")], retry_on=["invalid_request"])
    route = Route("r", [t("a")], retry_on=["auth", "timeout"])
    assert route.retry.retry_on == {"auth", "timeout"}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"request_timeout": -1}, "request_timeout must be null or a number of seconds > 0"),
        ({"stream_idle_timeout": 0}, "stream_idle_timeout must be > 0 seconds"),
        ({"hedge_after": -2}, "hedge_after must be null or a number of seconds > 0"),
        ({"cost_budget": -0.5}, "cost_budget must be a number ≥ 0"),
        ({"retryable_statuses": [700]}, "retryable_statuses must hold HTTP statuses"),
    ],
)
def test_negative_deadlines_and_budgets_are_refused(options: dict[str, Any], message: str) -> None:
    """Negative or zero timeouts, a negative budget and non-statuses are refused."""
    with pytest.raises(ConfigError, match=message):
        Route("r", [t("a")], **options)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"timeout": -1}, "target 'a': timeout must be a number of seconds > 0"),
        ({"first_token_timeout": 0}, "first_token_timeout must be a number of seconds > 0"),
        ({"max_retries": -1}, "max_retries must be a whole number ≥ 0"),
        ({"context_window": 0}, "context_window must be a whole number of tokens > 0"),
        ({"capabilities": {"telepathy"}}, "capabilities has unknown telepathy"),
        ({"paused": "yes"}, "paused must be true or false"),
    ],
)
def test_target_options_are_checked(options: dict[str, Any], message: str) -> None:
    """Each invalid target option is refused with the target's name and the rule."""
    with pytest.raises(ConfigError, match=message):
        t("a", **options)


@pytest.mark.parametrize(
    "option",
    [
        "models",
        "aliases",
        "enabled",
        "cache",
        "allow_cross_provider",
        "switch_family_on_quota",
        "org_key_fallback_for_caller_credentials",
    ],
)
def test_gateway_only_options_are_not_accepted(option: str) -> None:
    """Gateway-only options are not Route options: a TypeError naming the option."""
    options: dict[str, Any] = {option: True}
    with pytest.raises(TypeError, match=option):
        Route("r", [t("a")], **options)


def test_a_bad_strategy_is_refused_through_the_strategy_validator() -> None:
    """An unknown strategy type is a ConfigError naming strategy.type."""
    with pytest.raises(ConfigError, match=r"strategy\.type"):
        Route("r", [t("a")], strategy={"type": "fastest"})


def test_weights_are_checked() -> None:
    """A negative weight is refused (targets[0].weight)."""
    with pytest.raises(ConfigError, match=r"targets\[0\]\.weight"):
        Route("r", [t("a", weight=-1)])


def test_a_weighted_route_needs_a_positive_weight_that_is_not_fallback_only() -> None:
    """weighted with only zero weights is refused on construction."""
    with pytest.raises(ConfigError, match="weighted"):
        Route("r", [t("a", weight=0)], strategy="weighted")


def test_fallbacks_are_limited_to_three_in_total() -> None:
    """Four fallback routes are refused."""
    others = [Route(f"f{i}", [t("x")]) for i in range(4)]
    with pytest.raises(ConfigError, match="fallbacks may name at most 3 routes"):
        Route("r", [t("a")], fallbacks={"general": others[:2], "context": others[2:]})


def test_a_fallback_may_not_name_the_route_itself() -> None:
    """A fallback route with the route's own name is a self-reference."""
    with pytest.raises(ConfigError, match="may not name the route itself"):
        Route("r", [t("a")], fallbacks={"general": [Route("r", [t("x")])]})


def test_a_fallback_cycle_is_refused() -> None:
    """r -> s -> (a route named r) over context fallbacks is a cycle."""
    older = Route("r", [t("x")])
    middle = Route("s", [t("y")], fallbacks={"context": [older]})
    with pytest.raises(ConfigError, match="form a cycle: r -> s -> r"):
        Route("r", [t("a")], fallbacks={"context": [middle]})


def test_a_chain_of_two_fallback_kinds_is_not_a_cycle() -> None:
    """r -context-> s -general-> (a route named r) is accepted: no request follows it."""
    older = Route("r", [t("x")])
    middle = Route("s", [t("y")], fallbacks={"general": [older]})
    route = Route("r", [t("a")], fallbacks={"context": [middle]})
    assert route.fallbacks.context == (middle,)


def test_an_unknown_fallback_kind_is_refused() -> None:
    """Only general, context and content are fallback kinds."""
    with pytest.raises(ConfigError, match=r"fallbacks\.other is not a fallback kind"):
        Route("r", [t("a")], fallbacks={"other": [Route("s", [t("x")])]})


def test_circuit_breaker_accepts_a_breaker_or_its_config_mapping() -> None:
    """circuit_breaker takes a Breaker or the config names (failure_threshold …)."""
    route = Route("r", [t("a")], circuit_breaker={"failure_threshold": 5, "cooldown_seconds": 10})
    assert route.breaker == Breaker(failures=5, open_for=10)
    with pytest.raises(ConfigError):
        Route("r", [t("a")], circuit_breaker={"failure_treshold": 5})


def test_a_route_is_a_chat_client_named_by_its_provider() -> None:
    """A Route satisfies ChatClient and its provider is its name; route_id defaults to it."""
    route = Route("triage", [t("a")], health=isolated_health())
    assert isinstance(route, ChatClient)
    assert (route.provider, route.route_id) == ("triage", "triage")
    assert Route("x", [t("a")], route_id="route_1").route_id == "route_1"


def test_a_route_on_a_fake_clock_gets_private_health_on_that_clock() -> None:
    """Without health, a route on a FakeClock never shares the process-wide registry."""
    health = isolated_health()
    route = Route("r", [t("a")], clock=health.clock)
    assert route.health.clock is health.clock
    assert Route("s", [t("b")]).health is Route("u", [t("c")]).health


@pytest.mark.parametrize("option", ["accept", "on_routed", "fault_classifier"])
def test_hooks_must_be_callable(option: str) -> None:
    """accept, on_routed and fault_classifier must be callables."""
    options: dict[str, Any] = {option: "not a function"}
    with pytest.raises(ConfigError, match=f"{option} must be callable"):
        Route("r", [t("a")], **options)
