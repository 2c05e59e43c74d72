"""How a serving process learns that the store may have changed: a `ChangeFeed`.

Rule 1: with `state: redis://…` announcements through Redis (`StateFeed`), else on PostgreSQL
the store's own notifications (`PostgresFeed`), else `PollFeed` every second (the only way with
SQLite); the first two wake at once and fall back to the same 1 s poll.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from turnout.routing.clock import LoopClock
from turnout.state.config_feed import StateFeed
from turnout.store.notify import PostgresFeed

if TYPE_CHECKING:
    from turnout.routing.clock import Clock
    from turnout.state.base import StateStore
    from turnout.store.engine import Store

__all__ = ["POLL_SECONDS", "ChangeFeed", "PollFeed", "change_feed"]

POLL_SECONDS = 1.0
"""Seconds between two reads of the store's version by `PollFeed`."""


class ChangeFeed(Protocol):
    """How a serving process learns that the store may have changed."""

    async def wait(self) -> None:
        """Return when the store may have changed (a poll feed: after its interval)."""
        ...

    async def announce(self, version: int) -> None:
        """Tell the other replicas that this one committed `version` (a poll feed: nothing)."""
        ...

    async def aclose(self) -> None:
        """Stop listening."""
        ...


class PollFeed:
    """A `ChangeFeed` that says "maybe" every `interval` seconds (default 1) on `clock`."""

    def __init__(self, interval: float = POLL_SECONDS, *, clock: Clock | None = None) -> None:
        self.interval = interval
        self._clock: Clock = clock if clock is not None else LoopClock()

    async def wait(self) -> None:
        """Sleep one interval."""
        await self._clock.sleep(self.interval)

    async def announce(self, version: int) -> None:
        """Nothing to tell: every replica polls."""
        del version

    async def aclose(self) -> None:
        """Nothing to close."""


def change_feed(
    store: Store, state: StateStore, state_url: str, clock: Clock | None = None
) -> ChangeFeed:
    """Rule 1: the change feed of a process on `store` sharing `state` (configured as
    `state_url`): Redis announcements, else PostgreSQL notifications, else the poll."""
    if state_url.startswith(("redis://", "rediss://")):
        return StateFeed(state, interval=POLL_SECONDS, clock=clock)
    if store.is_postgres:
        return PostgresFeed(store, interval=POLL_SECONDS, clock=clock)
    return PollFeed(clock=clock)
