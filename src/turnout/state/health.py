"""Health learned across replicas: cooldowns, parks and breaker trips published through the state
store and merged into every other replica's `Health`.

Rule 1: a notice carries its deadline as wall-clock epoch seconds, because monotonic clocks mean
nothing across processes; the receiver converts it to its own monotonic clock. A stored
notice's TTL only cleans it up; the deadline inside decides.
Rule 2: applying a notice goes through `Health.merge`, which never shortens a deadline held and
emits no event, so a merged notice is never published again (no echo between replicas).
Rule 3: a replica ignores its own notices (matched by `replica_id`).
Rule 4: the `Health` listener only queues (it may run on any thread and never blocks); a task
publishes. Malformed or expired notices are ignored; a full queue drops the newest notice.
Rule 5: notices are advisory: publishing through a degraded store reaches local state only, and
a replica that misses one learns the same thing from its own next failed call.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from turnout.routing.health import MAX_SKIP_SECONDS, Health, HealthEvent

if TYPE_CHECKING:
    from collections.abc import Hashable
    from types import TracebackType

    from turnout.state.base import StateStore, Subscription

__all__ = ["HEALTH_CHANNEL", "HealthNotice", "HealthPublisher"]

logger = logging.getLogger(__name__)

HEALTH_CHANNEL = "health"
"""The channel notices are published on (under the store's prefix)."""
_STORED = "health:"
_PUBLISHED = frozenset({"cooling_down", "parked", "open"})
_CLEANUP_GRACE = 60.0
_OUTBOX_SIZE = 1_000


@dataclass(frozen=True, slots=True)
class HealthNotice:
    """One published transition: `key` went `outcome` (`cooling_down`, `parked` or `open`)
    until `until` (UTC epoch seconds), as seen by replica `replica`."""

    replica: str
    key: Hashable
    outcome: str
    until: float

    def encode(self) -> bytes:
        """Compact JSON: `{"r": replica, "k": key, "o": outcome, "u": until}`."""
        key: Any = list(self.key) if isinstance(self.key, tuple) else self.key
        return orjson.dumps({"r": self.replica, "k": key, "o": self.outcome, "u": self.until})

    @classmethod
    def decode(cls, data: bytes) -> HealthNotice | None:
        """The notice in `data`, or None when it is not a well-formed notice."""
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(obj, dict):
            return None
        replica, key, outcome, until = obj.get("r"), obj.get("k"), obj.get("o"), obj.get("u")
        if isinstance(key, list) and all(_is_key_part(part) for part in key):
            key = tuple(key)
        if not (isinstance(replica, str) and isinstance(key, str | tuple)):
            return None
        if outcome not in _PUBLISHED or not isinstance(until, int | float):
            return None
        return cls(replica, key, str(outcome), float(until))

    @property
    def slot(self) -> str:
        """The store key this notice is kept under for replicas that start later."""
        digest = hashlib.sha256(orjson.dumps([self.outcome, _jsonable(self.key)])).hexdigest()
        return _STORED + digest[:32]


class HealthPublisher:
    """Share `health`'s cooldowns, parks and breaker trips with other replicas through `state`.

    `replica_id` names this process (default: a random id); `channel` (default `health`) is the
    store channel. Use `async with HealthPublisher(...)`, or `start()` and `stop()`. On start it
    also applies the notices other replicas stored, so a new replica learns current parks.
    `published`, `applied` and `dropped` count notices.
    """

    def __init__(
        self,
        health: Health,
        state: StateStore,
        replica_id: str | None = None,
        *,
        channel: str = HEALTH_CHANNEL,
    ) -> None:
        self.health = health
        self.state = state
        self.replica_id = replica_id if replica_id is not None else uuid.uuid4().hex[:12]
        self.channel = channel
        self.published = 0
        self.applied = 0
        self.dropped = 0
        self._outbox: asyncio.Queue[HealthNotice] = asyncio.Queue(_OUTBOX_SIZE)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._subscription: Subscription | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._observing = False
        self._running = False

    async def __aenter__(self) -> HealthPublisher:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Subscribe, apply stored notices, then publish this replica's transitions."""
        if self._running:
            return
        self._loop = asyncio.get_running_loop()
        self._subscription = await self.state.subscribe(self.channel)
        self._running = True
        if not self._observing:
            self.health.observe(self._on_event)
            self._observing = True
        self._tasks = [
            self._loop.create_task(self._publish_queued()),
            self._loop.create_task(self._apply_received(self._subscription)),
        ]
        await self._catch_up()

    async def stop(self) -> None:
        """Stop publishing and applying (queued notices are published first)."""
        if not self._running:
            return
        await self.flush()
        self._running = False
        if self._subscription is not None:
            await self._subscription.aclose()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def flush(self) -> None:
        """Wait until every queued notice has been published."""
        if self._running:
            await self._outbox.join()

    # -- outgoing

    def _on_event(self, event: HealthEvent) -> None:
        if not self._running or event.to not in _PUBLISHED or event.until is None:
            return
        clock = self.health.clock
        until = clock.wall() + (event.until - clock.now())
        notice = HealthNotice(self.replica_id, event.key, event.to, until)
        loop = self._loop
        if loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._enqueue(notice)
            return
        try:
            loop.call_soon_threadsafe(self._enqueue, notice)
        except RuntimeError:  # the loop has closed: nobody is left to publish
            self.dropped += 1

    def _enqueue(self, notice: HealthNotice) -> None:
        try:
            self._outbox.put_nowait(notice)
        except asyncio.QueueFull:
            self.dropped += 1

    async def _publish_queued(self) -> None:
        while True:
            notice = await self._outbox.get()
            try:
                await self._publish(notice)
            except Exception:
                logger.exception("could not publish a health notice for %r", notice.key)
            finally:
                self._outbox.task_done()

    async def _publish(self, notice: HealthNotice) -> None:
        if _jsonable(notice.key) is None:
            return  # a key only this process can name (not a string or a tuple of them)
        data = notice.encode()
        left = notice.until - self.health.clock.wall()
        if left <= 0:
            return
        await self.state.publish(self.channel, data)
        await self.state.set(notice.slot, data, min(left, MAX_SKIP_SECONDS) + _CLEANUP_GRACE)
        self.published += 1

    # -- incoming

    async def _apply_received(self, subscription: Subscription) -> None:
        async for data in subscription:
            self.apply(data)

    async def _catch_up(self) -> None:
        for slot in await self.state.scan(_STORED):
            data = await self.state.get(slot)
            if data is not None:
                self.apply(data)

    def apply(self, data: bytes) -> bool:
        """Merge one encoded notice into `health`; True when it was applied.

        Notices of this replica, malformed ones and those whose deadline has passed are
        ignored. The wall-clock deadline becomes a deadline on the health clock (at most 24 h).
        """
        notice = HealthNotice.decode(data)
        if notice is None or notice.replica == self.replica_id:
            return False
        clock = self.health.clock
        left = min(notice.until - clock.wall(), MAX_SKIP_SECONDS)
        if left <= 0:
            return False
        with contextlib.suppress(ValueError):
            self.health.merge(notice.key, notice.outcome, clock.now() + left)
            self.applied += 1
            return True
        return False


def _is_key_part(part: object) -> bool:
    return part is None or isinstance(part, str | int | float)


def _jsonable(key: Hashable) -> str | list[Any] | None:
    if isinstance(key, str):
        return key
    if isinstance(key, tuple) and all(_is_key_part(part) for part in key):
        return list(key)
    return None
