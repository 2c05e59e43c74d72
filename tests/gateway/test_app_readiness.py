"""`/readyz` detail on the shared state store: ready on memory; `degraded` with the reason as
soon as Redis stops answering, found by `/readyz` itself (a short ping, reused for about a
second, so a storm of checks costs Redis one ping); never the state URL's password."""

from __future__ import annotations

import asyncio
import time
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import redis.asyncio as aredis

from tests.gateway._app_support import app_of, client_of, mock_provider
from tests.state._redis_server import running_redis
from turnout.config.load import parse_config
from turnout.gateway.resolution.lookups import build_runtime
from turnout.gateway.server.app import GatewayApp
from turnout.routing.clock import FakeClock

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

# Nothing listens on port 1: every Redis operation fails at once, and the store degrades.
UNREACHABLE = "redis://turnout:s3cret-password@127.0.0.1:1/0"


def _config(state: str) -> dict[str, Any]:
    return {
        "server": {"auth": "open"},
        "state": state,
        "providers": [mock_provider("m")],
        "routes": [{"name": "main", "models": ["gpt-4o-mini"], "targets": [{"provider": "m"}]}],
    }


def _app_on(state: str, clock: FakeClock) -> GatewayApp:
    return GatewayApp(build_runtime(parse_config(_config(state), env={}), clock=clock))


async def _pings(url: str) -> int:
    """How many PING commands the Redis server at `url` has served."""
    client = aredis.Redis.from_url(url)
    try:
        stats = await client.info("commandstats")
    finally:
        await client.aclose()
    return int(stats.get("cmdstat_ping", {}).get("calls", 0))


async def test_memory_state_is_ready_with_its_detail() -> None:
    """On the default memory store, /readyz is ready and says which store serves."""
    app = app_of(_config("memory"))
    async with client_of(app) as client:
        ready = await client.get("/readyz")
    assert ready.status_code == 200
    body = ready.json()
    assert body["status"] == "ready"
    assert "reason" not in body
    assert body["state"]["backend"] == "memory"
    assert body["state"]["healthy"] is True


async def test_unreachable_redis_is_degraded_but_still_200() -> None:
    """With Redis unreachable and no call made yet, /readyz stays 200 (calls are served on
    local state) with status `degraded`, the reason, the Redis detail, and the URL without its
    password."""
    app = app_of(_config(UNREACHABLE))
    runtime = app.runtime
    assert runtime is not None
    async with client_of(app) as client:
        ready = await client.get("/readyz")
    assert ready.status_code == 200
    body = ready.json()
    assert body["status"] == "degraded"
    assert body["reason"].startswith("shared state: unreachable (ConnectionError")
    assert body["state"]["backend"] == "redis"
    assert body["state"]["healthy"] is False
    assert "s3cret-password" not in ready.text
    await runtime.aclose()


async def test_readyz_sees_redis_stop_before_any_call_does() -> None:
    """Redis stopped mid-test with no request touching it: the next /readyz (once its last
    answer is a second old) pings, and says `degraded` with the reason; started again, ready."""
    clock = FakeClock()
    async with running_redis() as server:
        app = _app_on(server.url, clock)
        assert app.runtime is not None
        try:
            async with client_of(app) as client:
                assert (await client.get("/readyz")).json()["status"] == "ready"
                await server.stop()
                clock.advance(1.0)
                ready = await client.get("/readyz")
                assert ready.status_code == 200
                body = ready.json()
                assert body["status"] == "degraded"
                assert "unreachable" in body["reason"]
                assert body["state"]["healthy"] is False
                await server.start()
                clock.advance(1.0)  # the outage's own ping, paced by the clock, closes it
                for _ in range(300):
                    if (await client.get("/readyz")).json()["status"] == "ready":
                        break
                    await asyncio.sleep(0.01)
                assert (await client.get("/readyz")).json()["status"] == "ready"
        finally:
            await app.runtime.aclose()


async def test_a_storm_of_readyz_costs_redis_one_ping_a_second() -> None:
    """Fifty concurrent /readyz share one ping; within the second none pings again; after it,
    one more."""
    clock = FakeClock()
    async with running_redis() as server:
        app = _app_on(server.url, clock)
        assert app.runtime is not None
        try:
            async with client_of(app) as client:
                before = await _pings(server.url)
                replies = await asyncio.gather(*(client.get("/readyz") for _ in range(50)))
                assert {r.json()["status"] for r in replies} == {"ready"}
                await client.get("/readyz")
                assert await _pings(server.url) - before == 1
                clock.advance(1.0)
                await asyncio.gather(*(client.get("/readyz") for _ in range(20)))
                assert await _pings(server.url) - before == 2
        finally:
            await app.runtime.aclose()


@asynccontextmanager
async def _silent_port() -> AsyncIterator[int]:
    """A TCP port that accepts connections and never answers."""
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        await reader.read()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_readyz_is_bounded_when_redis_never_answers() -> None:
    """A Redis that accepts but never replies: /readyz still answers within about half a
    second, degraded, naming the timeout."""
    async with _silent_port() as port:
        app = _app_on(f"redis://127.0.0.1:{port}/0", FakeClock())
        assert app.runtime is not None
        try:
            async with client_of(app) as client:
                started = time.perf_counter()
                ready = await client.get("/readyz")
                elapsed = time.perf_counter() - started
        finally:
            await app.runtime.aclose()
        assert elapsed < 1.0
        body = ready.json()
        assert (ready.status_code, body["status"]) == (200, "degraded")
        assert "Timeout" in body["reason"]
