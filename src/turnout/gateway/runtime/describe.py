"""A route as people read it: its targets in try order, its fallback routes, what it serves.
Shared by `turnout routes`, the dashboard and the admin API, so they always agree."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnout.routing.strategies import try_order

if TYPE_CHECKING:
    from turnout.gateway.resolution.route_entry import RouteEntry
    from turnout.routing.route import Route

__all__ = ["FALLBACK_KINDS", "fallback_names", "route_row", "targets_in_order"]

FALLBACK_KINDS = ("general", "context", "content")
"""The kinds of fallback route, in the configuration's order."""


def targets_in_order(route: Route, model: str | None = None) -> list[dict[str, Any]]:
    """The targets in try order (the start the strategy picks may differ per request)."""
    targets = route.targets
    flags = [t.fallback_only for t in targets]
    start = next((i for i, only in enumerate(flags) if not only), 0)
    rows = []
    for index in try_order(len(targets), flags, start):
        target = targets[index]
        wire = target.model or model
        wire_model = getattr(target.client, "wire_model", None)
        if wire and callable(wire_model):
            wire = wire_model(wire)
        rows.append(
            {
                "name": target.name,
                "provider": target.client.provider,
                "model": wire,
                "fallback_only": target.fallback_only,
                "paused": target.paused,
            }
        )
    return rows


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
