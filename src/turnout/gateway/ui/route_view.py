"""One route's page, as plain data: its targets with their weights and this replica's health,
the traffic the audit holds for it (the whole fleet's), who may use it, and its policy as
configured. Rendered by `pages.route_page`.

Rule 1: nothing here holds a secret: providers by name, keys by their bindings' names.
Rule 2: a route is found by its id, else by its name when only one project has a route of
that name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from turnout.gateway.runtime.describe import route_row
from turnout.gateway.ui.views import fallback_words, target_state

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.gateway.runtime.live import Runtime
    from turnout.gateway.runtime.route_entry import RouteEntry

__all__ = ["RoutePage", "TargetLine", "find_route", "route_page"]

WINDOWS = {"hour": 3600.0, "day": 86_400.0}
"""The traffic windows the page shows, in seconds."""


@dataclass(frozen=True, slots=True)
class TargetLine:
    """One target: `weight` and its `configured` share of the answers (weighted routes only),
    this replica's `state`, and its traffic per window (`traffic[window]`: the audit's
    figures, or None when the audit holds none)."""

    name: str
    served_by: str
    weight: int
    configured: float | None
    fallback_only: bool
    paused: bool
    state: str
    traffic: Mapping[str, Mapping[str, Any] | None]


@dataclass(frozen=True, slots=True)
class RoutePage:
    """A route's page: `windows` (window to the audit's `route_stats`), None without a store;
    `unread` says why the audit could not be read."""

    project: str
    name: str
    route_id: str
    kind: str
    strategy: str
    serves: tuple[str, ...]
    targets: tuple[TargetLine, ...]
    fallbacks: str
    granted_by: tuple[str, ...]
    policy: tuple[tuple[str, str], ...]
    windows: Mapping[str, Mapping[str, Any]] | None
    unread: str | None = None


def find_route(
    runtimes: Mapping[str, Runtime], wanted: str
) -> tuple[str, Runtime, RouteEntry] | None:
    """Rule 2: the project, runtime and route entry of `wanted` (an id or a name)."""
    named = []
    for project, runtime in runtimes.items():
        for entry in runtime.routes.values():
            if entry.route.route_id == wanted:
                return project, runtime, entry
            if entry.name == wanted:
                named.append((project, runtime, entry))
    return named[0] if len(named) == 1 else None


_UNSET = {
    "retry_on": "provider_error, timeout, rate_limited, quota_exhausted (the default)",
    "retryable_statuses": "every 5xx but 501, and 409 (the default)",
    "request_timeout": "none",
    "hedge_after": "off",
    "cost_budget": "none",
    "circuit_breaker": "the gateway's defaults",
}
"""What a setting left unset means, in words."""


def _policy(entry: RouteEntry) -> tuple[tuple[str, str], ...]:
    """The route's settings as configured (its targets and names are shown apart)."""
    if entry.config is None:
        return (("made from", f"the {entry.kind} provider route"),)
    settings = entry.config.model_dump(
        mode="json", exclude={"name", "models", "aliases", "targets"}
    )
    return tuple(
        (name, _UNSET.get(name, "-") if value is None else _words(value))
        for name, value in settings.items()
    )


def _words(value: Any) -> str:
    if isinstance(value, dict):
        parts = [f"{key}: {_words(inner)}" for key, inner in value.items() if inner not in ({}, [])]
        return "; ".join(parts) or "-"
    if isinstance(value, list | tuple):
        return ", ".join(_words(inner) for inner in value) or "-"
    return str(value).lower() if isinstance(value, bool) else str(value)


def route_page(
    project: str,
    runtime: Runtime,
    entry: RouteEntry,
    windows: Mapping[str, Mapping[str, Any]] | None,
    *,
    unread: str | None = None,
) -> RoutePage:
    """The page of `entry` in `project` over `windows` (the audit's figures per window)."""
    row = route_row(entry)
    route = entry.route
    states = {item.text: item.state for item in runtime.health.snapshot()}
    weighted = row["strategy"] == "weighted"
    total = sum(t.weight for t in route.targets if not t.fallback_only) if weighted else 0
    described = {t["name"]: t for t in row["targets"]}
    lines = []
    for target in route.targets:
        provider, model = described[target.name]["provider"], described[target.name]["model"]
        lines.append(
            TargetLine(
                name=target.name,
                served_by=f"{provider}:{model or '*'}",
                weight=target.weight,
                configured=(target.weight / total) if total and not target.fallback_only else None,
                fallback_only=target.fallback_only,
                paused=target.paused,
                state=target_state(states, provider, model),
                traffic={
                    window: (stats or {}).get("targets", {}).get(target.name)
                    for window, stats in (windows or {}).items()
                },
            )
        )
    return RoutePage(
        project=project,
        name=entry.name,
        route_id=route.route_id,
        kind=entry.kind,
        strategy=row["strategy"],
        serves=(*row["patterns"], *row["aliases"]),
        targets=tuple(lines),
        fallbacks=fallback_words(row["fallbacks"]),
        granted_by=runtime.access.granted_by(entry.name),
        policy=_policy(entry),
        windows=windows,
        unread=unread,
    )
