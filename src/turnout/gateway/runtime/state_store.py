"""The state store a runtime works over (`state:`), and the health it shares through it.

Rule 1: `state:` is `memory` (the default) or `redis://…` / `rediss://…`; anything else runs on
memory, with a warning.
Rule 2: a runtime handed a state store (the control plane's, one for every project) uses it and
leaves it open; a runtime handed none opens its own on first use and closes it.
Rule 3: with shared state (Redis), `share` shares the runtime's health with every replica on
that store (`turnout.state.shared_health`), once. Bounded by the store's own timeouts: a store
that is down starts this process on local health, and it catches up when the store returns.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from turnout.state.memory import MemoryState

if TYPE_CHECKING:
    from turnout.routing.clock import Clock
    from turnout.routing.health import Health
    from turnout.state.base import StateStore
    from turnout.state.shared_health import SharedHealth

__all__ = ["RuntimeState", "is_shared_url", "open_state_store"]

logger = logging.getLogger(__name__)


def is_shared_url(url: str) -> bool:
    """Whether `state:` names a store shared between replicas (Redis)."""
    return url.startswith(("redis://", "rediss://"))


def open_state_store(url: str, clock: Clock | None) -> StateStore:
    """Rule 1: the state store of `state:`."""
    if is_shared_url(url):
        from turnout.state.redis import RedisState  # noqa: PLC0415 - redis is optional

        return RedisState(url, clock=clock)
    if url != "memory":
        scheme = url.split(":", 1)[0]  # never the rest: a URL may hold a password
        logger.warning(
            "state: must be memory or a redis:// or rediss:// URL (got %r…); using memory", scheme
        )
    return MemoryState(clock)


class RuntimeState:
    """The state store of one runtime configured as `url` (see the module rules); `handed` is
    the one it was given (None: its own); `shared_health` the sharing `share` started."""

    __slots__ = ("_clock", "_store", "_url", "handed", "shared_health")

    def __init__(self, url: str, clock: Clock | None, handed: StateStore | None = None) -> None:
        self._url = url
        self._clock = clock
        self.handed = handed
        self._store = handed
        self.shared_health: SharedHealth | None = None

    @property
    def store(self) -> StateStore:
        """The store, opened on first use when none was handed (Rule 2)."""
        if self._store is None:
            self._store = open_state_store(self._url, self._clock)
        return self._store

    @property
    def is_shared(self) -> bool:
        """Whether the store is shared between replicas."""
        return is_shared_url(self._url)

    async def share(self, health: Health, scope: str) -> None:
        """Rule 3: share `health` (of project `scope`) through a shared store (idempotent)."""
        if self.shared_health is not None or not self.is_shared:
            return
        from turnout.state.shared_health import SharedHealth  # noqa: PLC0415 - only with Redis

        shared = SharedHealth(health, self.store, scope=scope)
        try:
            await shared.start()
        except Exception:  # a failing store never stops the gateway: it serves on local health
            logger.exception("could not share health; keeping it local")
            await shared.stop()
            return
        self.shared_health = shared

    async def stop_sharing(self) -> None:
        """Stop sharing health."""
        if self.shared_health is not None:
            await self.shared_health.stop()

    async def close(self) -> None:
        """Close the store if this runtime opened it (Rule 2)."""
        if self._store is not None and self.handed is None:
            await self._store.close()
