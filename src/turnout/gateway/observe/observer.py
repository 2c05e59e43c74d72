"""The one place the gateway observes what it did: each finished request (its routing record)
and each health transition, turned into log lines and metrics, and, when tracing is on, each
API request's span (`turnout.gateway.observe.spans`).

Rule 1: `request_done` runs once per request, after the response ended or failed; it reads the
finished record and never raises (a failure to observe is logged, the request is unharmed).
Rule 2: health transitions arrive through `Health.observe`; the engine knows no observer.
Rule 3: with shared state, the store's health (watched about once a second by the health
sharing) is the `turnout_shared_state_up` gauge.
Rule 4: with a sink (the store's audit writer), each request with a routing record is handed to
it once, as the finished record object (the sink turns it into plain JSON later, not in the
request's own path); the sink queues it without I/O. Its count of
dropped audit rows feeds `turnout_audit_dropped_total`. A request refused before it was routed
(no routing record: a missing or unknown key, a bad body) is handed over too, as a record of its
request id and error code alone, with the outcome `refused`.
Rule 5: a request's span starts before its handler runs (`request_started`) and ends in
`request_done`, after its access line; without tracing neither does anything.
"""

from __future__ import annotations

import logging
import time
import weakref
from typing import TYPE_CHECKING, Any, Final, Protocol

from turnout.gateway.observe.activity import Activity
from turnout.gateway.observe.logs import (
    ACCESS,
    log_access,
    log_fallback_route,
    log_health,
    log_stream_broken,
)
from turnout.gateway.observe.metrics import Metrics
from turnout.gateway.observe.skips import SkipLog
from turnout.gateway.observe.spans import RequestSpans, is_tracing
from turnout.gateway.responses.respond import problem_for
from turnout.record import CALL_OUTCOMES, SKIP_OUTCOMES, FinishedRequest
from turnout.routing.health import key_text
from turnout.routing.request_state import new_request_id

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.gateway.observe.spans import OpenSpan
    from turnout.gateway.runtime.live import Runtime
    from turnout.record import AttemptEntry, RoutingRecord
    from turnout.routing.health import Health, HealthEvent

__all__ = ["FAILOVER_OUTCOMES", "Observer", "RequestSink", "broken_stream", "failovers"]

logger = logging.getLogger("turnout.gateway")

FAILOVER_OUTCOMES: Final = frozenset({"failed", "refused", "rejected", "paused", *SKIP_OUTCOMES})
"""Outcomes of an entry the route moves on from: a failed call or a health skip."""


class RequestSink(Protocol):
    """Where finished requests go (the store's `AuditPipe` or `AuditWriter`): `submit` must
    not block."""

    @property
    def dropped(self) -> int:
        """Requests the sink dropped so far."""
        ...

    def submit(self, done: FinishedRequest) -> None:
        """Take one finished request: its routing record (the object, or plain JSON), when
        it ended (epoch seconds), the caller's project and key name, the path, the status sent
        (499 when the caller left), the outcome and the time it took."""
        ...


def broken_stream(record: RoutingRecord) -> AttemptEntry | None:
    """The call whose stream broke after its first token, when that is how the request
    ended (None otherwise)."""
    if record.answered is not None:
        return None
    for entry in reversed(record.attempts):
        if entry.is_call:
            return entry if entry.committed and entry.outcome == "failed" else None
    return None


def failovers(record: RoutingRecord) -> list[tuple[AttemptEntry, AttemptEntry]]:
    """Each failed or skipped entry the route moved on from, with the next call it made."""
    moves: list[tuple[AttemptEntry, AttemptEntry]] = []
    waiting: list[AttemptEntry] = []
    for entry in record.attempts:
        if entry.is_call and waiting:
            moves.extend((left, entry) for left in waiting)
            waiting = []
        if entry.outcome in FAILOVER_OUTCOMES and not entry.hedge:
            waiting.append(entry)
    return moves


def _upstream_seconds(record: RoutingRecord) -> float:
    """The time spent in upstream calls that ran one after another (hedges ran beside)."""
    total = 0
    for entry in record.attempts:
        if entry.duration_ms is not None and not entry.hedge:
            total += entry.duration_ms
    return total / 1000


class Observer:
    """Logs, metrics, spans and the dashboard's activity for one gateway process. `metrics`
    defaults to a new `Metrics`, `activity` to a new `Activity`; `spans` to a new
    `RequestSpans` when a tracer provider is installed, else None (no spans); `sink` (none by
    default) takes each finished request with a routing record (Rule 4)."""

    def __init__(
        self,
        metrics: Metrics | None = None,
        activity: Activity | None = None,
        *,
        spans: RequestSpans | None = None,
        sink: RequestSink | None = None,
    ) -> None:
        self.metrics = metrics if metrics is not None else Metrics()
        self.activity = activity if activity is not None else Activity()
        self.spans = spans if spans is not None else RequestSpans() if is_tracing() else None
        self.sink = sink
        # The registries themselves, weakly: an id could be reused by a later registry once
        # a reload dropped the first one.
        self._watched: weakref.WeakSet[Health] = weakref.WeakSet()
        self._dropped = 0
        self.skips = SkipLog()
        """The failover lines, skips folded into bursts per health key."""

    def watch(self, health: Health) -> None:
        """Observe `health`'s transitions (once per registry)."""
        if health not in self._watched:
            self._watched.add(health)
            health.observe(self.health_changed)

    def watch_state(self, runtime: Runtime) -> None:
        """Rule 3: follow the shared state store of `runtime` (nothing without shared state)."""
        shared = runtime.shared_health
        if shared is None:
            return
        backend = str(runtime.state.describe().get("backend", "redis"))
        self.metrics.set_shared_state(backend, runtime.state.healthy)
        shared.on_store(lambda up: self.metrics.set_shared_state(backend, up))

    def health_changed(self, event: HealthEvent) -> None:
        """A breaker transition, park or cooldown: count it and log it."""
        key = key_text(event.key)
        self.metrics.count_transition(key, event.to)
        self.skips.health_changed(key, event.to)
        log_health(event, key)

    def request_started(
        self, method: str, path: str, headers: Mapping[str, str]
    ) -> OpenSpan | None:
        """Rule 5: the request's span, current from now on (None without tracing)."""
        spans = self.spans
        return None if spans is None else spans.start(method, path, headers)

    def request_done(
        self,
        method: str,
        path: str,
        status: int,
        began: float,
        record: RoutingRecord | None,
        *,
        gone: bool,
        failure: BaseException | None,
        caller_id: str | None,
        sent_id: str | None,
        key: str | None,
        project: str | None,
        opened: OpenSpan | None,
    ) -> None:
        """Rule 1: the access line, the failover lines and the metrics of one request; then
        Rule 5: the end of its span, `opened` by `request_started`.

        `status` is the status sent (0 for none), `began` when the request arrived
        (`perf_counter`), `gone` whether the caller left first (then it counts as 499),
        `record` its routing record and `failure` what it was answered with an error for;
        `caller_id` is the caller's request id, `sent_id` the id its response carried without
        a record (None when none was sent); `key` and `project` are the key's name and the
        project the request is logged and audited under."""
        sent = 499 if gone else status
        # A call, a refused one, or any request refused for its key (a GET of `/v1/models`).
        listed = record is not None or method == "POST" or status == 401
        try:
            if record is None and sent_id is None and (listed or self._audits(failure)):
                sent_id = new_request_id()  # the id it is remembered under
            self._request_done(
                method,
                path,
                sent,
                began=began,
                gone=gone,
                record=record,
                failure=failure,
                sent_id=sent_id,
                key=key,
                project=project,
                listed=listed,
            )
        except Exception:
            logger.exception("observing a request failed")
        if opened is not None and self.spans is not None:
            try:
                self.spans.end(opened, sent, gone=gone, record=record, caller_id=caller_id, key=key)
            except Exception:
                logger.exception("ending a request's span failed")

    def _audits(self, failure: BaseException | None) -> bool:
        """Rule 4: whether a request without a routing record is handed to the sink."""
        return self.sink is not None and failure is not None

    def _request_done(
        self,
        method: str,
        path: str,
        status: int,
        *,
        began: float,
        gone: bool,
        record: RoutingRecord | None,
        failure: BaseException | None,
        sent_id: str | None,
        key: str | None,
        project: str | None,
        listed: bool,
    ) -> None:
        seconds = time.perf_counter() - began
        duration_ms = _millis(seconds)
        overhead = None
        moves: list[tuple[AttemptEntry, AttemptEntry]] = []
        moved: list[AttemptEntry] = []
        self.metrics.count_finished(
            None if record is None else record.route, status, project, seconds
        )
        sink = self.sink
        self.skips.sweep()
        if record is not None:
            moves = failovers(record)
            # A health skip is counted apart (`turnout_route_skips_total`), not as a failover.
            moved = [left for left, _ in moves if left.outcome not in SKIP_OUTCOMES]
            overhead = max(0.0, seconds - _upstream_seconds(record))
            outcome = "cancelled" if gone else _outcome(record)
            self.metrics.count_request(record, outcome, moved, overhead)
            self.skips.failovers(record, moves)
            broken = broken_stream(record)
            if broken is not None:
                log_stream_broken(record, broken)
            if record.fallback_route is not None:
                log_fallback_route(record)
            if sink is not None:
                self._submit(
                    sink,
                    FinishedRequest(
                        record,
                        time.time(),
                        project,
                        key,
                        path,
                        status,
                        outcome,
                        round(seconds * 1000),
                    ),
                )
        elif sink is not None and failure is not None:
            assert sent_id is not None  # made by `request_done`
            refused = _refused(failure, sent_id)
            self._submit(
                sink,
                FinishedRequest(
                    refused,
                    time.time(),
                    project,
                    key,
                    path,
                    status,
                    "refused",
                    round(seconds * 1000),
                ),
            )
        request_id = record.request_id if record is not None else sent_id
        if listed:  # the dashboard's activity
            assert request_id is not None
            self.activity.add(
                request_id=request_id,
                path=path,
                status=status,
                duration_ms=duration_ms,
                record=record,
                failovers=len(moved),
            )
        if ACCESS.isEnabledFor(logging.INFO):
            first = (request_id, method, path, status, key, duration_ms)
            log_access(_access_values(first, record, overhead, len(moves)))

    def _submit(self, sink: RequestSink, done: FinishedRequest) -> None:
        sink.submit(done)
        dropped = sink.dropped
        if dropped > self._dropped:
            self.metrics.audit_dropped.inc(dropped - self._dropped)
            self._dropped = dropped


def _refused(failure: BaseException, request_id: str) -> dict[str, Any]:
    """Rule 4: what is known of a request refused before routing: its id and error code."""
    problem = problem_for(failure)
    code = "internal_error" if problem is None else problem.code
    return {"request_id": request_id, "attempts": [], "error": {"code": code}}


def _outcome(record: RoutingRecord) -> str:
    return "answered" if record.answered is not None or record.error is None else "failed"


def _millis(seconds: float) -> float:
    """`seconds` in milliseconds to the microsecond (as `round(ms, 3)`, without its cost)."""
    return round(seconds * 1_000_000) / 1000


def _access_values(
    first: tuple[Any, ...],
    record: RoutingRecord | None,
    overhead: float | None,
    moved: int = 0,
) -> tuple[Any, ...]:
    """The access line's values, in the order of `ACCESS_FIELDS` (and `ROUTED_FIELDS`):
    `first` is the request id, method, path, status, key name and duration every line has.

    `failovers` is `moved`, the failover lines logged for the request (so a request that
    every target failed counts its moves too); a stream that broke after its first token
    names the target, provider and model it came from."""
    if record is None:
        return first
    usage = record.usage
    calls = 0
    for entry in record.attempts:
        if entry.outcome in CALL_OUTCOMES:
            calls += 1
    target, provider, model = record.answered, record.served_provider, record.served_model
    if target is None:
        broken = broken_stream(record)
        if broken is not None:
            target, provider, model = broken.target, broken.provider, broken.model
    return (
        *first,
        record.route,
        target,
        provider,
        model,
        calls,
        moved,
        None if overhead is None else _millis(overhead),
        None if usage is None else usage.input_tokens,
        None if usage is None else usage.output_tokens,
        record.cost,
        record.cache,
    )
