"""The HTTP/1.1 client of the providers (`Http1Transport`): against the mock upstream, and against
tiny raw servers started in each test for the edge cases of framing, pooling and failures."""

from __future__ import annotations

import asyncio
import gzip
import shutil
import socket
import ssl
import subprocess
import zlib
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from turnout.errors import InvalidRequest, ProviderError, ProviderTimeout, ProviderUnavailable
from turnout.providers._http1_connection import Connection
from turnout.providers.http1 import HIGH_WATER, Http1Transport
from turnout.providers.transport import HttpTimeouts

from ._raw_http import (
    BODY,
    HEADERS,
    OK,
    STREAM_BODY,
    RawServer,
    answering,
    chunked,
    first_chunk_then_hold,
    idle,
    read_stream,
    reset,
    until,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable
    from pathlib import Path

    from turnout.mock_upstream import ThreadedMockUpstream


@pytest.fixture
async def transport() -> AsyncIterator[Http1Transport]:
    """A transport (5 s connect and read timeouts), closed after the test."""
    client = Http1Transport(provider="p", timeouts=HttpTimeouts(connect=5.0, read=5.0))
    yield client
    await client.aclose()


# --- against the mock upstream --------------------------------------------------------------


async def test_post_reads_a_whole_answer(
    transport: Http1Transport, upstream: ThreadedMockUpstream
) -> None:
    """A POST returns the status, lower-cased headers and the whole JSON body."""
    reply = await transport.post(f"{upstream.openai_base_url}/chat/completions", BODY, HEADERS)
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    assert reply.headers["x-request-id"] == upstream.requests()[-1]["request_id"]
    assert orjson.loads(reply.body)["choices"][0]["message"]["content"].startswith("mock answer")


async def test_stream_yields_the_event_stream(
    transport: Http1Transport, upstream: ThreadedMockUpstream
) -> None:
    """A streamed POST yields the chunked SSE body as it arrives, through `[DONE]`."""
    url = f"{upstream.openai_base_url}/chat/completions"
    async with transport.stream(url, STREAM_BODY, HEADERS) as reply:
        assert reply.status == 200
        assert reply.headers["content-type"] == "text/event-stream"
        body = b"".join([data async for data in reply.chunks()])
    assert body.rstrip().endswith(b"data: [DONE]")
    assert body.count(b"data: ") > 3


async def test_error_status_is_a_reply(
    transport: Http1Transport, upstream: ThreadedMockUpstream
) -> None:
    """An error status is returned with its headers and body; `read()` reads it on a stream."""
    url = f"{upstream.openai_base_url}/chat/completions"
    body = BODY.replace(b"gpt-4o-mini", b"m/fault:status=429;retry_after=8")
    reply = await transport.post(url, body, HEADERS)
    assert (reply.status, reply.headers["retry-after"]) == (429, "8")
    async with transport.stream(url, body, HEADERS) as streamed:
        assert streamed.status == 429
        assert b"error" in await streamed.read()


async def test_many_concurrent_calls_share_the_pool(upstream: ThreadedMockUpstream) -> None:
    """200 concurrent calls on a pool of 8 all get their own answer."""
    client = Http1Transport(provider="p", max_connections=8)
    url = f"{upstream.openai_base_url}/chat/completions"
    try:
        bodies = [BODY.replace(b"gpt-4o-mini", b"model-%d" % i) for i in range(200)]
        replies = await asyncio.gather(*(client.post(url, body, HEADERS) for body in bodies))
        models = [orjson.loads(reply.body)["model"] for reply in replies]
        assert models == [f"model-{i}" for i in range(200)]
        assert idle(client) <= 8
    finally:
        await client.aclose()


def test_another_event_loop_starts_a_new_pool(upstream: ThreadedMockUpstream) -> None:
    """Used from a second event loop, the transport opens new connections there and closes
    the first loop's; closed in each loop before it ends (Rule 1), it serves a third one."""
    client = Http1Transport(provider="p")
    url = f"{upstream.openai_base_url}/chat/completions"
    first, second, third = (asyncio.new_event_loop() for _ in range(3))
    try:
        assert first.run_until_complete(client.post(url, BODY, HEADERS)).status == 200
        old = [conn for pool in client._pools.values() for conn in pool._all]
        assert second.run_until_complete(client.post(url, BODY, HEADERS)).status == 200
        assert old
        assert all(conn.closed for conn in old)
        first.run_until_complete(asyncio.sleep(0))  # the first loop finishes closing them
        second.run_until_complete(client.aclose())
        assert third.run_until_complete(client.post(url, BODY, HEADERS)).status == 200
        third.run_until_complete(client.aclose())
    finally:
        for loop in (first, second, third):
            loop.close()


# --- the request ------------------------------------------------------------------------------


async def test_request_head_and_body(transport: Http1Transport) -> None:
    """The request: POST line with the query, Host with the port, Content-Length, the headers
    as given (the caller's framing headers dropped), no compression asked for, the body."""
    async with RawServer(answering(OK)) as server:
        headers = {**HEADERS, "Content-Length": "999", "host": "elsewhere", "x-extra": "1"}
        await transport.post(server.url("/v1/chat?api-version=2"), BODY, headers)
    head, _, body = server.requests[0].partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"POST /v1/chat?api-version=2 HTTP/1.1"
    fields = [line.split(b": ", 1) for line in lines[1:]]
    names = [name.lower() for name, _ in fields]
    assert (b"host", b"127.0.0.1:%d" % server.port) in [(n.lower(), v) for n, v in fields]
    assert names.count(b"host") == 1
    assert names.count(b"content-length") == 1
    assert (b"content-length", b"%d" % len(BODY)) in [(n.lower(), v) for n, v in fields]
    assert b"accept-encoding" not in names
    assert b"x-extra" in names
    assert body == BODY


@pytest.mark.parametrize("value", ["1\r\nx-injected: 2", "1\nx", "caf\u00e9 \u2615"])
async def test_a_header_that_cannot_be_sent_is_refused(
    transport: Http1Transport, value: str
) -> None:
    """A header with a line break or a character outside Latin-1 is invalid_request naming the
    header (not its value), and nothing is sent."""
    async with RawServer(answering(OK)) as server:
        with pytest.raises(InvalidRequest) as caught:
            await transport.post(server.url(), BODY, {**HEADERS, "x-a": value})
    assert caught.value.reason == "invalid header"
    assert "'x-a'" in caught.value.message
    assert value not in caught.value.message
    assert server.connections == 0


@pytest.mark.parametrize("url", ["ftp://example.com/x", "http:///path", "http://h:99999/"])
async def test_invalid_urls(transport: Http1Transport, url: str) -> None:
    """A URL that is not http(s) with a host and a valid port is invalid_request."""
    with pytest.raises(InvalidRequest) as caught:
        await transport.post(url, BODY, HEADERS)
    assert caught.value.reason == "invalid url"


# --- framing ----------------------------------------------------------------------------------


async def test_chunked_with_extensions_and_trailers(transport: Http1Transport) -> None:
    """Chunk extensions are ignored, trailers are not headers, and the connection is reused."""
    response = (
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nx-head: 1\r\n\r\n"
        b"5;name=value\r\nhello\r\n6;x\r\n world\r\n0\r\nx-trailer: t\r\n\r\n"
    )
    async with RawServer(answering(response)) as server:
        for _ in range(2):
            reply = await transport.post(server.url(), BODY, HEADERS)
            assert reply.body == b"hello world"
            assert "x-trailer" not in reply.headers
            assert reply.headers["x-head"] == "1"
    assert server.connections == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_close_delimited_body(transport: Http1Transport, stream: bool) -> None:
    """A body without length or chunking ends when the server closes; never reused."""
    response = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\n" + b"x" * 100_000
    async with RawServer(answering(response, close=True)) as server:
        for _ in range(2):
            if stream:
                async with transport.stream(server.url(), BODY, HEADERS) as reply:
                    body = b"".join([data async for data in reply.chunks()])
            else:
                body = (await transport.post(server.url(), BODY, HEADERS)).body
            assert body == b"x" * 100_000
    assert server.connections == 2


@pytest.mark.parametrize(
    "response",
    [
        b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok",
        b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\nok",
    ],
    ids=["connection-close", "http-1.0"],
)
async def test_connection_close_is_honoured(transport: Http1Transport, response: bytes) -> None:
    """A response that ends keep-alive is read whole and its connection is not reused, even
    when the server leaves it open."""
    async with RawServer(answering(response)) as server:
        for _ in range(2):
            assert (await transport.post(server.url(), BODY, HEADERS)).body == b"ok"
        assert idle(transport) == 0
    assert server.connections == 2


async def test_informational_responses_are_skipped(transport: Http1Transport) -> None:
    """100 and 103 responses before the final one are skipped, headers and all."""
    response = (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 103 Early Hints\r\nlink: </a.css>\r\n\r\n"
        b"HTTP/1.1 201 Created\r\nx-final: 1\r\ncontent-length: 2\r\n\r\nok"
    )
    async with RawServer(answering(response)) as server:
        for _ in range(2):
            reply = await transport.post(server.url(), BODY, HEADERS)
            assert (reply.status, reply.body) == (201, b"ok")
            assert "link" not in reply.headers
            assert reply.headers["x-final"] == "1"
    assert server.connections == 1


async def test_no_content_and_repeated_headers(transport: Http1Transport) -> None:
    """A 204 has an empty body and keeps the connection; repeated headers are joined."""
    response = b"HTTP/1.1 204 No Content\r\nX-Tag: a\r\nx-tag: b\r\n\r\n"
    async with RawServer(answering(response)) as server:
        for _ in range(2):
            reply = await transport.post(server.url(), BODY, HEADERS)
            assert (reply.status, reply.body, reply.headers["x-tag"]) == (204, b"", "a, b")
    assert server.connections == 1


def _compress(kind: str, data: bytes) -> bytes:
    if kind == "gzip":
        return gzip.compress(data)
    if kind == "deflate":
        return zlib.compress(data)
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return raw.compress(data) + raw.flush()


@pytest.mark.parametrize(
    ("kind", "coding"), [("gzip", b"gzip"), ("deflate", b"deflate"), ("raw", b"deflate")]
)
async def test_compressed_bodies_are_decoded(
    transport: Http1Transport, kind: str, coding: bytes
) -> None:
    """A gzip or deflate body (zlib-wrapped or raw) sent unasked is decoded, whole or streamed."""
    data = orjson.dumps({"text": "mock answer " * 200})
    packed = _compress(kind, data)
    whole = b"HTTP/1.1 200 OK\r\ncontent-encoding: %s\r\ncontent-length: %d\r\n\r\n%s" % (
        coding,
        len(packed),
        packed,
    )
    pieces = [packed[i : i + 7] for i in range(0, len(packed), 7)]
    streamed = chunked(*pieces, head=b"content-encoding: %s\r\n" % coding)
    async with RawServer(answering(whole, streamed)) as server:
        assert (await transport.post(server.url(), BODY, HEADERS)).body == data
        async with transport.stream(server.url(), BODY, HEADERS) as reply:
            assert b"".join([piece async for piece in reply.chunks()]) == data
    assert server.connections == 1


async def test_a_bad_compressed_body_is_provider_error(transport: Http1Transport) -> None:
    """A body that claims gzip but does not decode is provider_error, unreadable response."""
    response = b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\ncontent-length: 9\r\n\r\nnot gzip!"
    async with RawServer(answering(response)) as server:
        with pytest.raises(ProviderUnavailable, match="unreadable response") as caught:
            await transport.post(server.url(), BODY, HEADERS)
    assert caught.value.reason == "connection"


async def test_garbage_instead_of_http_is_provider_error(transport: Http1Transport) -> None:
    """Bytes that are not an HTTP response are provider_error, unreadable response."""
    async with RawServer(answering(b"SSH-2.0-OpenSSH\r\n\r\n")) as server:
        with pytest.raises(ProviderUnavailable, match="unreadable response"):
            await transport.post(server.url(), BODY, HEADERS)


# --- keep-alive and the pool ----------------------------------------------------------------


async def test_keep_alive_reuses_one_connection(transport: Http1Transport) -> None:
    """Sequential calls, whole and streamed, run on one kept-alive connection."""
    async with RawServer(answering(OK)) as server:
        for _ in range(5):
            assert (await transport.post(server.url(), BODY, HEADERS)).status == 200
            async with transport.stream(server.url(), BODY, HEADERS) as reply:
                assert [data async for data in reply.chunks()] == [b'{"ok":true}']
    assert server.connections == 1


async def test_idle_connection_closed_by_the_server_is_not_reused(
    transport: Http1Transport,
) -> None:
    """A pooled connection the server closed is dropped; the next call opens a fresh one."""
    async with RawServer(answering(OK, close=True)) as server:
        await transport.post(server.url(), BODY, HEADERS)
        await until(lambda: idle(transport) == 0)
        assert (await transport.post(server.url(), BODY, HEADERS)).status == 200
    assert server.connections == 2


async def test_bytes_while_idle_drop_the_connection(transport: Http1Transport) -> None:
    """A pooled connection that receives bytes nobody asked for is closed, never reused."""

    async def answer(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await server.read_request(reader)
        writer.write(OK)
        await server.release.wait()
        writer.write(OK)  # an answer to no request
        await server.wait_closed(reader)
        while await server.read_request(reader) is not None:
            writer.write(OK)

    async with RawServer(answer) as server:
        await transport.post(server.url(), BODY, HEADERS)
        assert idle(transport) == 1
        server.release.set()
        await until(lambda: idle(transport) == 0)
        server.release.clear()
        assert (await transport.post(server.url(), BODY, HEADERS)).status == 200
    assert server.connections == 2


@pytest.mark.parametrize("extra", [b"HTTP/1.1 200 OK\r\n", b"garbage"])
async def test_bytes_after_the_response_drop_the_connection(
    transport: Http1Transport, extra: bytes
) -> None:
    """Extra bytes right behind a response leave it readable but its connection closed."""
    async with RawServer(answering(OK + extra)) as server:
        for _ in range(2):
            assert (await transport.post(server.url(), BODY, HEADERS)).body == b'{"ok":true}'
    assert server.connections == 2


async def test_idle_connections_expire() -> None:
    """An idle connection is closed after `keepalive` seconds, and a new one is opened."""
    client = Http1Transport(provider="p", keepalive=0.05)
    try:
        async with RawServer(answering(OK)) as server:
            await client.post(server.url(), BODY, HEADERS)
            await asyncio.wait_for(server.closed.wait(), 5.0)
            assert idle(client) == 0
            await client.post(server.url(), BODY, HEADERS)
        assert server.connections == 2
    finally:
        await client.aclose()


async def test_max_connections_is_respected() -> None:
    """With `max_connections=2`, six concurrent calls use two connections and all complete."""
    client = Http1Transport(provider="p", max_connections=2)

    async def answer(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        while await server.read_request(reader) is not None:
            await server.release.wait()
            writer.write(OK)

    try:
        async with RawServer(answer) as server:
            calls = [
                asyncio.ensure_future(client.post(server.url(), BODY, HEADERS)) for _ in range(6)
            ]
            await until(lambda: len(server.requests) == 2)
            for _ in range(50):
                await asyncio.sleep(0)
            assert len(server.requests) == 2
            server.release.set()
            replies = await asyncio.gather(*calls)
        assert [reply.status for reply in replies] == [200] * 6
        assert (server.connections, server.peak) == (2, 2)
    finally:
        await client.aclose()


async def test_a_closed_connection_frees_its_slot_for_a_waiter() -> None:
    """With a full pool, a connection that closes (Connection: close) lets the next caller
    open a new one."""
    client = Http1Transport(provider="p", max_connections=1)
    response = b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\nok"
    try:
        async with RawServer(answering(response, close=True)) as server:
            calls = [client.post(server.url(), BODY, HEADERS) for _ in range(3)]
            replies = await asyncio.gather(*calls)
        assert [reply.body for reply in replies] == [b"ok"] * 3
        assert (server.connections, server.peak) == (3, 1)
    finally:
        await client.aclose()


async def test_waiting_for_a_connection_is_bounded_by_connect() -> None:
    """With the pool full, a caller waits at most `HttpTimeouts.connect`: a connect timeout."""
    client = Http1Transport(
        provider="p", max_connections=1, timeouts=HttpTimeouts(connect=0.05, read=5.0)
    )

    async def answer(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await server.read_request(reader)
        await server.release.wait()
        writer.write(OK)

    try:
        async with RawServer(answer) as server:
            first = asyncio.ensure_future(client.post(server.url(), BODY, HEADERS))
            await until(lambda: len(server.requests) == 1)
            with pytest.raises(ProviderTimeout) as caught:
                await client.post(server.url(), BODY, HEADERS)
            assert caught.value.reason == "connect timeout"
            server.release.set()
            assert (await first).status == 200
    finally:
        await client.aclose()


async def test_aclose_closes_pooled_connections_and_the_transport_reopens(
    transport: Http1Transport,
) -> None:
    """`aclose()` closes the pooled connections; a later call opens a new one."""
    async with RawServer(answering(OK)) as server:
        await transport.post(server.url(), BODY, HEADERS)
        await transport.aclose()
        await asyncio.wait_for(server.closed.wait(), 5.0)
        assert (await transport.post(server.url(), BODY, HEADERS)).status == 200
    assert server.connections == 2


# --- partial reads, cancellation, flow control ------------------------------------------------


async def test_partly_read_stream_closes_its_connection(transport: Http1Transport) -> None:
    """Leaving a stream before its end closes the connection; the next call opens another."""
    async with RawServer(first_chunk_then_hold) as server:
        async with transport.stream(server.url(), BODY, HEADERS) as reply:
            async for data in reply.chunks():
                assert data == b"first"
                break
        await asyncio.wait_for(server.closed.wait(), 5.0)
        assert (await transport.post(server.url(), BODY, HEADERS)).status == 200
    assert server.connections == 2


async def test_cancellation_mid_stream_propagates_and_closes(transport: Http1Transport) -> None:
    """Cancelling a reader mid-stream raises CancelledError (never a ProviderError) and closes
    the connection; the pool still serves the next call."""
    server = RawServer(first_chunk_then_hold)
    got_first = asyncio.Event()

    async def read() -> None:
        async with transport.stream(server.url(), BODY, HEADERS) as reply:
            async for _ in reply.chunks():
                got_first.set()

    async with server:
        task = asyncio.ensure_future(read())
        await asyncio.wait_for(got_first.wait(), 5.0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(server.closed.wait(), 5.0)
        assert (await transport.post(server.url(), BODY, HEADERS)).status == 200
    assert server.connections == 2


async def test_cancelled_call_frees_its_pool_slot() -> None:
    """A call cancelled while waiting for the head gives its connection slot back."""
    client = Http1Transport(provider="p", max_connections=1, timeouts=HttpTimeouts(connect=5.0))

    async def answer(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await server.read_request(reader)
        if server.connections == 1:
            await server.wait_closed(reader)
        else:
            writer.write(OK)

    try:
        async with RawServer(answer) as server:
            call = asyncio.ensure_future(client.post(server.url(), BODY, HEADERS))
            await until(lambda: len(server.requests) == 1)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            assert (await client.post(server.url(), BODY, HEADERS)).status == 200
        assert server.connections == 2
    finally:
        await client.aclose()


async def test_slow_reader_pauses_the_socket(transport: Http1Transport) -> None:
    """A reader that does not keep up leaves at most about HIGH_WATER bytes buffered, and
    still gets the whole body once it reads on."""
    total = 8 * 1024 * 1024
    piece = b"y" * 65536

    async def answer(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % total)
        for _ in range(total // len(piece)):
            writer.write(piece)
            await writer.drain()
        await server.wait_closed(reader)

    sizes = []
    async with (
        RawServer(answer) as server,
        transport.stream(server.url(), BODY, HEADERS) as reply,
    ):
        async for data in reply.chunks():
            sizes.append(len(data))
            if len(sizes) == 1:
                for _ in range(500):  # the reader stalls while the server keeps sending
                    await asyncio.sleep(0)
    assert sum(sizes) == total
    assert max(sizes) <= HIGH_WATER + 256 * 1024


# --- failures ---------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_reset_mid_body_is_a_cut_body(transport: Http1Transport, stream: bool) -> None:
    """A reset half-way through the body is provider_error `connection`, body cut short,
    after the bytes that came before it."""

    async def answer(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n0123456789")
        await writer.drain()
        if stream:
            await server.release.wait()  # the reader has the first bytes
        else:
            for _ in range(20):  # let the client read the first bytes before the reset
                await asyncio.sleep(0)
        reset(writer)

    seen: list[bytes] = []
    async with RawServer(answer) as server:
        call = (
            read_stream(transport, server.url(), seen, server.release.set)
            if stream
            else transport.post(server.url(), BODY, HEADERS)
        )
        with pytest.raises(ProviderUnavailable) as caught:
            await call
    assert caught.value.reason == "connection"
    assert str(caught.value.message) == "the response body was cut short"
    assert seen == ([b"0123456789"] if stream else [])


@pytest.mark.parametrize("how", ["close", "reset"])
async def test_closed_before_the_head(transport: Http1Transport, how: str) -> None:
    """A connection closed or reset before the response head is provider_error `connection`,
    "the upstream closed the connection"."""

    async def answer(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await server.read_request(reader)
        if how == "reset":
            reset(writer)

    async with RawServer(answer) as server:
        with pytest.raises(ProviderUnavailable) as caught:
            await transport.post(server.url(), BODY, HEADERS)
    assert caught.value.reason == "connection"
    assert caught.value.message == "the upstream closed the connection"


async def test_connection_refused(transport: Http1Transport) -> None:
    """A refused connection is provider_error `connection`, "cannot connect: …"."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ProviderUnavailable) as caught:
        await transport.post(f"http://127.0.0.1:{port}/v1/chat", BODY, HEADERS)
    assert caught.value.reason == "connection"
    assert caught.value.message.startswith("cannot connect: ")


async def test_read_timeout_waiting_for_the_head() -> None:
    """No response bytes within `HttpTimeouts.read` is a timeout with reason `read timeout`."""
    client = Http1Transport(provider="p", timeouts=HttpTimeouts(read=0.05))

    async def answer(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await server.read_request(reader)
        await server.wait_closed(reader)

    try:
        async with RawServer(answer) as server:
            for call in (client.post, _stream_all(client)):
                with pytest.raises(ProviderTimeout) as caught:
                    await call(server.url(), BODY, HEADERS)
                assert caught.value.reason == "read timeout"
                assert caught.value.provider == "p"
    finally:
        await client.aclose()


def _stream_all(client: Http1Transport) -> Callable[..., Awaitable[bytes]]:
    async def call(url: str, body: bytes, headers: dict[str, str]) -> bytes:
        async with client.stream(url, body, headers) as reply:
            return b"".join([data async for data in reply.chunks()])

    return call


async def test_read_timeout_mid_stream_after_the_bytes_before() -> None:
    """A stream that goes silent raises the read timeout after the bytes it sent."""
    client = Http1Transport(provider="p", timeouts=HttpTimeouts(read=0.05))

    async def answer(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n")
        await server.wait_closed(reader)

    seen: list[bytes] = []
    try:
        async with RawServer(answer) as server:
            with pytest.raises(ProviderTimeout) as caught:
                await read_stream(client, server.url(), seen)
        assert caught.value.reason == "read timeout"
        assert seen == [b"first"]
    finally:
        await client.aclose()


async def test_read_timeout_bounds_each_silence_not_the_whole_body() -> None:
    """A body that trickles in for longer than `read`, never silent that long, is read whole."""
    client = Http1Transport(provider="p", timeouts=HttpTimeouts(read=0.5))

    async def answer(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await server.read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 20\r\n\r\n")
        for _ in range(20):
            await asyncio.sleep(0.04)
            writer.write(b"z")

    try:
        async with RawServer(answer) as server:
            assert (await client.post(server.url(), BODY, HEADERS)).body == b"z" * 20
    finally:
        await client.aclose()


# --- https ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for `localhost` and its key (needs the openssl command)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is not installed")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(  # noqa: S603 - a fixed argv, no shell
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


async def test_https_with_sni_and_verification(certificate: tuple[Path, Path]) -> None:
    """https sends SNI and verifies the certificate: trusted, it answers; by default
    (system roots), a self-signed one is provider_error "cannot connect"."""
    cert, key = certificate
    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_side.load_cert_chain(cert, key)
    names: list[str | None] = []
    server_side.sni_callback = lambda _sock, name, _ctx: names.append(name)
    trusting = ssl.create_default_context(cafile=str(cert))
    client = Http1Transport(provider="p", ssl_context=trusting)
    default = Http1Transport(provider="p")
    try:
        async with RawServer(answering(OK), tls=server_side) as server:
            for _ in range(2):
                reply = await client.post(server.url(host="localhost"), BODY, HEADERS)
                assert reply.body == b'{"ok":true}'
            with pytest.raises(ProviderUnavailable) as caught:
                await default.post(server.url(host="localhost"), BODY, HEADERS)
        assert server.connections == 1  # kept alive; the refused handshake never got served
        assert names[0] == "localhost"
        assert caught.value.message.startswith("cannot connect: ")
        assert isinstance(caught.value, ProviderError)
    finally:
        await client.aclose()
        await default.aclose()


async def test_a_cancel_while_the_connection_opens_keeps_the_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A call cancelled just as its connection is made (the transport exists, the connect has
    not returned) gives its slot back once: afterwards `max_connections` still holds."""
    client = Http1Transport(provider="p", max_connections=2)
    victims: list[asyncio.Future[Any]] = []
    made = Connection.connection_made

    def cancel_on_connect(conn: Connection, transport: asyncio.BaseTransport) -> None:
        made(conn, transport)
        if victims:
            victims.pop().cancel()

    async def answer(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        while await server.read_request(reader) is not None:
            await server.release.wait()
            writer.write(OK)

    try:
        async with RawServer(answer) as server:
            monkeypatch.setattr(Connection, "connection_made", cancel_on_connect)
            for _ in range(3):
                call = asyncio.ensure_future(client.post(server.url(), BODY, HEADERS))
                victims.append(call)
                with pytest.raises(asyncio.CancelledError):
                    await call
            monkeypatch.setattr(Connection, "connection_made", made)
            calls = [
                asyncio.ensure_future(client.post(server.url(), BODY, HEADERS)) for _ in range(6)
            ]
            await until(lambda: len(server.requests) >= 2)
            for _ in range(50):
                await asyncio.sleep(0)
            server.release.set()
            replies = await asyncio.gather(*calls)
        assert [reply.status for reply in replies] == [200] * 6
        assert server.peak <= 2
    finally:
        await client.aclose()
