"""The observer's pure parts: the log formats, logging set-up, `serve`'s log flags, which
entries count as failovers, and metric labels taken from configured values only."""

from __future__ import annotations

import argparse
import io
import logging

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from turnout.gateway.commands.serve import add_serve_parser
from turnout.gateway.observe.logs import (
    FORMAT_ENV,
    LEVEL_ENV,
    JsonFormatter,
    TextFormatter,
    configure_logging,
)
from turnout.gateway.observe.metrics import Metrics
from turnout.gateway.observe.observer import failovers
from turnout.record import AttemptEntry, RoutingRecord


def _line(fields: dict[str, object]) -> logging.LogRecord:
    record = logging.LogRecord("turnout.events", logging.WARNING, "", 0, "failover", (), None)
    record.fields = fields
    return record


def test_text_format_appends_fields_and_quotes_spaces() -> None:
    """Fields read `name=value`; a value with a space is quoted, None is `-`."""
    line = TextFormatter().format(_line({"route": "fo", "reason": "429 rate limited", "to": None}))
    assert line.endswith(' WARNING turnout.events failover route=fo reason="429 rate limited" to=-')


def test_json_format_is_one_object_with_stable_names() -> None:
    """One JSON object on one line: time, level, logger, event, then the fields."""
    line = JsonFormatter().format(_line({"route": "fo", "status": 429}))
    assert "\n" not in line
    obj = orjson.loads(line)
    assert list(obj) == ["time", "level", "logger", "event", "route", "status"]
    assert (obj["level"], obj["event"], obj["status"]) == ("WARNING", "failover", 429)


def test_configure_logging_rejects_an_unknown_level_or_format(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A level or format outside the documented words is a ValueError, not a silent default."""
    monkeypatch.setenv(LEVEL_ENV, "info")
    monkeypatch.setenv(FORMAT_ENV, "text")
    with pytest.raises(ValueError, match="log level"):
        configure_logging("verbose", "text", stream=io.StringIO())
    with pytest.raises(ValueError, match="log format"):
        configure_logging("info", "xml", stream=io.StringIO())


def test_serve_takes_log_level_and_format() -> None:
    """`--log-level` defaults to info and `--log-format` to text; other words are refused."""
    parser = argparse.ArgumentParser()
    add_serve_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["serve"])
    assert (args.log_level, args.log_format) == ("info", "text")
    args = parser.parse_args(["serve", "--log-level", "warning", "--log-format", "json"])
    assert (args.log_level, args.log_format) == ("warning", "json")
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--log-format", "xml"])


def _record(*outcomes: str) -> RoutingRecord:
    record = RoutingRecord("r1", "triage", "triage", "ordered", "first")
    for index, outcome in enumerate(outcomes):
        error_class = "rate_limited" if outcome == "failed" else None
        entry = AttemptEntry(0, f"t{index}", index, outcome, "openai", f"m{index}")
        entry.error_class = error_class
        entry.duration_ms = 10 if entry.is_call else None
        record.add(entry)
    return record


def test_failovers_are_failures_and_skips_followed_by_a_call() -> None:
    """A skip and a failure before the answer are failovers; a last failure, with no call
    after it, and a target never tried are not."""
    moves = failovers(_record("breaker_open", "failed", "answered", "not_tried"))
    assert [(left.target, to.target) for left, to in moves] == [("t0", "t1"), ("t1", "t2")]
    moves = failovers(_record("failed", "failed"))
    assert [(left.target, to.target) for left, to in moves] == [("t0", "t1")]


def test_metric_labels_come_from_the_configured_target() -> None:
    """Counts go under the route, the entry's provider and configured model and the error
    class: the request id and the upstream's answered model never become labels."""
    metrics = Metrics()
    record = _record("failed", "answered")
    record.served_model = "m1-2025-06-01-upstream-name"
    moves = failovers(record)
    metrics.count_request(record, "answered", [left for left, _ in moves], 0.001)
    text = metrics.render().decode()
    assert "r1" not in {
        v
        for f in text_string_to_metric_families(text)
        for s in f.samples
        for v in s.labels.values()
    }
    assert 'turnout_route_failovers_total{reason="rate_limited",route="triage"} 1.0' in text
    assert "upstream-name" not in text


def test_summed_counts_render_as_one_by_one_observations() -> None:
    """Counts summed before they reach the Prometheus values render exactly as the
    values observed one at a time would: each bucket, each sum, each counter."""
    summed = Metrics()
    overheads = [0.0001, 0.0003, 0.0003, 0.002, 0.2, 7.0]
    for index, overhead in enumerate(overheads):
        record = _record("failed", "answered")
        record.attempts[1].duration_ms = 40 + 300 * index
        summed.count_request(record, "answered", [record.attempts[0]], overhead)
    one_by_one = Metrics()
    for index, overhead in enumerate(overheads):
        one_by_one.calls.labels("triage", "answered").inc()
        one_by_one.failovers.labels("triage", "rate_limited").inc()
        for entry_index, ms in ((0, 10), (1, 40 + 300 * index)):
            outcome = "failed" if entry_index == 0 else "answered"
            labels = ("openai", f"m{entry_index}", outcome)
            one_by_one.attempt_seconds.labels(*labels).observe(ms / 1000)
        one_by_one.overhead.observe(overhead)

    def samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(metrics.render().decode())
            for sample in family.samples
            if not sample.name.endswith("_created")
        }

    assert samples(summed) == samples(one_by_one)
