"""The HTTP client's connection reuse against servers that close connections (see
`turnout.providers.http1` Rule 7): a request written whole is never sent twice, a pooled
connection the server closed is not reused, a request whose write failed goes out on a new
connection, and the server's Keep-Alive hint is heeded."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from typing import TYPE_CHECKING

import pytest

from turnout.errors import ProviderError
from turnout.providers import _http1_message, http1
from turnout.providers.http1 import LIVENESS_AFTER, Http1Transport

from ._raw_http import BODY, HEADERS, OK, RawServer, answering, reset

if TYPE_CHECKING:
    import asyncio

    from ._raw_http import Answer


def _second_request_dropped(how: str) -> Answer:
    """Answers each connection's first request, then reads its second one whole and drops
    the connection (`close` or `reset`) without a byte of answer."""

    async def answer(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if await server.read_request(reader) is None:
            return
        writer.write(OK)
        await writer.drain()
        await server.read_request(reader)
        if how == "reset":
            reset(writer)  # else the socket is closed, unanswered

    return answer


@pytest.mark.parametrize("how", ["close", "reset"])
async def test_a_request_read_whole_and_dropped_is_never_sent_again(how: str) -> None:
    """A written request then dropped unanswered fails the call and is never sent again."""
    client = Http1Transport(provider="p")
    try:
        async with RawServer(_second_request_dropped(how)) as server:
            await client.post(server.url(), BODY, HEADERS)
            with pytest.raises(ProviderError) as caught:
                await client.post(server.url(), BODY, HEADERS)
        assert (caught.value.error_class, caught.value.reason) == ("provider_error", "connection")
        assert (server.connections, len(server.requests)) == (1, 2)
    finally:
        await client.aclose()


async def test_a_new_connection_closed_unanswered_is_never_sent_again() -> None:
    """A connection opened for the request and closed without an answer fails the call."""

    async def drop(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await server.read_request(reader)

    client = Http1Transport(provider="p")
    try:
        async with RawServer(drop) as server:
            with pytest.raises(ProviderError) as caught:
                await client.post(server.url(), BODY, HEADERS)
        assert caught.value.reason == "connection"
        assert (server.connections, len(server.requests)) == (1, 1)
    finally:
        await client.aclose()


class ThreadedServer:
    """A keep-alive server in a thread, so that it can close a pooled connection while the
    client's event loop is held and has not seen the close yet: each connection's requests
    are answered `OK` until `drop` is set, then that connection is closed (`how`: FIN or
    RST) and `dropped` is set. Counts connections and keeps the requests."""

    def __init__(self, how: str) -> None:
        self.how = how
        self.drop = threading.Event()
        self.dropped = threading.Event()
        self.requests: list[bytes] = []
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(10.0)
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def url(self) -> str:
        """The URL to POST to."""
        return f"http://127.0.0.1:{self.port}/v1/chat/completions"

    def __enter__(self) -> ThreadedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.drop.set()
        self._listener.close()
        self._thread.join(10.0)

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            first, _ = self._listener.accept()
            self.connections += 1
            self._answer(first, until_drop=True)
            second, _ = self._listener.accept()
            self.connections += 1
            self._answer(second, until_drop=False)

    def _answer(self, conn: socket.socket, *, until_drop: bool) -> None:
        conn.settimeout(10.0)
        with conn:
            if self._read_request(conn):
                conn.sendall(OK)
            if until_drop:
                self.drop.wait(10.0)
                if self.how == "reset":
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.dropped.set()
                return
            while self._read_request(conn):
                conn.sendall(OK)

    def _read_request(self, conn: socket.socket) -> bool:
        data = b""
        while b"\r\n\r\n" not in data:
            piece = conn.recv(65536)
            if not piece:
                return False
            data += piece
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        while len(rest) < length:
            rest += conn.recv(65536)
        self.requests.append(head + b"\r\n\r\n" + rest)
        return True


def _drop_unseen(server: ThreadedServer) -> None:
    """Have the server drop the pooled connection and let its FIN or RST reach this side's
    socket while the event loop is held (the loop has not seen it)."""
    server.drop.set()
    assert server.dropped.wait(10.0)
    time.sleep(0.05)  # holding the event loop is the point: it must not see the close


async def test_a_pooled_connection_the_server_closed_is_not_reused() -> None:
    """A pooled connection whose FIN waits unseen on its socket is not reused."""
    client = Http1Transport(provider="p")
    with ThreadedServer("close") as server:
        try:
            await client.post(server.url(), BODY, HEADERS)
            (pool,) = client._pools.values()
            pool._idle[0].idle_since -= LIVENESS_AFTER  # as if idle a while
            _drop_unseen(server)
            assert (await client.post(server.url(), BODY, HEADERS)).status == 200
        finally:
            await client.aclose()  # before the server stops: its thread ends with the client
    assert (server.connections, len(server.requests)) == (2, 2)


async def test_a_write_the_socket_refuses_is_sent_on_a_new_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A request whose write the socket refuses is sent once more, on a new connection."""
    monkeypatch.setattr(http1, "LIVENESS_AFTER", float("inf"))
    client = Http1Transport(provider="p")
    with ThreadedServer("reset") as server:
        try:
            await client.post(server.url(), BODY, HEADERS)
            _drop_unseen(server)
            assert (await client.post(server.url(), BODY, HEADERS)).status == 200
        finally:
            await client.aclose()
    assert (server.connections, len(server.requests)) == (2, 2)


@pytest.mark.parametrize(
    ("hint", "seconds"),
    [("timeout=5, max=100", 4.0), ("max=100, timeout=30", 29.0), ("timeout=1", 0.5)],
)
def test_keep_alive_timeout_hint_keeps_connections_idle_a_second_less(
    hint: str, seconds: float
) -> None:
    """`Keep-Alive: timeout=N` keeps the connection idle at most N - 1 s (at least 0.5 s)."""
    assert _http1_message.idle_limit(hint) == seconds


@pytest.mark.parametrize("hint", ["max=100", "timeout=soon", ""])
def test_keep_alive_without_a_usable_timeout_changes_nothing(hint: str) -> None:
    """A Keep-Alive header without a numeric timeout leaves the transport's own keepalive."""
    assert _http1_message.idle_limit(hint) is None


async def test_a_connection_past_the_servers_keep_alive_hint_is_not_reused() -> None:
    """A pooled connection idle longer than its server's Keep-Alive hint is closed when taken,
    and the call goes out on a new one."""
    hinted = b"HTTP/1.1 200 OK\r\nkeep-alive: timeout=5\r\ncontent-length: 2\r\n\r\nok"
    client = Http1Transport(provider="p")
    try:
        async with RawServer(answering(hinted)) as server:
            await client.post(server.url(), BODY, HEADERS)
            (pool,) = client._pools.values()
            (conn,) = pool._idle
            assert conn.idle_limit == 4.0
            conn.idle_since -= 4.5  # as if it had been idle for 4.5 s
            await client.post(server.url(), BODY, HEADERS)
        assert server.connections == 2
    finally:
        await client.aclose()
