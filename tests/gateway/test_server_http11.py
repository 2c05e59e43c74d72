"""The gateway's own HTTP/1.1 server over real 127.0.0.1 sockets: keep-alive, pipelining,
request bodies, HEAD, and the answers it gives in the app's place (400, 401 unread, 408, 413,
431), each in the OpenAI error envelope and each closing the connection."""

from __future__ import annotations

import asyncio
import dataclasses
import resource
import time
from typing import TYPE_CHECKING, Any

import pytest

from tests.e2e._gateway import running_gateway
from tests.gateway._app_support import mock_provider
from tests.gateway._raw_http import RawClient, chat, connected, request
from turnout.gateway.server.http11 import PIPELINE_DEPTH
from turnout.gateway.server.limits import ServerLimits, default_max_connections
from turnout.gateway.server.listener import bind_socket, serving
from turnout.schema import ServerConfig

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.e2e._gateway import RunningGateway

KEY = "tk_server_test_key"
CONFIG: dict[str, Any] = {
    "server": {"auth": "open", "max_body_bytes": 64 * 1024},
    "providers": [mock_provider("m")],
    "routes": [
        {"name": "quick", "models": ["quick"], "targets": [{"provider": "m"}]},
        {
            "name": "slow",
            "models": ["slow"],
            "targets": [{"provider": "m", "model": "slow/fault:latency=0.2"}],
        },
    ],
}
KEYED: dict[str, Any] = {
    **CONFIG,
    "server": {"auth": "keys"},
    "keys": [{"name": "ana", "key": KEY}],
}
SHORT = ServerLimits(
    header_timeout=0.2, body_timeout=0.2, keepalive_timeout=0.2, shutdown_grace=0.0
)


def _port(gateway: RunningGateway) -> int:
    return int(gateway.url.rsplit(":", 1)[1])


@pytest.fixture
async def gateway() -> AsyncIterator[RunningGateway]:
    async with running_gateway(CONFIG) as running:
        yield running


@pytest.fixture
async def client(gateway: RunningGateway) -> AsyncIterator[RawClient]:
    async with connected(_port(gateway)) as raw:
        yield raw


async def test_keep_alive_serves_several_requests_on_one_connection(client: RawClient) -> None:
    """A connection stays open between requests; answers carry `date` and no `server`."""
    for _ in range(3):
        await client.send(request("POST", "/v1/chat/completions", chat("quick")))
        reply = await client.response()
        assert reply.status == 200
        assert reply.json()["model"] == "quick"
        assert "date" in reply.headers
        assert "server" not in reply.headers
        assert "connection" not in reply.headers


async def test_head_healthz_answers_200_without_a_body(client: RawClient) -> None:
    """HEAD /healthz is GET's answer without the body: the next response follows at once."""
    await client.send(request("HEAD", "/healthz") + request("GET", "/healthz"))
    head = await client.response(head_only=True)
    assert (head.status, head.headers["content-length"]) == (200, "15")
    assert (await client.response()).json() == {"status": "ok"}


async def test_pipelined_requests_are_answered_in_order(client: RawClient) -> None:
    """Three requests in one write, the first slow: answers come back in request order."""
    await client.send(
        request("POST", "/v1/chat/completions", chat("slow"))
        + request("GET", "/nowhere")
        + request("POST", "/v1/chat/completions", chat("quick"))
    )
    answers = [await client.response() for _ in range(3)]
    assert [a.status for a in answers] == [200, 404, 200]
    assert [answers[0].json()["routing"]["route"], answers[2].json()["routing"]["route"]] == [
        "slow",
        "quick",
    ]


async def test_a_deep_pipeline_is_cut_at_its_bound(client: RawClient) -> None:
    """Of 20 requests in one write, the first `PIPELINE_DEPTH` are answered, the last of them
    with `connection: close`; the rest are left unread for the caller to send again."""
    await client.send(request("GET", "/healthz") * 20)
    answers = [await client.response() for _ in range(PIPELINE_DEPTH)]
    assert all(a.status == 200 for a in answers)
    assert answers[-1].headers["connection"] == "close"
    assert await client.closed()


async def test_a_pipelined_body_that_arrives_later_is_read(client: RawClient) -> None:
    """A request pipelined behind a slow one, its body split across writes, is answered
    once the rest of its body arrives (the bytes held back reach it)."""
    body = chat("quick")
    await client.send(
        request("POST", "/v1/chat/completions", chat("slow"))
        + request("POST", "/v1/chat/completions", body)[: -len(body) // 2]
    )
    await asyncio.sleep(0.05)
    await client.send(body[-len(body) // 2 :])
    answers = [await client.response() for _ in range(2)]
    assert [a.json()["routing"]["route"] for a in answers] == ["slow", "quick"]


async def test_a_chunked_request_body_is_read(client: RawClient) -> None:
    """A `transfer-encoding: chunked` body arrives whole at the app, in pieces on the wire."""
    body = chat("quick")
    head = request("POST", "/v1/chat/completions", headers={"transfer-encoding": "chunked"})
    await client.send(head)
    for start in range(0, len(body), 20):
        part = body[start : start + 20]
        await client.send(b"%x\r\n%s\r\n" % (len(part), part))
    await client.send(b"0\r\n\r\n")
    assert (await client.response()).status == 200


H2C = {"connection": "Upgrade, HTTP2-Settings", "upgrade": "h2c", "http2-settings": "AAMAAABk"}


async def test_an_h2c_upgrade_request_keeps_its_body(client: RawClient) -> None:
    """A request asking to upgrade to h2c (as `curl --http2` sends) is served as HTTP/1.1 with
    its body, and the connection serves the request after it."""
    await client.send(
        request("POST", "/v1/chat/completions", chat("quick"), headers=H2C)
        + request("GET", "/healthz")
    )
    reply = await client.response()
    assert (reply.status, reply.json()["model"]) == (200, "quick")
    assert (await client.response()).status == 200


async def test_an_h2c_upgrade_request_keeps_its_chunked_body(client: RawClient) -> None:
    """An upgrade request's chunked body, arriving after its head, is read whole."""
    body = chat("quick")
    await client.send(
        request("POST", "/v1/chat/completions", headers={**H2C, "transfer-encoding": "chunked"})
    )
    await asyncio.sleep(0.02)
    await client.send(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
    assert (await client.response()).status == 200


async def test_expect_100_continue_asks_for_the_body(client: RawClient) -> None:
    """With `Expect: 100-continue` the server says `100 Continue` before the body is sent."""
    body = chat("quick")
    head = request("POST", "/v1/chat/completions", headers={"expect": "100-continue"})
    await client.send(head[:-2] + f"content-length: {len(body)}\r\n\r\n".encode())
    interim = await client.response()
    assert interim.status == 100
    await client.send(body)
    assert (await client.response()).status == 200


async def test_a_streamed_answer_is_chunked(client: RawClient) -> None:
    """A stream goes out chunked, ends with the terminator, and the connection stays open."""
    await client.send(request("POST", "/v1/chat/completions", chat("quick", stream=True)))
    reply = await client.response()
    assert reply.headers["transfer-encoding"] == "chunked"
    assert reply.body.rstrip().endswith(b"data: [DONE]")
    await client.send(request("GET", "/healthz"))
    assert (await client.response()).status == 200


async def test_http10_request_is_answered_and_closed(gateway: RunningGateway) -> None:
    """An HTTP/1.0 request without keep-alive gets its answer, then the connection closes."""
    async with connected(_port(gateway)) as client:
        await client.send(b"GET /healthz HTTP/1.0\r\n\r\n")
        reply = await client.response()
        assert (reply.status, reply.headers["connection"]) == (200, "close")
        assert await client.closed()


async def test_connection_close_is_honoured(client: RawClient) -> None:
    """`Connection: close` gets the answer with `connection: close`, then the close."""
    await client.send(request("GET", "/healthz", close=True))
    assert (await client.response()).headers["connection"] == "close"
    assert await client.closed()


def _envelope(reply: Any, status: int, code: str) -> str:
    """The OpenAI error envelope's message, after checking its shape."""
    assert reply.status == status
    assert reply.headers["content-type"] == "application/json"
    assert reply.headers["connection"] == "close"
    error = reply.json()["error"]
    assert (error["type"], error["code"], error["param"]) == ("invalid_request_error", code, None)
    message: str = error["message"]
    return message


BAD_FRAMING = {
    "crlf-in-header": b"GET /healthz HTTP/1.1\r\nhost: t\r\nx-a: one\rinjected: two\r\n\r\n",
    "bad-content-length": b"POST /v1/chat/completions HTTP/1.1\r\ncontent-length: 1x\r\n\r\n",
    "length-and-chunked": b"POST /v1/chat/completions HTTP/1.1\r\ncontent-length: 3\r\n"
    b"transfer-encoding: chunked\r\n\r\n0\r\n\r\n",
    "bad-chunk-size": b"POST /v1/chat/completions HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n"
    b"zz\r\n",
    "bad-method": b"G@T /healthz HTTP/1.1\r\nhost: t\r\n\r\n",
    "bad-url": b"GET /he\x01lthz HTTP/1.1\r\nhost: t\r\n\r\n",
    "not-http": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
}


@pytest.mark.parametrize("raw", list(BAD_FRAMING.values()), ids=list(BAD_FRAMING))
async def test_bad_framing_is_a_400_json_envelope_and_a_close(
    client: RawClient, raw: bytes
) -> None:
    """Framing the parser refuses is answered 400 `invalid_request` in JSON, then closed."""
    await client.send(raw)
    reply = await client.response()
    assert reply.body.startswith(b"{")
    assert "malformed HTTP request" in _envelope(reply, 400, "invalid_request")
    assert await client.closed()


async def test_bad_framing_after_a_good_request_waits_for_its_answer(client: RawClient) -> None:
    """A good request pipelined before a bad one is answered first, then the 400."""
    await client.send(request("GET", "/healthz") + BAD_FRAMING["bad-method"])
    assert (await client.response()).status == 200
    _envelope(await client.response(), 400, "invalid_request")
    assert await client.closed()


async def test_too_many_header_lines_is_431(client: RawClient) -> None:
    """101 header lines (the default cap is 100) get 431 `headers_too_large` and a close."""
    headers = {f"x-h{i}": "v" for i in range(101)}
    await client.send(request("GET", "/healthz", headers=headers))
    assert "max_header_count" in _envelope(await client.response(), 431, "headers_too_large")
    assert await client.closed()


async def test_an_oversized_head_is_431_before_it_ends() -> None:
    """A head that never ends is refused once past `max_header_bytes`, not buffered."""
    limits = ServerLimits(max_header_bytes=4096, shutdown_grace=0.0)
    async with running_gateway(CONFIG, limits) as gateway, connected(_port(gateway)) as client:
        await client.send(b"GET /healthz HTTP/1.1\r\nx-big: ")
        for _ in range(64):  # up to 256 KiB, never a line end
            if client.reader.at_eof() or client.writer.is_closing():
                break
            await client.send(b"a" * 4096)
            await asyncio.sleep(0)
        reply = await client.response()
        assert "max_header_bytes" in _envelope(reply, 431, "headers_too_large")
        assert await client.closed()


async def test_a_complete_oversized_head_is_431() -> None:
    """A whole head of one 70 KiB header line is over the 64 KiB default: 431."""
    async with running_gateway(CONFIG) as gateway, connected(_port(gateway)) as client:
        await client.send(request("GET", "/healthz", headers={"x-big": "a" * 70_000}))
        _envelope(await client.response(), 431, "headers_too_large")
        assert await client.closed()


async def test_a_missing_key_is_401_before_the_body_is_read() -> None:
    """With `auth: keys`, the head of a 30 MB body without a key gets 401 while the body is
    still unsent, and the connection closes."""
    async with running_gateway(KEYED) as gateway, connected(_port(gateway)) as client:
        head = request("POST", "/v1/chat/completions")
        await client.send(head[:-2] + b"content-length: 31457280\r\n\r\n")
        reply = await client.response()
        assert reply.status == 401
        assert reply.json()["error"]["code"] == "invalid_api_key"
        assert reply.headers["connection"] == "close"
        assert await client.closed()


async def test_a_missing_key_gets_401_instead_of_100_continue() -> None:
    """A caller that waits for `100 Continue` before its body gets the 401 instead."""
    async with running_gateway(KEYED) as gateway, connected(_port(gateway)) as client:
        head = request("POST", "/v1/chat/completions", headers={"expect": "100-continue"})
        await client.send(head[:-2] + b"content-length: 31457280\r\n\r\n")
        assert (await client.response()).status == 401
        assert await client.closed()


async def test_a_known_key_still_reads_the_body() -> None:
    """With a valid key the same path reads the body and answers."""
    async with running_gateway(KEYED) as gateway, connected(_port(gateway)) as client:
        auth = {"authorization": f"Bearer {KEY}"}
        await client.send(request("POST", "/v1/chat/completions", chat("quick"), headers=auth))
        assert (await client.response()).status == 200


async def test_a_declared_oversized_body_is_413_unread(client: RawClient) -> None:
    """A `content-length` over `max_body_bytes` is refused (413) before any body byte."""
    head = request("POST", "/v1/chat/completions")
    await client.send(head[:-2] + b"content-length: 1000000\r\n\r\n")
    reply = await client.response()
    assert (reply.status, reply.headers["connection"]) == (413, "close")
    assert await client.closed()


async def test_slowloris_is_closed_after_the_header_timeout() -> None:
    """A head that trickles in and never ends gets 408 once `header_timeout` has passed."""
    async with running_gateway(CONFIG, SHORT) as gateway, connected(_port(gateway)) as client:
        started = time.monotonic()
        await client.send(b"GET /healthz HTTP/1.1\r\n")
        for _ in range(3):
            await client.send(b"x-a: b\r\n")
            await asyncio.sleep(0.05)
        message = _envelope(await client.response(), 408, "request_timeout")
        assert "header_timeout" in message
        assert await client.closed()
        assert time.monotonic() - started < 1.0


async def test_a_silent_connection_is_closed_quietly() -> None:
    """A connection that never sends a byte is closed after `header_timeout`, unanswered."""
    async with running_gateway(CONFIG, SHORT) as gateway, connected(_port(gateway)) as client:
        assert await client.closed(wait=1.0)
        assert not gateway.listener.connections


async def test_a_stalled_body_is_closed_after_the_body_timeout() -> None:
    """A body that stops arriving gets 408 after `body_timeout` of silence."""
    async with running_gateway(CONFIG, SHORT) as gateway, connected(_port(gateway)) as client:
        head = request("POST", "/v1/chat/completions")
        await client.send(head[:-2] + b"content-length: 100\r\n\r\n" + b'{"model": ')
        message = _envelope(await client.response(wait=1.0), 408, "request_timeout")
        assert "body_timeout" in message
        assert await client.closed()


async def test_a_trickled_body_is_closed_below_the_minimum_rate() -> None:
    """A body sent a byte every 0.05 s, never silent for `body_timeout`, gets 408 once it
    falls behind `min_body_rate` (100 bytes/s after 0.2 s of slack), long before its end."""
    limits = dataclasses.replace(SHORT, min_body_rate=100)
    async with running_gateway(CONFIG, limits) as gateway, connected(_port(gateway)) as client:
        head = request("POST", "/v1/chat/completions")
        await client.send(head[:-2] + b"content-length: 100\r\n\r\n")

        async def trickle() -> None:
            for _ in range(30):  # 1.5 s at most
                await client.send(b" ")
                await asyncio.sleep(0.05)

        sending = asyncio.ensure_future(trickle())
        try:
            message = _envelope(await client.response(wait=1.5), 408, "request_timeout")
        finally:
            sending.cancel()
        assert "server.min_body_rate" in message


async def test_a_body_at_the_minimum_rate_is_read() -> None:
    """A body arriving faster than `min_body_rate`, in small pieces, is read whole."""
    limits = dataclasses.replace(SHORT, min_body_rate=100)
    async with running_gateway(CONFIG, limits) as gateway, connected(_port(gateway)) as client:
        body = chat("quick")
        await client.send(request("POST", "/v1/chat/completions", body)[: -len(body)])
        for start in range(0, len(body), 20):
            await client.send(body[start : start + 20])
            await asyncio.sleep(0.02)  # 1,000 bytes per second
        assert (await client.response()).status == 200


async def test_an_idle_keep_alive_connection_is_reaped() -> None:
    """After its answer, a connection idle for `keepalive_timeout` is closed."""
    async with running_gateway(CONFIG, SHORT) as gateway, connected(_port(gateway)) as client:
        await client.send(request("GET", "/healthz"))
        assert (await client.response()).status == 200
        assert await client.closed(wait=1.0)
        assert not gateway.listener.connections


async def test_a_slow_reader_holds_back_the_writer() -> None:
    """Backpressure: while the caller reads nothing, the app's `send` waits instead of
    buffering its whole answer."""
    sent = [0]

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        part = b"x" * 65536
        for _ in range(800):  # 50 MiB
            await send({"type": "http.response.body", "body": part, "more_body": True})
            sent[0] += len(part)
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    limits = ServerLimits(shutdown_grace=0.0)
    with bind_socket("127.0.0.1", 0) as sock:
        async with serving(app, sock, limits), connected(sock.getsockname()[1]) as client:
            await client.send(request("GET", "/"))
            await asyncio.sleep(0.3)
            assert 0 < sent[0] < 16 * 1024 * 1024
            reply = await client.response(wait=10.0)
            assert len(reply.body) == sent[0] == 800 * 65536


def test_limits_read_the_server_section() -> None:
    """`ServerLimits.from_config` takes each `server:` option; no cap means the default."""

    config = ServerConfig.model_validate(
        {"header_timeout": 1.5, "max_header_count": 7, "shutdown_grace_seconds": 0}
    )
    limits = ServerLimits.from_config(config)
    assert (limits.header_timeout, limits.max_header_count, limits.shutdown_grace) == (1.5, 7, 0)
    assert limits.max_connections == default_max_connections()
    capped = ServerLimits.from_config(ServerConfig.model_validate({"max_connections": 9}))
    assert capped.max_connections == 9


def test_the_default_cap_stays_under_the_descriptor_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """With 1,024 descriptors the default cap leaves 64 free; with many, it is 4,096."""

    monkeypatch.setattr(resource, "getrlimit", lambda _: (1024, 4096))
    assert default_max_connections() == 960
    monkeypatch.setattr(resource, "getrlimit", lambda _: (1_000_000, 1_000_000))
    assert default_max_connections() == 4096
