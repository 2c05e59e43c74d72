"""Shared health when Redis goes away mid-run (a redis-server of the test's own, on its own
port): requests are still served, `/readyz` and `turnout_shared_state_up` say so, and once
Redis is back the gateway subscribes again and re-syncs what it learned meanwhile."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from tests.gateway._app_support import chat, client_of, mock_provider
from tests.state._redis_server import running_redis
from turnout.config.load import parse_config
from turnout.gateway.resolution.lookups import build_runtime
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.lifespan import Lifespan
from turnout.routing.clock import FakeClock
from turnout.routing.health import Admission, Health, Skip
from turnout.state.redis import RedisState
from turnout.state.shared_health import SharedHealth

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

    import httpx

GAUGE = 'turnout_shared_state_up{backend="redis"}'


def _config(state: str) -> dict[str, Any]:
    return {
        "server": {"auth": "open"},
        "state": state,
        "providers": [mock_provider("m")],
        "routes": [{"name": "main", "models": ["gpt-4o-mini"], "targets": [{"provider": "m"}]}],
    }


def trip(health: Health, key: Hashable) -> None:
    for _ in range(3):
        admission = health.admit(key, lease=30)
        assert isinstance(admission, Admission)
        health.record_failure(admission, "provider_error")


async def gauge(client: httpx.AsyncClient) -> str:
    text = (await client.get("/metrics")).text
    return next(line for line in text.splitlines() if line.startswith(GAUGE)).split()[-1]


async def eventually(predicate: Callable[[], bool], clock: FakeClock | None = None) -> None:
    """Poll every 5 ms until `predicate` holds (3 s at most: it waits on I/O), moving `clock`
    a second at each poll when given."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 3.0
    while not predicate():
        assert loop.time() < deadline, "condition not reached in time"
        if clock is not None:
            clock.advance(1.0)
        await asyncio.sleep(0.005)


async def test_redis_outage_serves_reports_and_resyncs() -> None:
    """Redis stopped: chats answer, /readyz is 200 `degraded`, the gauge reads 0, a trip made
    meanwhile stays local; Redis back: ready, gauge 1, the trip reaches another replica and
    the gateway hears that replica's trips again."""
    clock = FakeClock()
    async with running_redis() as server:
        runtime = build_runtime(parse_config(_config(server.url), env={}), clock=clock)
        app = GatewayApp(runtime)
        lifespan = Lifespan(app)
        await lifespan.startup()  # starts the health sharing
        shared = runtime.shared_health
        assert shared is not None
        other_state = RedisState(server.url, timeout=2.0)
        other = SharedHealth(Health(clock=FakeClock()), other_state, scope=runtime.project)
        try:
            async with client_of(app) as client:
                assert (
                    await client.post("/v1/chat/completions", json=chat("gpt-4o-mini"))
                ).is_success
                ready = (await client.get("/readyz")).json()
                assert (ready["status"], ready["health"]["shared"]) == ("ready", True)
                assert await gauge(client) == "1.0"

                await server.stop()
                answer = await client.post("/v1/chat/completions", json=chat("gpt-4o-mini"))
                assert answer.status_code == 200
                clock.advance(1.0)
                ready = await client.get("/readyz")
                assert (ready.status_code, ready.json()["status"]) == (200, "degraded")
                assert await shared.publisher.check_store() is False
                assert await gauge(client) == "0.0"
                trip(runtime.health, ("down", "model"))
                await shared.publisher.flush()  # published to this process only

                await server.start()
                await other.start()  # a replica that starts now finds nothing stored
                assert isinstance(
                    other.publisher.health.admit(("down", "model"), lease=30), Admission
                )
                # The outage's ping and the sharing's watch run each second, on the clock.
                await eventually(lambda: shared.publisher.resyncs >= 1, clock)
                await eventually(lambda: other.publisher.applied >= 1)
                verdict = other.publisher.health.admit(("down", "model"), lease=30)
                assert isinstance(verdict, Skip)
                assert verdict.outcome == "breaker_open"

                trip(other.publisher.health, ("back", "model"))
                await eventually(lambda: shared.publisher.applied >= 1)
                assert isinstance(runtime.health.admit(("back", "model"), lease=30), Skip)
                assert (await client.get("/readyz")).json()["status"] == "ready"
                assert await gauge(client) == "1.0"
        finally:
            await other.stop()
            await other_state.close()
            await lifespan.shutdown()
