"""The observer's pure parts: the log formats, logging set-up, `serve`'s log flags, the access
line built without `logging` (the same line), which entries count as failovers, metric labels
taken from configured values only, and pending metric counts added as they would have been."""

from __future__ import annotations

import argparse
import io
import logging
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families

from turnout.gateway.commands.serve import add_serve_parser
from turnout.gateway.observe.logs import (
    ACCESS,
    FORMAT_ENV,
    LEVEL_ENV,
    JsonFormatter,
    TextFormatter,
    configure_logging,
    log_access,
)
from turnout.gateway.observe.metrics import Metrics
from turnout.gateway.observe.observer import failovers
from turnout.record import AttemptEntry, RoutingRecord, Usage

if TYPE_CHECKING:
    from collections.abc import Iterator

ROUTED = (
    "req-1", "POST", "/v1/chat/completions", 200, "ops-team", 12.345, "triage", "primary",
    "openai", "gpt 4o\nmini", 2, 1, 0.412, 42, 17, 1.65e-05, None,
)  # fmt: skip
REFUSED = ("req-2", "POST", "/v1/chat/completions", 401, None, 0.5)
UNUSUAL = (
    'r="3"', "GET", '/v1/a "b"', 499, "my key", 0.0, "", None, None, None, 12345, 0,
    123456.789, 250_000, None, 12.5, "hit",
)  # fmt: skip


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


@pytest.fixture
def logging_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Whatever a test does to the `turnout` loggers is undone after it."""
    monkeypatch.setenv(LEVEL_ENV, "info")
    monkeypatch.setenv(FORMAT_ENV, "text")
    root = logging.getLogger("turnout")
    saved = (list(root.handlers), root.level, root.propagate)
    yield
    for handler in root.handlers:
        if handler not in saved[0]:
            root.removeHandler(handler)
            handler.close()
    root.setLevel(saved[1])
    root.propagate = saved[2]


def _logged(fmt: str, values: tuple[Any, ...], *, level: str = "info", plain: bool) -> str:
    """The access line of `values`, built straight (`plain`: through `logging`, forced by a
    filter on the access logger), without its time."""
    stream = io.StringIO()
    writer = configure_logging(level, fmt, stream=stream)
    keep_all = logging.Filter()
    if plain:
        ACCESS.addFilter(keep_all)
    try:
        log_access(values)
    finally:
        ACCESS.removeFilter(keep_all)
    writer.flush()
    line = stream.getvalue()
    if not line:
        return line
    if fmt == "json":
        obj = orjson.loads(line)
        assert obj.pop("time").endswith("Z")
        return orjson.dumps(obj).decode()
    return line.split(" ", 1)[1]


@pytest.mark.usefixtures("logging_state")
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_access_line_is_the_line_logging_would_write(fmt: str) -> None:
    """Built without a log record, the access line is the one the formatter writes for the
    same fields: a routed request, one refused before routing, and unusual values (quotes,
    spaces, an empty word, missing values, large counts)."""
    for values in (ROUTED, REFUSED, UNUSUAL):
        assert _logged(fmt, values, plain=False) == _logged(fmt, values, plain=True)


@pytest.mark.usefixtures("logging_state")
def test_access_line_fields_in_order_with_quoting() -> None:
    """Text: the documented fields in order; a value with a space or a line break is quoted and
    the line break escaped, so the line stays one line."""
    line = _logged("text", ROUTED, plain=False)
    assert line == (
        "INFO turnout.access access request_id=req-1 method=POST path=/v1/chat/completions"
        " status=200 key=ops-team duration_ms=12.345 route=triage target=primary"
        ' provider=openai model="gpt 4o\\nmini" attempts=2 failovers=1 overhead_ms=0.412'
        " input_tokens=42 output_tokens=17 cost_usd=1.65e-05 cache=-\n"
    )
    obj = orjson.loads(_logged("json", ROUTED, plain=False))
    assert list(obj)[3:] == [
        "request_id", "method", "path", "status", "key", "duration_ms", "route", "target",
        "provider", "model", "attempts", "failovers", "overhead_ms", "input_tokens",
        "output_tokens", "cost_usd", "cache",
    ]  # fmt: skip


@pytest.mark.usefixtures("logging_state")
def test_log_level_warning_drops_the_access_line() -> None:
    """`--log-level warning`: no access line, straight or through `logging`."""
    assert _logged("json", ROUTED, level="warning", plain=False) == ""
    assert _logged("json", ROUTED, level="warning", plain=True) == ""


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


def _samples(metrics: Metrics) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(metrics.render().decode())
        for sample in family.samples
        if not sample.name.endswith("_created")
    }


def test_pending_counts_reach_metrics_as_observe_would_add_them() -> None:
    """Counts kept pending between scrapes show, at the next scrape, the same buckets, sums,
    tokens and cost as observing each request at once; a second scrape adds nothing twice."""
    metrics = Metrics()
    durations = (40, 40, 700, 3000, 90_000)
    for number, ms in enumerate(durations):
        record = _record("answered")
        record.attempts[0].duration_ms = ms
        record.attempts[0].usage = Usage(input_tokens=10 + number, output_tokens=5)
        record.cost = 0.25
        metrics.count_request(record, "answered", [], 0.0003 * (number + 1))
    samples = _samples(metrics)

    def value(name: str, **labels: str) -> float | None:
        return samples.get((name, frozenset(labels.items())))

    labels = {"provider": "openai", "model": "m0", "outcome": "answered"}
    bucket = "turnout_attempt_duration_seconds_bucket"
    assert value(bucket, le="0.05", **labels) == 2
    assert value(bucket, le="1.0", **labels) == 3
    assert value(bucket, le="5.0", **labels) == 4
    assert value(bucket, le="60.0", **labels) == 4
    assert value(bucket, le="+Inf", **labels) == 5
    assert value("turnout_attempt_duration_seconds_sum", **labels) == pytest.approx(93.78)
    tokens = {"provider": "openai", "model": "m0"}
    assert value("turnout_tokens_total", kind="input", **tokens) == 60
    assert value("turnout_tokens_total", kind="output", **tokens) == 25
    assert value("turnout_tokens_total", kind="cache_read", **tokens) is None
    assert value("turnout_cost_usd_total", **tokens) == 1.25
    assert value("turnout_overhead_seconds_bucket", le="0.0005") == 1
    assert value("turnout_overhead_seconds_bucket", le="0.001") == 3
    assert value("turnout_overhead_seconds_count") == 5
    assert value("turnout_overhead_seconds_sum") == pytest.approx(0.0045)
    assert value("turnout_route_calls_total", route="triage", outcome="answered") == 5
    assert _samples(metrics) == samples


def test_each_call_counts_under_its_own_labels() -> None:
    """Calls of different kinds keep their counts apart: each token kind under its own
    `kind`, the cost under the answered call only, durations under each call's outcome, and
    a call with no provider or model under empty labels."""
    metrics = Metrics()
    for _ in range(2):
        record = _record("failed", "answered")
        record.attempts[0].usage = Usage(input_tokens=1, output_tokens=2)
        record.attempts[1].usage = Usage(
            input_tokens=3, output_tokens=4, cache_read_tokens=5, cache_write_tokens=6
        )
        record.cost = 0.5
        metrics.count_request(record, "answered", [record.attempts[0]], None)
    record = _record("answered")
    record.attempts[0].provider = record.attempts[0].model = None
    metrics.count_request(record, "answered", [], None)
    samples = _samples(metrics)

    def value(name: str, **labels: str) -> float | None:
        return samples.get((name, frozenset(labels.items())))

    tokens = "turnout_tokens_total"
    assert value(tokens, provider="openai", model="m0", kind="input") == 2
    assert value(tokens, provider="openai", model="m0", kind="output") == 4
    assert value(tokens, provider="openai", model="m0", kind="cache_read") is None
    kinds = {"input": 6, "output": 8, "cache_read": 10, "cache_write": 12}
    for kind, tokens_counted in kinds.items():
        assert value(tokens, provider="openai", model="m1", kind=kind) == tokens_counted
    assert value("turnout_cost_usd_total", provider="openai", model="m1") == 1.0
    assert value("turnout_cost_usd_total", provider="openai", model="m0") is None
    calls = "turnout_attempt_duration_seconds_count"
    assert value(calls, provider="openai", model="m0", outcome="failed") == 2
    assert value(calls, provider="openai", model="m1", outcome="answered") == 2
    assert value(calls, provider="", model="", outcome="answered") == 1
    assert value("turnout_route_calls_total", route="triage", outcome="answered") == 3
