"""Which change feed a serving process picks: Redis announcements whenever state is a Redis
URL, else PostgreSQL notifications on a PostgreSQL store, else the 1 s poll (SQLite)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from turnout.gateway.runtime.feeds import PollFeed, change_feed
from turnout.state.config_feed import StateFeed
from turnout.state.memory import MemoryState
from turnout.state.redis import RedisState
from turnout.store import open_store
from turnout.store.notify import PostgresFeed

if TYPE_CHECKING:
    from pathlib import Path

# Nothing is connected to: stores and Redis clients connect on first use.
_POSTGRES = "postgresql://postgres@127.0.0.1:5432/never_opened"
_REDIS = "redis://127.0.0.1:6379/12"


@pytest.mark.parametrize(
    ("backend", "state_url", "expected"),
    [
        ("sqlite", "memory", PollFeed),
        ("sqlite", _REDIS, StateFeed),
        ("postgresql", "memory", PostgresFeed),
        ("postgresql", _REDIS, StateFeed),
    ],
)
async def test_the_feed_follows_the_state_and_the_store(
    backend: str, state_url: str, expected: type, tmp_path: Path
) -> None:
    """Redis wins over PostgreSQL; SQLite with memory state polls."""
    url = f"sqlite:///{tmp_path / 'turnout.db'}" if backend == "sqlite" else _POSTGRES
    store = open_store(url)
    state = RedisState(state_url) if state_url != "memory" else MemoryState()
    try:
        feed = change_feed(store, state, state_url)
        assert type(feed) is expected
        await feed.aclose()
    finally:
        await state.close()
        store.close()
