"""The gateway's server around its requests, in process over real 127.0.0.1 sockets: the
connection cap, callers that leave with requests queued, a bounded shutdown, a reload, and a
gateway that cannot start."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from tests.e2e._gateway import running_gateway
from tests.gateway._app_support import mock_provider, runtime_of
from tests.gateway._raw_http import chat, connected, request
from turnout.errors import ConfigError
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import Listener, bind_socket, serving
from turnout.gateway.server.worker import reload_runtime, run_worker
from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    import pytest

    from tests.e2e._gateway import RunningGateway
    from turnout.gateway.runtime.live import Runtime

CONFIG: dict[str, Any] = {
    "server": {"auth": "open"},
    "providers": [mock_provider("m")],
    "routes": [
        {"name": "quick", "models": ["quick"], "targets": [{"provider": "m"}]},
        {
            "name": "drip",
            "models": ["drip"],
            "targets": [{"provider": "m", "model": "drip/fault:chunk_delay=0.3"}],
        },
        {
            "name": "hang",
            "models": ["hang"],
            "targets": [{"provider": "m", "model": "hang/fault:hang"}],
        },
    ],
}


def _port(gateway: RunningGateway) -> int:
    return int(gateway.url.rsplit(":", 1)[1])


async def test_over_the_cap_connections_are_closed_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """With `max_connections` 4 and every connection running a request, three more
    connections are closed at once; one WARNING line marks the burst, and the admitted
    connections are still answered."""
    limits = ServerLimits(max_connections=4, max_connections_per_address=4, shutdown_grace=0.0)
    caplog.set_level(logging.WARNING, logger="turnout.gateway")
    async with running_gateway(CONFIG, limits) as gateway, contextlib.AsyncExitStack() as stack:
        port = _port(gateway)
        busy = [await stack.enter_async_context(connected(port)) for _ in range(4)]
        for each in busy:
            await each.send(request("POST", "/v1/chat/completions", chat("drip", stream=True)))
        await asyncio.sleep(0.05)  # the four are accepted and running before the extra ones
        async with connected(port) as a, connected(port) as b, connected(port) as c:
            assert [await extra.closed(wait=1.0) for extra in (a, b, c)] == [True] * 3
        assert [(await each.response()).status for each in busy] == [200] * 4
    warnings = [r for r in caplog.records if "connection cap reached" in r.getMessage()]
    assert len(warnings) == 1
    assert "server.max_connections" in warnings[0].getMessage()


async def test_a_caller_leaving_drops_its_queued_requests_quietly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Three pipelined requests, the first hanging upstream, then the caller leaves: the
    connection closes, the two queued never reach the upstream, and nothing is logged."""
    caplog.set_level(logging.DEBUG)
    async with MockUpstream(hold_limit=5) as upstream:
        base = upstream.openai_base_url
        config = {
            "server": {"auth": "open"},
            "providers": [{"name": "up", "kind": "openai", "api_key": "k", "base_url": base}],
            "routes": [
                {
                    "name": "hang",
                    "models": ["hang"],
                    "targets": [{"provider": "up", "model": "held/fault:hang"}],
                },
                {"name": "ok", "models": ["ok"], "targets": [{"provider": "up"}]},
            ],
        }
        async with running_gateway(config) as gateway:
            async with connected(_port(gateway)) as client:
                await client.send(
                    request("POST", "/v1/chat/completions", chat("hang"))
                    + request("POST", "/v1/chat/completions", chat("ok"))
                    + request("POST", "/v1/chat/completions", chat("ok"))
                )
                for _ in range(100):
                    if upstream.app.log.entries():
                        break
                    await asyncio.sleep(0.01)
            for _ in range(100):  # the hanging call ends when the gateway cancels it
                if not gateway.listener.connections:
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.1)
            assert not gateway.listener.connections
        assert [entry.model for entry in upstream.app.log.entries()] == ["held/fault:hang"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]


async def test_shutdown_ends_an_open_stream_with_an_error_event() -> None:
    """Past the grace, a stream still open ends with a `shutting_down` event, not a cut."""
    limits = ServerLimits(shutdown_grace=0.2)
    async with running_gateway(CONFIG, limits) as gateway, connected(_port(gateway)) as client:
        await client.send(request("POST", "/v1/chat/completions", chat("drip", stream=True)))
        head = await client.reader.readuntil(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        started = asyncio.get_running_loop().time()
        await gateway.listener.shutdown()
        rest = await asyncio.wait_for(client.reader.read(), 2.0)
        assert asyncio.get_running_loop().time() - started < 1.5
        assert b'"code":"shutting_down"' in rest
        assert rest.endswith(b"0\r\n\r\n")


async def test_shutdown_lets_a_request_in_flight_finish_within_the_grace() -> None:
    """A request that ends within the grace is answered whole; the connection then closes."""
    limits = ServerLimits(shutdown_grace=2.0)
    async with running_gateway(CONFIG, limits) as gateway, connected(_port(gateway)) as client:
        await client.send(request("POST", "/v1/chat/completions", chat("drip", stream=True)))
        await client.reader.readuntil(b"\r\n\r\n")
        await gateway.listener.shutdown()
        rest = await asyncio.wait_for(client.reader.read(), 3.0)
        assert b"data: [DONE]" in rest
        assert b"shutting_down" not in rest


async def test_shutdown_answers_a_waiting_answer_503() -> None:
    """A whole answer still waiting upstream past the grace gets 503 `shutting_down`."""
    limits = ServerLimits(shutdown_grace=0.1)
    async with running_gateway(CONFIG, limits) as gateway, connected(_port(gateway)) as client:
        await client.send(request("POST", "/v1/chat/completions", chat("hang")))
        await asyncio.sleep(0.1)
        await gateway.listener.shutdown()
        reply = await client.response()
        assert (reply.status, reply.json()["error"]["code"]) == (503, "shutting_down")


async def test_shutdown_ends_soon_after_the_grace_with_a_body_still_owed() -> None:
    """A request whose body is still owed when the grace ends gets its 503, and the shutdown
    ends well before the connection's linger would (`LINGER`, 2 s) had passed."""
    limits = ServerLimits(shutdown_grace=0.2)
    async with running_gateway(CONFIG, limits) as gateway, connected(_port(gateway)) as client:
        head = request("POST", "/v1/chat/completions")
        await client.send(head[:-2] + b"content-length: 1000\r\n\r\n" + b'{"model": ')
        await asyncio.sleep(0.05)
        started = asyncio.get_running_loop().time()
        await gateway.listener.shutdown()
        took = asyncio.get_running_loop().time() - started
        reply = await client.response()
        assert (reply.status, reply.json()["error"]["code"]) == (503, "shutting_down")
        assert took < limits.shutdown_grace + 0.5


async def test_reload_swaps_a_valid_runtime_and_closes_the_old_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A valid configuration serves the next requests, the old runtime's pools close, and one
    INFO line says so."""
    caplog.set_level(logging.INFO, logger="turnout.gateway")
    old = runtime_of(CONFIG)
    closed: list[bool] = []

    async def aclose() -> None:
        closed.append(True)

    old.providers["m"].aclose = aclose
    app = GatewayApp(old)
    new = runtime_of({**CONFIG, "routes": CONFIG["routes"][:1]})
    listener = Listener(app, ServerLimits())

    async def load() -> Runtime:
        return new

    assert await reload_runtime(app, listener, load, "turnout.yaml")
    await asyncio.sleep(0)
    assert app.runtime is new
    assert closed == [True]
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert infos == ["reloaded turnout.yaml: 1 route, auth=open"]


async def test_reload_keeps_the_old_runtime_when_the_new_one_is_invalid(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An invalid configuration changes nothing; one ERROR line names each problem."""
    caplog.set_level(logging.INFO, logger="turnout.gateway")
    old = runtime_of(CONFIG)
    app = GatewayApp(old)

    async def broken() -> Runtime:
        raise ConfigError("bad", [("routes[0].targets[0].provider", "no provider 'x'")])

    assert not await reload_runtime(app, Listener(app, ServerLimits()), broken, "turnout.yaml")
    assert app.runtime is old
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert "routes[0].targets[0].provider: no provider 'x'" in errors[0]


async def test_a_reload_leaves_requests_in_flight_on_their_runtime() -> None:
    """A stream that started before the reload ends on the old runtime, whose pools close
    only after it."""
    old = runtime_of(CONFIG)
    closed: list[bool] = []

    async def aclose() -> None:
        closed.append(True)

    old.providers["m"].aclose = aclose
    app = GatewayApp(old)

    async def load() -> Runtime:
        return runtime_of(CONFIG)

    with bind_socket("127.0.0.1", 0) as sock:
        async with (
            serving(app, sock, ServerLimits(shutdown_grace=0.0)) as listener,
            connected(sock.getsockname()[1]) as client,
        ):
            await client.send(request("POST", "/v1/chat/completions", chat("drip", stream=True)))
            await client.reader.readuntil(b"\r\n\r\n")
            assert await reload_runtime(app, listener, load, "f")
            await asyncio.sleep(0.05)
            assert closed == []
            body = await asyncio.wait_for(client.reader.readuntil(b"0\r\n\r\n"), 3.0)
            assert b"data: [DONE]" in body
            await asyncio.sleep(0.05)
            assert closed == [True]


def test_a_gateway_that_cannot_start_exits_1(caplog: pytest.LogCaptureFixture) -> None:
    """A runtime that fails to load at startup ends the worker with status 1 and the reason."""

    def broken() -> Runtime:
        raise ConfigError("providers[0].kind: unknown")

    with bind_socket("127.0.0.1", 0) as sock:
        assert run_worker(sock, GatewayApp(load=broken), ServerLimits()) == 1
    assert "providers[0].kind: unknown" in caplog.text
