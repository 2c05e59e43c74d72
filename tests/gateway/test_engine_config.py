"""The one place where configuration fields become engine options: every field of a route and
a target is either passed to the engine under its own name or read by the gateway itself."""

from __future__ import annotations

import inspect

from turnout.gateway.runtime.engine_config import (
    GATEWAY_ROUTE_FIELDS,
    GATEWAY_TARGET_FIELDS,
    ROUTE_OPTION_FIELDS,
    TARGET_OPTION_FIELDS,
    build_route_options,
    build_target,
)
from turnout.providers import MockProvider
from turnout.routing.options import RouteOptions
from turnout.routing.target import Target
from turnout.schema import RouteConfig, TargetConfig


def test_every_route_field_is_passed_on_or_read_by_the_gateway() -> None:
    """A new route option fails here until it is wired to the engine or to the gateway."""
    passed = set(ROUTE_OPTION_FIELDS)
    assert not passed & GATEWAY_ROUTE_FIELDS
    assert passed | GATEWAY_ROUTE_FIELDS == set(RouteConfig.model_fields)


def test_every_target_field_is_passed_on_or_read_by_the_gateway() -> None:
    """A new target option fails here until it is wired to the engine or to the gateway."""
    passed = set(TARGET_OPTION_FIELDS)
    assert not passed & GATEWAY_TARGET_FIELDS
    assert passed | GATEWAY_TARGET_FIELDS == set(TargetConfig.model_fields)


def test_passed_fields_are_engine_parameters_of_the_same_name() -> None:
    """Each passed-on field names a keyword of the engine's constructor."""
    route_parameters = inspect.signature(RouteOptions.build).parameters
    target_parameters = inspect.signature(Target).parameters
    assert set(ROUTE_OPTION_FIELDS) <= set(route_parameters)
    assert set(TARGET_OPTION_FIELDS) <= set(target_parameters)


def test_configured_values_reach_the_engine() -> None:
    """Values differing from every default arrive in the route options and the target."""
    route = RouteConfig.model_validate(
        {
            "name": "r",
            "targets": [{"provider": "p"}],
            "max_attempts": 4,
            "request_timeout": 7.5,
            "stream_idle_timeout": 9,
            "hedge_after": 2,
            "when_all_unhealthy": "fail",
            "fail_over_on_refusal": False,
            "cost_budget": 0.5,
        }
    )
    options = build_route_options(route, session_pin_ttl=60)
    assert options.retry.max_attempts == 4
    assert not options.retry.fail_over_on_refusal
    assert (options.timeouts.request, options.timeouts.stream_idle) == (7.5, 9)
    assert options.timeouts.hedge_after == 2
    assert (options.when_all_unhealthy, options.cost_budget) == ("fail", 0.5)
    target = build_target(
        TargetConfig.model_validate(
            {
                "provider": "p",
                "model": "m",
                "timeout": 3,
                "first_token_timeout": 2,
                "max_retries": 2,
                "weight": 7,
                "fallback_only": True,
                "paused": True,
                "health_key": "k",
                "context_window": 1000,
                "capabilities": ["tools"],
            }
        ),
        MockProvider(),
    )
    assert (target.timeout, target.first_token_timeout, target.max_retries) == (3, 2, 2)
    assert (target.weight, target.fallback_only, target.paused) == (7, True, True)
    assert (target.health_key, target.context_window) == ("k", 1000)
    assert target.capabilities == frozenset({"tools"})
