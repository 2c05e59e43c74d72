"""A tiny raw HTTP server for the client tests: each test scripts the exact bytes it answers,
so framing, keep-alive and failure edge cases are exercised on real sockets."""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ssl
    from collections.abc import Awaitable, Callable

    from turnout.providers.http1 import Http1Transport

    Answer = Callable[["RawServer", asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
    """Serves one connection of a `RawServer`."""

BODY = b'{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}'
STREAM_BODY = (
    b'{"model": "gpt-4o-mini", "stream": true, "messages": [{"role": "user", "content": "hi"}]}'
)
HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-test"}
OK = b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{"ok":true}'


class RawServer:
    """A tiny TCP server on 127.0.0.1: `answer(server, reader, writer)` serves each connection.

    Counts connections (`connections`, and `peak` open at once), keeps every request's bytes
    (`requests`) and sets `closed` each time a client closes its side.
    """

    def __init__(
        self,
        answer: Answer,
        *,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self._answer = answer
        self._tls = tls
        self.connections = 0
        self.live = 0
        self.peak = 0
        self.requests: list[bytes] = []
        self.closed = asyncio.Event()
        self.release = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None
        self.port = 0

    def url(self, path: str = "/v1/chat/completions", host: str = "127.0.0.1") -> str:
        """The URL of `path` on this server."""
        scheme = "https" if self._tls else "http"
        return f"{scheme}://{host}:{self.port}{path}"

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self._tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        self.live += 1
        self.peak = max(self.peak, self.live)
        try:
            await self._answer(self, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client left, or the test ended
        finally:
            self.live -= 1
            self._tasks.discard(task)
            writer.transport.abort()

    async def read_request(self, reader: asyncio.StreamReader) -> bytes | None:
        """The next request on `reader` (head and body), or None once the client closed."""
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except asyncio.IncompleteReadError:
            self.closed.set()
            return None
        length = 0
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        request = head + await reader.readexactly(length)
        self.requests.append(request)
        return request

    async def wait_closed(self, reader: asyncio.StreamReader) -> None:
        """Wait until the client closes the connection."""
        while await reader.read(65536):
            pass
        self.closed.set()


def answering(*responses: bytes, close: bool = False) -> Answer:
    """An answer that replies `responses[i]` to the i-th request on each connection (the last
    one for every request after), then waits for more; with `close`, it closes after each."""

    async def answer(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        count = 0
        while await server.read_request(reader) is not None:
            writer.write(responses[min(count, len(responses) - 1)])
            count += 1
            if close:
                await writer.drain()
                return

    return answer


def idle(transport: Http1Transport) -> int:
    """How many connections wait in the transport's pools (a test-only look inside)."""
    return sum(len(pool._idle) for pool in transport._pools.values())


async def until(predicate: Callable[[], bool]) -> None:
    """Let the loop run until `predicate()` holds (bounded by loop turns, not by time)."""
    for _ in range(2000):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError("the condition never held")


async def read_stream(
    client: Http1Transport,
    url: str,
    seen: list[bytes],
    then: Callable[[], object] | None = None,
) -> None:
    """Stream a call to `url`, keeping each piece in `seen` and calling `then()` after each."""
    async with client.stream(url, BODY, HEADERS) as reply:
        async for data in reply.chunks():
            seen.append(data)
            if then is not None:
                then()


def chunked(*pieces: bytes, head: bytes = b"") -> bytes:
    """A chunked 200 response carrying `pieces`."""
    out = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n" + head + b"\r\n"
    for piece in pieces:
        out += b"%x\r\n%s\r\n" % (len(piece), piece)
    return out + b"0\r\n\r\n"


async def first_chunk_then_hold(
    server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """On the first connection: the head and one chunk, then silence until the client leaves;
    on later ones, `OK` to every request."""
    while await server.read_request(reader) is not None:
        if server.connections == 1:
            writer.write(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nfirst\r\n")
            await server.wait_closed(reader)
            return
        writer.write(OK)


def reset(writer: asyncio.StreamWriter) -> None:
    """Reset the connection of `writer` (TCP RST)."""
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
