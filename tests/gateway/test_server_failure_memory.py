"""A failed request's body is freed as soon as its error answer is written, not at the next
full garbage collection: the gateway's own server over real 127.0.0.1 sockets, with the
collector off, after several large failures of each kind (a bad body, an oversize chunked
body, an upstream's 400, a stream broken by an oversize event)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import tracemalloc
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from tests.gateway._app_support import runtime_of
from tests.gateway._raw_http import connected, request
from tests.providers._raw_http import RawServer
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import bind_socket, serving

if TYPE_CHECKING:
    from collections.abc import Iterator

    from tests.gateway._raw_http import RawClient

BODY_BYTES = 2 * 1024 * 1024
FAILURES = 6
LIMIT = 4 * 1024 * 1024  # server.max_body_bytes in these tests
EVENT_LIMIT = 64 * 1024  # the provider's max_response_bytes
TEXT = b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"early"}}]}\n\n'


async def _upstream(server: RawServer, reader: asyncio.StreamReader, writer: Any) -> None:
    """A 400 to a call that does not stream; to a stream, one event over `EVENT_LIMIT`."""
    while (sent := await server.read_request(reader)) is not None:
        # What the gateway leaves held is measured without the fake's own copies.
        server.requests.clear()
        streams, late, sent = b'"stream":true' in sent, b'"content":"late' in sent, b""
        if not streams:
            body = b'{"error": {"message": "no", "type": "invalid_request_error"}}'
            writer.write(b"HTTP/1.1 400 Bad\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
            continue
        event = b"data: " + b"x" * (2 * EVENT_LIMIT) + b"\n\n"
        if late:  # the stream is committed to the caller first
            event = TEXT + event
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n")
        writer.write(b"content-length: %d\r\n\r\n%s" % (len(event), event))


def _config(base_url: str) -> dict[str, Any]:
    provider = {
        "name": "up",
        "kind": "openai",
        "api_key": "sk-up-0123456789abcdef",
        "base_url": base_url,
        "max_response_bytes": EVENT_LIMIT,
    }
    route = {"name": "main", "models": ["gpt-4o-mini"], "targets": [{"provider": "up"}]}
    return {
        "server": {"auth": "open", "max_body_bytes": LIMIT},
        "providers": [provider],
        "routes": [route],
    }


def _large_chat(*, stream: bool, late: bool = False) -> bytes:
    content = ("late" if late else "") + "y" * BODY_BYTES
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}]}
    return orjson.dumps({**body, "stream": stream})


async def _bad_json(client: RawClient) -> int:
    await client.send(request("POST", "/v1/chat/completions", b"{" + b"z" * BODY_BYTES))
    return (await client.response(wait=10.0)).status


async def _oversize_chunked(client: RawClient) -> int:
    head = request("POST", "/v1/chat/completions", headers={"transfer-encoding": "chunked"})
    await client.send(head)
    piece = b"%x\r\n%s\r\n" % (64 * 1024, b"w" * 64 * 1024)
    for _ in range(LIMIT // (64 * 1024) + 1):
        await client.send(piece)
    return (await client.response(wait=10.0)).status


async def _upstream_400(client: RawClient) -> int:
    await client.send(request("POST", "/v1/chat/completions", _large_chat(stream=False)))
    return (await client.response(wait=10.0)).status


async def _broken_stream(client: RawClient) -> int:
    await client.send(request("POST", "/v1/chat/completions", _large_chat(stream=True)))
    reply = await client.response(wait=10.0)
    return 599 if b"error" in reply.body else reply.status


async def _broken_committed_stream(client: RawClient) -> int:
    body = _large_chat(stream=True, late=True)
    await client.send(request("POST", "/v1/chat/completions", body))
    reply = await client.response(wait=10.0)
    return 599 if b"early" in reply.body and b"error" in reply.body else reply.status


@contextlib.contextmanager
def _collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.parametrize(
    ("send", "status"),
    [
        (_bad_json, 400),
        (_oversize_chunked, 413),
        (_upstream_400, 400),
        (_broken_stream, 599),
        (_broken_committed_stream, 599),
    ],
    ids=["bad-json", "oversize-chunked", "upstream-400", "broken-stream", "broken-after-commit"],
)
async def test_failed_request_bodies_are_freed_without_a_collection(send: Any, status: int) -> None:
    """After several large failures with the collector off, what stays allocated is well
    under one body, not one body per failure."""
    async with RawServer(_upstream) as upstream:
        runtime = runtime_of(_config(upstream.url("/v1")))
        limits = ServerLimits(shutdown_grace=0.0)
        with bind_socket("127.0.0.1", 0) as sock:
            async with serving(GatewayApp(runtime), sock, limits):
                port = sock.getsockname()[1]
                async with connected(port) as warm:  # the first failure's one-time costs
                    assert await send(warm) == status
                with _collector_off():
                    tracemalloc.start()
                    try:
                        before = tracemalloc.get_traced_memory()[0]
                        for _ in range(FAILURES):
                            async with connected(port) as client:
                                assert await send(client) == status
                        await asyncio.sleep(0.05)  # the connections' ends are handled
                        held = tracemalloc.get_traced_memory()[0] - before
                    finally:
                        tracemalloc.stop()
    assert held < BODY_BYTES, f"{held} bytes still held after {FAILURES} failures"
