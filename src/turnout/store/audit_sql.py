"""The statements that write the request audit and the usage ledger, and the values they bind.

Pure: no I/O and no database library, so the audit writer process can write SQLite through the
standard library's driver alone (`audit_sqlite`) while the serving process writes the same rows
through the store's engine (`audit_writes`).

Rule 1: a text longer than its column (a caller's model name, say) is cut to fit, and NUL
characters are removed, so no value a caller sends can make the store refuse a batch. The
column lengths are the store models' own; a test keeps `TEXT_LENGTHS` equal to them.
Rule 2: a time is bound as the text the store keeps on SQLite (`2026-09-21 14:13:20.000000`,
UTC), and as epoch seconds on PostgreSQL, which the statement turns into its own type.
Rule 3: every statement is built once, of this module's own names: no value is ever part of
one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from turnout.record import epoch_parts
from turnout.store.audit_rows import ATTEMPT_FIELDS, AUDIT_FIELDS, USAGE_FIELDS

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

__all__ = [
    "ATTEMPT_TEXTS",
    "AUDIT_TEXTS",
    "POSTGRES_ATTEMPTS",
    "POSTGRES_AUDIT",
    "POSTGRES_USAGE",
    "SQLITE_ATTEMPTS",
    "SQLITE_AUDIT",
    "SQLITE_USAGE",
    "TEXT_LENGTHS",
    "USAGE_TEXTS",
    "fit",
    "fitted",
    "stored_time",
]

TEXT_LENGTHS: Final[Mapping[str, Mapping[str, int]]] = {
    "request_audit": {
        "project": 128, "key_name": 128, "request_id": 160, "endpoint": 64,
        "requested_model": 256, "route": 128, "served_provider": 128, "served_model": 256,
        "outcome": 16, "error_code": 64,
    },
    "request_attempts": {
        "request_id": 160, "target": 128, "provider": 128, "model": 256, "outcome": 16,
        "error_class": 32,
    },
    "usage_ledger": {
        "project": 128, "key_name": 128, "id": 32, "request_id": 160, "provider": 128,
        "model": 256,
    },
}  # fmt: skip
"""The length of each text column the audit writes, by table (Rule 1)."""

Texts = tuple[tuple[int, int], ...]
"""The position in a row and the length of each of its text columns."""


def _texts(table: str, fields: Sequence[str]) -> Texts:
    lengths = TEXT_LENGTHS[table]
    return tuple((at, lengths[name]) for at, name in enumerate(fields) if name in lengths)


AUDIT_TEXTS: Final = _texts("request_audit", AUDIT_FIELDS)
ATTEMPT_TEXTS: Final = _texts("request_attempts", ATTEMPT_FIELDS)
USAGE_TEXTS: Final = _texts("usage_ledger", USAGE_FIELDS)


def fit(row: tuple[Any, ...], texts: Texts) -> tuple[Any, ...]:
    """Rule 1: `row` with every text cut to its column's length, NUL characters removed
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


def fitted(
    audits: Sequence[tuple[Any, ...]],
    attempts: Sequence[tuple[Any, ...]],
    usage: Sequence[tuple[Any, ...]],
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Rule 1 for a batch: its audit rows, attempt rows and usage entries, each `fit`."""
    return (
        [fit(row, AUDIT_TEXTS) for row in audits],
        [fit(row, ATTEMPT_TEXTS) for row in attempts],
        [fit(row, USAGE_TEXTS) for row in usage],
    )


def stored_time(epoch: float) -> str:
    """Rule 2: `epoch` as the text an aware UTC time is kept as on SQLite
    (`datetime.fromtimestamp(epoch, UTC).isoformat(" ", "microseconds")[:26]`)."""
    text, micro = epoch_parts(epoch)
    return f"{text[:10]} {text[11:]}.{micro:06d}"


def _quoted(names: Iterable[str]) -> str:
    return ", ".join(f'"{name}"' for name in names)


def _sqlite_insert(table: str, columns: Sequence[str], conflict: str) -> str:
    marks = ", ".join("?" * len(columns))
    return (  # Rule 3
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
    return (  # Rule 3
        f"INSERT INTO {table} ({_quoted(columns)}) SELECT {', '.join(values)} "  # noqa: S608
        f"FROM json_array_elements(%s::json) AS rows(r) ON CONFLICT {tail}"
    )


# SQLite: audit and usage rows bound as (stored time, [day,] project id, key id, the rest).
SQLITE_AUDIT: Final = _sqlite_insert(
    "request_audit", ("at", "project_id", "key_id", *AUDIT_FIELDS[1:]), '("request_id") '
)
SQLITE_ATTEMPTS: Final = _sqlite_insert("request_attempts", ATTEMPT_FIELDS, "")
SQLITE_USAGE: Final = _sqlite_insert(
    "usage_ledger", ("at", "day", "project_id", "key_id", *USAGE_FIELDS[1:]), '("id") '
)
# PostgreSQL: audit and usage rows as arrays of (project id, key id, the row).
POSTGRES_AUDIT: Final = _postgres_insert(
    "request_audit",
    ("project_id", "key_id", *AUDIT_FIELDS),
    {},
    '("request_id") DO NOTHING RETURNING request_id',
)
POSTGRES_ATTEMPTS: Final = _postgres_insert("request_attempts", ATTEMPT_FIELDS, {}, "DO NOTHING")
POSTGRES_USAGE: Final = _postgres_insert(
    "usage_ledger",
    ("project_id", "key_id", *USAGE_FIELDS),
    {"day": "(to_timestamp((r->>2)::float8) AT TIME ZONE 'UTC')::date"},
    '("id") DO NOTHING',
)
