"""The dashboard's memory of recent requests: bounded, bucketed by hour and day, on a fake clock."""

from __future__ import annotations

from turnout.gateway.observe.activity import Activity
from turnout.record import AttemptEntry, RoutingRecord, Usage

HOUR = 3600.0
DAY = 86400.0


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _record(request_id: str, *, route: str = "main", cost: float = 0.5) -> RoutingRecord:
    record = RoutingRecord(request_id, route, route, "ordered", "first")
    record.add(AttemptEntry(1, "a", 0, "failed", provider="a", model="m", error_class="timeout"))
    record.add(AttemptEntry(2, "b", 1, "answered", provider="b", model="m"))
    record.served_provider, record.served_model = "b", "m"
    record.usage, record.cost = Usage(10, 5), cost
    return record


def _add(activity: Activity, request_id: str, **kwargs: object) -> None:
    record = _record(request_id, **kwargs)  # type: ignore[arg-type]
    activity.add(
        request_id=request_id, path="/v1/chat/completions", status=200, duration_ms=3.0,
        record=record, failovers=1,
    )  # fmt: skip


def test_recent_requests_are_bounded_and_newest_first() -> None:
    """Past `capacity`, the oldest request is forgotten; the list reads newest first."""
    activity = Activity(capacity=3, clock=Clock(10 * DAY))
    for number in range(5):
        _add(activity, f"req-{number}")
    assert [item.request_id for item in activity.recent()] == ["req-4", "req-3", "req-2"]
    assert activity.get("req-0") is None
    found = activity.get("req-4")
    assert found is not None
    assert (found.provider, found.attempts, found.input_tokens) == ("b", 2, 10)


def test_failovers_are_counted_per_route_per_hour_for_a_day() -> None:
    """Failovers land in the hour they happened and leave the chart after 24 hours."""
    clock = Clock(10 * DAY)
    activity = Activity(clock=clock)
    _add(activity, "r1")
    clock.now += 2 * HOUR
    _add(activity, "r2")
    _add(activity, "r3", route="other")
    hours, counts = activity.failovers_by_hour()
    assert len(hours) == 24
    assert counts["main"][-3:] == [1, 0, 1]
    assert counts["other"][-1] == 1
    clock.now += 23 * HOUR
    _, counts = activity.failovers_by_hour()
    assert counts == {"main": [1] + [0] * 23, "other": [1] + [0] * 23}  # the first hour left


def test_usage_is_summed_per_utc_day() -> None:
    """Tokens, cost and requests add up per day; days without traffic read as zero."""
    clock = Clock(10 * DAY + 100)
    activity = Activity(days=3, clock=clock)
    _add(activity, "a", cost=0.25)
    _add(activity, "b", cost=0.5)
    clock.now += DAY
    _add(activity, "c", cost=1.0)
    rows = activity.usage_by_day()
    assert [row["requests"] for row in rows] == [0, 2, 1]
    assert rows[1]["cost"] == 0.75
    assert rows[1]["input_tokens"] == 20
    assert rows[1]["day"] == "1970-01-11"


def test_a_routes_requests_and_failovers_over_the_last_day() -> None:
    """`route_day` sums a route's requests and failovers over the current hour and the 23
    before it, by route id; older hours and other routes are not counted."""
    clock = Clock(10 * DAY)
    activity = Activity(clock=clock)
    _add(activity, "r1")
    clock.now += 2 * HOUR
    _add(activity, "r2")
    _add(activity, "r3", route="other")
    assert activity.route_day("main") == (2, 2)
    assert activity.route_day("other") == (1, 1)
    assert activity.route_day("nowhere") == (0, 0)
    clock.now += 22 * HOUR  # r1's hour is now 24 hours ago
    assert activity.route_day("main") == (1, 1)
    _add(activity, "r4")
    assert activity.route_day("main") == (2, 2)
