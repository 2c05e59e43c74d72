"""A small HTTP/1.1 server on an asyncio protocol and the `httptools` parser.

The mock upstream needs what a framework hides: resetting a connection before any byte, cutting
a chunked body half-way, going silent with the socket open. It also has to be cheap, since the
gateway benchmark runs it beside the gateway on the same cores (measured in bench/upstream.py:
about a quarter of the CPU per request of a bare ASGI app on uvicorn).

Rule 1: one request per connection is handled at a time; requests that arrive meanwhile
(pipelining) wait in order.
Rule 2: when the connection is lost, the running handler is cancelled, so a hang or a stall ends
when the client leaves.
Rule 3: a response is either whole (`respond`, with content-length) or chunked (`start_stream`,
`send`…, `end_stream`); a handler that returns with a stream still open gets it dropped, never
silently completed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct
from collections import deque
from http import HTTPStatus
from typing import TYPE_CHECKING, cast

import httptools

from turnout.mock_upstream.exchange import Request

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

__all__ = ["HttpExchange", "start_http_server"]

logger = logging.getLogger(__name__)


_STATUS_LINES: dict[int, bytes] = {
    s.value: b"HTTP/1.1 %d %s\r\n" % (s.value, s.phrase.encode()) for s in HTTPStatus
}


def _status_line(status: int) -> bytes:
    line = _STATUS_LINES.get(status)
    return line if line is not None else b"HTTP/1.1 %d Unknown\r\n" % status


def _head(
    status: int,
    headers: Iterable[tuple[str, str]],
    *,
    length: int | None,
    keep_alive: bool,
) -> bytes:
    lines = [_status_line(status)]
    lines += [f"{name}: {value}\r\n".encode("latin-1") for name, value in headers]
    if length is None:
        lines.append(b"transfer-encoding: chunked\r\n")
    else:
        lines.append(b"content-length: %d\r\n" % length)
    if not keep_alive:
        lines.append(b"connection: close\r\n")
    lines.append(b"\r\n")
    return b"".join(lines)


class HttpExchange:
    """One request on a socket and the ways to answer it (see `exchange.Exchange`)."""

    __slots__ = ("_conn", "finished", "request", "started")

    def __init__(self, conn: _Connection, request: Request) -> None:
        self._conn = conn
        self.request = request
        self.started = False
        self.finished = False

    @property
    def closed(self) -> bool:
        """True once the connection is gone."""
        return self._conn.closed

    def respond(
        self,
        status: int,
        body: bytes,
        *,
        content_type: str = "application/json",
        headers: Iterable[tuple[str, str]] = (),
    ) -> None:
        """Send a whole response."""
        if self.closed or self.started:
            return
        self.started = self.finished = True
        head = _head(
            status,
            [("content-type", content_type), *headers],
            length=len(body),
            keep_alive=self.request.keep_alive,
        )
        self._conn.transport.write(head + body)

    def start_stream(
        self,
        status: int = 200,
        *,
        content_type: str = "text/event-stream",
        headers: Iterable[tuple[str, str]] = (),
    ) -> None:
        """Send the status line and headers of a chunked response."""
        if self.closed or self.started:
            return
        self.started = True
        all_headers = [("content-type", content_type), ("cache-control", "no-cache"), *headers]
        head = _head(status, all_headers, length=None, keep_alive=self.request.keep_alive)
        self._conn.transport.write(head)

    async def send(self, data: bytes) -> None:
        """Send one chunk of a streamed body (waits while the client reads slowly)."""
        if self.closed or not data:
            return
        self._conn.transport.write(b"%x\r\n%s\r\n" % (len(data), data))
        await self._conn.drained()

    def cut_body(self, status: int, head: Iterable[tuple[str, str]], body: bytes) -> None:
        """Send the headers of a whole response (full length) and only half of `body`."""
        if self.closed or self.started:
            return
        self.started = True
        raw = _head(status, head, length=len(body), keep_alive=self.request.keep_alive)
        self._conn.transport.write(raw + body[: len(body) // 2])

    def end_stream(self) -> None:
        """Finish a streamed body."""
        if self.closed or self.finished:
            return
        self.finished = True
        self._conn.transport.write(b"0\r\n\r\n")

    def reset(self) -> None:
        """Reset the connection (TCP RST, no response bytes)."""
        self._conn.reset()

    def drop(self) -> None:
        """Close the connection now, whatever was sent (a cut body)."""
        self._conn.drop()

    async def hold(self, limit: float) -> None:
        """Wait until the client goes away or `limit` seconds pass."""
        await self._conn.wait_lost(limit)


class _Connection(asyncio.Protocol):
    def __init__(self, handler: Callable[[HttpExchange], Awaitable[None]], live: set[_Connection]):
        self._handler = handler
        self._live = live
        self._parser = httptools.HttpRequestParser(self)
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._queue: deque[Request] = deque()
        self._task: asyncio.Task[None] | None = None
        self._writable = asyncio.Event()
        self._writable.set()
        self._lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.closed = False
        self.transport: asyncio.Transport = None  # type: ignore[assignment]

    # asyncio.Protocol --------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport, but have its methods.
        self.transport = cast("asyncio.Transport", transport)
        self._live.add(self)

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade):
            self.transport.write(
                b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            )
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._live.discard(self)
        self._writable.set()
        if not self._lost.done():
            self._lost.set_result(None)
        if self._task is not None:
            self._task.cancel()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    # httptools callbacks -----------------------------------------------------------------
    def on_message_begin(self) -> None:
        self._url = b""
        self._headers = []
        self._body = []

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        headers: dict[str, str] = {}
        for raw_name, raw_value in self._headers:
            name = raw_name.decode("latin-1").lower()
            value = raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        path, _, query = self._url.decode("latin-1").partition("?")
        method = self._parser.get_method().decode("latin-1")
        keep_alive = bool(self._parser.should_keep_alive())
        self._queue.append(
            Request(
                method,
                path,
                query=query,
                headers=headers,
                body=b"".join(self._body),
                keep_alive=keep_alive,
            )
        )
        if self._task is None:
            self._next()

    # request handling ----------------------------------------------------------------------
    def _next(self) -> None:
        if self._queue and not self.closed:
            request = self._queue.popleft()
            self._task = asyncio.get_running_loop().create_task(self._run(request))
        else:
            self._task = None

    async def _run(self, request: Request) -> None:
        exchange = HttpExchange(self, request)
        try:
            await self._handler(exchange)
        except asyncio.CancelledError:
            if not self.closed:
                raise
            return
        except Exception:
            logger.exception("mock upstream handler failed on %s %s", request.method, request.path)
            if not exchange.started:
                exchange.respond(500, b'{"error": {"message": "mock upstream failed"}}')
        if self.closed:
            return
        if not exchange.finished:
            self.drop()
        elif not request.keep_alive:
            self.transport.close()
        self._next()

    async def drained(self) -> None:
        if not self._writable.is_set():
            await self._writable.wait()

    async def wait_lost(self, limit: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._lost), limit)

    def reset(self) -> None:
        if self.closed:
            return
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()

    def drop(self) -> None:
        if not self.closed:
            self.transport.abort()


async def start_http_server(
    handler: Callable[[HttpExchange], Awaitable[None]], host: str, port: int
) -> tuple[asyncio.Server, set[_Connection]]:
    """Listen on `host:port` (0 = a free port); returns the server and its live connections
    (close them with `transport.abort()` to stop quickly)."""
    live: set[_Connection] = set()
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: _Connection(handler, live), host, port, reuse_address=True, backlog=2048
    )
    return server, live
