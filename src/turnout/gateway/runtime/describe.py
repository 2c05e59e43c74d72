"""A route as people read it: its targets in try order, its fallback routes, what it serves;
where a model went; the caller a key stands for. Shared by `turnout routes`, the dashboard and
the admin API, so they always agree.

Rule 1: the try order shown starts at the first target that is not `fallback_only`; the
strategy may start a request elsewhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnout.providers import facts_of
from turnout.routing.strategies import try_order

if TYPE_CHECKING:
    from turnout.access.keys import Caller
    from turnout.gateway.runtime.live import Runtime
    from turnout.gateway.runtime.route_entry import Resolution, RouteEntry
    from turnout.routing.route import Route

__all__ = [
    "FALLBACK_KINDS",
    "caller_named",
    "fallback_names",
    "resolution_row",
    "route_row",
    "target_order",
    "target_row",
    "targets_in_order",
]

FALLBACK_KINDS = ("general", "context", "content")
"""The kinds of fallback route, in the configuration's order."""


def target_order(route: Route) -> list[int]:
    """Rule 1: the indices of the route's targets in try order."""
    flags = [target.fallback_only for target in route.targets]
    start = next((index for index, only in enumerate(flags) if not only), 0)
    return list(try_order(len(flags), flags, start))


def targets_in_order(route: Route, model: str | None = None) -> list[dict[str, Any]]:
    """The targets in try order (the start the strategy picks may differ per request)."""
    return [target_row(route, index, model) for index in target_order(route)]


def target_row(route: Route, index: int, model: str | None = None) -> dict[str, Any]:
    """Target `index` of the route: name, provider, the wire model asked for `model` (None:
    the requested model), `fallback_only` and `paused`."""
    target = route.targets[index]
    wire = target.model or model
    if wire:
        wire = facts_of(target.client).wire_model_for(wire)
    return {
        "name": target.name,
        "provider": target.client.provider,
        "model": wire,
        "fallback_only": target.fallback_only,
        "paused": target.paused,
    }


def fallback_names(route: Route) -> dict[str, list[str]]:
    """The route's fallback routes by kind (general, context, content)."""
    return {kind: [other.name for other in route.fallbacks.of(kind)] for kind in FALLBACK_KINDS}


def route_row(entry: RouteEntry) -> dict[str, Any]:
    return {
        "name": entry.name,
        "kind": entry.kind,
        "strategy": entry.route.strategy.type,
        "patterns": list(entry.patterns),
        "aliases": [alias.alias for alias in entry.aliases.values()],
        "targets": targets_in_order(entry.route),
        "fallbacks": fallback_names(entry.route),
        "messages": entry.messages_route is not None,
        "embeddings": entry.embeddings_route is not None,
    }


def resolution_row(found: Resolution, endpoint: str) -> dict[str, Any]:
    """Where one model went: route, kind, how it matched, strategy, targets, fallbacks."""
    return {
        "model": found.requested_model,
        "endpoint": endpoint,
        "route": found.entry.name,
        "kind": found.entry.kind,
        "matched_by": found.matched_by,
        "pattern": found.pattern,
        "strategy": found.route.strategy.type,
        "targets": targets_in_order(found.route, found.requested_model),
        "fallbacks": fallback_names(found.route),
    }


def caller_named(runtime: Runtime, key: str) -> Caller:
    """The caller of the configured key named `key`, else of the key `key` itself; a
    `LookupError` saying so when neither is known."""
    # Imported when called: `turnout routes` imports this module with the command line.
    from turnout.access.keys import Caller  # noqa: PLC0415

    for index, config in enumerate(runtime.config.keys):
        if config.name == key:
            return Caller.from_config(config, runtime.project, path=f"keys[{index}]")
    found = runtime.keys.lookup(key) if runtime.keys is not None else None
    if found is None:
        raise LookupError(f'no key named "{key}" in the configuration')
    return found
