"""One route's traffic from the request audit, on both backends: calls, answers, failures, share
and latency per target, the window, and the failed requests grouped by message."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from tests.store.audit._support import finished, record
from turnout.store import route_stats as route_stats_module
from turnout.store.ledger import AuditWriter
from turnout.store.route_stats import route_stats, route_windows

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

    from turnout.record import FinishedRequest
    from turnout.store import Store


def _answered(request_id: str, *, served: str, took: int, at: float) -> FinishedRequest:
    """A request on route `main` whose first call (to `backup`) failed and whose second, to
    `served`, answered in `took` ms."""
    made = record(request_id)
    answer = made["attempts"][1]
    answer["target"], answer["duration_ms"] = served, took
    return finished(made, at=at)


def _failed(request_id: str, message: str, *, at: float) -> FinishedRequest:
    made = record(request_id, tokens=(0, 0))
    made["attempts"] = made["attempts"][:1]
    made["answered"] = made["served_provider"] = made["served_model"] = None
    made["error"] = {"code": "all_targets_failed", "message": message}
    done = finished(made, at=at)
    return done._replace(status=503, outcome="failed")


async def _written(store: Store, tmp_path: Path, requests: list[FinishedRequest]) -> None:
    writer = AuditWriter(store, spill_dir=tmp_path / "spill")
    for done in requests:
        writer.submit(done)
    await writer.aclose()


async def test_targets_calls_share_and_latency(store: Store, tmp_path: Path) -> None:
    """Six answers split 4:2 between two targets after a failed call each: calls, answers and
    failures per target, each target's share of the answers, and its p50 and p95."""
    now = time.time()
    took = {"main": [10, 20, 30, 40], "other": [100, 200]}
    requests = [
        _answered(f"{target}-{n}", served=target, took=ms, at=now - n)
        for target, durations in took.items()
        for n, ms in enumerate(durations)
    ]
    await _written(store, tmp_path, requests)
    since = datetime.now(UTC) - timedelta(hours=1)
    stats = route_stats(store, project="default", route="main", since=since)
    assert (stats["requests"], stats["answered"]) == (6, 6)
    targets: dict[str, Any] = stats["targets"]
    assert targets["backup"] == {
        "calls": 6, "answered": 0, "failed": 6, "share": 0.0, "p50_ms": None, "p95_ms": None,
    }  # fmt: skip
    assert targets["main"] == {
        "calls": 4, "answered": 4, "failed": 0, "share": 4 / 6, "p50_ms": 20, "p95_ms": 40,
    }  # fmt: skip
    assert (targets["other"]["share"], targets["other"]["p50_ms"]) == (2 / 6, 100)
    assert stats["errors"] == []


async def test_only_the_window_the_route_and_the_project_count(
    store: Store, tmp_path: Path
) -> None:
    """A request before the window, on another route or in another project is left out."""
    now = time.time()
    old = _answered("old", served="main", took=5, at=now - 7200)
    elsewhere = finished({**record("elsewhere"), "route": "other-route"}, at=now)
    other_project = finished(record("other-project"), at=now, project="another")
    kept = _answered("kept", served="main", took=7, at=now)
    await _written(store, tmp_path, [old, elsewhere, other_project, kept])
    since = datetime.now(UTC) - timedelta(hours=1)
    stats = route_stats(store, project="default", route="main", since=since)
    assert stats["requests"] == 1
    assert stats["targets"]["main"]["calls"] == 1


async def test_failed_requests_are_grouped_by_message(store: Store, tmp_path: Path) -> None:
    """Three failures with one message and one with another: two groups, the larger first,
    each with its count and its latest request id."""
    now = time.time()
    requests = [
        _failed("a1", "every target failed: 429 rate limited", at=now - 30),
        _failed("a2", "every target failed: 429 rate limited", at=now - 20),
        _failed("a3", "every target failed: 429 rate limited", at=now - 10),
        _failed("b1", "every target failed: connection refused", at=now - 5),
        _answered("ok", served="main", took=9, at=now),
    ]
    await _written(store, tmp_path, requests)
    since = datetime.now(UTC) - timedelta(hours=1)
    stats = route_stats(store, project="default", route="main", since=since)
    assert (stats["requests"], stats["answered"]) == (5, 1)
    assert stats["errors"] == [
        {"status": 503, "code": "all_targets_failed",
         "message": "every target failed: 429 rate limited", "count": 3, "sample": "a3"},
        {"status": 503, "code": "all_targets_failed",
         "message": "every target failed: connection refused", "count": 1, "sample": "b1"},
    ]  # fmt: skip


async def test_per_target_figures_come_from_the_latest_requests(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With more requests in the window than the sample, the counts cover the whole window
    and say it was sampled, and the per-target figures come from the latest requests only."""
    monkeypatch.setattr(route_stats_module, "SAMPLE", 2)
    now = time.time()
    requests = [
        _answered("old-1", served="other", took=100, at=now - 40),
        _answered("old-2", served="other", took=100, at=now - 30),
        _answered("new-1", served="main", took=10, at=now - 20),
        _answered("new-2", served="main", took=20, at=now - 10),
    ]
    await _written(store, tmp_path, requests)
    since = datetime.now(UTC) - timedelta(hours=1)
    stats = route_stats(store, project="default", route="main", since=since)
    assert (stats["requests"], stats["answered"], stats["sampled"]) == (4, 4, True)
    assert set(stats["targets"]) == {"backup", "main"}
    assert stats["targets"]["main"]["calls"] == 2


async def test_windows_read_at_once_keep_to_their_own_requests(
    store: Store, tmp_path: Path
) -> None:
    """The hour and the day from one read: a request two hours old counts in the day alone,
    in its counts, its targets and its failed requests."""
    now = time.time()
    requests = [
        _answered("day-only", served="other", took=50, at=now - 7200),
        _failed("day-failure", "every target failed", at=now - 7100),
        _answered("recent", served="main", took=10, at=now - 60),
    ]
    await _written(store, tmp_path, requests)
    moment = datetime.now(UTC)
    windows = {"hour": moment - timedelta(hours=1), "day": moment - timedelta(days=1)}
    found = route_windows(store, project="default", route="main", windows=windows)
    assert (found["hour"]["requests"], found["day"]["requests"]) == (1, 3)
    assert "other" not in found["hour"]["targets"]
    assert found["day"]["targets"]["other"]["answered"] == 1
    assert found["hour"]["errors"] == []
    assert [group["sample"] for group in found["day"]["errors"]] == ["day-failure"]
    assert not found["day"]["sampled"]
