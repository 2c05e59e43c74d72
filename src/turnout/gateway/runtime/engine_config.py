"""The engine's value objects from a validated configuration: a configured route's options
(`RouteOptions`) and each of its targets (`Target`). The one place where configuration fields
become engine options, so a new option is added here once."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Final

from turnout.routing.model_info import DescribedClient
from turnout.routing.options import RouteOptions
from turnout.routing.target import Target

if TYPE_CHECKING:
    from turnout.routing.client import ChatClient
    from turnout.schema import RouteConfig, TargetConfig

__all__ = [
    "GATEWAY_ROUTE_FIELDS",
    "GATEWAY_TARGET_FIELDS",
    "ROUTE_OPTION_FIELDS",
    "TARGET_OPTION_FIELDS",
    "build_route_options",
    "build_target",
    "catalog_window",
]

ROUTE_OPTION_FIELDS: Final = (
    "strategy",
    "retry_on",
    "retryable_statuses",
    "fail_over_on_refusal",
    "max_attempts",
    "request_timeout",
    "stream_idle_timeout",
    "cost_budget",
    "hedge_after",
    "when_all_unhealthy",
)
"""Route fields the engine takes under the same name and meaning, passed on as they are."""

GATEWAY_ROUTE_FIELDS: Final = frozenset(
    {
        "name",
        "models",
        "aliases",
        "targets",
        "enabled",
        "commit_on_headers",
        "circuit_breaker",
        "fallbacks",
        "cache",
        "allow_cross_provider",
        "switch_family_on_quota",
        "org_key_fallback_for_caller_credentials",
    }
)
"""Route fields the gateway reads itself, or converts before the engine sees them."""

TARGET_OPTION_FIELDS: Final = (
    "timeout",
    "first_token_timeout",
    "max_retries",
    "weight",
    "fallback_only",
    "paused",
    "health_key",
    "context_window",
)
"""Target fields `Target` takes under the same name and meaning, passed on as they are."""

GATEWAY_TARGET_FIELDS: Final = frozenset({"provider", "model", "name", "capabilities"})
"""Target fields the gateway reads itself, or converts before the engine sees them."""


def build_route_options(
    config: RouteConfig, *, session_pin_ttl: float, rng: random.Random | None = None
) -> RouteOptions:
    """The options of the configured route `config`, its strategy built on `rng` (default: a
    generator of its own; every engine route derived from `config` shares it);
    `session_pin_ttl` is the configuration's default, in seconds."""
    breaker = config.circuit_breaker
    return RouteOptions.build(
        **{field: getattr(config, field) for field in ROUTE_OPTION_FIELDS},
        circuit_breaker=breaker.model_dump() if breaker is not None else None,
        session_pin_ttl_seconds=session_pin_ttl,
        rng=rng if rng is not None else random.Random(),
    )


def build_target(config: TargetConfig, client: ChatClient) -> Target:
    """The target `config` describes, calling `client` (its provider's adapter). A target
    without a `context_window` of its own takes its model's from the catalog (looked up here,
    once), when the client knows the model."""
    capabilities = config.capabilities
    options = {field: getattr(config, field) for field in TARGET_OPTION_FIELDS}
    if options["context_window"] is None:
        options["context_window"] = catalog_window(client, config.model)
    return Target(
        config.display_name,
        client,
        config.model,
        **options,
        capabilities=None if capabilities is None else frozenset(capabilities),
    )


def catalog_window(client: object, model: str | None) -> int | None:
    """The context window the catalog gives `model` on `client` (None: unknown)."""
    if model is None or not isinstance(client, DescribedClient):
        return None
    info = client.model_info(model)
    return None if info is None else info.context_window
