"""Time for the engine: the `Clock` protocol, the event-loop clock, and `FakeClock` for tests.

Rule 1: nothing in the engine reads `time.monotonic()` or calls `asyncio.sleep()` directly; it
asks its clock. So a `FakeClock` makes breakers, cooldowns, hedges and backoff testable without
waiting.
Rule 2: times are float seconds. `now()` is monotonic and only meaningful as a difference;
`wall()` is UTC epoch seconds, used only for `started_at` stamps and HTTP dates.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Awaitable

__all__ = ["Clock", "FakeClock", "LoopClock", "wait_or_sleep"]

T = TypeVar("T")


@runtime_checkable
class Clock(Protocol):
    """What the engine needs of time."""

    def now(self) -> float:
        """Monotonic seconds."""
        ...

    def wall(self) -> float:
        """UTC epoch seconds."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Suspend for `seconds` of this clock's time (≤ 0 yields once)."""
        ...


class LoopClock:
    """The real clock: the running event loop's time and `asyncio.sleep`."""

    __slots__ = ()

    def now(self) -> float:
        """Monotonic seconds (`time.monotonic`, the clock asyncio's default loop uses)."""
        return time.monotonic()

    def wall(self) -> float:
        """UTC epoch seconds."""
        return time.time()

    async def sleep(self, seconds: float) -> None:
        """`asyncio.sleep`."""
        await asyncio.sleep(max(seconds, 0.0))


class FakeClock:
    """A clock that only moves when told to.

    `advance(seconds)` moves time forward and wakes every sleeper whose deadline has come (in
    deadline order). `run(awaitable)` drives a coroutine to completion, jumping time to the next
    sleeper's deadline whenever every task is waiting on the clock — so a test of a 60 s breaker
    runs in microseconds. `start` sets the initial monotonic reading, `wall_start` the epoch time.
    """

    def __init__(self, start: float = 0.0, *, wall_start: float = 1_767_225_600.0) -> None:
        self._now = start
        self._wall_offset = wall_start - start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        """The current fake monotonic time."""
        return self._now

    def wall(self) -> float:
        """The current fake epoch time (moves with `now`)."""
        return self._now + self._wall_offset

    async def sleep(self, seconds: float) -> None:
        """Wait until `advance` has moved time `seconds` past now."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), future))
        try:
            await future
        finally:
            if not future.done():
                future.cancel()

    def advance(self, seconds: float) -> None:
        """Move time forward by `seconds` and wake each sleeper that is due, in order."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        self._advance_to(self._now + seconds)

    def _advance_to(self, deadline: float) -> None:
        self._now = max(self._now, deadline)
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)

    @property
    def next_deadline(self) -> float | None:
        """The earliest pending sleeper's deadline, or None when nobody sleeps."""
        self._drop_cancelled()
        return self._sleepers[0][0] if self._sleepers else None

    def _drop_cancelled(self) -> None:
        while self._sleepers and self._sleepers[0][2].done():
            heapq.heappop(self._sleepers)

    async def settle(self) -> None:
        """Let every runnable task run until all of them wait (on the clock or elsewhere)."""
        loop = asyncio.get_running_loop()
        ready: Any = getattr(loop, "_ready", None)
        for _ in range(10_000):
            await asyncio.sleep(0)
            if ready is not None and not ready:
                return
        # No view of the ready queue (a foreign loop): 10,000 yields is as settled as it gets.

    async def run(self, awaitable: Awaitable[T], *, limit: float = 86_400.0 * 7) -> T:
        """Await `awaitable`, jumping the clock forward whenever everything else waits on it.

        Raises `AssertionError` when the awaitable is stuck with no sleeper to wake (a deadlock)
        or when more than `limit` fake seconds pass.
        """
        task = asyncio.ensure_future(awaitable)
        start = self._now
        try:
            while True:
                await self.settle()
                if task.done():
                    return task.result()
                deadline = self.next_deadline
                if deadline is None:
                    raise AssertionError(
                        "FakeClock.run: the awaitable waits on nothing the clock drives"
                    )
                if deadline - start > limit:
                    raise AssertionError(f"FakeClock.run: more than {limit} fake seconds passed")
                self._advance_to(deadline)
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)


async def wait_or_sleep(clock: Clock, event: asyncio.Event, seconds: float) -> None:
    """Return once `event` is set or `seconds` of `clock` time have passed, whichever comes
    first (at once when it is set already); neither wait is left running."""
    if event.is_set():
        return
    news = asyncio.ensure_future(event.wait())
    sleep = asyncio.ensure_future(clock.sleep(seconds))
    try:
        await asyncio.wait({news, sleep}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (news, sleep):
            task.cancel()
        await asyncio.gather(news, sleep, return_exceptions=True)
