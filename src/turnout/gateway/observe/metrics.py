"""The gateway's Prometheus metrics (`docs/gateway-api.md`, Logs and metrics).

Rule 1: labels are bounded by the configuration: route, provider, model (the configured wire
model, never the upstream's answer), outcome and error class words, the health key as
`provider/model`. Never a key, a request id or free text.
Rule 2: a request's metrics are counted once, from its finished routing record, off the
engine's path: a few additions to plain dicts of pending counts keyed by label values (for a
histogram, the observation's bucket and sum). The pending counts are added to the Prometheus
metrics in one go, a label set at a time, by `render()` (so every scrape sees every request
that finished before it) and by `flush()`.
Rule 3: with several worker processes (`PROMETHEUS_MULTIPROC_DIR` set before they start) each
process writes its values to that directory and `/metrics` sums every process's. A scrape
answered by one worker cannot add another's pending counts, so there each request's counts are
added to the metrics as it is counted: exact at any time.
Rule 4: counting and adding pending counts hold one lock, so a thread that counts beside the
event loop loses nothing.
"""

from __future__ import annotations

import os
import threading
from bisect import bisect_left
from typing import TYPE_CHECKING, Any, Final

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector

from turnout.gateway.observe.workers import MULTIPROC_ENV

if TYPE_CHECKING:
    from collections.abc import Hashable

    from turnout.record import AttemptEntry, RoutingRecord

__all__ = ["CONTENT_TYPE", "MULTIPROC_ENV", "Metrics"]

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST

_DURATION_BUCKETS: Final = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, float("inf"))
_OVERHEAD_BUCKETS: Final = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, float("inf"),
)  # fmt: skip
_TOKEN_KINDS: Final = ("input", "output", "cache_read", "cache_write")


class Metrics:
    """The gateway's metrics in their own registry (a new one per instance, so tests start
    from zero). `render()` is the `/metrics` body."""

    def __init__(self) -> None:
        registry = CollectorRegistry(auto_describe=True)
        self.registry = registry
        self.calls = Counter(
            "turnout_route_calls", "Routed requests.", ["route", "outcome"], registry=registry
        )
        self.failovers = Counter(
            "turnout_route_failovers",
            "Moves to the next target, by the failure or skip that caused them.",
            ["route", "reason"],
            registry=registry,
        )
        self.hedges = Counter(
            "turnout_route_hedges", "Hedge calls started.", ["route"], registry=registry
        )
        self.transitions = Counter(
            "turnout_breaker_transitions",
            "Health transitions of a health key (open, half_open, closed, parked, cooling_down).",
            ["key", "to"],
            registry=registry,
        )
        self.attempt_seconds = Histogram(
            "turnout_attempt_duration_seconds",
            "Duration of each upstream call.",
            ["provider", "model", "outcome"],
            buckets=_DURATION_BUCKETS,
            registry=registry,
        )
        self.tokens = Counter(
            "turnout_tokens",
            "Tokens of upstream calls (kind: input, output, cache_read, cache_write).",
            ["provider", "model", "kind"],
            registry=registry,
        )
        self.cost = Counter(
            "turnout_cost_usd", "Cost of served calls, USD.", ["provider", "model"],
            registry=registry,
        )  # fmt: skip
        self.overhead = Histogram(
            "turnout_overhead_seconds",
            "Gateway time per routed request, excluding upstream calls.",
            buckets=_OVERHEAD_BUCKETS,
            registry=registry,
        )
        self.shared_state_up = Gauge(
            "turnout_shared_state_up",
            "1 while the shared state store (Redis) answers, 0 while this process serves on local"
            " state; absent without shared state.",
            ["backend"],
            multiprocess_mode="livemin",  # several workers: 0 when any live worker is cut off
            registry=registry,
        )
        self.config_version = Gauge(
            "turnout_config_version",
            "The store version this process serves (0 before one is loaded). With several"
            " workers, the oldest any live worker serves.",
            multiprocess_mode="livemin",  # a worker that lags behind shows
            registry=registry,
        )
        self.audit_dropped = Counter(
            "turnout_audit_dropped",
            "Audit rows dropped because the audit writer's queue was full (usage is kept).",
            registry=registry,
        )
        self._children: dict[Hashable, Any] = {}
        self._lock = threading.Lock()
        self._exact = bool(os.environ.get(MULTIPROC_ENV))  # Rule 3
        self._calls: dict[tuple[str, str], int] = {}
        self._failovers: dict[tuple[str, str], int] = {}
        self._hedges: dict[str, int] = {}
        # (provider, model, outcome) -> observations per bucket, then their sum
        self._attempts: dict[tuple[str, str, str], list[float]] = {}
        # (provider, model) -> input, output, cache read, cache write tokens, then cost
        self._usage: dict[tuple[str, str], list[float]] = {}
        self._overhead = [0.0] * (len(_OVERHEAD_BUCKETS) + 1)
        self._dirty = False

    def _child(self, metric: Counter | Histogram, *labels: str) -> Any:
        key = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = metric.labels(*labels)
            self._children[key] = child
        return child

    def count_request(
        self,
        record: RoutingRecord,
        outcome: str,
        failovers: list[AttemptEntry],
        overhead: float | None,
    ) -> None:
        """Count one finished request: its outcome, failovers, hedges, each call's duration,
        the tokens and cost, and (when known) the gateway's own time (Rule 2)."""
        if self._exact:
            self._count_now(record, outcome, failovers, overhead)
            return
        route = record.route
        with self._lock:
            self._dirty = True
            calls = self._calls
            key = (route, outcome)
            calls[key] = calls.get(key, 0) + 1
            for entry in failovers:
                moved = (route, entry.error_class or entry.outcome)
                self._failovers[moved] = self._failovers.get(moved, 0) + 1
            if record.hedges:
                self._hedges[route] = self._hedges.get(route, 0) + record.hedges
            for entry in record.attempts:
                if entry.duration_ms is not None:
                    self._count_call(record, entry, entry.duration_ms)
            if overhead is not None:
                pending = self._overhead
                pending[bisect_left(_OVERHEAD_BUCKETS, overhead)] += 1
                pending[-1] += overhead

    def _count_now(
        self,
        record: RoutingRecord,
        outcome: str,
        failovers: list[AttemptEntry],
        overhead: float | None,
    ) -> None:
        """Rule 3: the request's counts go to the metrics at once."""
        route = record.route
        self._child(self.calls, route, outcome).inc()
        for entry in failovers:
            self._child(self.failovers, route, entry.error_class or entry.outcome).inc()
        if record.hedges:
            self._child(self.hedges, route).inc(record.hedges)
        for entry in record.attempts:
            if entry.duration_ms is None:
                continue
            provider, model = entry.provider or "", entry.model or ""
            self._child(self.attempt_seconds, provider, model, entry.outcome).observe(
                entry.duration_ms / 1000
            )
            usage = entry.usage
            if usage is not None:
                kinds = (
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cache_read_tokens,
                    usage.cache_write_tokens,
                )
                for kind, count in zip(_TOKEN_KINDS, kinds, strict=True):
                    if count:
                        self._child(self.tokens, provider, model, kind).inc(count)
            if entry.outcome == "answered" and record.cost:
                self._child(self.cost, provider, model).inc(record.cost)
        if overhead is not None:
            self.overhead.observe(overhead)

    def _count_call(self, record: RoutingRecord, entry: AttemptEntry, millis: int) -> None:
        provider, model = entry.provider or "", entry.model or ""
        seconds = millis / 1000
        key = (provider, model, entry.outcome)
        timed = self._attempts.get(key)
        if timed is None:
            timed = self._attempts[key] = [0.0] * (len(_DURATION_BUCKETS) + 1)
        timed[bisect_left(_DURATION_BUCKETS, seconds)] += 1
        timed[-1] += seconds
        usage = entry.usage
        cost = record.cost if entry.outcome == "answered" else None
        if usage is None and not cost:
            return
        served = (provider, model)
        totals = self._usage.get(served)
        if totals is None:
            totals = self._usage[served] = [0.0] * (len(_TOKEN_KINDS) + 1)
        if usage is not None:
            totals[0] += usage.input_tokens
            totals[1] += usage.output_tokens
            totals[2] += usage.cache_read_tokens
            totals[3] += usage.cache_write_tokens
        if cost:
            totals[4] += cost

    def flush(self) -> None:
        """Add the pending counts to the Prometheus metrics (Rule 2)."""
        with self._lock:
            if not self._dirty:
                return
            self._dirty = False
            calls, self._calls = self._calls, {}
            failovers, self._failovers = self._failovers, {}
            hedges, self._hedges = self._hedges, {}
            attempts, self._attempts = self._attempts, {}
            usage, self._usage = self._usage, {}
            overhead = self._overhead
            self._overhead = [0.0] * len(overhead)
            for (route, outcome), count in calls.items():
                self._child(self.calls, route, outcome).inc(count)
            for (route, reason), count in failovers.items():
                self._child(self.failovers, route, reason).inc(count)
            for route, count in hedges.items():
                self._child(self.hedges, route).inc(count)
            for labels, timed in attempts.items():
                _observed(self._child(self.attempt_seconds, *labels), timed)
            for (provider, model), totals in usage.items():
                for kind, tokens in zip(_TOKEN_KINDS, totals, strict=False):
                    if tokens:
                        self._child(self.tokens, provider, model, kind).inc(tokens)
                if totals[-1]:
                    self._child(self.cost, provider, model).inc(totals[-1])
            _observed(self.overhead, overhead)

    def count_transition(self, key: str, to: str) -> None:
        """Count one health transition of `key` (`provider/model`)."""
        self._child(self.transitions, key, to).inc()

    def set_shared_state(self, backend: str, up: bool) -> None:
        """Say whether the shared state store `backend` (`redis`) answers."""
        self.shared_state_up.labels(backend).set(1 if up else 0)

    def set_config_version(self, version: int) -> None:
        """Say which store version this process serves."""
        self.config_version.set(version)

    def render(self) -> bytes:
        """The Prometheus text exposition: this process's metrics, or every worker's."""
        self.flush()
        directory = os.environ.get(MULTIPROC_ENV)
        if directory:
            registry = CollectorRegistry()
            MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
            return generate_latest(registry)
        return generate_latest(self.registry)


def _observed(histogram: Any, pending: list[float]) -> None:
    """Add `pending` observations (a count per bucket, then their sum) to a histogram (or one
    of its label children) at once: what as many `observe` calls would have added."""
    buckets = histogram._buckets
    added = False
    for index, count in enumerate(pending[:-1]):
        if count:
            buckets[index].inc(count)
            added = True
    if added:
        histogram._sum.inc(pending[-1])
