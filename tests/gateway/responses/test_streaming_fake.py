"""The SSE relay against a fake exchange: no server, no sockets, only what `Exchange` promises.

Pins the relay's own behaviour: the events go out in order and then the terminator, a failure
before the first token is a whole JSON error, one after it is the format's error event, a
caller that leaves stops the upstream stream, and `commit_on_headers` sends keep-alive comments
on the route's clock until the first token.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, cast

import orjson
import pytest

from turnout.gateway.client_formats import OPENAI
from turnout.gateway.responses.streaming import SSE_HEADERS, stream_answer
from turnout.record import RoutingRecord
from turnout.routing.clock import FakeClock
from turnout.routing.stream import RoutedStream
from turnout.wire.model import ChatChunk, ChatRequest, Message
from turnout.wire.sse import KEEPALIVE

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Sequence

    from turnout.gateway.exchange import Header, Reply
    from turnout.gateway.runtime.pins import PinStep
    from turnout.routing.route import Route


class FakeExchange:
    """The whole `Exchange` protocol, recording what is sent."""

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}
        self.body, self.fmt, self.request_id = b"", OPENAI, None
        self.record: RoutingRecord | None = None
        self.failure: BaseException | None = None
        self.started = self.ended = self.gone = False
        self.status, self.writes = 0, 0
        self.sent: list[Any] = []

    def adopt(self, record: RoutingRecord | None) -> None:
        self.record = record

    async def start(self, status: int, headers: Sequence[Header]) -> None:
        self.started, self.status = True, status
        self.sent.append(("start", status, list(headers)))

    async def write(self, data: bytes) -> None:
        self.writes += 1
        self.sent.append(("write", data))

    async def end(self, data: bytes = b"") -> None:
        self.ended = True
        self.sent.append(("end", data))

    async def reply(self, reply: Reply) -> None:
        self.started = self.ended = True
        self.status = reply.status
        self.sent.append(("reply", reply.status, reply.body))


class _Pins:
    def __init__(self) -> None:
        self.after_calls = 0

    async def after(self, *args: object) -> None:
        self.after_calls += 1


class _Route:
    """A route whose stream is `chunks`, on `clock`."""

    def __init__(self, chunks: AsyncGenerator[ChatChunk, None], clock: FakeClock) -> None:
        self.record = RoutingRecord("req-1", "main", "route_1", "failover", "first target")
        self.chunks, self.clock = chunks, clock

    def stream(self, request: ChatRequest, **kwargs: object) -> RoutedStream:
        return RoutedStream(self.record, self.chunks)


def _event(text: str) -> ChatChunk:
    return ChatChunk(delta=text, raw=f"data: {text}\n\n".encode(), raw_format="openai-chat")


async def _then_fails(*texts: str) -> AsyncGenerator[ChatChunk, None]:
    """The events of `texts`, then the upstream fails."""
    for text in texts:
        yield _event(text)
    raise RuntimeError("the upstream failed")


async def _relay(
    chunks: AsyncGenerator[ChatChunk, None],
    *,
    exchange: FakeExchange | None = None,
    clock: FakeClock | None = None,
    commit_on_headers: bool = False,
) -> tuple[FakeExchange, _Pins]:
    """Relay `chunks` to `exchange` (a new fake by default) on `clock`."""
    exchange = exchange if exchange is not None else FakeExchange()
    clock = clock if clock is not None else FakeClock()
    pins = _Pins()
    request = ChatRequest(messages=[Message(role="user")], model="m", stream=True)
    await clock.run(
        stream_answer(
            exchange,
            cast("Route", _Route(chunks, clock)),
            request,
            session_id=None,
            include_usage=False,
            commit_on_headers=commit_on_headers,
            pins=cast("PinStep", pins),
            keepalive_seconds=15.0,
        )
    )
    return exchange, pins


async def test_events_go_out_in_order_then_the_terminator() -> None:
    async def chunks() -> AsyncGenerator[ChatChunk, None]:
        for text in ("one", "two", "three"):
            yield _event(text)

    exchange, pins = await _relay(chunks())
    kinds = [each[0] for each in exchange.sent]
    assert kinds == ["start", "write", "write", "write", "end"]
    status, headers = exchange.sent[0][1], exchange.sent[0][2]
    assert status == 200
    assert headers[: len(SSE_HEADERS)] == list(SSE_HEADERS)
    assert (b"x-request-id", b"req-1") in headers
    assert [each[1] for each in exchange.sent[1:4]] == [
        b"data: one\n\n",
        b"data: two\n\n",
        b"data: three\n\n",
    ]
    assert exchange.sent[-1] == ("end", OPENAI.terminator)
    assert exchange.failure is None
    assert pins.after_calls == 1  # the pins are asked once the stream ended


async def test_a_failure_before_the_first_token_is_a_whole_json_error() -> None:
    exchange, _ = await _relay(_then_fails())
    assert [each[0] for each in exchange.sent] == ["reply"]
    assert exchange.status == 500
    assert orjson.loads(exchange.sent[0][2])["error"]["code"] == "internal_error"
    assert isinstance(exchange.failure, RuntimeError)


async def test_a_failure_after_commit_ends_with_the_error_event() -> None:
    exchange, _ = await _relay(_then_fails("one"))
    assert [each[0] for each in exchange.sent] == ["start", "write", "end"]
    tail = exchange.sent[-1][1]
    assert tail != OPENAI.terminator
    assert b"internal_error" in tail
    assert isinstance(exchange.failure, RuntimeError)


async def test_a_caller_that_leaves_closes_the_upstream_stream() -> None:
    closed: list[bool] = []

    async def chunks() -> AsyncGenerator[ChatChunk, None]:
        try:
            for text in ("one", "two", "three"):
                yield _event(text)
        finally:
            closed.append(True)

    class Leaving(FakeExchange):
        async def write(self, data: bytes) -> None:
            await super().write(data)
            if self.writes == 2:  # as the server cancels the handler of a caller that left
                raise asyncio.CancelledError

    exchange = Leaving()
    with pytest.raises(asyncio.CancelledError):
        await _relay(chunks(), exchange=exchange)
    assert closed == [True]
    assert not exchange.ended


async def test_commit_on_headers_sends_keepalives_until_the_first_token() -> None:
    clock = FakeClock()

    async def chunks() -> AsyncGenerator[ChatChunk, None]:
        await clock.sleep(40)  # two keep-alive spacings of 15 s pass first
        yield _event("one")

    exchange, _ = await _relay(chunks(), clock=clock, commit_on_headers=True)
    assert [each[0] for each in exchange.sent] == ["start", "write", "write", "write", "end"]
    assert [each[1] for each in exchange.sent[1:3]] == [KEEPALIVE, KEEPALIVE]
    assert exchange.sent[3] == ("write", b"data: one\n\n")
