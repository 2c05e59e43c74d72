"""Health learned across replicas: cooldowns, parks, breaker trips and closes published through
the state store and applied to every other replica's `Health`.

Rule 1: a notice carries its times as wall-clock epoch seconds, because monotonic clocks mean
nothing across processes; the receiver converts them to its own monotonic clock. A stored
notice's TTL only cleans it up; the deadline inside decides.
Rule 2: applying a notice goes through `Health.apply_remote`, which never shortens a deadline
held, ignores stale news and emits no event, so an applied notice is never published again (no
echo between replicas).
Rule 3: a replica ignores its own notices (matched by `replica_id`).
Rule 4: the `Health` listener only queues (it may run on any thread and never blocks); a task
publishes. Malformed or expired notices are ignored; a full queue drops the newest notice.
Rule 5: notices are advisory: publishing through a degraded store reaches local state only, and
a replica that misses one learns the same thing from its own next failed call.
Rule 6: cooldowns, parks and trips are also stored (one entry per key and kind) so that a replica
that starts applies the current ones; a close deletes the key's stored entries.
Rule 7: a watch task asks the store about once a second (`StateStore.probe`). When a degraded
store recovers, the replica applies the stored notices again and publishes its own that were
published during the outage (closes, and deadlines still running), since none reached the
others.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from turnout.routing.health import MAX_SKIP_SECONDS, Health, HealthEvent

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

    from turnout.state.base import StateStore, Subscription

__all__ = ["HEALTH_CHANNEL", "HealthNotice", "HealthPublisher", "is_shareable", "slot_of"]

logger = logging.getLogger(__name__)

HEALTH_CHANNEL = "health"
"""The channel notices are published on (under the store's prefix)."""
_STORED = "health:"
_HELD = ("cooling_down", "parked", "open")
_PUBLISHED = frozenset({*_HELD, "closed"})
_CLEANUP_GRACE = 60.0
_OUTBOX_SIZE = 1_000
_WATCH_EVERY = 1.0


@dataclass(frozen=True, slots=True)
class HealthNotice:
    """One published transition: `key` went `outcome` (`cooling_down`, `parked` or `open`)
    until `until`, or `closed` (then `until` is when), as seen by replica `replica` at `at`
    (None: unknown, taken as when it arrives). Times are UTC epoch seconds."""

    replica: str
    key: Hashable
    outcome: str
    until: float
    at: float | None = None

    def encode(self) -> bytes:
        """Compact JSON: `{"r": replica, "k": key, "o": outcome, "u": until, "a": at}`."""
        key: Any = list(self.key) if isinstance(self.key, tuple) else self.key
        fields = {"r": self.replica, "k": key, "o": self.outcome, "u": self.until}
        if self.at is not None:
            fields["a"] = self.at
        return orjson.dumps(fields)

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
        at = obj.get("a")
        when = float(at) if isinstance(at, int | float) and not isinstance(at, bool) else None
        return cls(replica, key, str(outcome), float(until), when)

    @property
    def slot(self) -> str:
        """The store key this notice is kept under for replicas that start later."""
        return slot_of(self.outcome, self.key)


def slot_of(outcome: str, key: Hashable, scope: str = "") -> str:
    """The store key of `key`'s stored `outcome` notice (under `scope`, when given)."""
    digest = hashlib.sha256(orjson.dumps([outcome, _jsonable(key)])).hexdigest()
    return f"{_STORED}{scope}:{digest[:32]}" if scope else _STORED + digest[:32]


class HealthPublisher:
    """Share `health`'s cooldowns, parks and breaker trips with other replicas through `state`.

    `replica_id` names this process (default: a random id); `channel` (default `health`) is the
    store channel; `scope` (default none) keeps one project's keys apart from another's that
    share the store (channel and stored notices both carry it). Use `async with
    HealthPublisher(...)`, or `start()` and `stop()`. On start it also applies the notices other
    replicas stored, so a new replica learns current parks. `published`, `applied`, `dropped`
    and `resyncs` count notices and re-syncs after an outage; `on_applied` hears every applied
    notice and `on_store` every change of the store's health (True: reachable).
    """

    def __init__(
        self,
        health: Health,
        state: StateStore,
        replica_id: str | None = None,
        *,
        channel: str = HEALTH_CHANNEL,
        scope: str = "",
    ) -> None:
        self.health = health
        self.state = state
        self.replica_id = replica_id if replica_id is not None else uuid.uuid4().hex[:12]
        self.scope = scope
        self.channel = f"{channel}:{scope}" if scope else channel
        self.published = 0
        self.applied = 0
        self.dropped = 0
        self.resyncs = 0
        self.on_applied: list[Callable[[HealthNotice], None]] = []
        self.on_store: list[Callable[[bool], None]] = []
        self._unsent: dict[str, HealthNotice] = {}  # published during an outage (Rule 7)
        self._up = True
        self._outbox: asyncio.Queue[HealthNotice] = asyncio.Queue(_OUTBOX_SIZE)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._subscription: Subscription | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._observing = False
        self._running = False

    async def __aenter__(self) -> HealthPublisher:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
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
        self._up = self.state.healthy
        self._tell_store(self._up)
        await self._catch_up()
        self._tasks.append(self._loop.create_task(self._watch()))

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
        if not self._running or event.to not in _PUBLISHED:
            return
        clock = self.health.clock
        at = clock.wall() + (event.at - clock.now())
        if event.to == "closed":
            until = at
        elif event.until is None:
            return
        else:
            until = clock.wall() + (event.until - clock.now())
        notice = HealthNotice(self.replica_id, event.key, event.to, until, at)
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
        if notice.outcome == "closed":
            await self.state.publish(self.channel, data)
            for outcome in _HELD:  # Rule 6
                self._unsent.pop(self._slot(outcome, notice.key), None)
                await self.state.delete(self._slot(outcome, notice.key))
            self.published += 1
            if not self.state.healthy:  # Rule 7: the stored trip must still be cleared
                self._unsent[self._slot("closed", notice.key)] = notice
            return
        left = notice.until - self.health.clock.wall()
        if left <= 0:
            return
        slot = self._slot(notice.outcome, notice.key)
        await self.state.publish(self.channel, data)
        await self.state.set(slot, data, min(left, MAX_SKIP_SECONDS) + _CLEANUP_GRACE)
        self.published += 1
        if not self.state.healthy:
            self._unsent[slot] = notice  # Rule 7: published to this process only

    def _slot(self, outcome: str, key: Hashable) -> str:
        return slot_of(outcome, key, self.scope)

    # -- watching the store (Rule 7)

    async def _watch(self) -> None:
        while True:
            await self.health.clock.sleep(_WATCH_EVERY)
            await self.check_store()

    async def check_store(self) -> bool:
        """Ask the store now; after an outage, re-sync (Rule 7). Returns the store's health."""
        up = await self.state.probe()
        if up and not self._up:
            self._up = True
            self._tell_store(True)
            await self.resync()
        elif not up and self._up:
            self._up = False
            self._tell_store(False)
        return up

    async def resync(self) -> None:
        """Apply the stored notices again and publish this replica's own that an outage kept
        from the others (those still running)."""
        self.resyncs += 1
        await self._catch_up()
        unsent, self._unsent = self._unsent, {}
        for notice in unsent.values():
            if notice.outcome == "closed" or notice.until > self.health.clock.wall():
                self._enqueue(notice)

    def _tell_store(self, up: bool) -> None:
        for listener in list(self.on_store):
            try:
                listener(up)
            except Exception:
                logger.exception("a shared-state listener failed")

    # -- incoming

    async def _apply_received(self, subscription: Subscription) -> None:
        async for data in subscription:
            self.apply(data)

    async def _catch_up(self) -> None:
        prefix = f"{_STORED}{self.scope}:" if self.scope else _STORED
        for slot in await self.state.scan(prefix):
            data = await self.state.get(slot)
            if data is not None:
                self.apply(data)

    def apply(self, data: bytes) -> bool:
        """Apply one encoded notice to `health` (`Health.apply_remote`); True when it was
        taken (its deadline may still lose to a longer one held, or its news be stale).

        Notices of this replica, malformed ones and those whose deadline has passed are
        ignored. The wall-clock deadline becomes a deadline on the health clock (at most 24 h).
        """
        notice = HealthNotice.decode(data)
        if notice is None or notice.replica == self.replica_id:
            return False
        clock = self.health.clock
        now, wall = clock.now(), clock.wall()
        at = None if notice.at is None else now + min(notice.at - wall, 0.0)
        if notice.outcome == "closed":
            self.health.apply_remote(notice.key, "closed", at=now + min(notice.until - wall, 0.0))
        else:
            left = min(notice.until - wall, MAX_SKIP_SECONDS)
            if left <= 0:
                return False
            outcome: Any = notice.outcome
            self.health.apply_remote(notice.key, outcome, until=now + left, at=at)
        self.applied += 1
        for listener in list(self.on_applied):
            listener(notice)
        return True


def is_shareable(key: Hashable) -> bool:
    """Whether other processes can name `key`: a string, or a tuple of strings, numbers and
    None (a health key of any other shape stays in this process)."""
    return _jsonable(key) is not None


def _is_key_part(part: object) -> bool:
    return part is None or isinstance(part, str | int | float)


def _jsonable(key: Hashable) -> str | list[Any] | None:
    if isinstance(key, str):
        return key
    if isinstance(key, tuple) and all(_is_key_part(part) for part in key):
        return list(key)
    return None
