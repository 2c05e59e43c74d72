"""Backends for the state suites: memory always; Redis when reachable.

Redis is `TURNOUT_TEST_REDIS_URL` if set, else `redis://127.0.0.1:6379/15` when something answers
there. Every test gets its own key prefix under one per-run prefix, and its keys are deleted
afterwards.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from typing import TYPE_CHECKING

import pytest
import redis
import redis.asyncio as aredis

from turnout.routing.clock import FakeClock
from turnout.state.memory import MemoryState
from turnout.state.redis import RedisState

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    from turnout.state.base import StateStore

    Wait = Callable[[Callable[[], bool]], Awaitable[None]]

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/15"
RUN_PREFIX = f"turnout-test:{uuid.uuid4().hex[:10]}:"


@pytest.fixture(scope="session")
def redis_url() -> str:
    """The test Redis URL, or a skip saying why there is none."""
    url = os.environ.get("TURNOUT_TEST_REDIS_URL") or DEFAULT_REDIS_URL
    client = redis.Redis.from_url(url, socket_timeout=0.25, socket_connect_timeout=0.25)
    try:
        client.ping()
    except (redis.RedisError, OSError) as exc:
        pytest.skip(f"no Redis at {url} ({type(exc).__name__}); set TURNOUT_TEST_REDIS_URL")
    finally:
        client.close()
    return url


@pytest.fixture
def key_prefix() -> str:
    """A key prefix no other test (or run) uses."""
    return f"{RUN_PREFIX}{uuid.uuid4().hex[:8]}:"


@pytest.fixture
async def redis_cleanup(redis_url: str, key_prefix: str) -> AsyncIterator[None]:
    """Delete every key under the test's prefix after the test."""
    yield
    client = aredis.Redis.from_url(redis_url)
    try:
        keys = [key async for key in client.scan_iter(match=f"{key_prefix}*", count=500)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


@pytest.fixture
async def redis_state(
    redis_url: str, key_prefix: str, redis_cleanup: None
) -> AsyncIterator[RedisState]:
    """A RedisState on the test prefix, closed after the test. Its timeout is generous (2 s): a
    busy test machine must not turn these tests into outage tests."""
    state = RedisState(redis_url, key_prefix, timeout=2.0)
    yield state
    await state.close()


@pytest.fixture
def fake_clock() -> FakeClock:
    """A clock that moves only when told to."""
    return FakeClock(start=1_000.0)


@pytest.fixture(params=["memory", "redis"])
def state(request: pytest.FixtureRequest, fake_clock: FakeClock) -> StateStore:
    """Each backend in turn (memory on the fake clock)."""
    if request.param == "memory":
        return MemoryState(fake_clock)
    store: StateStore = request.getfixturevalue("redis_state")
    return store


@pytest.fixture
async def redis_replica(redis_state: RedisState) -> AsyncIterator[RedisState]:
    """A second RedisState on the same URL and prefix: another replica's connection."""
    other = RedisState(redis_state.url, redis_state.prefix, timeout=2.0)
    yield other
    await other.close()


@pytest.fixture(params=["memory", "redis"])
def state_pair(request: pytest.FixtureRequest) -> tuple[StateStore, StateStore]:
    """Two replicas' views of one shared store: one MemoryState twice, or two RedisStates on
    one prefix."""
    if request.param == "memory":
        shared = MemoryState()
        return shared, shared
    first: StateStore = request.getfixturevalue("redis_state")
    second: StateStore = request.getfixturevalue("redis_replica")
    return first, second


@pytest.fixture
def eventually() -> Wait:
    """`await eventually(predicate)`: yield to other tasks until it holds, then poll I/O every
    5 ms, failing after 3 s (a delivery through Redis is I/O, not fake time)."""

    async def wait(predicate: Callable[[], bool]) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 3.0
        spins = 0
        while not predicate():
            if loop.time() > deadline:
                raise AssertionError("condition not reached in time")
            spins += 1
            await asyncio.sleep(0 if spins < 100 else 0.005)

    return wait
