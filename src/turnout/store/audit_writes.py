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
Rule 6: rows go to the database as they are, in its own types, through one fixed statement per
table: on SQLite, each table's rows in one `executemany` (times as the text SQLAlchemy stores
for them, `2026-09-21 14:13:20.000000`); on PostgreSQL, each table's rows in one statement that
reads them from one JSON array (times from epoch seconds), so a batch is a few round trips
whatever its size. On SQLite the transaction takes the write lock first (`BEGIN IMMEDIATE`):
processes sharing the file wait their turn instead of failing when another wrote meanwhile.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

import orjson
from sqlalchemy import String, delete, select

from turnout.record import epoch_parts
from turnout.store.audit_rows import ATTEMPT_FIELDS, AUDIT_FIELDS, USAGE_FIELDS
from turnout.store.models import Base, Key, Project, RequestAttempt, RequestAudit, UsageEntry

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from sqlalchemy.engine import Connection

    from turnout.store.audit_rows import AttemptRow, AuditRow, UsageRow
    from turnout.store.engine import Store

__all__ = ["IdsByName", "delete_expired_audit", "write_request", "write_requests", "write_usage"]

_DAY = 86_400.0
_Names = tuple[str | None, str | None]
"""A row's project and key name."""
_Ids = tuple[str | None, str | None]
"""The project id and key id of a row's names."""


def _texts(model: type[Base], fields: Sequence[str]) -> tuple[tuple[int, int], ...]:
    """The position in `fields` and the length of each text column of `model` (Rule 5)."""
    lengths = {
        column.name: column.type.length
        for column in model.__table__.columns
        if isinstance(column.type, String) and column.type.length
    }
    return tuple((at, lengths[name]) for at, name in enumerate(fields) if name in lengths)


_AUDIT_TEXTS: Final = _texts(RequestAudit, AUDIT_FIELDS)
_ATTEMPT_TEXTS: Final = _texts(RequestAttempt, ATTEMPT_FIELDS)
_USAGE_TEXTS: Final = _texts(UsageEntry, USAGE_FIELDS)


def _fit(row: tuple[Any, ...], texts: tuple[tuple[int, int], ...]) -> tuple[Any, ...]:
    """Rule 5: `row` with every text cut to its column's length, NUL characters removed
    (PostgreSQL refuses them in text); `row` itself when nothing needs it."""
    for at, length in texts:
        value = row[at]
        if value is not None and (len(value) > length or "\x00" in value):
            break
    else:
        return row
    fitted = list(row)
    for at, length in texts:
        value = fitted[at]
        if isinstance(value, str):
            fitted[at] = value.replace("\x00", "")[:length]
    return tuple(fitted)


def _quoted(names: Iterable[str]) -> str:
    return ", ".join(f'"{name}"' for name in names)


def _sqlite_insert(table: str, columns: Sequence[str], conflict: str) -> str:
    marks = ", ".join("?" * len(columns))
    return (  # built once, of this module's own names: no value is ever part of it
        f"INSERT INTO {table} ({_quoted(columns)}) VALUES ({marks}) "  # noqa: S608
        f"ON CONFLICT {conflict}DO NOTHING"
    )


_INTEGERS = (
    "status", "latency_ms", "index", "duration_ms", "input_tokens", "output_tokens",
    "cache_read_tokens", "cache_write_tokens",
)  # fmt: skip
_CASTS: Final = {
    **dict.fromkeys(_INTEGERS, "::integer"), "cached": "::boolean", "hedge": "::boolean",
    "cost": "::float8", "record": "::json",
}  # fmt: skip


def _read(fields: Sequence[str]) -> list[str]:
    """The expressions reading `fields` from a JSON array element `r` (a row), in their
    column's type; a time is epoch seconds."""
    return [
        f"to_timestamp((r->>{at})::float8)" if name == "at" else f"(r->>{at}){_CASTS.get(name, '')}"
        for at, name in enumerate(fields)
    ]


def _postgres_insert(table: str, fields: Sequence[str], extra: dict[str, str], tail: str) -> str:
    """An insert of the rows of one JSON array (the statement's one parameter), each an array
    of `fields`; `extra` columns are computed from them."""
    columns = [*fields, *extra]
    values = [*_read(fields), *extra.values()]
    return (  # built once, of this module's own names: no value is ever part of it
        f"INSERT INTO {table} ({_quoted(columns)}) SELECT {', '.join(values)} "  # noqa: S608
        f"FROM json_array_elements(%s::json) AS rows(r) ON CONFLICT {tail}"
    )


# SQLite: audit and usage rows bound as (stored time, [day,] project id, key id, the rest).
_SQLITE_AUDIT: Final = _sqlite_insert(
    "request_audit", ("at", "project_id", "key_id", *AUDIT_FIELDS[1:]), '("request_id") '
)
_SQLITE_ATTEMPTS: Final = _sqlite_insert("request_attempts", ATTEMPT_FIELDS, "")
_SQLITE_USAGE: Final = _sqlite_insert(
    "usage_ledger", ("at", "day", "project_id", "key_id", *USAGE_FIELDS[1:]), '("id") '
)
# PostgreSQL: audit and usage rows as arrays of (project id, key id, the row).
_POSTGRES_AUDIT: Final = _postgres_insert(
    "request_audit",
    ("project_id", "key_id", *AUDIT_FIELDS),
    {},
    '("request_id") DO NOTHING RETURNING request_id',
)
_POSTGRES_ATTEMPTS: Final = _postgres_insert("request_attempts", ATTEMPT_FIELDS, {}, "DO NOTHING")
_POSTGRES_USAGE: Final = _postgres_insert(
    "usage_ledger",
    ("project_id", "key_id", *USAGE_FIELDS),
    {"day": "(to_timestamp((r->>2)::float8) AT TIME ZONE 'UTC')::date"},
    '("id") DO NOTHING',
)


class IdsByName:
    """Project and key ids by name, looked up once and remembered (Rule 3). A name not found
    is asked again next time: the object may be created meanwhile."""

    def __init__(self) -> None:
        self._projects: dict[str, str] = {}
        self._keys: dict[tuple[str, str], str] = {}

    def of(self, connection: Connection, names: Iterable[_Names]) -> dict[_Names, _Ids]:
        """The ids of each (project, key name) in `names`, looked up when not known yet."""
        names = set(names)
        self._look_up(connection, names)
        ids: dict[_Names, _Ids] = {}
        for project, key_name in names:
            project_id = self._projects.get(project or "")
            key_id = self._keys.get((project_id, key_name)) if project_id and key_name else None
            ids[project, key_name] = (project_id, key_id)
        return ids

    def _look_up(self, connection: Connection, names: set[_Names]) -> None:
        projects = {project for project, _ in names if project} - self._projects.keys()
        if projects:
            query = select(Project.name, Project.id).where(Project.name.in_(projects))
            self._projects.update(dict(connection.execute(query).all()))
        wanted: dict[str, set[str]] = {}
        for project, key_name in names:
            project_id = self._projects.get(project or "")
            if project_id and key_name and (project_id, key_name) not in self._keys:
                wanted.setdefault(project_id, set()).add(key_name)
        for project_id, key_names in wanted.items():
            query = select(Key.name, Key.id).where(
                Key.project_id == project_id, Key.name.in_(key_names)
            )
            self._keys.update({(project_id, name): id_ for name, id_ in connection.execute(query)})


def _stored_time(epoch: float) -> str:
    """`epoch` as the text SQLAlchemy stores an aware UTC time as on SQLite
    (`datetime.fromtimestamp(epoch, UTC).isoformat(" ", "microseconds")[:26]`)."""
    text, micro = epoch_parts(epoch)
    return f"{text[:10]} {text[11:]}.{micro:06d}"


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
    audits = [_fit(row, _AUDIT_TEXTS) for row in audits]
    attempts = [_fit(row, _ATTEMPT_TEXTS) for row in attempts]
    usage = [_fit(row, _USAGE_TEXTS) for row in usage]
    with store.engine.connect() as connection:
        if store.is_postgres:
            _write_rows_postgres(connection, audits, attempts, usage, ids)
        else:
            _write_rows_sqlite(connection, audits, attempts, usage, ids)
        connection.commit()


def _write_rows_sqlite(
    connection: Connection,
    audits: list[AuditRow],
    attempts: list[AttemptRow],
    usage: list[UsageRow],
    ids: IdsByName,
) -> None:
    run = connection.exec_driver_sql
    run("BEGIN IMMEDIATE")
    found = ids.of(connection, [(row[1], row[2]) for row in (*audits, *usage)])
    times: dict[float, str] = {}  # a request's audit row and usage entry share their time
    if audits:
        # Under the write lock the audit rows added are exactly those past the highest id.
        before = run("SELECT coalesce(max(id), 0) FROM request_audit").scalar_one()
        values = []
        for row in audits:
            project_id, key_id = found[row[1], row[2]]
            times[row[0]] = time = _stored_time(row[0])
            values.append((time, project_id, key_id, *row[1:]))
        run(_SQLITE_AUDIT, values)
        added = run("SELECT count(*) FROM request_audit WHERE id > ?", (before,)).scalar_one()
        if added == len(audits):  # as a rule: every request id was new, every attempt row kept
            kept = attempts
        else:
            taken = run("SELECT request_id FROM request_audit WHERE id > ?", (before,))
            stored = set(taken.scalars())
            kept = [row for row in attempts if row[0] in stored]
        if kept:
            run(_SQLITE_ATTEMPTS, kept)
    if usage:
        values = []
        for row in usage:
            project_id, key_id = found[row[1], row[2]]
            time = times.get(row[0]) or _stored_time(row[0])
            values.append((time, time[:10], project_id, key_id, *row[1:]))
        run(_SQLITE_USAGE, values)


def _write_rows_postgres(
    connection: Connection,
    audits: list[AuditRow],
    attempts: list[AttemptRow],
    usage: list[UsageRow],
    ids: IdsByName,
) -> None:
    run = connection.exec_driver_sql
    found = ids.of(connection, [(row[1], row[2]) for row in (*audits, *usage)])
    if audits:
        rows = orjson.dumps([(*found[row[1], row[2]], *row) for row in audits]).decode()
        stored = set(run(_POSTGRES_AUDIT, (rows,)).scalars())
        kept = [row for row in attempts if row[0] in stored]
        if kept:
            run(_POSTGRES_ATTEMPTS, (orjson.dumps(kept).decode(),))
    if usage:
        rows = orjson.dumps([(*found[row[1], row[2]], *row) for row in usage]).decode()
        run(_POSTGRES_USAGE, (rows,))


def delete_expired_audit(store: Store, *, retention_days: float, now: float) -> int:
    """Rule 4: delete the audit rows older than `retention_days` before `now` (epoch
    seconds), with their attempt rows; return how many requests were deleted."""
    cutoff = _moment(now - retention_days * _DAY)
    expired = select(RequestAudit.request_id).where(RequestAudit.at < cutoff)
    with store.engine.begin() as connection:
        connection.execute(delete(RequestAttempt).where(RequestAttempt.request_id.in_(expired)))
        result = connection.execute(delete(RequestAudit).where(RequestAudit.at < cutoff))
    return int(result.rowcount)
