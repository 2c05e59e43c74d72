"""The engine's value objects from a validated configuration: a configured route's options
(`RouteOptions`) and each of its targets (`Target`). The one place where configuration fields
become engine options, so a new option is added here once."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from turnout.routing.options import RouteOptions
from turnout.routing.target import Target

if TYPE_CHECKING:
    from turnout.routing.client import ChatClient
    from turnout.schema import RouteConfig, TargetConfig

__all__ = ["build_route_options", "build_target"]


def build_route_options(config: RouteConfig, *, session_pin_ttl: float) -> RouteOptions:
    """The options of the configured route `config`, its strategy built on its own randomness
    (every engine route derived from `config` shares it); `session_pin_ttl` is the
    configuration's default, in seconds."""
    breaker = config.circuit_breaker
    return RouteOptions.build(
        strategy=config.strategy,
        retry_on=config.retry_on,
        retryable_statuses=config.retryable_statuses,
        fail_over_on_refusal=config.fail_over_on_refusal,
        max_attempts=config.max_attempts,
        request_timeout=config.request_timeout,
        stream_idle_timeout=config.stream_idle_timeout,
        cost_budget=config.cost_budget,
        hedge_after=config.hedge_after,
        when_all_unhealthy=config.when_all_unhealthy,
        circuit_breaker=breaker.model_dump() if breaker is not None else None,
        session_pin_ttl_seconds=session_pin_ttl,
        rng=random.Random(),
    )


def build_target(config: TargetConfig, client: ChatClient) -> Target:
    """The target `config` describes, calling `client` (its provider's adapter)."""
    return Target(
        config.display_name,
        client,
        config.model,
        timeout=config.timeout,
        first_token_timeout=config.first_token_timeout,
        max_retries=config.max_retries,
        weight=config.weight,
        fallback_only=config.fallback_only,
        paused=config.paused,
        health_key=config.health_key,
        context_window=config.context_window,
        capabilities=None if config.capabilities is None else frozenset(config.capabilities),
    )
