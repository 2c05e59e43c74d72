"""RedisState: TTLs and namespacing on a real Redis, and the hard rule that a failing Redis never
fails a call (refused connections, a server that never answers, a server stopped and started)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING

import pytest
import redis.asyncio as aredis

from tests.state._redis_server import Server, free_port, running_redis
from turnout.state.redis import RedisState, redacted_url

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from turnout.routing.clock import FakeClock

    Wait = Callable[[Callable[[], bool]], Awaitable[None]]

LOGGER = "turnout.state.redis"


def warnings_from(caplog: pytest.LogCaptureFixture, level: int = logging.WARNING) -> list[str]:
    """Messages the RedisState logger wrote at `level`."""
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == level]


# ---- on a live Redis -------------------------------------------------------------------------


async def test_keys_live_under_the_prefix_with_their_ttl(
    redis_state: RedisState, redis_url: str
) -> None:
    """A set lands at prefix+key with the TTL in Redis; touch moves it."""
    await redis_state.set("pin:r:s", b"openai", 60)
    raw = aredis.Redis.from_url(redis_url)
    try:
        assert await raw.get(redis_state.prefix + "pin:r:s") == b"openai"
        assert 59_000 < await raw.pttl(redis_state.prefix + "pin:r:s") <= 60_000
        await redis_state.touch("pin:r:s", 600)
        assert await raw.pttl(redis_state.prefix + "pin:r:s") > 599_000
    finally:
        await raw.aclose()


async def test_databases_do_not_hear_each_others_channels(redis_url: str, key_prefix: str) -> None:
    """Two stores on one Redis server but different databases share no message: Redis
    delivers a channel to every database's subscribers, so the channel names carry the
    database."""
    base = redis_url.rsplit("/", 1)[0]
    first = RedisState(f"{base}/9", key_prefix, timeout=2.0)
    second = RedisState(f"{base}/10", key_prefix, timeout=2.0)
    try:
        mine = await first.subscribe("news")
        theirs = await second.subscribe("news")
        await first.publish("news", b"for database 9")
        assert await asyncio.wait_for(anext(mine), 2) == b"for database 9"
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(anext(theirs), 0.3)
    finally:
        await first.close()
        await second.close()


async def test_reads_come_from_redis_not_the_mirror(
    redis_state: RedisState, redis_url: str
) -> None:
    """While healthy, a value written by another replica is what a read returns."""
    await redis_state.set("k", b"mine", 60)
    raw = aredis.Redis.from_url(redis_url)
    try:
        await raw.set(redis_state.prefix + "k", b"theirs", px=60_000)
    finally:
        await raw.aclose()
    assert await redis_state.get("k") == b"theirs"


async def test_healthy_store_describes_itself(redis_state: RedisState) -> None:
    """describe() names the backend, the prefix and a reachable status."""
    assert await redis_state.check()
    status = redis_state.describe()
    assert status["backend"] == "redis"
    assert status["healthy"] is True
    assert status["prefix"] == redis_state.prefix


# ---- Redis unreachable -----------------------------------------------------------------------


@pytest.fixture
async def refused() -> AsyncIterator[RedisState]:
    """A RedisState pointed at a port where nothing listens."""
    state = RedisState(f"redis://:s3cret@127.0.0.1:{free_port()}/0", "t:")
    yield state
    await state.close()


async def test_refused_connection_never_fails_a_call(
    refused: RedisState, caplog: pytest.LogCaptureFixture
) -> None:
    """Every operation answers from local state when Redis refuses connections."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    await refused.set("k", b"v", 60)
    assert await refused.get("k") == b"v"
    assert await refused.touch("k", 60)
    assert await refused.scan("") == ["k"]
    subscription = await refused.subscribe("c")
    await refused.publish("c", b"local")
    assert await asyncio.wait_for(anext(subscription), 1) == b"local"
    await refused.delete("k")
    assert await refused.get("k") is None
    assert not refused.healthy


async def test_outage_is_logged_once_and_described(
    refused: RedisState, caplog: pytest.LogCaptureFixture
) -> None:
    """Fifty failing calls log one warning; describe() says why, since when, and no password."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    for n in range(50):
        await refused.set(f"k{n}", b"v", 60)
        await refused.get(f"k{n}")
    assert len(warnings_from(caplog)) == 1
    assert "serving on local state" in warnings_from(caplog)[0]
    status = refused.describe()
    assert status["healthy"] is False
    assert "ConnectionError" in status["detail"]
    assert "local state" in status["detail"]
    assert status["outages"] == 1
    assert "down_since" in status
    assert "s3cret" not in str(status)
    assert "s3cret" not in caplog.text


@pytest.fixture
async def silent_server() -> AsyncIterator[int]:
    """A TCP server that accepts connections and never answers; yields its port."""
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        await reader.read()

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port: int = server.sockets[0].getsockname()[1]
    yield port
    for writer in held:
        writer.close()
    server.close()
    await server.wait_closed()


async def test_silent_server_costs_one_timeout_then_nothing(silent_server: int) -> None:
    """A server that never replies costs the first call one short timeout; later calls go
    straight to local state."""
    state = RedisState(f"redis://127.0.0.1:{silent_server}/0", "t:", timeout=0.05)
    try:
        started = time.perf_counter()
        assert await state.get("k") is None
        first = time.perf_counter() - started
        started = time.perf_counter()
        for n in range(100):
            await state.set(f"k{n}", b"v", 60)
            assert await state.get(f"k{n}") == b"v"
        rest = time.perf_counter() - started
    finally:
        await state.close()
    assert not state.healthy
    assert "Timeout" in state.describe()["detail"]
    assert first < 0.5
    assert rest < 0.05


def test_redacted_url_hides_only_the_password() -> None:
    """The password becomes *** and the rest of the URL is kept."""
    assert redacted_url("redis://u:pw@h:6380/2") == "redis://u:***@h:6380/2"
    assert redacted_url("redis://h:6379/0") == "redis://h:6379/0"


# ---- a server stopped and started again ------------------------------------------------------


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    """A redis-server of this test's own (skipped when the binary is missing)."""
    async with running_redis() as own:
        yield own


async def numsub(url: str, channel: str) -> int:
    """How many subscribers Redis counts on `channel`."""
    client = aredis.Redis.from_url(url)
    try:
        counts = await client.pubsub_numsub(channel)
        return int(counts[0][1])
    finally:
        await client.aclose()


async def test_store_survives_a_restart_and_says_so(
    server: Server,
    fake_clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    eventually: Wait,
) -> None:
    """Redis stops: calls keep working on the local mirror; Redis returns: the next probe
    (paced by the clock) recovers, logs it, and the subscription is restored."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    state = RedisState(server.url, "t:", timeout=2.0, clock=fake_clock, retry_every=1.0)
    try:
        subscription = await state.subscribe("news")
        await state.set("pin", b"anthropic", 60)
        await server.stop()

        assert await state.get("pin") == b"anthropic"
        assert not state.healthy
        await state.publish("news", b"during")
        assert await asyncio.wait_for(anext(subscription), 1) == b"during"

        await server.start()
        assert not state.healthy
        fake_clock.advance(1.0)
        await eventually(lambda: state.healthy)
        assert warnings_from(caplog, logging.INFO) == [
            f"shared state {server.url} recovered after 1.0 s; serving on shared state again"
        ]
        assert len(warnings_from(caplog)) == 1

        for _ in range(300):
            if await numsub(server.url, "t:db0:news"):
                break
            await asyncio.sleep(0.01)
        raw = aredis.Redis.from_url(server.url)
        try:
            await raw.publish("t:db0:news", b"after")
        finally:
            await raw.aclose()
        assert await asyncio.wait_for(anext(subscription), 3) == b"after"
        assert await state.get("pin") is None
    finally:
        await state.close()


async def test_restart_between_calls_costs_no_outage(server: Server) -> None:
    """A server restarted while the store is idle: the next call reconnects at once, with no
    outage and no fallback to local state."""
    state = RedisState(server.url, "t:", timeout=2.0)
    try:
        await state.set("k", b"before", 60)
        await server.stop()
        await server.start()
        assert await state.get("k") is None
        assert state.healthy
        assert state.describe()["outages"] == 0
    finally:
        await state.close()


async def test_check_opens_and_closes_an_outage(server: Server) -> None:
    """check() reports the live state: False while stopped, True once started again."""
    state = RedisState(server.url, "t:", timeout=2.0)
    try:
        assert await state.check()
        await server.stop()
        assert await state.check() is False
        await server.start()
        assert await state.check() is True
        assert state.describe()["outages"] == 1
    finally:
        await state.close()


async def test_probe_during_an_outage_reports_it_without_pinging(refused: RedisState) -> None:
    """The first probe pings and opens the outage; later probes only report it (the outage's
    own pings close it), so a down Redis is not asked once per readiness check."""
    assert await refused.probe() is False
    for _ in range(20):
        assert await refused.probe() is False
    assert refused.link.pings == 1
    assert refused.describe()["outages"] == 1
