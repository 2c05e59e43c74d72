"""The frames between a serving process and its audit writer process (`audit_child`): finished
requests one way, what became of them the other way.

Pure: no I/O. A frame is a 4-byte big-endian length and that many bytes of JSON.

Rule 1: the first frame to the child holds its settings (`Settings`: the store's URL, with
its password, and the writer's options); it travels on the child's standard input, never in
its arguments or environment, where other users of the machine could read it.
Rule 2: every later frame to the child is a batch: `[seq, flush, requests]`, `seq` counting up
from 1 in the serving process, `flush` true when the serving process waits for the batch (and
everything before it) to be written, each request the fields of a `FinishedRequest` with its
usage id already minted (so a batch sent twice bills once), then how its routing record
travels, then the record: `values` (a `RoutingRecord` object as its fields' values in their
declared order, its attempt entries likewise: taken in one step each on the event loop; the
child makes them the plain JSON `as_dict` makes of the object, without building it: each key
of `as_dict`, in its order, holds its field's value, except an entry's `started_at`; so the
JSON is exactly what the serving process would have made), `plain` (a record that was plain
JSON already), or `text` (its JSON text, when the fast encoder refuses a value, such as an
integer past 64 bits).
Rule 3: each frame from the child is a report (`Report`): the last batch whose requests are all
written, rejected or spilled (`written`, -1 for none yet), the last `flush` batch it went
through (`flushed`), and its writer's counters.
"""

from __future__ import annotations

import dataclasses
import json
import operator
import struct
from typing import TYPE_CHECKING, Any, Final, TypedDict

import orjson

from turnout.record import AttemptEntry, RoutingRecord, Usage, iso_utc
from turnout.store.audit_speed import dict_maker, finished_row

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from turnout.store.audit_rows import FinishedRequest, IdMint

__all__ = [
    "HEADER",
    "Report",
    "Settings",
    "decode_batch",
    "encode_batch",
    "frame",
    "held_requests",
    "plain_from_values",
    "record_from_values",
    "record_values",
]

HEADER: Final = struct.Struct(">I")
"""A frame's length, before its JSON."""


class Settings(TypedDict):
    """The child's first frame (Rule 1): the store's URL, the path of its file when it is
    SQLite (`sqlite`, else None), the spill folder and the writer's `AuditPolicy` (`as_dict`)."""

    url: str
    sqlite: str | None
    spill_dir: str
    policy: dict[str, Any]


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


_RECORD_FIELDS: Final = tuple(field.name for field in dataclasses.fields(RoutingRecord))
_ENTRY_FIELDS: Final = tuple(field.name for field in dataclasses.fields(AttemptEntry))
_ATTEMPTS: Final = _RECORD_FIELDS.index("attempts")
_record_values = operator.attrgetter(*_RECORD_FIELDS)
_entry_values = operator.attrgetter(*_ENTRY_FIELDS)
_VALUES, _PLAIN, _TEXT = "values", "plain", "text"


def record_values(record: RoutingRecord) -> list[Any]:
    """Rule 2: `record` as its fields' values, its attempt entries likewise (a `Usage` stays
    an object: the encoder writes it as an object of its fields)."""
    values = list(_record_values(record))
    values[_ATTEMPTS] = [_entry_values(entry) for entry in record.attempts]
    return values


def _usage(fields: dict[str, int] | None) -> Usage | None:
    return None if fields is None else Usage(**fields)


def record_from_values(values: list[Any]) -> RoutingRecord:
    """Rule 2: the routing record `record_values` gave, once it went through JSON."""
    fields = dict(zip(_RECORD_FIELDS, values, strict=True))
    attempts = []
    for entry_values in values[_ATTEMPTS]:
        entry = dict(zip(_ENTRY_FIELDS, entry_values, strict=True))
        entry["usage"] = _usage(entry["usage"])
        entry["shadow"] = tuple(entry["shadow"])
        attempts.append(AttemptEntry(**entry))
    fields["attempts"] = attempts
    fields["usage"] = _usage(fields["usage"])
    fields["discarded_usage"] = _usage(fields["discarded_usage"])
    return RoutingRecord(**fields)


def _shape(
    plain: dict[str, Any], fields: tuple[str, ...], derived: Mapping[str, str]
) -> tuple[tuple[str, ...], tuple[int, ...]] | None:
    """The keys of `plain` (an `as_dict` of defaults) in order, with the position in `fields`
    of the value each key is made of (a key not a field name: the field `derived` names);
    None when a key is made of no field."""
    places = []
    for key in plain:
        name = derived.get(key, key)
        if name not in fields:
            return None
        places.append(fields.index(name))
    return tuple(plain), tuple(places)


_USAGE_FIELDS: Final = tuple(field.name for field in dataclasses.fields(Usage))
_RECORD_SHAPE: Final = _shape(RoutingRecord("", "", "", "", "").as_dict(), _RECORD_FIELDS, {})
_ENTRY_SHAPE: Final = _shape(
    AttemptEntry(0, "", 0, "").as_dict(), _ENTRY_FIELDS, {"started_at": "started_wall"}
)
_FAST: Final = (
    _RECORD_SHAPE is not None
    and _ENTRY_SHAPE is not None
    and tuple(Usage().as_dict()) == _USAGE_FIELDS
    and _RECORD_SHAPE[0][-1] == "attempts"
    and "started_at" in _ENTRY_SHAPE[0]
)
"""Rule 2's shortcut holds: `as_dict` copies each field's value under the field's name (a
`Usage` as an object of its fields in their order, which is how it travels), but for the
attempt entries (made likewise) and an entry's `started_at` (from `started_wall`)."""


if _FAST:
    _plain_record = dict_maker(_RECORD_SHAPE)  # type: ignore[arg-type]
    _plain_entry = dict_maker(_ENTRY_SHAPE)  # type: ignore[arg-type]


def plain_from_values(values: list[Any]) -> dict[str, Any]:
    """Rule 2: `record_from_values(values).as_dict()`, made from the values without the
    objects: the keys in the order `as_dict` gives them, each the value of its field as it came
    through JSON (a new list or object already), an entry's `started_at` rendered from its
    `started_wall`."""
    if not _FAST or len(values) != len(_RECORD_FIELDS):
        return record_from_values(values).as_dict()
    plain = _plain_record(values)
    attempts = []
    for entry_values in values[_ATTEMPTS]:
        if len(entry_values) != len(_ENTRY_FIELDS):
            return record_from_values(values).as_dict()
        entry = _plain_entry(entry_values)
        wall = entry["started_at"]
        if wall is not None:
            entry["started_at"] = iso_utc(wall)
        attempts.append(entry)
    plain["attempts"] = attempts
    return plain


def _row(done: FinishedRequest, mint: IdMint) -> list[Any]:
    record = done.record
    carried: list[Any] | Mapping[str, Any]
    if isinstance(record, RoutingRecord):
        kind, used, carried = _VALUES, record.usage is not None, record_values(record)
    else:
        kind, used, carried = _PLAIN, bool(record.get("usage")), record
    usage_id = done.usage_id or (mint() if used else None)
    return [done.at, done.project, done.key_name, done.endpoint, done.status, done.outcome,
            done.latency_ms, usage_id, kind, carried]  # fmt: skip


def encode_batch(seq: int, flush: bool, requests: Iterable[FinishedRequest], mint: IdMint) -> bytes:
    """Rule 2: the frame of batch `seq`; usage ids not minted yet come from `mint`."""
    pairs = [(done, _row(done, mint)) for done in requests]
    try:
        return frame(orjson.dumps([seq, flush, [row for _, row in pairs]]))
    except orjson.JSONEncodeError:
        return frame(orjson.dumps([seq, flush, [_encodable(done, row) for done, row in pairs]]))


def _encodable(done: FinishedRequest, row: list[Any]) -> list[Any]:
    try:
        orjson.dumps(row)
    except orjson.JSONEncodeError:
        record = done.record
        plain = record.as_dict() if isinstance(record, RoutingRecord) else record
        return [*row[:-2], _TEXT, json.dumps(plain, default=str)]
    return row


def decode_batch(body: bytes) -> tuple[int, bool, list[FinishedRequest]]:
    """Rule 2: a batch frame's `seq`, `flush` and requests (routing records as plain JSON)."""
    seq, flush, rows = orjson.loads(body)
    requests = []
    for *fields, kind, carried in rows:
        if kind == _VALUES:
            plain = plain_from_values(carried)
        else:
            plain = json.loads(carried) if kind == _TEXT else carried
        requests.append(finished_row([plain, *fields]))
    return int(seq), bool(flush), requests


def held_requests(body: bytes) -> list[FinishedRequest]:
    """The requests of a batch frame (its length first), to hand to a writer in this process."""
    return decode_batch(body[HEADER.size :])[2]
