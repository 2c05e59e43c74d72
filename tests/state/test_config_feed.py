"""The configuration change feed over shared state: an announcement on one replica's feed wakes
another's `wait()` at once (through real Redis), a replica ignores its own announcements, and
while Redis is down `wait()` falls back to the 1 s backstop (on a fake clock), with one warning,
and wakes on announcements again once Redis is back."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from tests.state._redis_server import running_redis
from turnout.state.config_feed import StateFeed
from turnout.state.redis import RedisState

if TYPE_CHECKING:
    from collections.abc import Callable

    import pytest

    from tests.state.conftest import Wait
    from turnout.routing.clock import FakeClock

# Bounds a wait for a delivery through Redis (I/O, not a timing the test asserts).
_DELIVERY_LIMIT = 5.0


async def test_an_announcement_wakes_another_replica(
    redis_state: RedisState, redis_replica: RedisState, fake_clock: FakeClock
) -> None:
    """B's wait returns on A's announcement while the fake clock never reaches the backstop."""
    a = StateFeed(redis_state, clock=fake_clock)
    b = StateFeed(redis_replica, clock=fake_clock)
    try:
        await a.start()
        await b.start()
        waiting = asyncio.ensure_future(b.wait())
        await fake_clock.settle()
        assert not waiting.done()
        await a.announce(7)
        await asyncio.wait_for(waiting, _DELIVERY_LIMIT)
        assert b.received == 1
        assert fake_clock.now() == 1_000.0
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_replica_ignores_its_own_announcement(
    redis_state: RedisState, redis_replica: RedisState, fake_clock: FakeClock
) -> None:
    """A's own announcement does not wake A; B's, published after it, does, and is the only
    one A counts."""
    a = StateFeed(redis_state, clock=fake_clock)
    b = StateFeed(redis_replica, clock=fake_clock)
    try:
        await a.start()
        await b.start()
        waiting = asyncio.ensure_future(a.wait())
        await a.announce(3)
        await asyncio.wait_for(_until(lambda: b.received == 1), _DELIVERY_LIMIT)
        await b.announce(4)
        await asyncio.wait_for(waiting, _DELIVERY_LIMIT)
        assert a.received == 1
    finally:
        await a.aclose()
        await b.aclose()


async def test_redis_down_falls_back_to_the_backstop_and_recovers(
    fake_clock: FakeClock, caplog: pytest.LogCaptureFixture, eventually: Wait
) -> None:
    """With Redis stopped, wait returns only when the fake clock passes the 1 s backstop, one
    warning says so; once Redis is back an announcement wakes the other replica again."""
    caplog.set_level(logging.INFO, logger="turnout.state.config_feed")
    async with running_redis() as server:
        first = RedisState(server.url, "feed:", retry_every=0.05)
        second = RedisState(server.url, "feed:", retry_every=0.05)
        a = StateFeed(first, clock=fake_clock)
        b = StateFeed(second, clock=fake_clock)
        try:
            await a.start()
            await b.start()
            await server.stop()
            await a.announce(1)  # fails: an outage starts
            await second.check()
            for _ in range(2):
                waiting = asyncio.ensure_future(b.wait())
                await fake_clock.settle()
                assert not waiting.done()
                fake_clock.advance(1.0)
                await asyncio.wait_for(waiting, _DELIVERY_LIMIT)
            assert b.received == 0
            warnings = [
                r
                for r in caplog.records
                if r.levelno == logging.WARNING and r.name == "turnout.state.config_feed"
            ]
            assert len(warnings) == 2, warnings  # one per replica, not one per wait
            assert "every 1 s" in warnings[0].getMessage()
            await server.start()
            await eventually(lambda: first.healthy and second.healthy)
            waiting = asyncio.ensure_future(b.wait())

            async def announce_until_woken() -> None:
                while not waiting.done():  # until B's subscription is made again
                    await a.announce(2)
                    await asyncio.wait({waiting}, timeout=0.05)

            await asyncio.wait_for(announce_until_woken(), _DELIVERY_LIMIT)
            assert b.received >= 1
            assert any(
                r.name == "turnout.state.config_feed" and "again" in r.getMessage()
                for r in caplog.records
            )
        finally:
            await a.aclose()
            await b.aclose()
            await first.close()
            await second.close()


async def _until(predicate: Callable[[], bool]) -> None:
    """Poll `predicate` (I/O happens meanwhile) until it holds; the caller bounds the wait."""
    for _ in range(100_000):
        if predicate():
            return
        await asyncio.sleep(0.005)
