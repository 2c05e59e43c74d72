"""The gateway's Prometheus metrics (`docs/gateway-api.md`, Logs and metrics).

Rule 1: labels are bounded by the configuration: route, provider, model (the configured wire
model, never the upstream's answer), outcome and error class words, the health key as
`provider/model`. Never a key, a request id or free text.
Rule 2: a request's metrics are counted once, from its finished routing record: a few dict
lookups of cached label children and a few additions, off the engine's path.
Rule 3: with several worker processes (`PROMETHEUS_MULTIPROC_DIR` set before they start) each
process writes its values to that directory and `/metrics` sums every process's.
Rule 4: a request's counts and observations are summed in plain numbers first and added to the
Prometheus values in one go (each addition takes a lock, and with several workers writes a
shared file): when `/metrics` is rendered, and with several workers also within
`FLUSH_AFTER` seconds of the first one pending, so what every worker counted shows that
late at most. `flush()` adds them at once (the app calls it as it shuts down).
Rule 5: every finished request is counted by route, status class and project, and its whole
duration observed by route; a request that never reached a route counts under the route
`none` (never the model it asked for, which is free text).
Rule 6: `turnout_upstream_state` is read at scrape time from the health tables `render` is
given (every served project's), so with shared state every replica shows the same states. A
key shows once its table knows it (called here, or learned from another replica).
"""

from __future__ import annotations

import asyncio
import math
import os
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
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from turnout.gateway.observe.workers import MULTIPROC_ENV
from turnout.record import SKIP_OUTCOMES

if TYPE_CHECKING:
    from collections.abc import Hashable, Iterable, Iterator

    from prometheus_client.metrics_core import Metric

    from turnout.record import AttemptEntry, RoutingRecord
    from turnout.routing.health import Health

__all__ = ["CONTENT_TYPE", "FLUSH_AFTER", "MULTIPROC_ENV", "NO_ROUTE", "UPSTREAM_STATES", "Metrics"]

FLUSH_AFTER: Final = 0.25
"""Seconds a count may wait before the other workers see it (Rule 4)."""

CONTENT_TYPE: Final = CONTENT_TYPE_LATEST

_DURATION_BUCKETS: Final = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, float("inf"))
_REQUEST_BUCKETS: Final = (
    0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, float("inf"),
)  # fmt: skip
"""A whole request, as the caller saw it: from a refusal in milliseconds to a long stream."""
_OVERHEAD_BUCKETS: Final = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, float("inf"),
)  # fmt: skip


NO_ROUTE: Final = "none"
"""The `route` label of a request that never reached a route (Rule 5)."""

UPSTREAM_STATES: Final = ("available", "open", "half_open", "cooling_down", "parked")
"""The `state` label of `turnout_upstream_state`: every state a health key can be in."""


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
        self.skips = Counter(
            "turnout_route_skips",
            "Targets passed over without a call, by their health (breaker_open, cooling_down,"
            " parked).",
            ["route", "reason"],
            registry=registry,
        )
        self.requests = Counter(
            "turnout_requests",
            "Finished requests by route, status class and project.",
            ["route", "status_class", "project"],
            registry=registry,
        )
        self.request_seconds = Histogram(
            "turnout_request_duration_seconds",
            "Duration of each request as the caller saw it, by route.",
            ["route"],
            buckets=_REQUEST_BUCKETS,
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
        self._control_metrics(registry)
        self._children: dict[Hashable, Any] = {}
        self._calls: dict[tuple[str, str], Any] = {}  # (route, outcome) -> its calls child
        self._calls_of: dict[tuple[str | None, str | None, str], _Call] = {}
        # (route, status, project) -> its requests child and its route's duration child
        self._finished: dict[tuple[str, int, str], tuple[Any, Any]] = {}
        self._pending = _Pending()

    def _control_metrics(self, registry: CollectorRegistry) -> None:
        """The control plane's: the store answering, reloads, a refused store version."""
        self.store_up = Gauge(
            "turnout_store_up",
            "1 while the store (the database) answers, 0 while this process serves the"
            " configuration it loaded last; absent without a store.",
            ["backend"],
            multiprocess_mode="livemin",
            registry=registry,
        )
        self.reloads = Counter(
            "turnout_config_reloads",
            "Reloads of the config file (SIGHUP), by outcome (ok, refused).",
            ["outcome"],
            registry=registry,
        )
        self.reload_ok = Gauge(
            "turnout_config_last_reload_ok",
            "1 when the last reload of the config file is served (or none was asked), 0 when"
            " it was refused.",
            multiprocess_mode="livemin",
            registry=registry,
        )
        self.reload_ok.set(1)
        self.refused_version = Gauge(
            "turnout_store_version_refused",
            "The newest store version this process cannot serve (it serves an older one), 0"
            " when it serves the newest.",
            multiprocess_mode="livemax",
            registry=registry,
        )

    def set_store_up(self, backend: str, up: bool) -> None:
        """Say whether the store `backend` answers."""
        self.store_up.labels(backend).set(1 if up else 0)

    def count_reload(self, ok: bool) -> None:
        """Count one reload of the config file, served (`ok`) or refused."""
        self.reloads.labels("ok" if ok else "refused").inc()
        self.reload_ok.set(1 if ok else 0)

    def set_refused_version(self, version: int) -> None:
        """Say which store version is refused (0: none)."""
        self.refused_version.set(version)

    def flush(self) -> None:
        """Rule 4: add what is pending to the Prometheus values."""
        self._pending.flush()

    def _child(self, metric: Counter | Histogram, *labels: str) -> Any:
        key = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = metric.labels(*labels)
            self._children[key] = child
        return child

    def count_finished(
        self, route: str | None, status: int, project: str | None, seconds: float
    ) -> None:
        """Rule 5: count one finished request (any, routed or not) under its route (None: it
        reached none), its status class (`2xx`...; `none` for no status) and project, and
        observe how long it took. One lookup of the cached children, then additions."""
        key = (route or NO_ROUTE, status, project or "")
        children = self._finished.get(key)
        if children is None:
            status_class = f"{status // 100}xx" if 100 <= status < 600 else "none"
            children = self._finished[key] = (
                self.requests.labels(key[0], status_class, key[2]),
                self._child(self.request_seconds, key[0]),
            )
        pending = self._pending
        counts = pending.waiting()
        requests, duration = children
        counts[requests] = counts.get(requests, 0.0) + 1.0
        pending.observe(duration, seconds)

    def count_request(
        self,
        record: RoutingRecord,
        outcome: str,
        failovers: list[AttemptEntry],
        overhead: float | None,
    ) -> None:
        """Count one routed request: its outcome, failovers, skips, hedges, each call's
        duration, the tokens and cost, and (when known) the gateway's own time. Rule 2: one
        lookup of the route's counter and one of each call's children (`_Call`), then
        additions."""
        pending = self._pending
        counts = pending.waiting()
        route = record.route
        calls = self._calls.get((route, outcome))
        if calls is None:
            calls = self._calls[(route, outcome)] = self.calls.labels(route, outcome)
        counts[calls] = counts.get(calls, 0.0) + 1.0
        for entry in failovers:
            pending.add(self._child(self.failovers, route, entry.error_class or entry.outcome), 1.0)
        if record.hedges:
            pending.add(self._child(self.hedges, route), record.hedges)
        for entry in record.attempts:
            duration = entry.duration_ms
            if duration is None:  # no call: a health skip, or a target not tried
                self._count_skip(route, entry)
                continue
            key = (entry.provider, entry.model, entry.outcome)
            call = self._calls_of.get(key)
            if call is None:
                call = self._calls_of[key] = _Call(self, *key)
            pending.observe(call.seconds, duration / 1000)
            usage = entry.usage
            if usage is not None:
                for kind, count in enumerate(
                    (usage.input_tokens, usage.output_tokens,
                     usage.cache_read_tokens, usage.cache_write_tokens)
                ):  # fmt: skip
                    if count:
                        child = call.tokens[kind] or call.token_child(kind)
                        counts[child] = counts.get(child, 0.0) + count
            if call.answered and record.cost:
                child = call.cost or call.cost_child()
                counts[child] = counts.get(child, 0.0) + record.cost
        if overhead is not None:
            pending.observe(self.overhead, overhead)

    def _count_skip(self, route: str, entry: AttemptEntry) -> None:
        """Count `entry` when its target was passed over for its health (not a failover)."""
        if entry.outcome in SKIP_OUTCOMES and not entry.hedge:
            self._pending.add(self._child(self.skips, route, entry.outcome), 1.0)

    def count_transition(self, key: str, to: str) -> None:
        """Count one health transition of `key` (`provider/model`)."""
        self._child(self.transitions, key, to).inc()

    def set_shared_state(self, backend: str, up: bool) -> None:
        """Say whether the shared state store `backend` (`redis`) answers."""
        self.shared_state_up.labels(backend).set(1 if up else 0)

    def set_config_version(self, version: int) -> None:
        """Say which store version this process serves."""
        self.config_version.set(version)

    def render(self, health: Iterable[Health] = ()) -> bytes:
        """The Prometheus text exposition: this process's metrics, or every worker's, and
        (Rule 6) the states of the keys of `health`, the served projects' health tables."""
        self.flush()
        states = _UpstreamStates(health)
        directory = os.environ.get(MULTIPROC_ENV)
        if directory:
            registry = CollectorRegistry()
            MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
        else:
            registry = self.registry
        registry.register(states)
        try:
            return generate_latest(registry)
        finally:
            registry.unregister(states)


class _Pending:
    """Rule 4: the counts and observations not yet added to the Prometheus values, and the
    timer that adds them with several workers."""

    __slots__ = ("_flushing", "counts", "observed")

    def __init__(self) -> None:
        self.counts: dict[Any, float] = {}  # counter child -> amount not yet added
        # histogram child -> [sum, count per bucket...] not yet added
        self.observed: dict[Any, list[float]] = {}
        self._flushing: asyncio.TimerHandle | None = None

    def waiting(self) -> dict[Any, float]:
        """The pending counts, for a caller about to add to them (the first one starts the
        timer)."""
        counts = self.counts
        if not counts and not self.observed:
            self._start()
        return counts

    def add(self, child: Any, amount: float) -> None:
        """Add `amount` to the counter `child`, later."""
        counts = self.waiting()
        counts[child] = counts.get(child, 0.0) + amount

    def observe(self, child: Any, value: float) -> None:
        """Observe `value` in the histogram `child`, later."""
        observed = self.observed
        row = observed.get(child)
        if row is None:
            if not observed and not self.counts:
                self._start()
            row = observed[child] = [0.0] * (len(child._upper_bounds) + 1)
        row[0] += value
        if not math.isnan(value):  # a NaN goes in no bucket
            # The first bucket whose upper bound is at least the value, as `observe` picks.
            row[1 + bisect_left(child._upper_bounds, value)] += 1

    def _start(self) -> None:
        """The first count waits: with several workers, add it within `FLUSH_AFTER`."""
        if self._flushing is not None or not os.environ.get(MULTIPROC_ENV):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # outside a loop: added when rendered or flushed
        self._flushing = loop.call_later(FLUSH_AFTER, self.flush)

    def flush(self) -> None:
        """Add what is pending to the Prometheus values."""
        if self._flushing is not None:
            self._flushing.cancel()
            self._flushing = None
        counts, self.counts = self.counts, {}
        for child, amount in counts.items():
            child.inc(amount)
        observed, self.observed = self.observed, {}
        for child, row in observed.items():
            # What `Histogram.observe` adds for each value, for all of them at once (its sum
            # and bucket values, which the Prometheus client keeps as these attributes).
            child._sum.inc(row[0])
            buckets = child._buckets
            for index, count in enumerate(row[1:]):
                if count:
                    buckets[index].inc(count)


class _UpstreamStates:
    """Rule 6: `turnout_upstream_state`, one series per health key and state, 1 for the
    key's state now and 0 for the others. A key two projects both hold shows once (the
    first project's)."""

    def __init__(self, health: Iterable[Health]) -> None:
        self._health = list(health)

    def describe(self) -> list[Metric]:
        return []  # read at scrape time only: nothing to check names against before

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "turnout_upstream_state",
            "1 for the health state each health key (provider/model) is in now, 0 for the"
            " others; read from the health table, shared between replicas with shared state.",
            labels=["key", "state"],
        )
        seen: set[str] = set()
        for health in self._health:
            for entry in health.snapshot():
                if entry.text in seen:
                    continue
                seen.add(entry.text)
                for state in UPSTREAM_STATES:
                    family.add_metric([entry.text, state], 1.0 if entry.state == state else 0.0)
        yield family


_TOKEN_KINDS: Final = ("input", "output", "cache_read", "cache_write")
"""The `kind` label of `turnout_tokens`, in the order `count_request` reads a usage."""


class _Call:
    """The label children of one kind of upstream call (provider, model, outcome): its
    duration histogram's at once, its token and cost counters' when they first count (a
    series is rendered from its first count on, as before)."""

    __slots__ = ("_metrics", "_model", "_provider", "answered", "cost", "seconds", "tokens")

    def __init__(
        self, metrics: Metrics, provider: str | None, model: str | None, outcome: str
    ) -> None:
        self._metrics = metrics
        self._provider = provider or ""
        self._model = model or ""
        self.answered = outcome == "answered"
        self.seconds = metrics._child(metrics.attempt_seconds, self._provider, self._model, outcome)
        self.tokens: list[Any] = [None] * len(_TOKEN_KINDS)
        self.cost: Any = None

    def token_child(self, kind: int) -> Any:
        """The counter of `_TOKEN_KINDS[kind]` tokens (made on first use)."""
        metrics = self._metrics
        child = metrics._child(metrics.tokens, self._provider, self._model, _TOKEN_KINDS[kind])
        self.tokens[kind] = child
        return child

    def cost_child(self) -> Any:
        """The cost counter (made on first use)."""
        metrics = self._metrics
        self.cost = metrics._child(metrics.cost, self._provider, self._model)
        return self.cost
