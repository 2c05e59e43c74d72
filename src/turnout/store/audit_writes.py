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
and NUL characters are removed, so no value a caller sends can make the store refuse a batch
(`audit_sql.fit`).
Rule 6: rows go to the database as they are, in its own types, through one fixed statement per
table (`audit_sql`): on SQLite, each table's rows in one `executemany` on the pooled
connection's own driver connection, exactly as the audit process writes them (`audit_sqlite`);
on PostgreSQL, each table's rows in one statement that reads them from one JSON array (times
from epoch seconds), so a batch is a few round trips whatever its size.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

import orjson
from sqlalchemy import delete, select
from sqlalchemy.exc import DataError, IntegrityError

from turnout.store.audit_ids import IdsByName
from turnout.store.audit_sql import POSTGRES_ATTEMPTS, POSTGRES_AUDIT, POSTGRES_USAGE, fitted
from turnout.store.audit_sqlite import write_sqlite
from turnout.store.models import Key, Project, RequestAttempt, RequestAudit

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy.engine import Connection

    from turnout.store.audit_rows import AttemptRow, AuditRow, UsageRow
    from turnout.store.engine import Store

__all__ = [
    "IdsByName",
    "StoreAudit",
    "delete_expired_audit",
    "write_request",
    "write_requests",
    "write_usage",
]

_DAY: Final = 86_400.0


class _Lookup:
    """The id look-ups of `IdsByName` on a connection of the store's engine."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def projects(self, names: Sequence[str]) -> list[tuple[str, str]]:
        query = select(Project.name, Project.id).where(Project.name.in_(names))
        return [(name, id_) for name, id_ in self.connection.execute(query)]

    def keys(self, project_id: str, names: Sequence[str]) -> list[tuple[str, str]]:
        query = select(Key.name, Key.id).where(Key.project_id == project_id, Key.name.in_(names))
        return [(name, id_) for name, id_ in self.connection.execute(query)]


def _moment(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, UTC)


def write_request(
    store: Store, audit: AuditRow, attempts: Sequence[AttemptRow], ids: IdsByName
) -> None:
    """Rules 2 and 6: write one request's audit row and its attempt rows in one transaction."""
    write_requests(store, [audit], attempts, [], ids)


def write_usage(store: Store, usage: Sequence[UsageRow], ids: IdsByName) -> None:
    """Rules 2 and 6: write the usage entries `usage` (spilled ones, say) in one transaction."""
    write_requests(store, [], [], usage, ids)


def write_requests(
    store: Store,
    audits: Sequence[AuditRow],
    attempts: Sequence[AttemptRow],
    usage: Sequence[UsageRow],
    ids: IdsByName,
) -> None:
    """Rules 1, 2 and 6: write a batch of requests, their audit rows `audits`, their
    `attempts` and their `usage` entries, in one transaction."""
    audits, attempts, usage = fitted(audits, attempts, usage)
    with store.engine.connect() as connection:
        if store.is_postgres:
            _write_rows_postgres(connection, audits, attempts, usage, ids)
            connection.commit()
            return
        # SQLite: the pooled connection's own driver connection, written as the audit
        # process writes it; the pool rolls back what a failure left.
        driver = connection.connection.dbapi_connection
        assert driver is not None
        cursor = driver.cursor()
        try:
            write_sqlite(cursor, audits, attempts, usage, ids)
            driver.commit()
        finally:
            cursor.close()


def _write_rows_postgres(
    connection: Connection,
    audits: list[AuditRow],
    attempts: list[AttemptRow],
    usage: list[UsageRow],
    ids: IdsByName,
) -> None:
    run = connection.exec_driver_sql
    found = ids.of(_Lookup(connection), [(row[1], row[2]) for row in (*audits, *usage)])
    if audits:
        rows = orjson.dumps([(*found[row[1], row[2]], *row) for row in audits]).decode()
        stored = set(run(POSTGRES_AUDIT, (rows,)).scalars())
        kept = [row for row in attempts if row[0] in stored]
        if kept:
            run(POSTGRES_ATTEMPTS, (orjson.dumps(kept).decode(),))
    if usage:
        rows = orjson.dumps([(*found[row[1], row[2]], *row) for row in usage]).decode()
        run(POSTGRES_USAGE, (rows,))


def delete_expired_audit(store: Store, *, retention_days: float, now: float) -> int:
    """Rule 4: delete the audit rows older than `retention_days` before `now` (epoch
    seconds), with their attempt rows; return how many requests were deleted."""
    cutoff = _moment(now - retention_days * _DAY)
    expired = select(RequestAudit.request_id).where(RequestAudit.at < cutoff)
    with store.engine.begin() as connection:
        connection.execute(delete(RequestAttempt).where(RequestAttempt.request_id.in_(expired)))
        result = connection.execute(delete(RequestAudit).where(RequestAudit.at < cutoff))
    return int(result.rowcount)


class StoreAudit:
    """The audit of `store`, written through its engine (either backend)."""

    rejected: Final = (DataError, IntegrityError, sqlite3.DataError, sqlite3.IntegrityError)
    """What the store says of a row it will never take (through the engine, or from the
    driver connection SQLite batches are written on)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def write(
        self,
        audits: Sequence[AuditRow],
        attempts: Sequence[AttemptRow],
        usage: Sequence[UsageRow],
        ids: IdsByName,
    ) -> None:
        """One batch in one transaction (`write_requests`)."""
        write_requests(self.store, audits, attempts, usage, ids)

    def delete_expired(self, *, retention_days: float, now: float) -> int:
        """See `delete_expired_audit`."""
        return delete_expired_audit(self.store, retention_days=retention_days, now=now)

    def close(self) -> None:
        """Nothing: the store is its owner's to close."""
