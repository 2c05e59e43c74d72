"""The routing record: fields, JSON shape and the table (docs/concepts.md)."""

from __future__ import annotations

import orjson

from turnout.record import OUTCOMES, AttemptEntry, RoutingRecord, iso_utc
from turnout.wire.model import Usage


def record() -> RoutingRecord:
    """A record with one failed and one answered entry."""
    rec = RoutingRecord("abc", "triage", "route_1", "failover", "failover: first target")
    rec.add(
        AttemptEntry(0, "primary", 0, "failed", "northwind", "nw-large", status=429, reason="429")
    )
    rec.add(
        AttemptEntry(
            0,
            "local",
            1,
            "answered",
            "local",
            "llama-local",
            usage=Usage(1, 2),
            started_wall=1_767_225_600.5,
            duration_ms=12,
        )
    )
    rec.answered, rec.served_model = "local", "llama-local"
    return rec


def test_entries_are_numbered_from_one_in_the_order_added() -> None:
    """add() sets each entry's 1-based index."""
    assert [e.index for e in record().attempts] == [1, 2]


def test_the_table_reads_like_the_strata_example() -> None:
    """format_table: a title line, then target / outcome / reason columns."""
    assert record().format_table() == (
        "route 'triage': answered by local (llama-local), hedges 0\n"
        "  primary   failed       429\n"
        "  local     answered"
    )


def test_as_dict_is_json_ready_with_every_spec_field() -> None:
    """as_dict holds every routing record field and serialises with orjson."""
    data = orjson.loads(orjson.dumps(record().as_dict()))
    assert set(data) == {
        "request_id",
        "route",
        "route_id",
        "strategy",
        "strategy_reason",
        "requested_model",
        "answered",
        "target_index",
        "served_provider",
        "served_provider_id",
        "served_model",
        "fallbacks",
        "hedges",
        "fallback_route",
        "fallback_kind",
        "cache",
        "session_id",
        "credential_fallback",
        "conversation_id",
        "visited_models",
        "remaining_attempts",
        "usage",
        "discarded_usage",
        "cost",
        "price_source",
        "error",
        "attempts",
    }
    entry = data["attempts"][1]
    assert set(entry) == {
        "index",
        "call_id",
        "target",
        "target_index",
        "provider",
        "model",
        "endpoint",
        "outcome",
        "error_class",
        "status",
        "reason",
        "retry_after",
        "started_at",
        "duration_ms",
        "committed",
        "provider_request_id",
        "usage",
        "hedge",
        "shadow",
        "family_switch",
    }
    assert entry["family_switch"] is None
    assert entry["started_at"] == "2026-01-01T00:00:00.500Z"
    assert entry["usage"] == {
        "input_tokens": 1,
        "output_tokens": 2,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "reasoning_tokens": 0,
    }


def test_iso_utc_renders_milliseconds_in_utc() -> None:
    """iso_utc gives ISO 8601 UTC with milliseconds and a Z."""
    assert iso_utc(0.25) == "1970-01-01T00:00:00.250Z"


def test_outcome_words_are_the_specs() -> None:
    """The thirteen outcome words (docs/concepts.md, Outcome)."""
    assert len(OUTCOMES) == 13
    assert "lost_race" in OUTCOMES
    assert "policy_skipped" in OUTCOMES
