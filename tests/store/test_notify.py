"""PostgreSQL's own change notifications: a write committed by anyone wakes a listening
replica's `wait()` at once, a version the replica announced itself does not, a rolled-back
write notifies nothing, a store in another schema is not heard, and a store that cannot be
reached falls back to the 1 s backstop (on a fake clock) with one warning."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from typing import TYPE_CHECKING

import pytest

from tests.state._redis_server import free_port
from tests.store.conftest import store_on
from turnout.errors import ConfigError
from turnout.routing.clock import FakeClock
from turnout.store import migrate, open_store
from turnout.store import service as svc
from turnout.store.notify import PostgresFeed

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from turnout.store import Store

# Bounds a wait for a notification (I/O, not a timing the test asserts).
_LIMIT = 5.0


@pytest.fixture
def pg_store(postgres_url: str, tmp_path: Path) -> Iterator[Store]:
    """A migrated PostgreSQL store in a schema of its own."""
    with store_on("postgresql", tmp_path, postgres_url) as store:
        migrate(store)
        yield store


async def _started(store: Store, clock: FakeClock) -> PostgresFeed:
    feed = PostgresFeed(store, clock=clock)
    await feed.start()
    assert feed.listening
    return feed


async def test_a_committed_write_wakes_a_listener(pg_store: Store) -> None:
    """A project created (by a plain store write) wakes `wait()` before the backstop."""
    clock = FakeClock()
    feed = await _started(pg_store, clock)
    try:
        waiting = asyncio.ensure_future(feed.wait())
        await clock.settle()
        assert not waiting.done()
        await asyncio.to_thread(svc.create_project, pg_store, {"name": "heard"})
        await asyncio.wait_for(waiting, _LIMIT)
        assert feed.received == 1
        assert clock.now() == 0.0
    finally:
        await feed.aclose()


async def test_an_announced_version_and_a_rollback_are_not_news(pg_store: Store) -> None:
    """The replica that wrote version v and announced it is not woken by v (even when v's
    notification came first); a write that rolls back notifies nothing; the next write by
    another wakes it."""
    clock = FakeClock()
    mine = await _started(pg_store, clock)
    other = await _started(pg_store, clock)
    try:
        await asyncio.to_thread(svc.create_project, pg_store, {"name": "mine"})
        await asyncio.wait_for(_until(lambda: mine.notices == other.notices == 1), _LIMIT)
        await mine.announce(svc.current_version(pg_store))
        waiting = asyncio.ensure_future(mine.wait())
        with contextlib.suppress(ConfigError):  # refused after its version bump: rolled back
            await asyncio.to_thread(
                functools.partial(
                    svc.create_project, pg_store, {"name": "refused"}, validate=_refuse
                )
            )
        await clock.settle()
        assert not waiting.done()
        await asyncio.to_thread(svc.create_project, pg_store, {"name": "other"})
        await asyncio.wait_for(waiting, _LIMIT)
        newest = svc.current_version(pg_store)
        # Notifications arrive in commit order: once the last is heard, any earlier one was.
        await asyncio.wait_for(_until(lambda: other.heard == newest), _LIMIT)
        assert other.notices == 2
        assert mine.received == 1
        assert clock.now() == 0.0
    finally:
        await mine.aclose()
        await other.aclose()


async def test_another_schema_is_not_heard(postgres_url: str, tmp_path: Path) -> None:
    """A write to a store in another schema of the same database does not wake the feed."""
    clock = FakeClock()
    with (
        store_on("postgresql", tmp_path, postgres_url) as mine,
        store_on("postgresql", tmp_path, postgres_url) as theirs,
    ):
        migrate(mine)
        migrate(theirs)
        feed = await _started(mine, clock)
        witness = await _started(theirs, clock)
        try:
            await asyncio.to_thread(svc.create_project, theirs, {"name": "elsewhere"})
            await asyncio.wait_for(_until(lambda: witness.notices == 1), _LIMIT)
            assert feed.notices == 0
        finally:
            await feed.aclose()
            await witness.aclose()


async def test_an_unreachable_store_falls_back_to_the_backstop(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """With nothing listening at the store's address, `wait()` returns when the fake clock
    passes 1 s, and one warning (not one per wait) says changes are polled."""
    caplog.set_level(logging.INFO, logger="turnout.store.notify")
    clock = FakeClock()
    store = open_store(f"postgresql://postgres@127.0.0.1:{free_port()}/none")
    feed = PostgresFeed(store, clock=clock)
    try:
        await feed.start()
        assert not feed.listening
        for _ in range(3):
            waiting = asyncio.ensure_future(feed.wait())
            await clock.settle()
            assert not waiting.done()
            clock.advance(1.0)
            await asyncio.wait_for(waiting, _LIMIT)
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1, warnings
        assert "every 1 s" in warnings[0].getMessage()
    finally:
        await feed.aclose()
        store.close()


def _refuse(project: object) -> None:
    raise ConfigError("refused by the test")


async def _until(predicate: Callable[[], bool]) -> None:
    """Poll `predicate` (I/O happens meanwhile) until it holds; the caller bounds the wait."""
    for _ in range(100_000):
        if predicate():
            return
        await asyncio.sleep(0.005)
