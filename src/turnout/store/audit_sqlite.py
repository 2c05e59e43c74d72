"""Writing the request audit and the usage ledger to SQLite over a standard library connection.

Blocking (database I/O). The same writing serves the store's engine (its pooled connection's
own driver connection, `audit_writes`) and the audit writer process, which opens the file
with the standard library's driver alone (`SqliteAudit`) and so never loads the store's
database toolkit: a process that only appends rows stays small.

Rule 1: a batch commits whole or not at all: its audit rows, their attempt rows and its usage
entries, each table's rows in one `executemany`. The transaction takes the write lock first
(`BEGIN IMMEDIATE`): processes sharing the file wait their turn (up to the driver's busy
timeout) instead of failing when another wrote meanwhile.
Rule 2: an audit row whose `request_id` is stored already is skipped, and its attempt rows
with it; a usage entry whose `id` is stored already is skipped.
Rule 3: `SqliteAudit` opens the file as the store does (foreign keys enforced; the journal is
the file's own, write-ahead since the store was created) and classes an integrity or data
error as the store rejecting the batch's data; any other error is an outage.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any, Final

from turnout.store.audit_sql import SQLITE_ATTEMPTS, SQLITE_AUDIT, SQLITE_USAGE, fitted, stored_time

if TYPE_CHECKING:
    from collections.abc import Sequence

    from turnout.store.audit_ids import IdsByName
    from turnout.store.audit_rows import AttemptRow, AuditRow, UsageRow

__all__ = ["SqliteAudit", "delete_expired_sqlite", "write_sqlite"]

_DAY: Final = 86_400.0


def write_sqlite(
    cursor: Any,
    audits: Sequence[AuditRow],
    attempts: Sequence[AttemptRow],
    usage: Sequence[UsageRow],
    ids: IdsByName,
) -> None:
    """Rules 1 and 2 on the driver cursor `cursor`, rows fitted already; the caller commits."""
    run = cursor.execute
    run("BEGIN IMMEDIATE")
    found = ids.of(_Lookup(cursor), [(row[1], row[2]) for row in (*audits, *usage)])
    times: dict[float, str] = {}  # a request's audit row and usage entry share their time
    if audits:
        # Under the write lock the audit rows added are exactly those past the highest id.
        (before,) = run("SELECT coalesce(max(id), 0) FROM request_audit").fetchone()
        values = []
        for row in audits:
            project_id, key_id = found[row[1], row[2]]
            times[row[0]] = time = stored_time(row[0])
            values.append((time, project_id, key_id, *row[1:]))
        cursor.executemany(SQLITE_AUDIT, values)
        (added,) = run("SELECT count(*) FROM request_audit WHERE id > ?", (before,)).fetchone()
        if added == len(audits):  # as a rule: every request id was new, every attempt row kept
            kept: Sequence[AttemptRow] = attempts
        else:
            taken = run("SELECT request_id FROM request_audit WHERE id > ?", (before,))
            stored = {request_id for (request_id,) in taken.fetchall()}
            kept = [row for row in attempts if row[0] in stored]
        if kept:
            cursor.executemany(SQLITE_ATTEMPTS, kept)
    if usage:
        values = []
        for row in usage:
            project_id, key_id = found[row[1], row[2]]
            time = times.get(row[0]) or stored_time(row[0])
            values.append((time, time[:10], project_id, key_id, *row[1:]))
        cursor.executemany(SQLITE_USAGE, values)


def delete_expired_sqlite(cursor: Any, *, retention_days: float, now: float) -> int:
    """Delete the audit rows older than `retention_days` before `now` (epoch seconds), with
    their attempt rows; how many requests were deleted. The caller commits."""
    cutoff = (stored_time(now - retention_days * _DAY),)
    cursor.execute(
        "DELETE FROM request_attempts WHERE request_id IN "
        "(SELECT request_id FROM request_audit WHERE at < ?)",
        cutoff,
    )
    cursor.execute("DELETE FROM request_audit WHERE at < ?", cutoff)
    deleted: int = cursor.rowcount
    return deleted


class _Lookup:
    """The id look-ups of `IdsByName` on a driver cursor (`?` marks)."""

    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor

    def projects(self, names: Sequence[str]) -> list[tuple[str, str]]:
        marks = ", ".join("?" * len(names))
        query = f"SELECT name, id FROM projects WHERE name IN ({marks})"  # noqa: S608 - marks only
        return [tuple(row) for row in self.cursor.execute(query, tuple(names)).fetchall()]

    def keys(self, project_id: str, names: Sequence[str]) -> list[tuple[str, str]]:
        marks = ", ".join("?" * len(names))
        query = f"SELECT name, id FROM keys WHERE project_id = ? AND name IN ({marks})"  # noqa: S608
        rows = self.cursor.execute(query, (project_id, *names)).fetchall()
        return [tuple(row) for row in rows]


class SqliteAudit:
    """The audit of the SQLite file `path`, written over a connection of its own (Rule 3).
    Used from one thread at a time."""

    rejected: Final = (sqlite3.IntegrityError, sqlite3.DataError)

    def __init__(self, path: str) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = None

    def _open(self) -> sqlite3.Connection:
        connection = self._connection
        if connection is None:
            # Autocommit at the driver: each transaction is begun and ended here.
            connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            connection.execute("PRAGMA foreign_keys=ON")
            self._connection = connection
        return connection

    def write(
        self,
        audits: Sequence[AuditRow],
        attempts: Sequence[AttemptRow],
        usage: Sequence[UsageRow],
        ids: IdsByName,
    ) -> None:
        """Rules 1 and 2: one batch in one transaction, its texts fitted to their columns."""
        audits, attempts, usage = fitted(audits, attempts, usage)
        self._in_transaction(lambda cursor: write_sqlite(cursor, audits, attempts, usage, ids))

    def delete_expired(self, *, retention_days: float, now: float) -> int:
        """See `delete_expired_sqlite`, in a transaction of its own."""

        def step(cursor: Any) -> int:
            cursor.execute("BEGIN IMMEDIATE")
            return delete_expired_sqlite(cursor, retention_days=retention_days, now=now)

        deleted: int = self._in_transaction(step)
        return deleted

    def _in_transaction(self, step: Any) -> Any:
        connection = self._open()
        cursor = connection.cursor()
        try:
            result = step(cursor)
            cursor.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        finally:
            cursor.close()
        return result

    def close(self) -> None:
        """Close the connection (a later write opens another)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None
