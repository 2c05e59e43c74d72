"""One call to one target.

Rule 1: a call's entry is created when it starts; its outcome is settled by the driver when it
ends, or here when it is cancelled.
Rule 2: whatever a client raises becomes a `ProviderError` here, once (`as_provider_error`), so
the rest of the driver only ever sees classified errors.
Rule 3: a cancelled call (the caller's cancellation, or a hedge that lost) releases its health
admission and counts for nothing; its entry says `cancelled` or `lost_race`, and its span (if
the request is traced: `turnout.routing.spans`) ends so.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, cast

from turnout.errors import ProviderError, RouteExhausted, RouteIneligible, RoutingError
from turnout.routing.deadline import Deadline
from turnout.routing.spans import current_call, end_call
from turnout.vendors.classify import classify_exception
from turnout.wire.model import EmbeddingRequest

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Hashable
    from typing import TypeAlias

    from opentelemetry.trace import Span

    from turnout.record import AttemptEntry
    from turnout.routing.client import EmbeddingClient
    from turnout.routing.health import Admission
    from turnout.routing.reasons import EntryNotes
    from turnout.routing.request_state import RequestState
    from turnout.routing.route import Route
    from turnout.wire.model import ChatChunk, ChatRequest, ChatResponse, EmbeddingResponse

    RoutedRequest: TypeAlias = ChatRequest | EmbeddingRequest
    """What a route is asked: a chat request, or an embeddings request (`Route.embed`)."""

__all__ = ["Call", "as_provider_error", "cancelled", "run_whole"]


def as_provider_error(exc: BaseException, *, provider: str, timeout: float | None) -> ProviderError:
    """Whatever a client raised, as a classified `ProviderError` (the original is its cause).

    `timeout` is the deadline the call ran under, for the message of a `TimeoutError`.
    """
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, RoutingError):  # a Route used as a target
        error_class = (
            "provider_error"
            if isinstance(exc, RouteExhausted)
            else "invalid_request"
            if isinstance(exc, RouteIneligible)
            else classify_exception(exc)
        )
        error = ProviderError.for_class(
            error_class,
            exc.message,
            status=exc.status,
            reason=exc.code,
            retry_after=getattr(exc, "retry_after", None),
            provider=provider,
        )
    elif isinstance(exc, TimeoutError):
        limit = f" within {timeout:g} s" if timeout is not None else ""
        error = ProviderError.for_class(
            "timeout", f"no answer{limit}", reason="timeout", provider=provider
        )
    else:
        error_class = classify_exception(exc)
        reason = "connection" if isinstance(exc, OSError) else type(exc).__name__
        error = ProviderError.for_class(
            error_class, str(exc) or type(exc).__name__, reason=reason, provider=provider
        )
    error.__cause__ = exc
    return error


class Call:
    """One call to one target: what was asked, the health admission, its entry and its result.

    For streams, `upstream` is the target's chunk iterator and `held` the chunks read before
    the first token (or the whole stream when it ended before one: `ended`). An embeddings
    call's answer is `embedding` (its `response` stays None). `client` is what is called: the
    target's client, or for a caller-credential call (`credentialed`) that client bound to the
    caller's credential; `fallback` marks an org-key fallback call (`turnout.routing.plan`);
    `notes` is what it writes on its entry beyond the usual fields (`turnout.routing.reasons`,
    None when nothing). `limit` is the deadline, in seconds, that cut the call short (None
    when none did). `span` is the call's open span when the request is traced (None when not,
    and once it ended: `turnout.routing.spans`).
    """

    __slots__ = (
        "admission",
        "client",
        "credentialed",
        "embedding",
        "ended",
        "entry",
        "error",
        "error_class",
        "fallback",
        "finished",
        "forced",
        "hedge",
        "held",
        "hop",
        "index",
        "key",
        "limit",
        "lost",
        "model",
        "notes",
        "provider",
        "request",
        "response",
        "route",
        "span",
        "started",
        "stats_key",
        "target",
        "upstream",
    )

    def __init__(
        self,
        route: Route,
        index: int,
        request: RoutedRequest,
        key: Hashable,
        admission: Admission,
        *,
        forced: bool = False,
    ) -> None:
        self.route = route
        self.index = index
        self.target = route.targets[index]
        self.client: Any = self.target.client
        self.credentialed = False
        self.fallback = False
        self.notes: EntryNotes | None = None
        self.limit: float | None = None
        self.request = request
        self.key = key
        self.admission = admission
        self.forced = forced
        facts = route.facts[index]
        self.provider: str = facts.provider
        self.model: str | None = request.model or facts.client_model
        self.stats_key: Hashable = facts.stats_key
        self.hop = 0
        self.hedge = False
        self.lost = False
        self.started = 0.0
        self.finished = 0.0
        self.entry: AttemptEntry | None = None
        self.span: Span | None = None
        self.response: ChatResponse | None = None
        self.embedding: EmbeddingResponse | None = None
        self.error: ProviderError | None = None
        self.error_class: str | None = None
        self.upstream: AsyncIterator[ChatChunk] | None = None
        self.held: list[ChatChunk] = []
        self.ended = False

    def again(self, admission: Admission) -> Call:
        """The same target and request, for a same-target retry."""
        call = Call(self.route, self.index, self.request, self.key, admission)
        call.hop = self.hop
        call.client = self.client
        call.credentialed = self.credentialed
        call.fallback = self.fallback
        notes = self.notes
        if notes is not None:
            call.notes = notes.for_retry()
        return call


async def run_whole(state: RequestState, call: Call) -> None:
    """Make `call` as a whole answer under its deadline (the target's `timeout`, cut to the
    request's): a chat answer (`call.response`) or, for an embeddings request, the vectors
    (`call.embedding`), else `call.error`; a cancellation is recorded and re-raised."""
    entry = state.start(call)
    target = call.target
    seconds = target.timeout
    if state.deadline is not None:
        seconds = min(seconds, max(state.deadline - state.clock.now(), 0.0))
    strategy = call.route.strategy
    strategy.call_started(call.stats_key)
    deadline = Deadline(state.clock, seconds)
    try:
        request = call.request
        answer: ChatResponse | EmbeddingResponse
        with current_call(call):
            if isinstance(request, EmbeddingRequest):
                client = cast("EmbeddingClient", call.client)
                answer = call.embedding = await client.embed(request)
            else:
                answer = call.response = await call.client.complete(request)
    except asyncio.CancelledError as exc:
        if not deadline.disarm():
            strategy.call_finished(call.stats_key)
            cancelled(call)
            raise
        call.error = as_provider_error(TimeoutError(), provider=call.provider, timeout=seconds)
        call.error.__cause__ = exc
        call.limit = seconds
    except Exception as exc:  # noqa: BLE001 - whatever a client raises is a failed call
        cut = deadline.disarm()
        call.error = as_provider_error(
            TimeoutError() if cut else exc, provider=call.provider, timeout=seconds
        )
        if cut:
            call.limit = seconds
    else:
        deadline.disarm()
        entry.usage = answer.usage
        entry.provider_request_id = answer.provider_request_id
    strategy.call_finished(call.stats_key)
    call.finished = state.clock.now()
    entry.duration_ms = int((call.finished - call.started) * 1000)


def cancelled(call: Call) -> None:
    """A call was cancelled (lost a race, or the caller gave up): nothing counts."""
    entry = call.entry
    if entry is not None:
        entry.outcome = "lost_race" if call.lost else "cancelled"
    call.route.health.release(call.admission)
    if call.span is not None:
        end_call(call)
