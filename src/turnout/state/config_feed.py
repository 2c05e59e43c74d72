"""Configuration changes announced over shared state: the change feed of replicas that share a
Redis (`state: redis://…`).

Rule 1: `announce(version)` publishes `<replica> <version>` on the `config` channel of the state
store (`turnout:db<N>:config` in Redis with the default prefix); every other replica's `wait()`
returns as soon as it arrives. A replica ignores its own announcements (its echo).
Rule 2: `wait()` returns at the latest after `interval` seconds (1 by default) even when nothing
arrived: the store's version poll stays the backstop, so a lost message, a replica that writes
without announcing (the `turnout keys` command) or a Redis outage delays a change by at most
one interval.
Rule 3: a Redis outage falls back to that poll silently: one WARNING when it starts, one INFO
line when Redis answers again (the state store subscribes again by itself), and nothing on any
request's path.
Rule 4: the subscription is made on the first `wait()`, in the process that serves (never in
the parent of several workers, before it forks).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import TYPE_CHECKING

from turnout.routing.clock import LoopClock, wait_or_sleep

if TYPE_CHECKING:
    from turnout.routing.clock import Clock
    from turnout.state.base import StateStore, Subscription

__all__ = ["CONFIG_CHANNEL", "StateFeed"]

logger = logging.getLogger(__name__)

CONFIG_CHANNEL = "config"
"""The channel of configuration changes, under the state store's prefix."""


class StateFeed:
    """A change feed over `state` (see the module rules): `interval` is the backstop (seconds),
    `replica_id` names this process in its announcements (default: a random id), `clock` times
    the backstop (default: the loop clock)."""

    def __init__(
        self,
        state: StateStore,
        *,
        interval: float = 1.0,
        replica_id: str | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.state = state
        self.interval = interval
        self.replica_id = replica_id if replica_id is not None else uuid.uuid4().hex[:12]
        self.received = 0  # announcements of other replicas
        self._clock: Clock = clock if clock is not None else LoopClock()
        self._news = asyncio.Event()
        self._subscription: Subscription | None = None
        self._reader: asyncio.Task[None] | None = None
        self._degraded = False
        self._closed = False

    async def start(self) -> None:
        """Subscribe (idempotent; `wait()` does it on its first call)."""
        if self._subscription is not None or self._closed:
            return
        self._subscription = await self.state.subscribe(CONFIG_CHANNEL)
        self._reader = asyncio.get_running_loop().create_task(self._read(self._subscription))

    async def wait(self) -> None:
        """Rule 2: return on another replica's announcement, or after `interval` seconds."""
        await self.start()
        self._check_state()
        await wait_or_sleep(self._clock, self._news, self.interval)
        self._news.clear()
        self._check_state()

    async def announce(self, version: int) -> None:
        """Rule 1: tell every other replica that the store is at `version`."""
        await self.state.publish(CONFIG_CHANNEL, f"{self.replica_id} {version}".encode())
        self._check_state()

    async def aclose(self) -> None:
        """Unsubscribe (the state store itself is its owner's to close)."""
        self._closed = True
        reader, self._reader = self._reader, None
        subscription, self._subscription = self._subscription, None
        if subscription is not None:
            await subscription.aclose()
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    async def _read(self, subscription: Subscription) -> None:
        async for message in subscription:
            sender, _, _version = message.decode("utf-8", "replace").partition(" ")
            if sender != self.replica_id:
                self.received += 1
                self._news.set()

    def _check_state(self) -> None:
        """Rule 3: one WARNING per outage of the state store, one INFO line after it."""
        healthy = self.state.healthy
        if not healthy and not self._degraded:
            self._degraded = True
            logger.warning(
                "configuration changes: shared state unreachable; reading the store's version"
                " every %g s until it answers",
                self.interval,
            )
        elif healthy and self._degraded:
            self._degraded = False
            logger.info("configuration changes: announced through shared state again")
