"""The HTTP client's connection reuse against servers that close idle connections (see
`turnout.providers.http1` Rule 7): a request that met the server's idle close is sent once more
on a new connection, nothing else is ever resent, and the server's Keep-Alive hint is heeded."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from turnout.errors import ProviderError
from turnout.providers import _http1_message
from turnout.providers.http1 import Http1Transport

from ._raw_http import BODY, HEADERS, OK, RawServer, answering

if TYPE_CHECKING:
    import asyncio

    from ._raw_http import Answer


def _second_request_dropped() -> Answer:
    """Answers each connection's first request, then drops the connection on its second one
    without a byte of answer: what a server's idle-timeout close looks like to the client."""

    async def answer(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        if await server.read_request(reader) is None:
            return
        writer.write(OK)
        await writer.drain()
        await server.read_request(reader)  # then the socket is aborted, unanswered

    return answer


async def test_a_reused_connection_closed_at_once_is_sent_again_on_a_new_one() -> None:
    """Rule 7: a request whose reused connection the server closes at once, before any byte
    of answer, is sent once more on a new connection and answered."""
    client = Http1Transport(provider="p")
    try:
        async with RawServer(_second_request_dropped()) as server:
            first = await client.post(server.url(), BODY, HEADERS)
            second = await client.post(server.url(), BODY, HEADERS)
        assert (first.status, second.status) == (200, 200)
        assert (server.connections, len(server.requests)) == (2, 3)
    finally:
        await client.aclose()


async def test_a_new_connection_closed_unanswered_is_never_sent_again() -> None:
    """A connection opened for the request and closed without an answer fails the call: only
    a reused connection can have met the server's idle close."""

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


async def test_a_close_after_the_stale_window_is_never_sent_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A reused connection closed unanswered later than `STALE_WINDOW` after the request may
    have been worked on: the call fails, the request is not sent again."""
    monkeypatch.setattr(_http1_message, "STALE_WINDOW", 0.0)
    client = Http1Transport(provider="p")
    try:
        async with RawServer(_second_request_dropped()) as server:
            await client.post(server.url(), BODY, HEADERS)
            with pytest.raises(ProviderError) as caught:
                await client.post(server.url(), BODY, HEADERS)
        assert caught.value.reason == "connection"
        assert (server.connections, len(server.requests)) == (1, 2)
    finally:
        await client.aclose()


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
