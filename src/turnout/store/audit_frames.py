"""The frames between a serving process and its audit writer process (`audit_child`): finished
requests one way, what became of them the other way.

Pure: no I/O. A frame is a 4-byte big-endian length and that many bytes of JSON.

Rule 1: the first frame to the child holds its settings (`Settings`: the store's URL, with
its password, and the writer's options); it travels on the child's standard input, never in
its arguments or environment, where other users of the machine could read it.
Rule 2: every later frame to the child is a batch: `[seq, flush, requests]`, `seq` counting up
from 1 in the serving process, `flush` true when the serving process waits for the batch (and
everything before it) to be written, each request the fields of a `FinishedRequest` with its
routing record as plain JSON and its usage id already minted (so a batch sent twice bills
once). A record the fast encoder refuses (an integer past 64 bits) travels as its JSON text.
Rule 3: each frame from the child is a report (`Report`): the last batch whose requests are all
written, rejected or spilled (`written`, -1 for none yet), the last `flush` batch it went
through (`flushed`), and its writer's counters.
"""

from __future__ import annotations

import json
import struct
from typing import TYPE_CHECKING, Any, Final, TypedDict

import orjson

from turnout.record import RoutingRecord
from turnout.store.audit_rows import FinishedRequest, IdMint

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "HEADER",
    "Report",
    "Settings",
    "decode_batch",
    "encode_batch",
    "frame",
    "held_requests",
]

HEADER: Final = struct.Struct(">I")
"""A frame's length, before its JSON."""


class Settings(TypedDict):
    """The child's first frame (Rule 1): the store's URL and the `AuditWriter`'s options."""

    url: str
    spill_dir: str
    retention_days: float
    batch_size: int
    flush_seconds: float
    max_queue: int
    cleanup_seconds: float


class Report(TypedDict):
    """A frame from the child (Rule 3)."""

    ready: bool
    written: int
    flushed: int
    dropped: int
    rejected: int
    queued: int
    spilled: int


def frame(body: bytes) -> bytes:
    """`body` (JSON) as a frame."""
    return HEADER.pack(len(body)) + body


def _plain_row(done: FinishedRequest, mint: IdMint) -> list[Any]:
    record = done.record
    plain = record.as_dict() if isinstance(record, RoutingRecord) else record
    usage_id = done.usage_id or (mint() if plain.get("usage") else None)
    return [done.at, done.project, done.key_name, done.endpoint, done.status, done.outcome,
            done.latency_ms, usage_id, plain]  # fmt: skip


def encode_batch(seq: int, flush: bool, requests: Iterable[FinishedRequest], mint: IdMint) -> bytes:
    """Rule 2: the frame of batch `seq`; usage ids not minted yet come from `mint`."""
    rows = [_plain_row(done, mint) for done in requests]
    try:
        return frame(orjson.dumps([seq, flush, rows]))
    except orjson.JSONEncodeError:
        return frame(orjson.dumps([seq, flush, [_encodable(row) for row in rows]]))


def _encodable(row: list[Any]) -> list[Any]:
    try:
        orjson.dumps(row)
    except orjson.JSONEncodeError:
        return [*row[:-1], json.dumps(row[-1], default=str)]
    return row


def decode_batch(body: bytes) -> tuple[int, bool, list[FinishedRequest]]:
    """Rule 2: a batch frame's `seq`, `flush` and requests (routing records as plain JSON)."""
    seq, flush, rows = orjson.loads(body)
    requests = []
    for *fields, record in rows:
        plain = json.loads(record) if isinstance(record, str) else record
        requests.append(FinishedRequest(plain, *fields))
    return int(seq), bool(flush), requests


def held_requests(body: bytes) -> list[FinishedRequest]:
    """The requests of a batch frame (its length first), to hand to a writer in this process."""
    return decode_batch(body[HEADER.size :])[2]
