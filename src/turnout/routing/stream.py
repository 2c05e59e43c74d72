"""Streaming through a route, and the commit point.

Rule 1: the first token is the first chunk that carries content (`ChatChunk.has_content`);
chunks before it are held back. Failover is allowed until the first token, never after.
Rule 2: `timeout`, `first_token_timeout` and the request deadline bound the wait for the first
token; after it, only `stream_idle_timeout` bounds each wait, and a silent or failing committed
stream ends with `StreamBroken` (counted by health, unless the call was made with the caller's
own credential: `turnout.routing.plan` Rule 4).
Rule 3: a stream that ends before its first token is judged like a whole answer (no finish
reason: `provider_error`; refusal and `accept` checks may still fail over).
Rule 4: after commit, the refusal and `accept` checks run when the stream ends; a refused or
rejected stream raises `StreamRejected` instead of yielding its last chunk. The chunks with a
finish reason or without content are held until the next content chunk, so the last chunk the
caller sees carries the usage and the routing record.
Rule 5: a committed stream's call span (when the request is traced) ends when the stream
ends, however it ends (`_ended`), not at commit (`turnout.routing.spans`).
Rule 6: a committed stream that breaks after sending content is billed all the same (the
caller has tokens the provider counts). Its usage is what the provider reported before the
break, unless that counts fewer output tokens than were sent (most providers report usage only
at the end): then the output is estimated from what was sent (characters ÷ 4, one token per
undecoded content event, at least 1), the input is the reported one or estimated from the
prompt (characters ÷ 4), and the entry's reason says `usage estimated`.
Rule 7: a request whose source asks to `relay` (its caller forwards same-format events as
bytes) keeps asking, so a client may hand plain content events over undecoded
(`ChatChunk.opaque`), unless the route has an `accept` check, which reads the stream's text.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace
from typing import TYPE_CHECKING, cast

from turnout.errors import ProviderError, StreamBroken, StreamRejected
from turnout.routing.attempt import as_provider_error, cancelled
from turnout.routing.deadline import IdleWatch, call_deadline
from turnout.routing.health import Admission
from turnout.routing.reasons import failure_reason, joined
from turnout.routing.spans import current_call, end_call
from turnout.vendors.classify import RETRYABLE
from turnout.wire.model import ChatChunk, ChatResponse, TextPart, Usage

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable

    from turnout.record import RoutingRecord
    from turnout.routing.attempt import Call
    from turnout.routing.request_state import RequestState
    from turnout.routing.route import Route
    from turnout.wire.model import ChatRequest

__all__ = ["RoutedStream", "open_stream", "routed_stream"]


async def open_stream(state: RequestState, call: Call) -> None:
    """Start `call`'s stream and read it up to its first token (or its end): sets
    `call.upstream` and `call.held`, or `call.error`; a cancellation is recorded and re-raised."""
    entry = state.start(call)
    target = call.target
    seconds = min(target.timeout, target.first_token_timeout)
    left = state.time_left()
    if left is not None and left < seconds:
        seconds = max(left, 0.0)
    strategy = call.route.strategy
    strategy.call_started(call.stats_key)
    clock = state.clock
    upstream: AsyncIterator[ChatChunk] | None = None
    try:
        with current_call(call):
            async with call_deadline(clock, seconds):
                upstream = aiter(call.client.stream(_asked(call)))
                while True:
                    try:
                        chunk = await anext(upstream)
                    except StopAsyncIteration:
                        call.ended = True
                        break
                    call.held.append(chunk)
                    if chunk.has_content:
                        break
    except asyncio.CancelledError:
        cancelled(call)
        await _close(upstream)
        raise
    except Exception as exc:  # noqa: BLE001 - whatever a client raises is a failed call
        _failed(call, exc, seconds)
        await _close(upstream)
    finally:
        strategy.call_finished(call.stats_key)
        call.finished = clock.now()
        entry.duration_ms = int((call.finished - call.started) * 1000)
    if call.error is not None:
        return
    call.upstream = upstream
    if call.ended:
        relay = _Relay()
        for chunk in call.held:
            relay.note(chunk)
        entry.usage = relay.usage
        if relay.finish is None:
            call.error = ProviderError.for_class(
                "provider_error",
                "the stream ended without a finish reason",
                reason="stream_ended",
                provider=call.provider,
            )
        else:
            call.response = relay.response(call)


def _asked(call: Call) -> ChatRequest:
    """Rule 7: the request as the call's client gets it."""
    request = cast("ChatRequest", call.request)
    source = request.source
    if source is not None and source.relay and call.route.accept is not None:
        return replace(request, source=replace(source, relay=False))
    return request


def _failed(call: Call, exc: Exception, seconds: float) -> None:
    """`call` failed with `exc` before its first token, under a deadline of `seconds`."""
    call.error = as_provider_error(exc, provider=call.provider, timeout=seconds)
    if isinstance(exc, TimeoutError) and isinstance(exc.__cause__, asyncio.CancelledError):
        call.limit = seconds  # the call's own deadline cut it


async def _close(upstream: AsyncIterator[ChatChunk] | None) -> None:
    aclose = getattr(upstream, "aclose", None)
    if aclose is not None:
        with contextlib.suppress(Exception):
            await aclose()


class _Relay:
    """What the caller has been sent of a stream, and what is held back."""

    __slots__ = ("finish", "held", "model", "other_tokens", "sent", "text", "usage")

    def __init__(self) -> None:
        self.text: list[str] = []
        self.held: list[ChatChunk] = []
        self.finish: str | None = None
        self.usage: Usage | None = None
        self.model: str | None = None
        self.sent = False
        """Whether content reached the caller."""
        self.other_tokens = 0
        """Rule 6: the estimated tokens of what was sent beside the text (thinking, tool-call
        arguments, undecoded events)."""

    def note(self, chunk: ChatChunk) -> None:
        if chunk.delta:
            self.text.append(chunk.delta)
        if chunk.thinking or chunk.tool_calls:
            chars = len(chunk.thinking) + sum(len(each.arguments) for each in chunk.tool_calls)
            self.other_tokens += chars // 4
        if chunk.opaque and chunk.raw is not None:
            self.other_tokens += max(1, chunk.raw.count(b"\n\n"))
        if chunk.finish_reason is not None:
            self.finish = chunk.finish_reason
        if chunk.usage is not None:
            self.usage = chunk.usage
        if chunk.model is not None:
            self.model = chunk.model

    def take(self, chunk: ChatChunk) -> list[ChatChunk]:
        """The chunks to send now that `chunk` arrived (held ones first)."""
        self.note(chunk)
        if chunk.finish_reason is not None or not chunk.has_content:
            self.held.append(chunk)
            return []
        out = [*self.held, chunk]
        self.held.clear()
        self.sent = True
        return out

    def take_all(self, chunks: list[ChatChunk]) -> list[ChatChunk]:
        """`take` for each of `chunks` in turn: every chunk to send now."""
        return [out for chunk in chunks for out in self.take(chunk)]

    def estimate(self, request: ChatRequest) -> Usage:
        """Rule 6: the usage of what was sent, estimated (at least 1 token each way)."""
        output = sum(len(text) for text in self.text) // 4 + self.other_tokens
        return Usage(max(1, request.prompt_chars // 4), max(1, output))

    def response(self, call: Call) -> ChatResponse:
        """The stream so far as a whole answer (for the refusal and `accept` checks)."""
        return ChatResponse(
            content=[TextPart("".join(self.text))],
            model=self.model or call.model,
            finish_reason=self.finish,
            usage=self.usage,
        )


class RoutedStream:
    """What `Route.stream` returns: the stream's chunks, and its routing record from the start.

    `routing` fills in as the request goes (attempt entries, then who answered), so a caller can
    read it at commit (the first chunk) rather than waiting for the last one, as the gateway does
    for its headers. Iterate it like any async iterator; `aclose()` ends the upstream call.
    """

    __slots__ = ("_chunks", "routing")

    def __init__(self, routing: RoutingRecord, chunks: AsyncGenerator[ChatChunk, None]) -> None:
        self.routing = routing
        self._chunks = chunks

    def __aiter__(self) -> RoutedStream:
        return self

    def __anext__(self) -> Awaitable[ChatChunk]:
        return self._chunks.__anext__()

    async def aclose(self) -> None:
        """Stop the stream: the upstream call ends and the record is closed."""
        await self._chunks.aclose()


async def routed_stream(
    route: Route, state: RequestState, serve: Callable[[Route, RequestState], Awaitable[Call]]
) -> AsyncGenerator[ChatChunk, None]:
    """`Route.stream`: `serve` (the driver) fails over until the first token; then this relays
    the committed stream."""
    error: BaseException | None = None
    call: Call | None = None
    relay = _Relay()
    finished = False
    try:
        call = await serve(route, state)
        for out in relay.take_all(call.held):
            yield out
        upstream = call.upstream
        if not call.ended and upstream is not None:
            idle = call.route.timeouts.stream_idle
            watch = IdleWatch(state.clock, idle)
            try:
                while True:
                    watch.watch()
                    try:
                        chunk = await anext(upstream)
                    except StopAsyncIteration:
                        watch.rest()
                        break
                    except BaseException as exc:
                        # A cancellation the watch made means the upstream fell silent.
                        silent = watch.rest()
                        if silent or isinstance(exc, Exception):
                            failure = TimeoutError() if silent else exc
                            raise _broken(state, call, relay, failure, idle) from exc
                        raise
                    watch.rest()
                    for out in relay.take(chunk):
                        yield out
            finally:
                watch.close()
        last = _finish(state, call, relay)
        finished = True
        for chunk in last:
            yield chunk
    except BaseException as exc:
        error = None if finished else exc
        if call is not None and not finished and isinstance(exc, _GIVING_UP):
            _ended(state, call, relay, "cancelled")
            await _close(call.upstream)
        raise
    finally:
        state.close(error)


_GIVING_UP = (asyncio.CancelledError, GeneratorExit)


def _finish(state: RequestState, call: Call, relay: _Relay) -> list[ChatChunk]:
    """End-of-stream checks: the last chunks to send (the last carrying the routing record)."""
    if relay.finish is None:
        error = ProviderError.for_class(
            "provider_error", "the stream ended without a finish reason", reason="stream_ended"
        )
        raise _broken(state, call, relay, error, None)
    route = call.route
    if call.response is None:
        response = relay.response(call)
        if response.finish_reason == "content_filter" and route.retry.fail_over_on_refusal:
            _ended(state, call, relay, "refused")
            raise StreamRejected(
                f"the stream from {call.target.name} was refused (content_filter)",
                code="stream_refused",
                reason="content_filter",
                routing=state.record,
            )
        reason = route.accept(response) if route.accept is not None else None
        if reason:
            _ended(state, call, relay, "rejected", reason)
            raise StreamRejected(
                f"the stream from {call.target.name} was rejected: {reason}",
                code="stream_rejected",
                reason=reason,
                routing=state.record,
            )
    else:
        response = call.response
    _ended(state, call, relay, "answered")
    state.answered(call, response)
    last = relay.held[-1] if relay.held else ChatChunk(finish_reason=relay.finish)
    if not relay.held:
        relay.held.append(last)
    last.routing = state.record
    if last.usage is None:
        last.usage = relay.usage
    return relay.held


def _ended(
    state: RequestState, call: Call, relay: _Relay, outcome: str, reason: str | None = None
) -> None:
    entry = call.entry
    assert entry is not None
    entry.outcome = outcome
    entry.committed = True
    entry.usage = relay.usage
    if reason is not None:
        entry.reason = joined(reason, entry.reason)
    entry.duration_ms = int((state.clock.now() - call.started) * 1000)
    if call.span is not None:
        end_call(call, model=relay.model, finish=relay.finish)


def _bill_broken(state: RequestState, call: Call, relay: _Relay) -> None:
    """Rule 6: bill a committed stream that broke after sending content."""
    entry = call.entry
    assert entry is not None
    reported = relay.usage
    estimate = relay.estimate(cast("ChatRequest", call.request))
    if reported is None or reported.output_tokens < estimate.output_tokens:
        input_tokens = estimate.input_tokens if reported is None else reported.input_tokens
        entry.usage = Usage(
            input_tokens or estimate.input_tokens,
            estimate.output_tokens,
            *((0, 0, 0) if reported is None else _cache_and_reasoning(reported)),
        )
        entry.reason = joined(entry.reason, "usage estimated")
    state.bill(call, relay.model or call.model)


def _cache_and_reasoning(usage: Usage) -> tuple[int, int, int]:
    return (usage.cache_read_tokens, usage.cache_write_tokens, usage.reasoning_tokens)


def _broken(
    state: RequestState, call: Call, relay: _Relay, exc: BaseException, idle: float | None
) -> StreamBroken:
    """A committed stream failed: record it, tell health, and build the `StreamBroken`."""
    error = as_provider_error(exc, provider=call.provider, timeout=idle)
    if isinstance(exc, TimeoutError):
        error.reason = "stream_idle_timeout"
        words = f"silent for {idle or 0:g} s after the first token"
    else:
        words = f"broken after the first token: {failure_reason(error, error.error_class)}"
    entry = call.entry
    assert entry is not None
    entry.error_class = error.error_class
    entry.status = error.status
    _ended(state, call, relay, "failed", words)
    if relay.sent:
        _bill_broken(state, call, relay)
    health = call.route.health
    if error.error_class in RETRYABLE and not call.credentialed:
        health.record_failure(Admission(call.key), error.error_class, retry_after=error.retry_after)
    return StreamBroken(
        f"the stream from {call.target.name} broke after the first token: {error}",
        routing=state.record,
    )
