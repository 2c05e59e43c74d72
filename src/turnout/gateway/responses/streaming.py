"""Streamed answers as server-sent events: no failover once the first token is sent (commit).

Rule 1: nothing is sent before the route yields its first chunk, which it does only once a
target produced its first token (the chunks held back before it, such as Anthropic's
`message_start` or OpenAI's role chunk, come from the winning call only). So the status line
and the routing headers go out complete, at commit, and a failure before it is an ordinary
JSON error response with the status of the error table.
Rule 2: with the route's `commit_on_headers`, 200 and the SSE headers go out at once, a
`: keep-alive` comment every `keepalive_seconds` until the first token, and a failure before
it becomes an in-stream error event.
Rule 3: when the serving target speaks the caller's format, each upstream event's own bytes
are forwarded (for an OpenAI caller that did not ask for `include_usage`, the usage-only chunk
is left out; turnout always asks upstream); otherwise the caller's codec re-encodes.
Rule 4: after commit, a broken stream ends with the format's error event (`stream_broken`), a
refused or rejected one with `stream_refused` / `stream_rejected`, instead of the terminator; in
a format whose events are numbered (Responses), numbered after the last event sent.
Rule 5: a stream that ended cleanly pins its session to the family that served it, as a whole
answer does (`turnout.gateway.runtime.pins`).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from turnout.gateway.client_formats import NumberedEncoder
from turnout.gateway.responses.respond import (
    CACHE_MISS,
    error_event,
    error_reply,
    header_value,
    request_id_header,
    routing_headers,
)
from turnout.wire.sse import KEEPALIVE

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from turnout.gateway.client_formats import StreamEncoder
    from turnout.gateway.exchange import Exchange, Header
    from turnout.gateway.runtime.pins import PinStep
    from turnout.record import AttemptEntry, RoutingRecord
    from turnout.routing.clock import Clock
    from turnout.routing.plan import RequestPlan
    from turnout.routing.route import Route
    from turnout.routing.stream import RoutedStream
    from turnout.wire.model import ChatChunk, ChatRequest

__all__ = ["SSE_HEADERS", "stream_answer"]

SSE_HEADERS: tuple[Header, ...] = (
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
)


class _Forward:
    """Rule 3, same format: the upstream's own event bytes (one event per chunk)."""

    __slots__ = ("_drop_usage_only", "_terminator", "sent")

    def __init__(self, terminator: bytes, *, drop_usage_only: bool) -> None:
        self._terminator = terminator
        self._drop_usage_only = drop_usage_only
        self.sent = 0

    def chunk(self, chunk: ChatChunk) -> bytes:
        raw = chunk.raw
        if raw is None:
            return b""
        if (
            self._drop_usage_only
            and chunk.usage is not None
            and chunk.finish_reason is None
            and not chunk.has_content
        ):
            return b""
        self.sent += 1
        return raw

    def finish(self) -> bytes:
        return self._terminator

    def events_sent(self) -> int:
        """Rule 4: how many events went out (the upstream numbers them from 0)."""
        return self.sent


class _Encode:
    """Rule 3, across formats: the caller's codec re-encodes each neutral chunk."""

    __slots__ = ("_encoder",)

    def __init__(self, encoder: StreamEncoder) -> None:
        self._encoder = encoder

    def chunk(self, chunk: ChatChunk) -> bytes:
        return self._encoder.encode(chunk)

    def finish(self) -> bytes:
        return self._encoder.finish()

    def events_sent(self) -> int:
        """Rule 4: how many events went out (0 for an encoder that does not number them)."""
        encoder = self._encoder
        return encoder.sequence_number if isinstance(encoder, NumberedEncoder) else 0


def _serving_entry(record: RoutingRecord) -> AttemptEntry | None:
    """The committed call's entry (the driver marks it `answered` and `committed` at commit)."""
    for entry in reversed(record.attempts):
        if entry.committed:
            return entry
    return None


async def stream_answer(
    exchange: Exchange,
    route: Route,
    request: ChatRequest,
    *,
    session_id: str | None,
    include_usage: bool,
    commit_on_headers: bool,
    pins: PinStep,
    keepalive_seconds: float = 15.0,
    tap: Callable[[RoutedStream], RoutedStream] | None = None,
    plan: RequestPlan | None = None,
) -> None:
    """Route `request` as a stream and relay it to the caller as SSE (see the module rules).

    `include_usage` is whether an OpenAI caller asked for the usage chunk; `pins` the
    runtime's session pins (Rule 5); `keepalive_seconds` the spacing of Rule 2's comments;
    `tap` wraps the route's stream before it is relayed (the response cache stores a cleanly
    ended stream); `plan` is the request's plan (`Route.stream`).
    """
    chunks = route.stream(request, session_id=session_id, plan=plan)
    exchange.adopt(chunks.routing)  # before the first call, so its call id has it too
    if tap is not None:
        chunks = tap(chunks)
    record = chunks.routing  # complete for the attempts so far at commit: the headers need it
    # Closing the stream on any way out (a failure, the caller leaving while a write is
    # pending) ends the upstream call at once and lets the route close its record.
    try:
        await _stream(
            exchange,
            record,
            chunks,
            request=request,
            include_usage=include_usage,
            keepalive_clock=route.clock if commit_on_headers else None,
            keepalive_seconds=keepalive_seconds,
        )
        await pins.after(plan, session_id, record, request)
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


async def _stream(
    exchange: Exchange,
    record: RoutingRecord,
    chunks: AsyncIterator[ChatChunk],
    *,
    request: ChatRequest,
    include_usage: bool,
    keepalive_clock: Clock | None,
    keepalive_seconds: float,
) -> None:
    """Rules 1-3 for one opened stream (`keepalive_clock` set: `commit_on_headers`)."""
    fmt = exchange.fmt
    try:
        if keepalive_clock is not None:
            await exchange.start(200, _early_headers(record))
            first = await _first_chunk(exchange, chunks, keepalive_clock, keepalive_seconds)
        else:
            first = await anext(chunks)
    except StopAsyncIteration:
        first = None
    except Exception as exc:  # noqa: BLE001 - Rule 1/2: every failure before commit is answered
        await _fail_before_commit(exchange, exc, record)
        return
    serving = _serving_entry(record)
    model = (first.model if first is not None else None) or (
        serving.model if serving is not None else None
    )
    model = model or request.model or ""
    if not exchange.started:
        target = serving.target if serving is not None else None
        headers = routing_headers(record, target=target, model=model, with_cost=False)
        await exchange.start(200, [*SSE_HEADERS, *headers])
    same = first is not None and first.raw is not None and first.raw_format == fmt.name
    writer: _Forward | _Encode = (
        _Forward(fmt.terminator, drop_usage_only=fmt.name == "openai-chat" and not include_usage)
        if same
        else _Encode(fmt.encoder(model, include_usage))
    )
    await _relay(exchange, chunks, first, writer, record)


async def _relay(
    exchange: Exchange,
    chunks: AsyncIterator[ChatChunk],
    first: ChatChunk | None,
    writer: _Forward | _Encode,
    record: RoutingRecord,
) -> None:
    """Rule 4: send the stream after commit, then its terminator or error event."""
    fmt = exchange.fmt
    try:
        if first is not None:
            data = writer.chunk(first)
            if data:
                await exchange.write(data)
            async for chunk in chunks:
                data = writer.chunk(chunk)
                if data:
                    await exchange.write(data)
        tail = writer.finish()
    except Exception as exc:  # noqa: BLE001 - after commit every failure is an in-stream event
        exchange.failure = exc
        tail = error_event(
            exc, fmt, request_id=record.request_id, sequence_number=writer.events_sent()
        )
    await exchange.end(tail)


def _early_headers(record: RoutingRecord) -> list[Header]:
    """Rule 2: the headers known before any call."""
    headers = [
        *SSE_HEADERS,
        request_id_header(record.request_id),
        (b"x-turnout-route", header_value(record.route)),
    ]
    if record.cache is not None:
        headers.append(CACHE_MISS)
    return headers


async def _first_chunk(
    exchange: Exchange, chunks: AsyncIterator[ChatChunk], clock: Clock, keepalive: float
) -> ChatChunk:
    """Rule 2: wait for the first chunk, sending a keep-alive comment every `keepalive`
    seconds of the route's clock."""
    pending = asyncio.ensure_future(anext(chunks))
    ticker: asyncio.Future[None] | None = None
    try:
        while True:
            ticker = asyncio.ensure_future(clock.sleep(keepalive))
            await asyncio.wait((pending, ticker), return_when=asyncio.FIRST_COMPLETED)
            if pending.done():
                return pending.result()
            await exchange.write(KEEPALIVE)
    finally:
        for waiter in (pending, ticker):
            if waiter is not None and not waiter.done():
                waiter.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await waiter


async def _fail_before_commit(exchange: Exchange, exc: Exception, record: RoutingRecord) -> None:
    """A failure before the first token: a JSON error response, or (Rule 2) an error event."""
    exchange.failure = exc
    if not exchange.started:
        await exchange.reply(error_reply(exc, exchange.fmt, request_id=record.request_id))
        return
    await exchange.end(error_event(exc, exchange.fmt, request_id=record.request_id))
