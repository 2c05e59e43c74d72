"""The state one routed request shares across its calls and fallback hops.

Rule 1: the budget (`max_attempts`, `request_timeout`, `cost_budget`) is the first route's and
counts every call of the request, fallback hops included.
Rule 2: every call gets its attempt entry when it starts (`start`), so entries read in the
order things happened; skipped targets get theirs when they are passed (`skip`).
Rule 3: only the serving call is billed; every other call's usage goes to `discarded_usage`.
Rule 4: `on_routed` is called once per request (`close`), never raising into the caller and
never waiting for an async callback (which runs as a task, referenced until done).
Rule 5: the request's `plan` (None: every target) is the same for every hop; a call served by
an org-key fallback target sets the record's `credential_fallback` (`turnout.routing.plan`).
Rule 6: a traced request (`trace`, set when the request starts: `turnout.routing.spans`) starts
a span for each call in `start` and ends its route span in `close`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import random
from typing import TYPE_CHECKING, Any

from turnout.errors import ProviderError
from turnout.record import AttemptEntry, RoutingRecord
from turnout.wire.model import ChatRequest, EmbeddingRequest

if TYPE_CHECKING:
    from collections.abc import Hashable, Iterable

    from turnout.routing.attempt import Call, RoutedRequest
    from turnout.routing.health import Health
    from turnout.routing.plan import RequestPlan
    from turnout.routing.route import Route
    from turnout.routing.spans import RequestTrace
    from turnout.routing.target import Target
    from turnout.routing.target_facts import TargetFacts
    from turnout.wire.model import ChatResponse, EmbeddingResponse, Usage

__all__ = ["RequestState", "describe", "new_request_id"]

logger = logging.getLogger("turnout.routing")


class _RequestIds:
    """Request ids: 128 random bits as 32 hex digits, from a generator seeded by the OS (and
    reseeded in a forked child, so two workers never share a sequence). Cheaper than a system
    call per request; the ids are unique, not secret."""

    __slots__ = ("_random",)

    def __init__(self) -> None:
        self._random = random.Random(os.urandom(32))

    def reseed(self) -> None:
        self._random.seed(os.urandom(32))

    def next(self) -> str:
        return self._random.randbytes(16).hex()


_request_ids = _RequestIds()
os.register_at_fork(after_in_child=_request_ids.reseed)
new_request_id = _request_ids.next


class RequestState:
    """What one routed request shares across its calls and fallback hops: the routing record,
    the request budget (`max_attempts`, `request_timeout`, `cost_budget` of the first route),
    money spent so far, the errors of failed calls (for the ending), and the
    request's `plan` (None: every target), and its spans when it is traced (`trace`).

    `embedding` is True for an embeddings request (`Route.embed`): its calls are whole answers,
    never hedged, refused or rejected. `screen_all` is True when every target is checked
    against the request, not only those with eligibility rules."""

    __slots__ = (
        "calls",
        "clock",
        "closed",
        "context",
        "cost_budget",
        "deadline",
        "embedding",
        "errors",
        "hops",
        "max_attempts",
        "passed",
        "plan",
        "record",
        "request",
        "route",
        "screen_all",
        "skip_untils",
        "spent",
        "streaming",
        "trace",
        "watched",
    )

    def __init__(
        self,
        route: Route,
        request: RoutedRequest,
        *,
        context: Any,
        session_id: str | None,
        streaming: bool,
        plan: RequestPlan | None = None,
    ) -> None:
        self.route = route
        self.request = request
        self.plan = plan
        self.context = context
        self.streaming = streaming
        self.embedding = isinstance(request, EmbeddingRequest)
        # Every target is screened for an embeddings request, or one carrying server tools,
        # needing its own format's server state or asking for a JSON answer (a target of
        # another wire format may not serve them); else only those that ask to be.
        self.screen_all = self.embedding or (
            isinstance(request, ChatRequest)
            and (
                bool(request.server_features)
                or request.response_format is not None
                or (bool(request.tools) and any(tool.native is not None for tool in request.tools))
            )
        )
        clock = self.clock = route.clock
        timeout = route.timeouts.request
        self.deadline = None if timeout is None else clock.now() + timeout
        self.max_attempts = route.retry.max_attempts
        self.cost_budget = route.cost_budget
        self.calls = 0
        self.hops = 0
        self.spent = 0.0
        self.closed = False
        self.errors: dict[int, ProviderError] = {}
        self.skip_untils: list[float] = []
        self.watched: list[tuple[Health, Hashable]] = []
        self.passed: set[tuple[int, int]] = set()
        self.trace: RequestTrace | None = None
        self.record = RoutingRecord(
            new_request_id(),
            route.name,
            route.route_id,
            route.strategy.type,
            "",
            request.model,
            session_id,
        )

    def stop_reason(self) -> str | None:
        """Why no further call may start (`max_attempts`, `request_timeout`), or None."""
        if self.calls >= self.max_attempts:
            return "max_attempts"
        if self.deadline is not None and self.clock.now() >= self.deadline:
            return "request_timeout"
        return None

    def is_over_budget(self, facts: TargetFacts, model: str | None) -> bool:
        """Would a call to the target of `facts` pass the cost budget? Spent so far + estimated
        input (characters / 4 * input price) + `max_tokens` * output price (prices per 1M
        tokens). Without a price or `max_tokens` (an embeddings request has none) the target is
        not checked."""
        request = self.request
        if (
            not isinstance(request, ChatRequest)
            or request.max_tokens is None
            or (facts.price_for is None and facts.model_price is None)
            or self.cost_budget is None
        ):
            return False
        prices = facts.price(model or facts.client_model)
        if prices is None:
            return False
        estimate = (request.prompt_chars / 4 * prices[0] + request.max_tokens * prices[1]) / 1e6
        return bool(self.spent + estimate > self.cost_budget)

    def time_left(self) -> float | None:
        """Seconds until the request's deadline (None without one)."""
        return None if self.deadline is None else self.deadline - self.clock.now()

    def start(self, call: Call) -> AttemptEntry:
        """Count `call` against the budget and give it its attempt entry."""
        self.calls += 1
        record = self.record
        model = call.model
        if model is not None and model not in record.visited_models:
            record.visited_models.append(model)
        clock = self.clock
        call.started = clock.now()
        attempts = record.attempts
        number = len(attempts) + 1
        index = call.index
        entry = AttemptEntry(
            number,
            call.target.name,
            index,
            "cancelled",
            call.provider,
            model,
            f"{record.request_id}.{number}",
            call.route.facts[index].endpoint,
            clock.wall(),
            call.hedge,
        )
        notes = call.notes
        if notes is not None:
            notes.write(entry)
        attempts.append(entry)
        call.entry = entry
        if call.hedge:
            record.hedges += 1
        self.passed.add((call.hop, index))
        trace = self.trace
        if trace is not None:
            trace.start_call(call, entry, embedding=self.embedding)
        return entry

    def skip(
        self, hop: int, index: int, target: Target, outcome: str, reason: str | None = None
    ) -> AttemptEntry:
        """Record a target that was not called (`not_tried` entries have no start time)."""
        attempts = self.record.attempts
        entry = AttemptEntry(
            len(attempts) + 1, target.name, index, outcome, target.client.provider, target.model
        )
        if reason is not None:
            entry.reason = reason
        if outcome != "not_tried":
            entry.started_wall = self.clock.wall()
            self.passed.add((hop, index))
        attempts.append(entry)
        return entry

    def answered(self, call: Call, response: ChatResponse | EmbeddingResponse | None) -> None:
        """Fill the record for the serving call (its usage billed, the others discarded)."""
        record = self.record
        index = call.index
        record.answered = call.target.name
        record.target_index = index
        if call.fallback:
            record.credential_fallback = True
        passed = self.passed
        record.fallbacks = len(passed) - ((call.hop, index) in passed)
        self.bill(call, (response.model if response is not None else None) or call.model)

    def bill(self, call: Call, served_model: str | None) -> None:
        """Rule 3: bill `call` (its entry's usage, priced on `served_model`) as the request's
        serving call: the answer's, or a committed stream's that broke after sending content."""
        record = self.record
        entry = call.entry
        assert entry is not None
        record.served_provider = call.provider
        facts = call.route.facts[call.index]
        record.served_provider_id = facts.provider_id
        record.served_model = served_model
        usage = entry.usage
        record.usage = usage
        if usage is not None and (facts.price_for is not None or facts.model_price is not None):
            record.cost, record.price_source = facts.bill(usage, served_model, call.model)
        if self.calls > 1:
            record.discarded_usage = _total(
                e.usage for e in record.attempts if e.usage is not None and e is not entry
            )

    def close(self, error: BaseException | None) -> None:
        """The request is over: finish the record and hand it to `on_routed` (once)."""
        if self.closed:
            return
        self.closed = True
        record = self.record
        record.remaining_attempts = max(self.max_attempts - self.calls, 0)
        if error is not None:
            record.error = describe(error)
            if record.discarded_usage is None and record.usage is None:
                record.discarded_usage = _total(
                    e.usage for e in record.attempts if e.usage is not None
                )
        trace = self.trace
        if trace is not None:
            trace.finish(self, error)
        callback = self.route.on_routed
        if callback is not None:
            notify(callback, record, self.route)


def _total(usages: Iterable[Usage]) -> Usage | None:
    total = None
    for usage in usages:
        total = usage if total is None else total + usage
    return total


def describe(error: BaseException) -> dict[str, Any]:
    """The record's `error`: status, code and message of how the request ended."""
    if isinstance(error, asyncio.CancelledError | GeneratorExit):
        return {"status": None, "code": "cancelled", "message": "the caller cancelled"}
    if isinstance(error, ProviderError):
        return {"status": error.status, "code": error.error_class, "message": error.message}
    status = getattr(error, "status", None)
    code = getattr(error, "code", None) or type(error).__name__
    return {"status": status, "code": code, "message": str(error)}


_callback_tasks: set[asyncio.Task[Any]] = set()


def notify(callback: Any, record: RoutingRecord, route: Route) -> None:
    """Call `on_routed(record)`; an awaitable result runs as a task (referenced until done).
    What the callback raises is logged and ignored."""
    try:
        result = callback(record)
    except Exception:
        logger.exception("on_routed of route %r failed", route.name)
        return
    if inspect.isawaitable(result):
        task = asyncio.ensure_future(result)
        _callback_tasks.add(task)
        task.add_done_callback(_callback_done)


def _callback_done(task: asyncio.Task[Any]) -> None:
    _callback_tasks.discard(task)
    if not task.cancelled() and task.exception() is not None:
        logger.error("an async on_routed failed", exc_info=task.exception())
