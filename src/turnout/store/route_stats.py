"""One route's traffic, read from the request audit: per target, its calls, answers, failures
and latency, and the requests that failed grouped by what they were told.

Rule 1: the figures are fleet-wide: every replica and worker writes the same audit.
Rule 2: a target's `calls` count its attempt entries that called it (answered, failed, refused,
rejected, lost a race, cancelled); `answered` those that answered; `share` is its answers over
the route's answered calls; p50 and p95 are over its answered calls' durations. All of them are
read from the route's `SAMPLE` latest requests in the window (`sampled` says when the window
holds more), so a page costs the same however busy the route; `requests` and `answered` count
the whole window, from an index alone.
Rule 3: the route's requests that ended with an error are grouped by status, code and message
(the routing record's), most frequent first, each with its count and its latest request id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import ARRAY, String, any_, bindparam, func, select

from turnout.record import CALL_OUTCOMES
from turnout.store.models import RequestAttempt, RequestAudit
from turnout.store.usage import aware_utc

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from datetime import datetime

    from turnout.store.engine import Store

__all__ = ["SAMPLE", "route_stats", "route_windows"]

SAMPLE: Final = 5000
"""The latest requests of a window that its per-target figures are read from (Rule 2)."""
_ERRORS: Final = 20
"""Error groups kept, the most frequent."""
_ERROR_ROWS: Final = 1000
"""Failed requests read to group their messages (the most recent)."""


def _percentile(values: list[int], share: float) -> int | None:
    """The nearest-rank percentile of the sorted `values`; None for none."""
    if not values:
        return None
    rank = max(1, round(share * len(values)))
    return values[min(rank, len(values)) - 1]


def route_stats(store: Store, *, project: str, route: str, since: datetime) -> dict[str, Any]:
    """The traffic of `route` in `project` since `since` (Rules 1 to 3): `requests`,
    `answered`, `sampled` (the window held more requests than its figures are read from, of
    `sample_size` at most), `targets` (by target name: `calls`, `answered`, `failed`, `share`,
    `p50_ms`, `p95_ms`) and `errors` (`status`, `code`, `message`, `count`, `sample`)."""
    return route_windows(store, project=project, route=route, windows={"": since})[""]


def route_windows(
    store: Store, *, project: str, route: str, windows: Mapping[str, datetime]
) -> dict[str, dict[str, Any]]:
    """`route_stats` for each window (name to its start) at once: one sample of the route's
    latest requests and one read of their attempt rows and of the failed requests serve every
    window; only the counts are read per window."""
    starts = {name: aware_utc(since) for name, since in windows.items()}
    widest = min(starts.values())
    mine = (RequestAudit.project == project, RequestAudit.route == route)
    latest = (
        select(RequestAudit.request_id, RequestAudit.at)
        .where(*mine, RequestAudit.at >= widest)
        .order_by(RequestAudit.at.desc())
        .limit(SAMPLE)
    )
    with store.engine.connect() as connection:
        counts = {
            name: connection.execute(
                select(func.count(), func.count().filter(RequestAudit.status < 400)).where(
                    *mine, RequestAudit.at >= since
                )
            ).one()
            for name, since in starts.items()
        }
        # The ids first, then their attempt rows by the attempts' key: a planner that guesses
        # the sample's size wrong would otherwise scan every attempt row.
        sample = {request_id: aware_utc(at) for request_id, at in connection.execute(latest)}
        ids = list(sample)
        if store.is_postgres:  # one array parameter: a list of thousands is slow to plan
            among = RequestAttempt.request_id == any_(bindparam("ids", ids, ARRAY(String)))
        else:
            among = RequestAttempt.request_id.in_(ids)
        columns = (
            RequestAttempt.request_id,
            RequestAttempt.target,
            RequestAttempt.outcome,
            RequestAttempt.duration_ms,
        )
        query = select(*columns).where(among, RequestAttempt.outcome.in_(CALL_OUTCOMES))
        calls = connection.execute(query).all() if ids else []
        failed = connection.execute(
            select(
                RequestAudit.at,
                RequestAudit.status,
                RequestAudit.error_code,
                RequestAudit.request_id,
                RequestAudit.record[("error", "message")].as_string(),
            )
            .where(*mine, RequestAudit.at >= widest, RequestAudit.status >= 400)
            .order_by(RequestAudit.at.desc())
            .limit(_ERROR_ROWS)
        ).all()
    found = {}
    for name, since in starts.items():
        requests, answered = counts[name]
        in_sample = sum(1 for at in sample.values() if at >= since)
        window_calls = [row[1:] for row in calls if sample[row[0]] >= since]
        found[name] = {
            "requests": int(requests),
            "answered": int(answered),
            "sampled": int(requests) > in_sample,
            "sample_size": SAMPLE,
            "targets": _targets(window_calls),
            "errors": _error_groups([row[1:] for row in failed if aware_utc(row[0]) >= since]),
        }
    return found


def _targets(calls: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Rule 2 over the sample's calls (target, outcome, duration)."""
    targets: dict[str, dict[str, Any]] = {}
    durations: dict[str, list[int]] = {}
    for target, outcome, duration in calls:
        row = targets.get(target)
        if row is None:
            row = targets[target] = {"calls": 0, "answered": 0, "failed": 0}
            durations[target] = []
        row["calls"] += 1
        if outcome == "answered":
            row["answered"] += 1
            if duration is not None:
                durations[target].append(int(duration))
        elif outcome == "failed":
            row["failed"] += 1
    all_answers = sum(row["answered"] for row in targets.values())
    for target, row in targets.items():
        taken = sorted(durations[target])
        row["share"] = row["answered"] / all_answers if all_answers else None
        row["p50_ms"] = _percentile(taken, 0.50)
        row["p95_ms"] = _percentile(taken, 0.95)
    return targets


def _error_groups(failed: Sequence[Any]) -> list[dict[str, Any]]:
    """Rule 3 over the failed requests, newest first."""
    groups: dict[tuple[int, str | None, str], dict[str, Any]] = {}
    for status, code, request_id, text in failed:
        message = text or ""
        group = groups.get((status, code, message))
        if group is None:
            groups[status, code, message] = {
                "status": status,
                "code": code,
                "message": message,
                "count": 1,
                "sample": request_id,
            }
        else:
            group["count"] += 1
    ranked = sorted(groups.values(), key=lambda group: -group["count"])
    return ranked[:_ERRORS]
