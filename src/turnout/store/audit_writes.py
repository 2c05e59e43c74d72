"""Writing the request audit and the usage ledger: one batch in one transaction, and the deletion
of audit rows past their retention.

Blocking (database I/O): called from a worker thread, never from the event loop.

Rule 1: a batch commits whole or not at all: its audit rows, their attempt rows and its usage
entries.
Rule 2: writing is idempotent. A usage entry whose `id` is stored already is skipped, so a
spilled entry can be written again safely. An audit row whose `request_id` is stored already
(a caller that sent the same `x-request-id` twice) is skipped, and its attempt rows with it:
the first request keeps its row.
Rule 3: project and key ids are looked up by name when a row is written (a row names what the
caller's configuration named; a name the store does not know leaves the id empty).
Rule 4: retention deletes audit rows (and their attempt rows) older than the retention period;
the usage ledger is never deleted.
Rule 5: a text longer than its column (a caller's model name, say) is cut to fit when written,
and NUL characters are removed, so no value a caller sends can make the store refuse a batch.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import String, delete, select
from sqlalchemy.dialects.postgresql import insert as postgres_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from turnout.store.models import Base, Key, Project, RequestAttempt, RequestAudit, UsageEntry

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from sqlalchemy.engine import Connection

    from turnout.store.engine import Store

__all__ = ["IdsByName", "delete_expired_audit", "write_batch"]

_DAY = 86_400.0


def _lengths(model: type[Base]) -> dict[str, int]:
    return {
        column.name: column.type.length
        for column in model.__table__.columns
        if isinstance(column.type, String) and column.type.length
    }


_LENGTHS: dict[type[Base], dict[str, int]] = {
    model: _lengths(model) for model in (RequestAudit, RequestAttempt, UsageEntry)
}


def _fit(model: type[Base], row: dict[str, Any]) -> dict[str, Any]:
    """Rule 5: `row` with every text cut to its column's length, NUL characters removed
    (PostgreSQL refuses them in text)."""
    for name, length in _LENGTHS[model].items():
        value = row.get(name)
        if isinstance(value, str):
            if "\x00" in value:
                value = value.replace("\x00", "")
            row[name] = value[:length]
    return row


class IdsByName:
    """Project and key ids by name, looked up once and remembered (Rule 3). A name not found
    is asked again next time: the object may be created meanwhile."""

    def __init__(self) -> None:
        self._projects: dict[str, str] = {}
        self._keys: dict[tuple[str, str], str] = {}

    def fill(self, connection: Connection, rows: Iterable[dict[str, Any]]) -> None:
        """Set `project_id` and `key_id` on each row from its `project` and `key_name`."""
        rows = list(rows)
        self._look_up(connection, rows)
        for row in rows:
            project_id = self._projects.get(row["project"] or "")
            row["project_id"] = project_id
            key = (project_id or "", row["key_name"] or "")
            row["key_id"] = self._keys.get(key) if project_id and row["key_name"] else None

    def _look_up(self, connection: Connection, rows: list[dict[str, Any]]) -> None:
        names = {row["project"] for row in rows if row["project"]} - self._projects.keys()
        if names:
            query = select(Project.name, Project.id).where(Project.name.in_(names))
            self._projects.update(dict(connection.execute(query).all()))
        wanted: dict[str, set[str]] = {}
        for row in rows:
            project_id = self._projects.get(row["project"] or "")
            key = (project_id or "", row["key_name"] or "")
            if project_id and row["key_name"] and key not in self._keys:
                wanted.setdefault(project_id, set()).add(row["key_name"])
        for project_id, key_names in wanted.items():
            query = select(Key.name, Key.id).where(
                Key.project_id == project_id, Key.name.in_(key_names)
            )
            self._keys.update({(project_id, name): id_ for name, id_ in connection.execute(query)})


def _moment(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def _insert(store: Store, model: type[Base]) -> Any:
    return postgres_insert(model) if store.is_postgres else sqlite_insert(model)


def write_batch(
    store: Store,
    audits: Sequence[dict[str, Any]],
    attempts: Sequence[dict[str, Any]],
    usage: Sequence[dict[str, Any]],
    ids: IdsByName,
) -> None:
    """Rules 1 and 2: write `audits` (rows of `audit_row`), their `attempts` and the `usage`
    entries in one transaction. The rows are not changed (ids are set on copies)."""
    audit_values = [_fit(RequestAudit, {**row, "at": _moment(row["at"])}) for row in audits]
    usage_values = [
        _fit(UsageEntry, {**row, "at": _moment(row["at"]), "day": _moment(row["at"]).date()})
        for row in usage
    ]
    attempts = [_fit(RequestAttempt, dict(row)) for row in attempts]
    with store.engine.begin() as connection:
        ids.fill(connection, [*audit_values, *usage_values])
        stored: set[str] = set()
        if audit_values:
            statement = (
                _insert(store, RequestAudit)
                .on_conflict_do_nothing(index_elements=["request_id"])
                .returning(RequestAudit.request_id)
            )
            stored = set(connection.execute(statement, audit_values).scalars())
        kept = [row for row in attempts if row["request_id"] in stored]
        if kept:
            statement = _insert(store, RequestAttempt).on_conflict_do_nothing()
            connection.execute(statement, kept)
        if usage_values:
            statement = _insert(store, UsageEntry).on_conflict_do_nothing(index_elements=["id"])
            connection.execute(statement, usage_values)


def delete_expired_audit(store: Store, *, retention_days: float, now: float) -> int:
    """Rule 4: delete the audit rows older than `retention_days` before `now` (epoch
    seconds), with their attempt rows; return how many requests were deleted."""
    cutoff = _moment(now - retention_days * _DAY)
    expired = select(RequestAudit.request_id).where(RequestAudit.at < cutoff)
    with store.engine.begin() as connection:
        connection.execute(delete(RequestAttempt).where(RequestAttempt.request_id.in_(expired)))
        result = connection.execute(delete(RequestAudit).where(RequestAudit.at < cutoff))
    return int(result.rowcount)
