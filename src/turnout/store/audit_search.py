"""Finding requests in the request audit: filtered, newest first, a page at a time.

Rule 1: every filter is optional and they combine (AND): project, route, key name, status
class (`2xx`, `4xx`, `5xx`), outcome, a time window (`since` inclusive, `until` exclusive) and
a request id (exact). A status class other than those three is a `ConfigError` naming it.
Rule 2: pages are cut by the audit's row number, newest first: `before` (a row number from the
previous page's `next`) starts a page after it, so a page stays the same as requests arrive.
`next` is None on the last page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import select

from turnout.errors import ConfigError
from turnout.store.models import RequestAudit
from turnout.store.usage import aware_utc, iso_z

if TYPE_CHECKING:
    from datetime import datetime

    from turnout.store.engine import Store

__all__ = ["STATUS_CLASSES", "RequestFilter", "search_requests"]

STATUS_CLASSES: Final = {"2xx": (200, 300), "4xx": (400, 500), "5xx": (500, 600)}
"""The status classes a search takes (Rule 1), as [low, high) bounds."""
_COLUMNS: Final = (
    "request_id", "project", "key_name", "endpoint", "requested_model", "route",
    "served_provider", "served_model", "outcome", "status", "error_code", "latency_ms",
    "cached", "input_tokens", "output_tokens", "cost",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class RequestFilter:
    """Rule 1: what a search keeps; None keeps everything."""

    project: str | None = None
    route: str | None = None
    key: str | None = None
    status: str | None = None
    outcome: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    request_id: str | None = None


def search_requests(
    store: Store, wanted: RequestFilter, *, before: int | None = None, limit: int = 50
) -> dict[str, Any]:
    """Rules 1 and 2: `rows` (each the audit's fields with `at` as ISO text and `row`, its
    row number) and `next` (the `before` of the next page, or None)."""
    columns = [getattr(RequestAudit, name) for name in _COLUMNS]
    query = select(RequestAudit.id, RequestAudit.at, *columns)
    if wanted.status is not None:
        bounds = STATUS_CLASSES.get(wanted.status)
        if bounds is None:
            raise ConfigError(
                f"status: {wanted.status!r} is not a status class: use 2xx, 4xx or 5xx"
            )
        query = query.where(RequestAudit.status >= bounds[0], RequestAudit.status < bounds[1])
    equal = {
        RequestAudit.project: wanted.project,
        RequestAudit.route: wanted.route,
        RequestAudit.key_name: wanted.key,
        RequestAudit.outcome: wanted.outcome,
        RequestAudit.request_id: wanted.request_id,
    }
    for column, value in equal.items():
        if value is not None:
            query = query.where(column == value)
    if wanted.since is not None:
        query = query.where(RequestAudit.at >= aware_utc(wanted.since))
    if wanted.until is not None:
        query = query.where(RequestAudit.at < aware_utc(wanted.until))
    if before is not None:
        query = query.where(RequestAudit.id < before)
    query = query.order_by(RequestAudit.id.desc()).limit(limit + 1)
    with store.engine.connect() as connection:
        found = connection.execute(query).all()
    rows = []
    for number, at, *values in found[:limit]:
        row = dict(zip(_COLUMNS, values, strict=True))
        row["row"] = number
        row["at"] = iso_z(at)
        rows.append(row)
    more = len(found) > limit
    return {"rows": rows, "next": rows[-1]["row"] if more and rows else None}
