"""What this process served lately, for the dashboard and the admin API: the last requests
with their routing records, failovers per route by hour for a day, each route's requests and
failovers over the last 24 hours (by its id), and usage and cost by day.

Rule 1: everything is bounded: `capacity` recent requests, 24 hourly buckets per route (routes
come from the configuration, so their number is bounded too), `days` daily usage buckets.
Rule 2: `add` is cheap (a few dict operations, no I/O, the record kept as it is): it runs on
every request. It keeps what it was given as a tuple; the dashboard's `RecentRequest` is made
from it when the dashboard asks (`recent`, `get`).
Rule 3: times are wall-clock seconds (`clock`, default `time.time`), bucketed in UTC.
"""

from __future__ import annotations

import datetime as dt
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from collections.abc import Callable

    from turnout.record import RoutingRecord

__all__ = ["Activity", "RecentRequest"]

_HOUR = 3600
_DAY = 86400

_Seen: TypeAlias = "tuple[str, float, str, int, float, int, RoutingRecord | None]"
"""What `add` keeps: request id, when, path, status, duration, failovers, routing record."""


@dataclass(frozen=True, slots=True)
class RecentRequest:
    """One finished request as the dashboard lists it."""

    request_id: str
    at: float
    path: str
    status: int
    route: str | None
    requested_model: str | None
    provider: str | None
    model: str | None
    attempts: int
    failovers: int
    duration_ms: float
    input_tokens: int
    output_tokens: int
    cost: float | None
    record: RoutingRecord | None


@dataclass(slots=True)
class _Day:
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0


class Activity:
    """The dashboard's memory of this process (see the module rules)."""

    def __init__(
        self, *, capacity: int = 200, days: int = 14, clock: Callable[[], float] = time.time
    ) -> None:
        self._capacity = capacity
        self._days = days
        self._clock = clock
        self._recent: OrderedDict[str, _Seen] = OrderedDict()
        self._failovers: dict[str, dict[int, int]] = {}  # route -> hour -> count
        # route id -> hour -> [requests, failovers]
        self._traffic: dict[str, dict[int, list[int]]] = {}
        self._usage: dict[int, _Day] = {}  # day number -> totals

    def add(
        self,
        *,
        request_id: str,
        path: str,
        status: int,
        duration_ms: float,
        record: RoutingRecord | None,
        failovers: int = 0,
    ) -> None:
        """Rule 2: remember one finished request."""
        now = self._clock()
        recent = self._recent
        recent.pop(request_id, None)
        recent[request_id] = (request_id, now, path, status, duration_ms, failovers, record)
        while len(recent) > self._capacity:
            recent.popitem(last=False)
        if record is None:
            return
        hour = int(now // _HOUR)
        if failovers:
            hours = self._failovers.setdefault(record.route, {})
            hours[hour] = hours.get(hour, 0) + failovers
            for old in [h for h in hours if h <= hour - 24]:
                del hours[old]
        traffic = self._traffic.get(record.route_id)
        if traffic is None:
            traffic = self._traffic[record.route_id] = {}
        counts = traffic.get(hour)
        if counts is None:
            counts = traffic[hour] = [0, 0]
            for old in [h for h in traffic if h <= hour - 24]:
                del traffic[old]
        counts[0] += 1
        counts[1] += failovers
        day = int(now // _DAY)
        totals = self._usage.get(day)
        if totals is None:
            totals = self._usage[day] = _Day()
            for old in [d for d in self._usage if d <= day - self._days]:
                del self._usage[old]
        totals.requests += 1
        usage = record.usage
        if usage is not None:
            totals.input_tokens += usage.input_tokens
            totals.output_tokens += usage.output_tokens
        if record.cost:
            totals.cost += record.cost

    def recent(self, limit: int = 50) -> list[RecentRequest]:
        """The last `limit` requests, newest first."""
        items = list(self._recent.values())[-limit:]
        return [_recent_request(seen) for seen in reversed(items)]

    def get(self, request_id: str) -> RecentRequest | None:
        """One remembered request, or None once it has been pushed out."""
        seen = self._recent.get(request_id)
        return None if seen is None else _recent_request(seen)

    def failovers_by_hour(self) -> tuple[list[int], dict[str, list[int]]]:
        """The last 24 hours (each hour's start, epoch seconds, oldest first) and each route's
        failovers in those hours."""
        hour = int(self._clock() // _HOUR)
        hours = list(range(hour - 23, hour + 1))
        counts = {
            route: [buckets.get(h, 0) for h in hours]
            for route, buckets in sorted(self._failovers.items())
            if any(buckets.get(h, 0) for h in hours)
        }
        return [h * _HOUR for h in hours], counts

    def route_day(self, route_id: str) -> tuple[int, int]:
        """The requests a route (by its id) served and its failovers over the last 24 hours
        (the current hour and the 23 before it)."""
        hours = self._traffic.get(route_id)
        if not hours:
            return 0, 0
        since = int(self._clock() // _HOUR) - 23
        requests = failovers = 0
        for hour, (served, moved) in hours.items():
            if hour >= since:
                requests += served
                failovers += moved
        return requests, failovers

    def usage_by_day(self) -> list[dict[str, Any]]:
        """Requests, tokens and cost per UTC day for the last `days` days, oldest first."""
        today = int(self._clock() // _DAY)
        rows = []
        for day in range(today - self._days + 1, today + 1):
            totals = self._usage.get(day, _Day())
            rows.append(
                {
                    "day": dt.datetime.fromtimestamp(day * _DAY, dt.UTC).date().isoformat(),
                    "at": day * _DAY,
                    "requests": totals.requests,
                    "input_tokens": totals.input_tokens,
                    "output_tokens": totals.output_tokens,
                    "cost": round(totals.cost, 6),
                }
            )
        return rows


def _recent_request(seen: _Seen) -> RecentRequest:
    request_id, at, path, status, duration_ms, failovers, record = seen
    if record is None:
        return RecentRequest(
            request_id, at, path, status, None, None, None, None, 0, failovers, duration_ms,
            0, 0, None, None,
        )  # fmt: skip
    usage = record.usage
    return RecentRequest(
        request_id=request_id,
        at=at,
        path=path,
        status=status,
        route=record.route,
        requested_model=record.requested_model,
        provider=record.served_provider,
        model=record.served_model,
        attempts=sum(1 for entry in record.attempts if entry.is_call),
        failovers=failovers,
        duration_ms=duration_ms,
        input_tokens=0 if usage is None else usage.input_tokens,
        output_tokens=0 if usage is None else usage.output_tokens,
        cost=record.cost,
        record=record,
    )
