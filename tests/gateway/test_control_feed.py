"""The control plane and its change feed: a committed write is announced with the store's new
version, and a feed that fails falls back to the 1 s poll (on a fake clock) instead of ending
the refreshes."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from tests.gateway._app_support import client_of
from tests.gateway._store_support import HeldFeed, chat, file_config, started
from turnout.config.load import parse_config
from turnout.gateway.resolution.lookups import ProjectLookups
from turnout.gateway.runtime.control import ControlPlane
from turnout.routing.clock import FakeClock
from turnout.store import service as svc
from turnout.store.file_sync import sync_file
from turnout.store.snapshot import load_snapshot

if TYPE_CHECKING:
    from turnout.store import Store

# Bounds the wait for a refresh (store I/O in a thread, not a timing the test asserts).
_LIMIT = 10.0


class BrokenFeed(HeldFeed):
    """A change feed whose `wait()` fails."""

    async def wait(self) -> None:
        raise RuntimeError("the feed broke")


async def test_a_commit_is_announced_with_the_new_version(store: Store) -> None:
    """`committed()` announces the version the write left the store at."""
    feed = HeldFeed()
    file = parse_config(file_config(), env={})
    sync_file(store, file)
    control = ControlPlane(store, file, lookups=ProjectLookups, feed=feed)
    async with started(control):
        project = load_snapshot(store).projects["default"].id
        svc.create_key(store, project, {"name": "announced"})
        await control.committed()
    assert feed.announced == [svc.current_version(store)]


async def test_a_failing_feed_falls_back_to_the_poll(store: Store) -> None:
    """With the feed's wait failing, a key stored later is served once the fake clock passes
    1 s."""
    clock = FakeClock()
    file = parse_config(file_config(), env={})
    sync_file(store, file)
    control = ControlPlane(store, file, lookups=ProjectLookups, feed=BrokenFeed(), clock=clock)
    async with started(control) as app, client_of(app) as client:
        project = load_snapshot(store).projects["default"].id
        _, plaintext = svc.create_key(store, project, {"name": "later"})
        headers = {"authorization": f"Bearer {plaintext}"}

        async def served() -> int:
            for _ in range(100_000):
                reply = await client.post("/v1/chat/completions", json=chat(), headers=headers)
                if reply.status_code != 401:
                    return reply.status_code
                if clock.next_deadline is not None:  # the poll that replaced the feed sleeps
                    clock.advance(1.0)
                await asyncio.sleep(0.01)
            raise AssertionError("unreachable")

        assert await asyncio.wait_for(served(), _LIMIT) == 200
