"""Skips of an unhealthy target logged once per burst per health key, with the count at the
burst's end (on a fake clock), and the bounded bursts behind them."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import orjson

from turnout.gateway.observe.bursts import Bursts
from turnout.gateway.observe.logs import JsonFormatter, TextFormatter
from turnout.gateway.observe.skips import SkipLog
from turnout.record import AttemptEntry, RoutingRecord
from turnout.routing.clock import FakeClock

if TYPE_CHECKING:
    import pytest


def _skipped(request_id: str, outcome: str = "breaker_open", model: str = "m0") -> RoutingRecord:
    record = RoutingRecord(request_id, "triage", "triage", "ordered", "first")
    record.add(AttemptEntry(0, "t0", 0, outcome, "openai", model))
    answer = AttemptEntry(1, "t1", 1, "answered", "anthropic", "m1")
    answer.duration_ms = 10
    record.add(answer)
    return record


def _moves(record: RoutingRecord) -> list[tuple[AttemptEntry, AttemptEntry]]:
    skipped, answered = record.attempts
    return [(skipped, answered)]


def _events(caplog: pytest.LogCaptureFixture) -> list[tuple[str, dict[str, object]]]:
    return [
        (r.getMessage(), dict(getattr(r, "fields", {})))
        for r in caplog.records
        if r.name == "turnout.events"
    ]


def test_bursts_count_per_key_and_end_when_quiet() -> None:
    """The first event of a key starts a burst, the next ones count; ten quiet seconds end
    it (handed back once), and the next event starts a new one."""
    clock = FakeClock(100.0)
    bursts = Bursts(quiet=10, clock=clock.now)
    assert bursts.hit("a") is True
    clock.advance(4)
    assert (bursts.hit("a"), bursts.hit("a"), bursts.hit("b")) == (False, False, True)
    clock.advance(9.5)
    assert bursts.ended() == []  # both were last hit 9.5 s ago: still under way
    clock.advance(0.5)
    assert [(b.key, b.count, b.seconds) for b in bursts.ended()] == [("a", 3, 4.0), ("b", 1, 0.0)]
    assert (bursts.ended(), len(bursts)) == ([], 0)
    assert bursts.hit("a") is True


def test_bursts_keep_at_most_limit_keys() -> None:
    """Past `limit` keys under way, the oldest burst ends at once."""
    clock = FakeClock(100.0)
    bursts = Bursts(quiet=10, limit=2, clock=clock.now)
    for key in ("a", "b", "c"):
        assert bursts.hit(key)
    assert len(bursts) == 2
    assert [(b.key, b.count) for b in bursts.ended()] == [("a", 1)]
    assert bursts.ended() == []


def test_skips_of_one_key_log_one_failover_then_a_count_when_quiet(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Five requests skip an open breaker over four seconds: one `failover` line (the first
    request's), then, ten quiet seconds later, one `skips` line counting all five."""
    caplog.set_level(logging.INFO, logger="turnout.events")
    clock = FakeClock(100.0)
    log = SkipLog(clock=clock.now)
    for number in range(5):
        record = _skipped(f"r{number}")
        log.failovers(record, _moves(record))
        log.sweep()
        clock.advance(1)
    assert [(event, fields["request_id"]) for event, fields in _events(caplog)] == [
        ("failover", "r0")
    ]
    clock.advance(8.5)
    log.sweep()
    assert len(_events(caplog)) == 1  # 9.5 s after the last skip: the burst goes on
    clock.advance(1)
    log.sweep()
    assert _events(caplog)[1:] == [("skips", {"key": "openai/m0", "requests": 5, "seconds": 4.0})]
    record = _skipped("r9")
    log.failovers(record, _moves(record))
    assert _events(caplog)[-1][0] == "failover"  # a new burst, a new first line


def test_a_closing_breaker_ends_the_burst_and_failed_calls_log_every_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The key's breaker closing ends its burst with the count at once; another key has a
    burst of its own; a failed call is logged for every request."""
    caplog.set_level(logging.INFO, logger="turnout.events")
    clock = FakeClock(100.0)
    log = SkipLog(clock=clock.now)
    for number in range(3):
        for record in (_skipped(f"a{number}"), _skipped(f"b{number}", "parked", "m9")):
            log.failovers(record, _moves(record))
        failed = _skipped(f"f{number}", "failed")
        log.failovers(failed, _moves(failed))
        clock.advance(0.5)
    firsts = [fields["request_id"] for event, fields in _events(caplog) if event == "failover"]
    assert firsts == ["a0", "b0", "f0", "f1", "f2"]
    log.health_changed("openai/m0", "closed")
    assert _events(caplog)[-1] == ("skips", {"key": "openai/m0", "requests": 3, "seconds": 1.0})
    log.health_changed("openai/m0", "closed")  # no burst left: nothing more
    assert len(_events(caplog)) == 6


def test_one_skip_alone_has_no_count_line(caplog: pytest.LogCaptureFixture) -> None:
    """A burst of one request: its failover line says it all."""
    caplog.set_level(logging.INFO, logger="turnout.events")
    clock = FakeClock(100.0)
    log = SkipLog(clock=clock.now)
    record = _skipped("r0", "cooling_down")
    log.failovers(record, _moves(record))
    clock.advance(30)
    log.sweep()
    assert [event for event, _ in _events(caplog)] == ["failover"]


def test_the_skips_line_in_text_and_json() -> None:
    """`skips key=… requests=… seconds=…`, and the same names in JSON."""
    record = logging.LogRecord("turnout.events", logging.WARNING, __file__, 0, "skips", (), None)
    record.fields = {"key": "openai/gpt-4o", "requests": 57, "seconds": 12.5}
    text = TextFormatter().format(record)
    assert text.endswith(" WARNING turnout.events skips key=openai/gpt-4o requests=57 seconds=12.5")
    line = orjson.loads(JsonFormatter().format(record))
    assert list(line)[3:] == ["event", "key", "requests", "seconds"]
