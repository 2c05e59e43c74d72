"""The frames to the audit writer process: routing records sent as their values come back as the
same plain JSON, and a batch keeps its requests, their usage ids and their odd values."""

from __future__ import annotations

import dataclasses
import json

import orjson

from turnout.record import AttemptEntry, RoutingRecord, Usage
from turnout.store import audit_frames
from turnout.store.audit_frames import (
    HEADER,
    decode_batch,
    encode_batch,
    plain_from_values,
    record_from_values,
    record_values,
)
from turnout.store.audit_rows import FinishedRequest, IdMint


def _every_field_set() -> RoutingRecord:
    """A routing record none of whose fields (nor its attempt entries') has its default."""
    record = RoutingRecord(
        "req-1", "main", "route_1", "failover", "first target", requested_model="fast",
        session_id="s-1", answered="b", target_index=1, served_provider="openai",
        served_provider_id="prov_1", served_model="gpt-4o-mini", fallbacks=1, hedges=1,
        fallback_route="spare", fallback_kind="general", cache="miss", credential_fallback=True,
        conversation_id="c-1", visited_models=["m1", "m2"], remaining_attempts=2,
        usage=Usage(10, 20, 3, 4), discarded_usage=Usage(1, 2, 0, 0), cost=0.25,
        price_source="catalog",
        error={"status": 502, "code": "upstream_error", "message": "bad \u00e9 \u2603"},
    )  # fmt: skip
    record.add(
        AttemptEntry(
            0, "a", 0, "failed", provider="anthropic", model="claude", call_id="call-1",
            endpoint="/v1/messages", started_wall=1_790_000_000.123456, hedge=True,
            error_class="rate_limited", status=429, reason="429 rate limited", retry_after=2.5,
            duration_ms=12, committed=True, provider_request_id="pr-1", usage=Usage(1, 2),
            shadow=("policy-1", "policy-2"), family_switch="quota",
        )
    )  # fmt: skip
    record.add(AttemptEntry(0, "b", 1, "answered", "openai", "gpt-4o-mini"))
    return record


def _defaults(cls: type) -> dict[str, object]:
    defaults: dict[str, object] = {}
    for field in dataclasses.fields(cls):
        if field.default is not dataclasses.MISSING:
            defaults[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            defaults[field.name] = field.default_factory()
    return defaults


def test_a_record_sent_as_its_values_comes_back_as_the_same_plain_json() -> None:
    """Every field of a routing record and of its first attempt entry is set (a new field
    fails here until it is), and through JSON its values make the same `as_dict`."""
    record = _every_field_set()
    entry = record.attempts[0]
    assert all(getattr(record, name) != value for name, value in _defaults(RoutingRecord).items())
    assert all(getattr(entry, name) != value for name, value in _defaults(AttemptEntry).items())
    sent = orjson.loads(orjson.dumps(record_values(record)))
    assert record_from_values(sent).as_dict() == record.as_dict()


def _odd_values() -> RoutingRecord:
    """A record of defaults but odd values: unicode, an integer near 64 bits, a float of many
    digits, an entry never reached (no `started_wall`) and one with every default."""
    record = RoutingRecord(
        "req-\u00e9\U0001f600", "r\u2603", "route_\x00", "failover", "",
        fallbacks=2**63 - 1, cost=1e-300, visited_models=["\u00e9"],
        error={"status": 500, "nested": {"a": [1, 2.5, None, True]}},
    )  # fmt: skip
    record.add(AttemptEntry(0, "t\u00e9", -(2**63), "not_tried", started_wall=None))
    record.add(AttemptEntry(0, "u", 1, "failed", started_wall=0.0, usage=Usage()))
    return record


def test_a_record_made_plain_from_its_values_is_the_same_json_text() -> None:
    """The plain JSON made straight from the values (without the objects) is, key for key and
    in the same order, what `as_dict` makes: the same JSON text, for a record with every field
    set, with every default, and with odd values."""
    assert audit_frames._FAST  # the shortcut is what is compared, not the objects
    records = [
        _every_field_set(),
        RoutingRecord("req-2", "main", "route_1", "failover", "first target"),
        _odd_values(),
    ]
    for record in records:
        sent = orjson.loads(orjson.dumps(record_values(record)))
        made = plain_from_values(sent)
        assert orjson.dumps(made) == orjson.dumps(record.as_dict())
        assert json.dumps(made) == json.dumps(record.as_dict())
        assert made == record_from_values(sent).as_dict()


def test_a_batch_keeps_its_requests_and_mints_usage_ids_once() -> None:
    """A record object, a plain record and a record with an integer past 64 bits come back as
    plain JSON with their fields; a usage id is minted for a request that used tokens (not for
    one without, not again for one that has it)."""
    used = _every_field_set()
    unused = RoutingRecord("req-2", "main", "route_1", "failover", "first target")
    plain = {"request_id": "req-3", "error": {"code": "unknown_key"}}
    huge = {"request_id": "req-4", "usage": {"input_tokens": 2**70}}
    requests = [
        FinishedRequest(used, 1.5, "default", "app", "/v1/chat/completions", 200, "answered", 7),
        FinishedRequest(unused, 2.5, None, None, "/v1/messages", 502, "failed", 9),
        FinishedRequest(plain, 3.5, None, None, "/v1/chat/completions", 401, "refused", 0),
        FinishedRequest(huge, 4.5, "p", "k", "/v1/messages", 200, "answered", 1, "given-id"),
    ]
    body = encode_batch(7, True, requests, IdMint())
    assert HEADER.unpack(body[: HEADER.size]) == (len(body) - HEADER.size,)
    seq, flush, back = decode_batch(body[HEADER.size :])
    assert (seq, flush) == (7, True)
    assert [done.record for done in back] == [
        used.as_dict(), unused.as_dict(), plain, json.loads(json.dumps(huge))
    ]  # fmt: skip
    assert [done[1:8] for done in back] == [done[1:8] for done in requests]
    minted, none, also_none, given = (done.usage_id for done in back)
    assert minted is not None
    assert len(minted) == 32
    assert (none, also_none, given) == (None, None, "given-id")
