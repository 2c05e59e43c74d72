"""Reading the request audit and the usage ledger: one request's whole routing record, and usage
and cost summed by served provider and model, key, project or day.

Rule 1: usage is reported on the provider and model that served (as the ledger holds it), never
on the route.
Rule 2: a group's `cost` sums the priced requests only; `unpriced_requests` counts the requests
whose served model has no price (their tokens are summed all the same).
Rule 3: `since` is inclusive and `until` exclusive; both are times (aware, or naive UTC).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import case, func, select

from turnout.errors import ConfigError
from turnout.store.models import RequestAttempt, RequestAudit, UsageEntry

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy.sql.elements import ColumnElement

    from turnout.store.engine import Store

__all__ = ["GROUPS", "aware_utc", "get_request", "iso_z", "usage_report"]

GROUPS: Final[dict[str, tuple[str, ...]]] = {
    "model": ("provider", "model"),
    "key": ("key_id", "key_name"),
    "project": ("project_id", "project"),
    "day": ("day",),
}
"""What `usage_report` groups by (`group_by` words) and the fields each group is named by."""

_TOKENS: Final = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def iso_z(moment: datetime) -> str:
    """`moment` as ISO 8601 UTC text ending in `Z` (a naive time is taken as UTC)."""
    if moment.tzinfo is None:  # SQLite hands back the UTC time it was given, without its zone
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def get_request(store: Store, request_id: str) -> dict[str, Any] | None:
    """The audit of request `request_id`, or None when there is none (never written, or past
    its retention): who called, when, how it ended, its usage and cost, its whole routing
    record (`routing`) and its attempt rows (`attempts`)."""
    with store.engine.connect() as connection:
        row = connection.execute(
            select(RequestAudit).where(RequestAudit.request_id == request_id)
        ).one_or_none()
        if row is None:
            return None
        attempts = connection.execute(
            select(RequestAttempt)
            .where(RequestAttempt.request_id == request_id)
            .order_by(RequestAttempt.index)
        ).all()
    audit = row._mapping
    found: dict[str, Any] = {
        name: audit[name]
        for name in (
            "request_id", "project_id", "project", "key_id", "key_name", "endpoint",
            "requested_model", "route", "served_provider", "served_model", "outcome", "status",
            "error_code", "latency_ms", "cached", "cost",
        )
    }  # fmt: skip
    found["at"] = iso_z(audit["at"])
    found["usage"] = {name: audit[name] for name in _TOKENS}
    found["routing"] = audit["record"]
    found["attempts"] = [
        {name: value for name, value in attempt._mapping.items() if name != "request_id"}
        for attempt in attempts
    ]
    return found


def aware_utc(value: datetime) -> datetime:
    """`value`, a naive time taken as UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _groups(group_by: str | Sequence[str]) -> list[str]:
    words = [group_by] if isinstance(group_by, str) else list(group_by)
    unknown = [word for word in words if word not in GROUPS]
    if unknown or not words:
        raise ConfigError(
            f"group_by: {', '.join(map(repr, unknown)) or 'nothing'} is not a grouping: "
            f"use one or more of {', '.join(GROUPS)}"
        )
    return words


def usage_report(
    store: Store,
    *,
    group_by: str | Sequence[str],
    since: datetime | None = None,
    until: datetime | None = None,
    project_id: str | None = None,
) -> list[dict[str, Any]]:
    """Usage and cost per group, in group order: `group_by` is one of `GROUPS` (`model`: the
    served provider and model; `key`; `project`; `day`, UTC) or several (`["day", "model"]`).
    Each group: its naming fields, `requests`, the four token sums, `cost` (USD, None when no
    request of the group was priced) and `unpriced_requests`. `since`/`until` bound the time
    (Rule 3); `project_id` keeps one project. A word outside `GROUPS` is a `ConfigError`."""
    fields = [name for word in _groups(group_by) for name in GROUPS[word]]
    columns: list[ColumnElement[Any]] = [getattr(UsageEntry, name) for name in fields]
    sums = [func.coalesce(func.sum(getattr(UsageEntry, name)), 0) for name in _TOKENS]
    query = select(
        *columns,
        func.count().label("requests"),
        *sums,
        func.sum(UsageEntry.cost),
        func.sum(case((UsageEntry.cost.is_(None), 1), else_=0)),
    )
    if since is not None:
        query = query.where(UsageEntry.at >= aware_utc(since))
    if until is not None:
        query = query.where(UsageEntry.at < aware_utc(until))
    if project_id is not None:
        query = query.where(UsageEntry.project_id == project_id)
    query = query.group_by(*columns).order_by(*columns)
    with store.engine.connect() as connection:
        rows = connection.execute(query).all()
    report: list[dict[str, Any]] = []
    width = len(fields)
    for row in rows:
        group = dict(zip(fields, row[:width], strict=True))
        if "day" in group:
            group["day"] = group["day"].isoformat()
        requests, *tokens, cost, unpriced = row[width:]
        group["requests"] = int(requests)
        group.update({name: int(count) for name, count in zip(_TOKENS, tokens, strict=True)})
        group["cost"] = None if cost is None else float(cost)
        group["unpriced_requests"] = int(unpriced)
        report.append(group)
    return report
