"""What the dashboard shows, as plain data: built from the live runtimes and the process's
activity, rendered by `pages` and served as JSON for the charts.

Rule 1: nothing here holds a secret: keys appear by name, providers by name, never a credential.
Rule 2: health is read from each runtime's registry at the moment of the request (monotonic
deadlines turned into seconds left), so every refresh shows the state the next call would meet.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from turnout.errors import RoutingError
from turnout.gateway.observe.activity import RecentRequest
from turnout.gateway.runtime.describe import caller_named, route_row
from turnout.record import CALL_OUTCOMES as CALLS

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.gateway.observe.activity import Activity
    from turnout.gateway.runtime.live import Runtime

__all__ = [
    "HealthRow",
    "RequestRow",
    "RouteView",
    "RoutingTestResult",
    "audited_request",
    "chart_data",
    "fallback_words",
    "health_rows",
    "request_rows",
    "route_views",
    "routing_test",
    "target_state",
]


def audited_request(found: Mapping[str, Any]) -> tuple[RecentRequest, dict[str, Any]]:
    """A request read back from the store's audit (`turnout.store.usage.get_request`) as the
    dashboard shows a remembered one, with its routing record as plain JSON."""
    record: dict[str, Any] = dict(found.get("routing") or {})
    usage = found.get("usage") or {}
    at = dt.datetime.fromisoformat(str(found["at"]).replace("Z", "+00:00")).timestamp()
    item = RecentRequest(
        request_id=str(found["request_id"]),
        at=at,
        path=str(found.get("endpoint") or ""),
        status=int(found.get("status") or 0),
        route=found.get("route"),
        requested_model=found.get("requested_model"),
        provider=found.get("served_provider"),
        model=found.get("served_model"),
        attempts=sum(1 for entry in record.get("attempts") or () if entry.get("outcome") in CALLS),
        failovers=int(record.get("fallbacks") or 0),
        duration_ms=float(found.get("latency_ms") or 0),
        input_tokens=int(usage.get("input_tokens") or 0),
        output_tokens=int(usage.get("output_tokens") or 0),
        cost=found.get("cost"),
        record=None,
    )
    return item, record


@dataclass(frozen=True, slots=True)
class HealthRow:
    """One health key: `state` (available, cooling_down, open, half_open, parked), failures in
    a row and seconds left on a cooldown, open breaker or park."""

    project: str
    key: str
    state: str
    failures: int
    seconds_left: float | None


@dataclass(frozen=True, slots=True)
class RouteView:
    """One route: its targets in try order, each with its health state, and who may use it."""

    project: str
    name: str
    route_id: str
    kind: str
    strategy: str
    serves: tuple[str, ...]
    targets: tuple[tuple[str, str], ...]  # (provider:model, health state)
    fallbacks: str
    granted_by: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RequestRow:
    """One recent request, ready to print."""

    request_id: str
    time: str
    path: str
    status: int
    route: str
    served: str
    attempts: int
    failovers: int
    duration_ms: float
    tokens: str
    cost: str


@dataclass(frozen=True, slots=True)
class RoutingTestResult:
    """Where a model would go for a key: the route and its targets, the grant that allows it,
    or the refusal a request would get."""

    model: str
    key: str | None
    route: str | None = None
    matched_by: str | None = None
    targets: tuple[str, ...] = ()
    granted_by: str | None = None
    refusal: str | None = None


def health_rows(runtimes: Mapping[str, Runtime]) -> list[HealthRow]:
    """Rule 2: every known health key of every project."""
    rows = []
    for project, runtime in runtimes.items():
        for entry in runtime.health.snapshot():
            left = None if entry.seconds_left is None else round(entry.seconds_left, 1)
            rows.append(HealthRow(project, entry.text, entry.state, entry.failures, left))
    return rows


def route_views(runtimes: Mapping[str, Runtime]) -> list[RouteView]:
    """Every configured and implicit route of every project, targets in try order."""
    views = []
    for project, runtime in runtimes.items():
        states = {entry.text: entry.state for entry in runtime.health.snapshot()}
        for entry in runtime.routes.values():
            row = route_row(entry)
            targets = tuple(
                (
                    f"{t['provider']}:{t['model'] or '*'}",
                    target_state(states, t["provider"], t["model"]),
                )
                for t in row["targets"]
            )
            fallbacks = fallback_words(row["fallbacks"])
            views.append(
                RouteView(
                    project=project,
                    name=row["name"],
                    route_id=entry.route.route_id,
                    kind=row["kind"],
                    strategy=row["strategy"],
                    serves=(*row["patterns"], *row["aliases"]),
                    targets=targets,
                    fallbacks=fallbacks,
                    granted_by=runtime.access.granted_by(row["name"]),
                )
            )
    return views


def fallback_words(fallbacks: Mapping[str, list[str]]) -> str:
    """A route's fallback routes by kind, in words (`general: a, b; content: c`)."""
    return "; ".join(f"{kind}: {', '.join(names)}" for kind, names in fallbacks.items() if names)


def target_state(states: Mapping[str, str], provider: str, model: str | None) -> str:
    """A target's health: its `provider/model` key, else its provider's, else available."""
    for key in (f"{provider}/{model}", provider):
        if key in states:
            return states[key]
    return "available"


def request_rows(activity: Activity, limit: int = 50) -> list[RequestRow]:
    """The last `limit` requests, newest first."""
    return [_request_row(item) for item in activity.recent(limit)]


def _request_row(item: RecentRequest) -> RequestRow:
    when = dt.datetime.fromtimestamp(item.at, dt.UTC).strftime("%H:%M:%S")
    served = f"{item.provider}:{item.model}" if item.provider else "-"
    tokens = f"{item.input_tokens} / {item.output_tokens}" if item.record is not None else "-"
    return RequestRow(
        request_id=item.request_id,
        time=when,
        path=item.path,
        status=item.status,
        route=item.route or "-",
        served=served,
        attempts=item.attempts,
        failovers=item.failovers,
        duration_ms=item.duration_ms,
        tokens=tokens,
        cost="-" if item.cost is None else f"${item.cost:.6f}",
    )


def chart_data(activity: Activity) -> dict[str, Any]:
    """The charts' series: failovers per route by hour (24 h) and usage per day."""
    hours, failovers = activity.failovers_by_hour()
    usage = activity.usage_by_day()
    return {
        "failovers": {"x": hours, "series": failovers},
        "usage": {
            "x": [row["at"] for row in usage],
            "days": [row["day"] for row in usage],
            "requests": [row["requests"] for row in usage],
            "tokens": [row["input_tokens"] + row["output_tokens"] for row in usage],
            "cost": [row["cost"] for row in usage],
        },
    }


def routing_test(runtime: Runtime, model: str, key: str | None) -> RoutingTestResult:
    """Where `model` goes on the chat endpoint for the key named `key` (None: anonymous)."""
    caller = None
    if key:
        try:
            caller = caller_named(runtime, key)
        except LookupError:
            return RoutingTestResult(model, key, refusal=f"no key named {key!r} in this project")
    try:
        found = runtime.resolve(model, endpoint="chat", caller=caller)
    except RoutingError as exc:
        return RoutingTestResult(model, key, refusal=f"{exc.status} {exc.code}: {exc}")
    row = route_row(found.entry)
    targets = tuple(
        f"{t['provider']}:{t['model'] or found.requested_model}" for t in row["targets"]
    )
    granted = None
    if caller is not None:
        granted = runtime.access.decide(caller, found.requested_model).granted_by
    elif runtime.access.is_open:
        granted = "everyone (implicit grant)"
    return RoutingTestResult(
        model,
        key,
        route=found.entry.name,
        matched_by=str(found.matched_by),
        targets=targets,
        granted_by=granted,
    )
