"""How big an upstream's response head may be: at most `MAX_HEAD_LINES` header lines and
`MAX_HEAD_BYTES` bytes, the call failing as `provider_error` as soon as a head passes either
(before the rest of a flood arrives), so the route moves on; a header sent on several lines
reads as one comma-joined value."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from turnout.errors import ProviderUnavailable
from turnout.providers import MockProvider, OpenAI
from turnout.providers._http1_message import MAX_HEAD_BYTES, MAX_HEAD_LINES
from turnout.providers.http1 import Http1Transport
from turnout.routing.route import Route
from turnout.routing.target import Target
from turnout.wire.model import Message

from ._raw_http import BODY, HEADERS, RawServer, answering

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


@pytest.fixture
async def client() -> AsyncIterator[Http1Transport]:
    """A transport with the default bounds."""
    transport = Http1Transport(provider="p")
    yield transport
    await transport.aclose()


def _with_lines(lines: list[bytes]) -> bytes:
    head = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n" + b"".join(lines)
    return head + b"\r\n{}"


async def _flood(
    server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """A status line, then 4 KB header lines, 12,000 of them, the head never ending."""
    await server.read_request(reader)
    writer.write(b"HTTP/1.1 200 OK\r\n")
    line = b"x-flood: " + b"f" * 4096 + b"\r\n"
    try:
        for _ in range(12_000):
            writer.write(line)
            await writer.drain()
    except ConnectionError:
        server.closed.set()  # the client closed its side mid-flood
        return
    await server.wait_closed(reader)


async def test_a_head_at_the_line_bound_is_read(client: Http1Transport) -> None:
    """A head of `MAX_HEAD_LINES` header lines (a header repeated on each) is read, the
    repeated header as one comma-joined value."""
    lines = [b"x-seen: %d\r\n" % n for n in range(MAX_HEAD_LINES - 1)]
    async with RawServer(answering(_with_lines(lines))) as server:
        reply = await client.post(server.url(), BODY, HEADERS)
    assert reply.body == b"{}"
    assert reply.headers["x-seen"] == ", ".join(str(n) for n in range(MAX_HEAD_LINES - 1))


async def test_one_header_line_too_many_fails_as_provider_error(client: Http1Transport) -> None:
    """A head of `MAX_HEAD_LINES` + 1 header lines fails as `provider_error`, naming the bound."""
    lines = [b"x-seen: %d\r\n" % n for n in range(MAX_HEAD_LINES)]
    async with RawServer(answering(_with_lines(lines))) as server:
        with pytest.raises(ProviderUnavailable) as caught:
            await client.post(server.url(), BODY, HEADERS)
    assert caught.value.error_class == "provider_error"
    assert caught.value.reason == "response head too large"
    assert f"more than {MAX_HEAD_LINES} header lines" in str(caught.value)


async def test_a_head_over_the_byte_bound_fails_as_provider_error(client: Http1Transport) -> None:
    """A head of few lines but over `MAX_HEAD_BYTES` bytes fails as `provider_error`."""
    lines = [b"x-big: " + b"b" * (MAX_HEAD_BYTES // 4) + b"\r\n"] * 5
    async with RawServer(answering(_with_lines(lines))) as server:
        with pytest.raises(ProviderUnavailable) as caught:
            await client.post(server.url(), BODY, HEADERS)
    assert caught.value.reason == "response head too large"
    assert f"more than {MAX_HEAD_BYTES // 1024} KiB" in str(caught.value)


async def test_a_header_flood_fails_before_it_ends(client: Http1Transport) -> None:
    """A head that keeps coming (12,000 lines of 4 KB) fails at once, without waiting for
    its end or a read timeout; the connection is closed."""
    async with RawServer(_flood) as server:
        with pytest.raises(ProviderUnavailable) as caught:
            await asyncio.wait_for(client.post(server.url(), BODY, HEADERS), 5.0)
        await asyncio.wait_for(server.closed.wait(), 5.0)
    assert caught.value.reason == "response head too large"


async def test_a_header_flood_fails_over_to_the_next_target() -> None:
    """Through a route, a flooded head is a failed attempt (`provider_error`) and the next
    target answers."""
    backup = MockProvider("backup")
    async with RawServer(_flood) as server:
        primary = OpenAI("sk-test", base_url=server.url("/v1"), name="flooding")
        route = Route(
            "flood", [Target("primary", primary, "gpt-4o"), Target("backup", backup, "gpt-4o")]
        )
        try:
            response = await route.complete([Message.user("hi")])
        finally:
            await primary.aclose()
    assert response.text == "mock answer from gpt-4o"
    assert response.routing is not None
    failed = response.routing.attempts[0]
    assert (failed.target, failed.error_class) == ("primary", "provider_error")
