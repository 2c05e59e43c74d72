"""The dashboard's request list (`/ui/requests`): filters read from the query string, found
in the request audit when the gateway has a store, else among this process's recent requests.

Rule 1: the filters are a plain GET form (route, key, status class, outcome, time window, a
request id), so the list works without JavaScript; a value outside its choices is ignored (the
form offers only choices).
Rule 2: without a store the list is this process's memory: the key filter cannot apply there
(it holds no key names) and the page says so.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qs, urlencode

from turnout.store.audit_search import STATUS_CLASSES, RequestFilter

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from turnout.gateway.observe.activity import RecentRequest

__all__ = ["WINDOWS", "Listed", "RequestQuery", "from_memory", "listed_rows", "parse_query"]

WINDOWS: Final = {"1h": 3600.0, "24h": 86_400.0, "7d": 7 * 86_400.0}
"""The time windows the form offers ("" is all time)."""
OUTCOMES: Final = ("answered", "failed", "refused", "cached")


@dataclass(frozen=True, slots=True)
class RequestQuery:
    """What the form asked: the filter, the window's word and the page (`before`)."""

    wanted: RequestFilter
    window: str
    before: int | None

    def link(self, **changes: Any) -> str:
        """This query's URL with `changes` (a field set to None is left out)."""
        fields = {
            "route": self.wanted.route, "key": self.wanted.key, "status": self.wanted.status,
            "outcome": self.wanted.outcome, "id": self.wanted.request_id,
            "window": self.window or None, "before": self.before,
        }  # fmt: skip
        fields.update(changes)
        kept = {name: value for name, value in fields.items() if value not in (None, "")}
        return "/ui/requests" + (f"?{urlencode(kept)}" if kept else "")


@dataclass(frozen=True, slots=True)
class Listed:
    """One request as the list prints it."""

    request_id: str
    time: str
    key: str
    model: str
    route: str
    status: int
    served: str
    outcome: str
    took_ms: float
    tokens: str
    cost: str


def _one(
    values: Mapping[str, list[str]], name: str, choices: Sequence[str] | None = None
) -> str | None:
    value = (values.get(name) or [""])[0].strip()
    if not value or (choices is not None and value not in choices):
        return None
    return value[:200]


def parse_query(query: str, *, now: float) -> RequestQuery:
    """Rule 1: the query string `query` as a search, its window ending at `now`."""
    values = parse_qs(query, keep_blank_values=False)
    window = _one(values, "window", list(WINDOWS)) or ""
    since = dt.datetime.fromtimestamp(now - WINDOWS[window], dt.UTC) if window else None
    before_text = _one(values, "before")
    before = int(before_text) if before_text and before_text.isdigit() else None
    wanted = RequestFilter(
        route=_one(values, "route"),
        key=_one(values, "key"),
        status=_one(values, "status", list(STATUS_CLASSES)),
        outcome=_one(values, "outcome", OUTCOMES),
        since=since,
        request_id=_one(values, "id"),
    )
    return RequestQuery(wanted, window, before)


def _money(cost: float | None) -> str:
    return "-" if cost is None else f"${cost:.6f}"


def listed_rows(found: Sequence[Mapping[str, Any]]) -> list[Listed]:
    """The audit's rows (`search_requests`) as the list prints them."""
    rows = []
    for row in found:
        served = (
            f"{row['served_provider']}:{row['served_model']}" if row["served_provider"] else "-"
        )
        rows.append(
            Listed(
                request_id=str(row["request_id"]),
                time=str(row["at"])[:19].replace("T", " "),
                key=row["key_name"] or "-",
                model=row["requested_model"] or "-",
                route=row["route"] or "-",
                status=int(row["status"]),
                served=served,
                outcome=str(row["outcome"]),
                took_ms=float(row["latency_ms"]),
                tokens=f"{row['input_tokens']} / {row['output_tokens']}",
                cost=_money(row["cost"]),
            )
        )
    return rows


def from_memory(recent: Sequence[RecentRequest], query: RequestQuery, limit: int) -> list[Listed]:
    """Rule 2: the recent requests that match the query (all but its key), newest first."""
    wanted = query.wanted
    since = wanted.since.timestamp() if wanted.since is not None else None
    bounds = STATUS_CLASSES.get(wanted.status or "")
    rows = []
    for item in recent:
        outcome = "answered" if item.status < 400 else "failed"
        if (
            (wanted.route is not None and item.route != wanted.route)
            or (wanted.request_id is not None and item.request_id != wanted.request_id)
            or (bounds is not None and not bounds[0] <= item.status < bounds[1])
            or (wanted.outcome is not None and outcome != wanted.outcome)
            or (since is not None and item.at < since)
        ):
            continue
        rows.append(
            Listed(
                request_id=item.request_id,
                time=dt.datetime.fromtimestamp(item.at, dt.UTC).strftime("%Y-%m-%d %H:%M:%S"),
                key="-",
                model=item.requested_model or "-",
                route=item.route or "-",
                status=item.status,
                served=f"{item.provider}:{item.model}" if item.provider else "-",
                outcome=outcome,
                took_ms=item.duration_ms,
                tokens=f"{item.input_tokens} / {item.output_tokens}",
                cost=_money(item.cost),
            )
        )
        if len(rows) >= limit:
            break
    return rows
