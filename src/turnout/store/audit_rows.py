"""A finished request, and the plain rows it becomes: its audit row, one row per attempt entry,
and its usage entry (when it used tokens).

Pure: no I/O. Rows are tuples of JSON values in a fixed field order (`AUDIT_FIELDS`,
`ATTEMPT_FIELDS`, `USAGE_FIELDS`; times as epoch seconds, flags as 0 or 1, the routing record as
JSON text), the shape the store's writer binds without converting them again. A usage entry is
spilled to a file as one JSON object (`usage_dict`) and read back with `usage_tuple`, unchanged.

Rule 1: a finished request holds the routing record, as the object the gateway finished or as
plain JSON (`plain` turns the first into the second, off the event loop), and the caller's
names (project, key name), never a key or a credential; the routing record
holds none either, so nothing here can carry a secret.
Rule 2: usage is billed on the provider and model that served, as the routing record says, at
the record's cost (the serving call's usage at that provider's prices); never on the route.
Rule 3: a usage entry gets its `id` when it is made, once, so writing it twice writes one row.
A finished request may carry that id already (`usage_id`, minted where it was made, so that
handing it over twice, to a writer in another process, still bills it once). Ids come from an
`IdMint`: a start time and random bits drawn once per mint, then a counter, so
ids of one mint never repeat, ids of two mints differ in their random part, and one mint's ids
grow in order (the ledger's index on them is appended to, not split at random places).
"""

from __future__ import annotations

import itertools
import json
import secrets
import time
from typing import TYPE_CHECKING, Any, Final

import orjson

from turnout.record import FinishedRequest, RoutingRecord

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "ATTEMPT_FIELDS",
    "AUDIT_FIELDS",
    "USAGE_FIELDS",
    "AttemptRow",
    "AuditRow",
    "FinishedRequest",
    "IdMint",
    "Tokens",
    "UsageRow",
    "attempt_rows",
    "audit_row",
    "plain",
    "record_of",
    "tokens_of",
    "usage_dict",
    "usage_entry",
    "usage_tuple",
]

_TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")

AUDIT_FIELDS: Final = (
    "at", "project", "key_name", "request_id", "endpoint", "requested_model", "route",
    "served_provider", "served_model", "outcome", "status", "error_code", "latency_ms", "cached",
    *_TOKENS, "cost", "record",
)  # fmt: skip
"""The fields of an audit row, in order: `at` (epoch seconds) and the caller's names first (the
writer turns them into the stored time and ids), `record` last (the routing record as JSON)."""
ATTEMPT_FIELDS: Final = (
    "request_id", "index", "target", "provider", "model", "outcome", "error_class", "status",
    "duration_ms", "hedge",
)  # fmt: skip
"""The fields of an attempt row, in order."""
USAGE_FIELDS: Final = (
    "at", "project", "key_name", "id", "request_id", "provider", "model", *_TOKENS, "cost",
)  # fmt: skip
"""The fields of a usage entry, in order (`at` and the caller's names first, as in an audit
row)."""

AuditRow = tuple[Any, ...]
"""One audit row: values in `AUDIT_FIELDS` order."""
AttemptRow = tuple[Any, ...]
"""One attempt row: values in `ATTEMPT_FIELDS` order."""
UsageRow = tuple[Any, ...]
"""One usage entry: values in `USAGE_FIELDS` order."""


class IdMint:
    """Usage entry ids (Rule 3): 32 hex digits, the mint's start second (8), random bits drawn
    once (10) and a counter (14). Safe to share between the event loop and one thread: taking
    the next number of the counter is one step."""

    def __init__(self) -> None:
        self._prefix = f"{int(time.time()) & 0xFFFFFFFF:08x}{secrets.randbits(40):010x}"
        self._numbers = itertools.count()

    def __call__(self) -> str:
        """A new id."""
        return f"{self._prefix}{next(self._numbers):014x}"


def plain(done: FinishedRequest) -> FinishedRequest:
    """`done` with its routing record as plain JSON (Rule 1); unchanged when it already is."""
    if isinstance(done.record, RoutingRecord):
        return done._replace(record=done.record.as_dict())
    return done


def record_of(done: FinishedRequest) -> Mapping[str, Any]:
    """The routing record of `done` as plain JSON (made here when it is still the object)."""
    record = done.record
    return record.as_dict() if isinstance(record, RoutingRecord) else record


Tokens = tuple[int, int, int, int]
"""A request's input, output, cache read and cache write tokens, as its rows hold them."""


def tokens_of(record: Mapping[str, Any]) -> Tokens:
    """The serving call's tokens of the routing record `record` (plain JSON); zeros without."""
    usage = record.get("usage")
    if not usage:
        return (0, 0, 0, 0)
    get = usage.get
    return (
        int(get("input_tokens") or 0),
        int(get("output_tokens") or 0),
        int(get("cache_read_tokens") or 0),
        int(get("cache_write_tokens") or 0),
    )


def _json(record: Mapping[str, Any]) -> str:
    """The routing record as JSON text; a value the fast encoder refuses (an integer past 64
    bits, say) is written as the standard library writes it, or as its text."""
    try:
        return orjson.dumps(record).decode()
    except orjson.JSONEncodeError:
        return json.dumps(record, default=str)


def audit_row(
    done: FinishedRequest, record: Mapping[str, Any], tokens: Tokens | None = None
) -> AuditRow:
    """The audit row of `done`, whose routing record as plain JSON is `record` (project and key
    ids are added when it is written); `tokens`: its `tokens_of`, when known already."""
    error = record.get("error")
    return (
        done.at,
        done.project,
        done.key_name,
        record["request_id"],
        done.endpoint,
        record.get("requested_model"),
        record.get("route"),
        record.get("served_provider"),
        record.get("served_model"),
        done.outcome,
        done.status,
        error.get("code") if error else None,
        done.latency_ms,
        1 if record.get("cache") == "hit" else 0,
        *(tokens_of(record) if tokens is None else tokens),
        record.get("cost"),
        _json(record),
    )


def attempt_rows(record: Mapping[str, Any]) -> list[AttemptRow]:
    """One row per attempt entry of the routing record `record` (plain JSON), in order."""
    request_id = record["request_id"]
    return [
        (
            request_id,
            entry["index"],
            entry["target"],
            entry.get("provider"),
            entry.get("model"),
            entry["outcome"],
            entry.get("error_class"),
            entry.get("status"),
            entry.get("duration_ms"),
            1 if entry.get("hedge") else 0,
        )
        for entry in record.get("attempts") or ()
    ]


def usage_entry(
    done: FinishedRequest, record: Mapping[str, Any], mint: IdMint, tokens: Tokens | None = None
) -> UsageRow | None:
    """Rules 2 and 3: the usage entry of `done` (whose routing record as plain JSON is
    `record`) with its `usage_id`, else a new id from `mint`; None when it used no token.
    `tokens`: its `tokens_of`, when known already."""
    if tokens is None:
        tokens = tokens_of(record)
    if not any(tokens):
        return None
    return (
        done.at,
        done.project,
        done.key_name,
        done.usage_id or mint(),
        record["request_id"],
        record.get("served_provider"),
        record.get("served_model"),
        *tokens,
        record.get("cost"),
    )


def usage_dict(entry: UsageRow) -> dict[str, Any]:
    """A usage entry as the JSON object its spill line holds."""
    return dict(zip(USAGE_FIELDS, entry, strict=True))


def usage_tuple(entry: Mapping[str, Any]) -> UsageRow:
    """A usage entry read from a spill line, as a row; an entry of the wrong shape (a field
    missing) raises KeyError."""
    return tuple(entry[name] for name in USAGE_FIELDS)
