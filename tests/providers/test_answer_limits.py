"""How big an upstream answer may be (`max_response_bytes`): whole answers and decompressed
bodies are cut off at the limit without ever being held whole, streams are relayed as they come
with each event bounded, and an answer over the limit fails the call so the route moves on."""

from __future__ import annotations

import asyncio
import tracemalloc
import zlib
from typing import TYPE_CHECKING

import pytest

from turnout.errors import ProviderUnavailable, StreamBroken
from turnout.providers import HttpOptions, MockProvider, OpenAI
from turnout.providers.http1 import Http1Transport
from turnout.routing.route import Route
from turnout.routing.target import Target
from turnout.wire.model import Message

from ._raw_http import BODY, HEADERS, RawServer, answering, chunked, read_stream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from turnout.record import RoutingRecord

LIMIT = 64 * 1024


@pytest.fixture
async def small() -> AsyncIterator[Http1Transport]:
    """A transport whose answers may hold at most 64 KiB."""
    client = Http1Transport(provider="p", max_response_bytes=LIMIT)
    yield client
    await client.aclose()


def sized(size: int, *, coding: bytes = b"") -> bytes:
    """A 200 answer with a Content-Length body of `size` bytes ("x"), sent as is."""
    head = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n%s\r\n" % (size, coding)
    return head + b"x" * size


def bomb(size: int) -> bytes:
    """A gzip body of `size` zero bytes, compressed a megabyte at a time (about 1/1000)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1024 * 1024)
    packed = [packer.compress(block) for _ in range(size // len(block))]
    return b"".join(packed) + packer.flush()


async def test_a_whole_answer_at_the_limit_is_read(small: Http1Transport) -> None:
    """An answer of exactly `max_response_bytes` is read whole; one byte more is not."""
    async with RawServer(answering(sized(LIMIT), sized(LIMIT + 1))) as server:
        assert len((await small.post(server.url(), BODY, HEADERS)).body) == LIMIT
        with pytest.raises(ProviderUnavailable) as caught:
            await small.post(server.url(), BODY, HEADERS)
    assert caught.value.error_class == "provider_error"
    assert caught.value.reason == "answer larger than 64 KiB"


async def test_a_declared_length_over_the_limit_fails_early() -> None:
    """A Content-Length over the default 32 MiB fails once 512 KiB came, not at the limit."""

    async def answer(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 50000000\r\n\r\n" + b"x" * 512 * 1024)
        await server.wait_closed(reader)  # the rest never comes

    client = Http1Transport(provider="p")
    try:
        async with RawServer(answer) as server:
            with pytest.raises(ProviderUnavailable) as caught:
                await asyncio.wait_for(client.post(server.url(), BODY, HEADERS), 5.0)
    finally:
        await client.aclose()
    assert caught.value.reason == "answer larger than 32 MiB"
    assert "max_response_bytes" in caught.value.message


async def test_an_endless_chunked_answer_is_cut_off(small: Http1Transport) -> None:
    """A chunked answer that never ends is cut off once past the limit, not read for ever."""

    async def answer(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
        piece = b"%x\r\n%s\r\n" % (4096, b"y" * 4096)
        for _ in range(10_000):  # 40 MB at most, should the client keep reading
            writer.write(piece)
            await writer.drain()

    async with RawServer(answer) as server:
        with pytest.raises(ProviderUnavailable, match="answer larger than 64 KiB"):
            await asyncio.wait_for(small.post(server.url(), BODY, HEADERS), 5.0)


@pytest.mark.parametrize("stream", [False, True])
async def test_a_compression_bomb_is_never_inflated_whole(
    small: Http1Transport, stream: bool
) -> None:
    """A 64 KB gzip bomb fails as too large without ever being inflated whole."""
    packed = bomb(64 * 1024 * 1024)
    response = sized(len(packed), coding=b"content-encoding: gzip\r\n")[: -len(packed)] + packed
    async with RawServer(answering(response)) as server:
        call = (
            read_stream(small, server.url(), [])
            if stream
            else small.post(server.url(), BODY, HEADERS)
        )
        tracemalloc.start()
        try:
            with pytest.raises(ProviderUnavailable) as caught:
                await call
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert caught.value.reason == "answer larger than 64 KiB"
    assert peak < 8 * LIMIT + 2 * len(packed)


async def test_a_compressed_answer_within_the_limit_is_read(small: Http1Transport) -> None:
    """A gzip answer that inflates to exactly the limit is read whole, in one piece or many."""
    packed = zlib.compress(b"z" * LIMIT, wbits=16 + zlib.MAX_WBITS)
    whole = sized(len(packed), coding=b"content-encoding: gzip\r\n")[: -len(packed)] + packed
    pieces = chunked(*(packed[i : i + 9] for i in range(0, len(packed), 9)), head=b"")
    pieces = pieces.replace(b"chunked\r\n", b"chunked\r\ncontent-encoding: gzip\r\n", 1)
    async with RawServer(answering(whole, pieces)) as server:
        for _ in range(2):
            assert (await small.post(server.url(), BODY, HEADERS)).body == b"z" * LIMIT


async def test_a_stream_larger_than_the_limit_is_relayed(small: Http1Transport) -> None:
    """A stream is handed over as it arrives: ten times the limit in all is read to its end."""
    total = 10 * LIMIT
    response = chunked(*([b"s" * 8192] * (total // 8192)))
    seen: list[bytes] = []
    async with RawServer(answering(response)) as server:
        await read_stream(small, server.url(), seen)
    assert sum(map(len, seen)) == total


def _adapter(server: RawServer, limit: int) -> OpenAI:
    return OpenAI(
        "sk-test", base_url=server.url("/v1"), options=HttpOptions(max_response_bytes=limit)
    )


async def test_an_answer_over_the_limit_fails_over() -> None:
    """Through a route, an answer over the limit is provider_error and the next target answers."""
    backup = MockProvider("backup")
    async with RawServer(answering(sized(LIMIT + 1))) as server:
        primary = _adapter(server, LIMIT)
        route = Route(
            "big", [Target("primary", primary, "gpt-4o"), Target("backup", backup, "gpt-4o")]
        )
        try:
            response = await route.complete([Message.user("hi")])
        finally:
            await primary.aclose()
    assert response.text == "mock answer from gpt-4o"
    assert response.routing is not None
    failed = response.routing.attempts[0]
    assert (failed.target, failed.outcome, failed.error_class) == (
        "primary",
        "failed",
        "provider_error",
    )
    assert failed.reason == "upstream error (answer larger than 64 KiB)"


async def drain(route: Route, seen: list[str]) -> None:
    """Stream a question through `route`, keeping each chunk's text in `seen` as it comes."""
    async for chunk in route.stream([Message.user("hi")]):
        seen.append(chunk.delta)  # noqa: PERF401 - kept one by one until the stream fails


ROLE = b'data: {"id":"c","choices":[{"index":0,"delta":{"role":"assistant"}}]}\n\n'
TEXT = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"early"}}]}\n\n'


def _endless_event(*before: bytes) -> bytes:
    """A stream: `before`, then one event that grows past 1 MiB and never ends."""
    return chunked(*before, *([b"data: " + b"q" * 8192] * 128))[: -len(b"0\r\n\r\n")]


@pytest.mark.parametrize("committed", [False, True])
async def test_an_event_over_the_limit_fails_the_stream(committed: bool) -> None:
    """An event over the limit fails over before the first token, is StreamBroken after it."""
    before = (ROLE, TEXT) if committed else (ROLE,)
    backup = MockProvider("backup")
    records: list[RoutingRecord] = []
    seen: list[str] = []
    async with RawServer(answering(_endless_event(*before))) as server:
        primary = _adapter(server, LIMIT)
        route = Route(
            "big",
            [Target("primary", primary, "gpt-4o"), Target("backup", backup, "gpt-4o")],
            on_routed=records.append,
        )
        try:
            if committed:
                with pytest.raises(StreamBroken):
                    await drain(route, seen)
            else:
                await drain(route, seen)
        finally:
            await primary.aclose()
    first = records[-1].attempts[0]
    assert first.error_class == "provider_error"
    assert first.reason is not None
    assert "(answer larger than 64 KiB)" in first.reason
    if committed:
        assert "".join(seen) == "early"
        assert backup.requests == []
    else:
        assert "".join(seen) == "mock answer from gpt-4o"
