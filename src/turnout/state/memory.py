"""Per-process shared state: a bounded LRU dict with TTLs, and in-process publish/subscribe.

Rule 1: an entry whose deadline is now or past is gone: never returned, counted or scanned; it is
removed when read, when evicting, and by a sweep at most once per `sweep_every` seconds.
Rule 2: at most `max_entries` entries and `max_bytes` bytes (keys plus values); the least
recently used entry is evicted first. `get`, `set` and `touch` count as use.
Rule 3: `publish` delivers to every current subscriber of the channel without awaiting; a
subscriber whose queue is full loses its oldest message, never blocks the publisher.
Rule 4: time is read only from the injected clock, so TTLs expire on a `FakeClock` in tests.
Rule 5: nothing here awaits I/O; every operation completes without suspending.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Any

from turnout.routing.clock import Clock, LoopClock
from turnout.state.base import check_ttl

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["MemoryState", "QueuedSubscription"]

DEFAULT_MAX_ENTRIES = 10_000
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_QUEUE_SIZE = 1_000


class QueuedSubscription:
    """A subscription fed by `deliver()`: a bounded queue that drops its oldest message when
    full (`dropped` counts them). `on_close` runs once, on the first `aclose()`."""

    def __init__(
        self, limit: int = DEFAULT_QUEUE_SIZE, on_close: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        self._messages: deque[bytes] = deque()
        self._limit = limit
        self._wake = asyncio.Event()
        self._closed = False
        self._on_close = on_close
        self.dropped = 0

    @property
    def closed(self) -> bool:
        """True after `aclose()`."""
        return self._closed

    def deliver(self, message: bytes) -> None:
        """Queue `message` for the reader (never blocks)."""
        if self._closed:
            return
        if len(self._messages) >= self._limit:
            self._messages.popleft()
            self.dropped += 1
        self._messages.append(message)
        self._wake.set()

    def __aiter__(self) -> QueuedSubscription:
        return self

    async def __anext__(self) -> bytes:
        while True:
            if self._closed:
                raise StopAsyncIteration
            if self._messages:
                return self._messages.popleft()
            self._wake.clear()
            await self._wake.wait()

    async def aclose(self) -> None:
        """End the iteration (a waiting reader wakes and stops) and run `on_close` once."""
        if self._closed:
            return
        self._closed = True
        self._messages.clear()
        self._wake.set()
        if self._on_close is not None:
            await self._on_close()


class MemoryState:
    """State kept in this process: the default, enough for a single gateway process.

    `clock` reads time for TTLs (default: the monotonic loop clock); `max_entries` (default
    10,000) and `max_bytes` (default 64 MiB of keys plus values) bound the store, evicting the
    least recently used entry; `queue_size` (default 1,000) bounds each subscription's backlog;
    `sweep_every` (default 60 s) is how often expired entries are swept on write.
    """

    def __init__(
        self,
        clock: Clock | None = None,
        *,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        sweep_every: float = 60.0,
    ) -> None:
        if max_entries < 1 or max_bytes < 1 or queue_size < 1:
            raise ValueError("max_entries, max_bytes and queue_size must be at least 1")
        self.clock: Clock = clock if clock is not None else LoopClock()
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._queue_size = queue_size
        self._sweep_every = sweep_every
        self._next_sweep = self.clock.now() + sweep_every
        self._entries: OrderedDict[str, tuple[bytes, float]] = OrderedDict()
        self._bytes = 0
        self._channels: dict[str, set[QueuedSubscription]] = {}
        self.evicted = 0

    def __len__(self) -> int:
        """Entries held, expired ones not yet removed included."""
        return len(self._entries)

    @property
    def size_bytes(self) -> int:
        """Bytes of keys plus values held."""
        return self._bytes

    @property
    def healthy(self) -> bool:
        """Always True: local memory is always reachable."""
        return True

    async def probe(self) -> bool:
        """Always True, at once: there is nothing to ask."""
        return True

    def describe(self) -> dict[str, Any]:
        """`{"backend": "memory", "healthy": True, "detail": …, "entries": n}`."""
        return {
            "backend": "memory",
            "healthy": True,
            "detail": "per-process state",
            "entries": len(self._entries),
        }

    async def get(self, key: str) -> bytes | None:
        """The value under `key`, or None when absent or expired."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if self.clock.now() >= entry[1]:
            self._remove(key)
            return None
        self._entries.move_to_end(key)
        return entry[0]

    async def set(self, key: str, value: bytes, ttl: float) -> None:
        """Store `value` under `key` for `ttl` seconds, evicting least recently used entries."""
        seconds = check_ttl(ttl)
        now = self.clock.now()
        if key in self._entries:
            self._remove(key)
        self._entries[key] = (bytes(value), now + seconds)
        self._bytes += len(key) + len(value)
        if now >= self._next_sweep:
            self._sweep(now)
        self._evict()

    async def delete(self, key: str) -> None:
        """Remove `key` (absent keys are fine)."""
        if key in self._entries:
            self._remove(key)

    async def touch(self, key: str, ttl: float) -> bool:
        """Make `key` expire `ttl` seconds from now; False when absent or expired."""
        seconds = check_ttl(ttl)
        entry = self._entries.get(key)
        now = self.clock.now()
        if entry is None or now >= entry[1]:
            if entry is not None:
                self._remove(key)
            return False
        self._entries[key] = (entry[0], now + seconds)
        self._entries.move_to_end(key)
        return True

    async def scan(self, prefix: str, *, limit: int = 1000) -> list[str]:
        """Up to `limit` live keys starting with `prefix`."""
        now = self.clock.now()
        found: list[str] = []
        for key, (_, until) in self._entries.items():
            if len(found) >= limit:
                break
            if key.startswith(prefix) and now < until:
                found.append(key)
        return found

    async def claim(self, key: str, value: bytes, ttl: float) -> float:
        """Take `key` for `ttl` seconds unless it is held: 0.0, else the holder's seconds left."""
        entry = self._entries.get(key)
        if entry is not None:
            left = entry[1] - self.clock.now()
            if left > 0:
                return left
        await self.set(key, value, ttl)
        return 0.0

    async def unclaim(self, key: str, value: bytes) -> None:
        """Free `key` if it still holds `value`."""
        entry = self._entries.get(key)
        if entry is not None and entry[0] == value:
            self._remove(key)

    async def publish(self, channel: str, message: bytes) -> None:
        """Deliver `message` to every current subscriber of `channel`."""
        for subscription in list(self._channels.get(channel, ())):
            subscription.deliver(message)

    async def subscribe(self, channel: str) -> QueuedSubscription:
        """A subscription to `channel`, registered before this returns."""
        subscribers = self._channels.setdefault(channel, set())

        async def unregister() -> None:
            subscribers.discard(subscription)
            if not subscribers and self._channels.get(channel) is subscribers:
                del self._channels[channel]

        subscription = QueuedSubscription(self._queue_size, unregister)
        subscribers.add(subscription)
        return subscription

    async def close(self) -> None:
        """End every subscription and drop every entry."""
        for subscribers in list(self._channels.values()):
            for subscription in list(subscribers):
                await subscription.aclose()
        self._channels.clear()
        self._entries.clear()
        self._bytes = 0

    def _remove(self, key: str) -> None:
        value, _ = self._entries.pop(key)
        self._bytes -= len(key) + len(value)

    def _evict(self) -> None:
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            key = next(iter(self._entries))
            self._remove(key)
            self.evicted += 1

    def _sweep(self, now: float) -> None:
        self._next_sweep = now + self._sweep_every
        for key in [k for k, (_, until) in self._entries.items() if now >= until]:
            self._remove(key)
