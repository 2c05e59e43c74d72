"""What observing one finished request costs: the access line, the metrics and the dashboard's
activity, in-process, each part alone and all together.

Run: ``python bench/observe.py [--requests N] [--rounds R] [--json]``.

Each row sends N synthetic finished requests (one answered call with usage and a cost, a
unique request id, the way a plain chat completion ends) through `Observer.request_done`, or
through one of its parts, and divides the process CPU time they took (`time.process_time`: every
thread, so a log writer's own thread counts too) by N. Log lines go to a temporary file opened
line-buffered, the way stderr is when an operator redirects it to a file; the time to write
out what is still buffered at the end is part of the row. The audit sink is left out (it has a
benchmark of its own, ``bench/audit.py``).

Rows:

- ``request_done, text log`` / ``json log``: everything, the way ``turnout serve`` runs with
  ``--log-format text`` / ``json``;
- ``request_done, no access line``: ``--log-level warning`` (metrics and activity only);
- ``access line, text`` / ``json``: request_done with metrics and activity that do nothing,
  minus ``observer alone`` (the observer's own logic with no log, metrics or activity);
- ``Metrics.count_request``, ``Activity.add``: each alone, called as the observer calls it;
- ``Metrics.count_request, workers``: the same in a child process with
  ``PROMETHEUS_MULTIPROC_DIR`` set (``--workers N``: values kept in shared memory-mapped files).

The cyclic collector is tuned as ``turnout serve`` tunes it (young-generation threshold 10,000)
and the synthetic requests are frozen out of its sight. Medians over ``--rounds``. Nothing leaves
the machine.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from turnout.record import RoutingRecord


class _Exchange:
    """What the observer is handed of a finished request."""

    def __init__(self, record: RoutingRecord) -> None:
        self.began = time.perf_counter() - 0.0123
        self.record = record
        self.status = 200


def _record(number: int) -> RoutingRecord:
    from turnout.record import AttemptEntry, RoutingRecord, Usage

    record = RoutingRecord(f"req-{number:08d}", "main", "route_1", "failover", "first target")
    record.requested_model = "gpt-4o-mini"
    entry = record.add(AttemptEntry(0, "primary", 0, "answered", "openai", "gpt-4o-mini"))
    entry.started_wall, entry.duration_ms = time.time(), 12
    entry.usage = Usage(input_tokens=42, output_tokens=17)
    record.answered, record.target_index = "primary", 0
    record.served_provider, record.served_model = "openai", "gpt-4o-mini-2024-07-18"
    record.usage, record.cost = entry.usage, 0.0000165
    return record


def _exchanges(count: int) -> list[Any]:
    return [_Exchange(_record(n)) for n in range(count)]


def _cpu_per_request(count: int, run: Callable[[list[Any]], None]) -> float:
    """µs of process CPU per request for `run` over `count` fresh exchanges. The exchanges are
    frozen out of the cyclic collector's sight first, as `turnout serve` freezes what start-up
    built: what is measured is the garbage the observer makes, not the benchmark's."""
    exchanges = _exchanges(count)
    gc.collect()
    gc.freeze()
    try:
        start = time.process_time()
        run(exchanges)
        return (time.process_time() - start) / count * 1e6
    finally:
        gc.unfreeze()


def _logging_to(directory: Path, level: str, fmt: str) -> tuple[Path, Callable[[], None]]:
    """Configure the gateway's logging into a new line-buffered file; return the file and a
    function that writes out what is buffered and detaches the handler."""
    from turnout.gateway.observe.logs import configure_logging

    path = directory / f"log-{time.monotonic_ns()}.txt"
    stream = path.open("w", buffering=1)
    handler = configure_logging(level, fmt, stream=stream)

    def done() -> None:
        handler.flush()
        logging.getLogger("turnout").removeHandler(handler)
        handler.close()
        stream.close()

    return path, done


def _observer_row(directory: Path, count: int, level: str, fmt: str, *, parts: bool) -> float:
    from turnout.gateway.observe.activity import Activity
    from turnout.gateway.observe.metrics import Metrics
    from turnout.gateway.observe.observer import Observer

    class _NoMetrics(Metrics):
        def count_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    class _NoActivity(Activity):
        def add(self, *args: Any, **kwargs: Any) -> None:
            return None

    if parts:
        observer = Observer(Metrics(), Activity(capacity=200))
    else:
        observer = Observer(_NoMetrics(), _NoActivity())
    path, done = _logging_to(directory, level, fmt)

    def run(exchanges: list[Any]) -> None:
        for exchange in exchanges:
            observer.request_done(
                "POST",
                "/v1/chat/completions",
                exchange.status,
                exchange.began,
                exchange.record,
                gone=False,
                failure=None,
                caller_id=None,
                sent_id=None,
                key="ops-team",
                project="default",
                opened=None,
            )
        done()

    result = _cpu_per_request(count, run)
    lines = path.read_text().count("\n")
    expected = count if level == "info" else 0
    if lines != expected:
        raise SystemExit(f"the log has {lines} lines, expected {expected}")
    path.unlink()
    return result


def _metrics_row(count: int) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    from turnout.gateway.observe.metrics import Metrics

    metrics = Metrics()

    def run(exchanges: list[Any]) -> None:
        count_request = metrics.count_request
        for exchange in exchanges:
            count_request(exchange.record, "answered", [], 0.0004)
        metrics.render()  # what a scrape after them sees must include them

    result = _cpu_per_request(count, run)
    # With workers' files the count also holds the earlier rounds of this process.
    text = metrics.render().decode()
    calls = [
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "turnout_route_calls_total" and sample.labels.get("route") == "main"
    ]
    if not calls or calls[0] < count or calls[0] % count:
        raise SystemExit(f"/metrics counts {calls} calls after {count}")
    return result


def _activity_row(count: int) -> float:
    from turnout.gateway.observe.activity import Activity

    activity = Activity(capacity=200)

    def run(exchanges: list[Any]) -> None:
        add = activity.add
        for exchange in exchanges:
            record = exchange.record
            add(
                request_id=record.request_id,
                path="/v1/chat/completions",
                status=200,
                duration_ms=12.3,
                record=record,
                failovers=0,
            )
        activity.recent(50)  # one dashboard refresh

    return _cpu_per_request(count, run)


def _multiprocess_metrics(count: int, rounds: int) -> float:
    """`_metrics_row` in a child process whose metrics live in memory-mapped files."""
    with tempfile.TemporaryDirectory(prefix="bench-observe-mp-") as directory:
        env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": directory}
        command = [sys.executable, __file__, "--metrics-only", str(count), "--rounds", str(rounds)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)  # noqa: S603
    return float(done.stdout.strip())


def _serving_gc() -> None:
    """The young-generation threshold `turnout serve` sets."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(10_000, middle, old)


def measure(count: int, rounds: int) -> dict[str, float]:
    """Every row's median µs per request over `rounds`."""
    rows: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-observe-") as tmp:
        directory = Path(tmp)
        for _ in range(rounds):
            for name, value in (
                ("request_done, text log", _observer_row(directory, count, "info", "text", parts=True)),  # noqa: E501
                ("request_done, json log", _observer_row(directory, count, "info", "json", parts=True)),  # noqa: E501
                ("request_done, no access line", _observer_row(directory, count, "warning", "text", parts=True)),  # noqa: E501
                ("observer alone", _observer_row(directory, count, "warning", "text", parts=False)),
                ("_text", _observer_row(directory, count, "info", "text", parts=False)),
                ("_json", _observer_row(directory, count, "info", "json", parts=False)),
                ("Metrics.count_request", _metrics_row(count)),
                ("Activity.add", _activity_row(count)),
            ):  # fmt: skip
                rows.setdefault(name, []).append(value)
    result = {name: statistics.median(values) for name, values in rows.items()}
    alone = result["observer alone"]
    result["access line, text"] = result.pop("_text") - alone
    result["access line, json"] = result.pop("_json") - alone
    result["Metrics.count_request, workers"] = _multiprocess_metrics(count, rounds)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000, help="requests per row")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (the median is kept)")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    parser.add_argument("--metrics-only", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.metrics_only:
        _serving_gc()
        values = [_metrics_row(args.metrics_only) for _ in range(args.rounds)]
        print(statistics.median(values))
        return 0
    _serving_gc()
    result = measure(args.requests, args.rounds)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{args.requests:,} requests per row, median of {args.rounds} rounds (process CPU)")
    for name, value in result.items():
        print(f"  {name:<34} {value:7.2f} µs/request")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
