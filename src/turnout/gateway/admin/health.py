"""`GET /admin/v1/health` and `GET /admin/v1/upstreams`: this replica's live view of its
health registries and of the routes that can fail over.

Rule 1: health reads each served project's registry snapshot (the registry's breaker policy,
never a route's override); a key reads as its provider and model (or route and target) when
the registry's `health_key_by` says which, and `seconds_left` is rounded to milliseconds.
Rule 2: upstreams lists each route with at least two targets, its targets in try order with
their health, the healthy ones (`available` and not paused), the active one (the first
healthy one in try order, None when none is), the bindings that grant the route, and the
requests it served and its failovers over the last 24 hours on this replica (`traffic_24h`,
`failovers_24h`; both 0 when the app keeps no activity); and each provider with the routes
whose targets use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnout.gateway.admin.dispatch import Operation
from turnout.gateway.admin.replies import json_body
from turnout.gateway.admin.served import served_projects
from turnout.gateway.runtime.describe import target_order, target_row

if TYPE_CHECKING:
    from turnout.gateway.admin.dispatch import AdminCall
    from turnout.gateway.admin.served import ServedProject
    from turnout.gateway.observe.activity import Activity
    from turnout.gateway.responses.respond import Reply
    from turnout.gateway.runtime.route_entry import RouteEntry
    from turnout.routing.health import HealthSnapshot, KeyHealth

__all__ = ["health_operations"]


async def get_health(call: AdminCall) -> Reply:
    projects = served_projects(call)
    return json_body(200, {"data": [_project_health(project) for project in projects]})


def _project_health(project: ServedProject) -> dict[str, Any]:
    health = project.runtime.health
    breaker = health.breaker
    providers = project.runtime.providers
    return {
        "project": project.name,
        "project_id": project.id,
        "breaker": {
            "enabled": breaker.enabled,
            "failure_threshold": breaker.failures,
            "cooldown_seconds": breaker.open_for,
            "failure_window_seconds": breaker.window,
        },
        "keys": [_key(entry, health.key_by, providers) for entry in health.snapshot()],
    }


def _key(entry: KeyHealth, key_by: str, providers: Any) -> dict[str, Any]:
    key = entry.key
    provider = model = route = target = None
    if isinstance(key, tuple) and len(key) == 2:
        if key_by == "target":
            route, target = key
        else:
            provider, model = key
    elif isinstance(key, str) and key in providers:
        provider = key
    left = entry.seconds_left
    return {
        "key": entry.text,
        "provider": provider,
        "model": model,
        "route": route,
        "target": target,
        "state": entry.state,
        "failures": entry.failures,
        "seconds_left": None if left is None else round(left, 3),
    }


async def get_upstreams(call: AdminCall) -> Reply:
    routes: list[dict[str, Any]] = []
    providers: list[dict[str, Any]] = []
    for project in served_projects(call):
        snapshot = project.runtime.health.snapshot()
        entries = list(project.runtime.routes.values())
        routes.extend(
            _upstream_route(project, entry, snapshot, call.activity)
            for entry in entries
            if len(entry.route.targets) >= 2
        )
        for name in project.runtime.providers:
            served = [e.name for e in entries if any(_uses(t, name) for t in e.route.targets)]
            where = {"project": project.name, "project_id": project.id}
            providers.append({**where, "provider": name, "routes": served})
    return json_body(200, {"routes": routes, "providers": providers})


def _uses(target: Any, provider: str) -> bool:
    return bool(target.client.provider == provider)


def _upstream_route(
    project: ServedProject,
    entry: RouteEntry,
    snapshot: HealthSnapshot,
    activity: Activity | None,
) -> dict[str, Any]:
    route = entry.route
    traffic, failovers = (0, 0) if activity is None else activity.route_day(route.route_id)
    targets = []
    for index in target_order(route):
        row = target_row(route, index)
        known = snapshot.get(route.key_for(index, row["model"]))
        state = known.state if known is not None else "available"
        healthy = state == "available" and not row["paused"]
        targets.append({**row, "state": state, "healthy": healthy})
    healthy_names = [row["name"] for row in targets if row["healthy"]]
    return {
        "project": project.name,
        "project_id": project.id,
        "route": entry.name,
        "kind": entry.kind,
        "strategy": route.strategy.type,
        "targets": targets,
        "healthy": healthy_names,
        "active": healthy_names[0] if healthy_names else None,
        "granted_by": list(project.runtime.access.granted_by(entry.name)),
        "traffic_24h": traffic,
        "failovers_24h": failovers,
    }


def health_operations() -> tuple[Operation, ...]:
    """`/health` and `/upstreams`."""
    return (
        Operation("GET", "/health", get_health, "This replica's health, per project",
                  "health", (200, "HealthView")),
        Operation("GET", "/upstreams", get_upstreams,
                  "Routes with failover and their healthy targets; providers and their routes",
                  "health", (200, "UpstreamsView")),
    )  # fmt: skip
