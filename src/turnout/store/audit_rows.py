"""A finished request, and the plain rows it becomes: its audit row, one row per attempt entry,
and its usage entry (when it used tokens).

Pure: no I/O. Rows are plain dicts with JSON values only (times as epoch seconds), so a usage
entry can be spilled to a file as one JSON line and written later, unchanged.

Rule 1: a finished request holds the routing record, as the object the gateway finished or as
plain JSON (`plain` turns the first into the second, off the event loop), and the caller's
names (project, key name), never a key or a credential; the routing record
holds none either, so nothing here can carry a secret.
Rule 2: usage is billed on the provider and model that served, as the routing record says, at
the record's cost (the serving call's usage at that provider's prices); never on the route.
Rule 3: a usage entry gets its `id` when it is made, once, so writing it twice writes one row.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, NamedTuple

from turnout.record import RoutingRecord

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "FinishedRequest",
    "attempt_rows",
    "audit_row",
    "plain",
    "record_of",
    "usage_entry",
]

_TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


class FinishedRequest(NamedTuple):
    """One request the gateway finished: its routing record (Rule 1), when it ended
    (`at`, epoch seconds), the caller's project and key name, the endpoint (path), the status
    sent (499 when the caller left), the outcome (`answered`, `failed`, `cancelled`) and the
    time it took (`latency_ms`)."""

    record: Mapping[str, Any] | RoutingRecord
    at: float
    project: str | None
    key_name: str | None
    endpoint: str
    status: int
    outcome: str
    latency_ms: int


def plain(done: FinishedRequest) -> FinishedRequest:
    """`done` with its routing record as plain JSON (Rule 1); unchanged when it already is."""
    if isinstance(done.record, RoutingRecord):
        return done._replace(record=done.record.as_dict())
    return done


def record_of(done: FinishedRequest) -> Mapping[str, Any]:
    """The routing record of `done` as plain JSON (made here when it is still the object)."""
    record = done.record
    return record.as_dict() if isinstance(record, RoutingRecord) else record


def _usage(record: Mapping[str, Any]) -> dict[str, int]:
    usage = record.get("usage") or {}
    return {name: int(usage.get(name) or 0) for name in _TOKENS}


def audit_row(done: FinishedRequest) -> dict[str, Any]:
    """The request's audit row (project and key ids are filled in when it is written)."""
    record = record_of(done)
    error = record.get("error") or {}
    return {
        "request_id": record["request_id"],
        "at": done.at,
        "project": done.project,
        "key_name": done.key_name,
        "endpoint": done.endpoint,
        "requested_model": record.get("requested_model"),
        "route": record.get("route"),
        "served_provider": record.get("served_provider"),
        "served_model": record.get("served_model"),
        "outcome": done.outcome,
        "status": done.status,
        "error_code": error.get("code"),
        "latency_ms": done.latency_ms,
        "cached": record.get("cache") == "hit",
        **_usage(record),
        "cost": record.get("cost"),
        "record": record,
    }


def attempt_rows(done: FinishedRequest) -> list[dict[str, Any]]:
    """One row per attempt entry of the request, in order."""
    request_id = record_of(done)["request_id"]
    return [
        {
            "request_id": request_id,
            "index": entry["index"],
            "target": entry["target"],
            "provider": entry.get("provider"),
            "model": entry.get("model"),
            "outcome": entry["outcome"],
            "error_class": entry.get("error_class"),
            "status": entry.get("status"),
            "duration_ms": entry.get("duration_ms"),
            "hedge": bool(entry.get("hedge")),
        }
        for entry in record_of(done).get("attempts") or ()
    ]


def usage_entry(done: FinishedRequest) -> dict[str, Any] | None:
    """Rule 2 and 3: the request's usage entry with a new id, or None when it used no token."""
    record = record_of(done)
    tokens = _usage(record)
    if not any(tokens.values()):
        return None
    return {
        "id": uuid.uuid4().hex,
        "at": done.at,
        "request_id": record["request_id"],
        "project": done.project,
        "key_name": done.key_name,
        "provider": record.get("served_provider"),
        "model": record.get("served_model"),
        **tokens,
        "cost": record.get("cost"),
    }
