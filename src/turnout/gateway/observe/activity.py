"""What this process served lately, for the dashboard: the last requests with their routing
records, failovers per route by hour for a day, and usage and cost by day.

Rule 1: everything is bounded: `capacity` recent requests, 24 hourly buckets per route (routes
come from the configuration, so their number is bounded too), `days` daily usage buckets.
Rule 2: `add` is cheap (a few dict operations, no I/O, the record kept as it is): it runs on
every request.
Rule 3: times are wall-clock seconds (`clock`, default `time.time`), bucketed in UTC.
"""

from __future__ import annotations

import datetime as dt
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from turnout.record import RoutingRecord

__all__ = ["Activity", "RecentRequest"]

_HOUR = 3600
_DAY = 86400


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
        self._recent: OrderedDict[str, RecentRequest] = OrderedDict()
        self._failovers: dict[str, dict[int, int]] = {}  # route -> hour -> count
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
        usage = None if record is None else record.usage
        entry = RecentRequest(
            request_id=request_id,
            at=now,
            path=path,
            status=status,
            route=None if record is None else record.route,
            requested_model=None if record is None else record.requested_model,
            provider=None if record is None else record.served_provider,
            model=None if record is None else record.served_model,
            attempts=0 if record is None else sum(1 for e in record.attempts if e.is_call),
            failovers=failovers,
            duration_ms=duration_ms,
            input_tokens=0 if usage is None else usage.input_tokens,
            output_tokens=0 if usage is None else usage.output_tokens,
            cost=None if record is None else record.cost,
            record=record,
        )
        self._recent.pop(request_id, None)
        self._recent[request_id] = entry
        while len(self._recent) > self._capacity:
            self._recent.popitem(last=False)
        if record is None:
            return
        if failovers:
            hours = self._failovers.setdefault(record.route, {})
            hour = int(now // _HOUR)
            hours[hour] = hours.get(hour, 0) + failovers
            for old in [h for h in hours if h <= hour - 24]:
                del hours[old]
        day = int(now // _DAY)
        totals = self._usage.get(day)
        if totals is None:
            totals = self._usage[day] = _Day()
            for old in [d for d in self._usage if d <= day - self._days]:
                del self._usage[old]
        totals.requests += 1
        totals.input_tokens += entry.input_tokens
        totals.output_tokens += entry.output_tokens
        totals.cost += entry.cost or 0.0

    def recent(self, limit: int = 50) -> list[RecentRequest]:
        """The last `limit` requests, newest first."""
        items = list(self._recent.values())[-limit:]
        items.reverse()
        return items

    def get(self, request_id: str) -> RecentRequest | None:
        """One remembered request, or None once it has been pushed out."""
        return self._recent.get(request_id)

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
