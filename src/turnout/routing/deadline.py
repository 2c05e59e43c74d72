"""Deadlines of calls: cancel the awaiting task when its time is up.

Rule 1: a deadline cancels only the task that armed it, and `disarm()` tells a cancellation it
caused (a timeout) from one that came from elsewhere (which stays a cancellation), exactly as
`asyncio.timeout` does.
Rule 2: on the real clock every deadline of a loop shares one loop timer (`_LoopDeadlines`);
on any other clock (a `FakeClock`) each deadline is a watchdog task sleeping on that clock.
Rule 3: an `IdleWatch` bounds each of many waits in a row (a stream's reads) with one heap
entry or one watchdog for them all: a wait only moves its due time, and an entry that comes due
early is pushed again at the due time. A stream read of ten events costs ten attribute writes,
not ten timers.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import weakref
from typing import TYPE_CHECKING, Any, Protocol

from turnout.routing.clock import LoopClock

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager
    from types import TracebackType

    from turnout.routing.clock import Clock

__all__ = ["Deadline", "IdleWatch", "call_deadline"]


class _LoopDeadlines:
    """Every `Deadline` of one event loop behind a single loop timer.

    Rule 1: the heap holds `(when, seq, deadline)`; only the earliest live entry has a loop
    timer, re-armed only when a new deadline is earlier (calls share a few timeouts, so this is
    rare). Rule 2: a disarmed deadline stays in the heap marked done; once the done entries are
    more than half the heap it is rebuilt, so memory stays bounded by the calls in flight.
    A per-call loop timer would cost a timer handle, its heap pushes and its cancellation.
    """

    __slots__ = ("_armed", "_dead", "_handle", "_heap", "_loop", "_seq")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._heap: list[tuple[float, int, _Due]] = []
        self._seq = itertools.count()
        self._dead = 0
        self._handle: asyncio.TimerHandle | None = None
        self._armed = math.inf

    def add(self, deadline: _Due, seconds: float) -> None:
        self.add_at(deadline, self._loop.time() + seconds)

    def add_at(self, deadline: _Due, when: float) -> None:
        heapq.heappush(self._heap, (when, next(self._seq), deadline))
        if when < self._armed:
            self._arm(when)

    def discard(self) -> None:
        self._dead += 1
        if self._dead > _COMPACT_AFTER and self._dead * 2 > len(self._heap):
            self._heap = [entry for entry in self._heap if not entry[2].done]
            heapq.heapify(self._heap)
            self._dead = 0

    def _arm(self, when: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._armed = when
        self._handle = self._loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self._armed = math.inf
        heap = self._heap
        due = self._loop.time() + _EARLY
        while heap and (heap[0][0] <= due or heap[0][2].done):
            deadline = heapq.heappop(heap)[2]
            if deadline.done:
                self._dead -= 1
            else:
                deadline.expire()
        if heap:
            self._arm(heap[0][0])


class _Due(Protocol):
    """What `_LoopDeadlines` holds: a deadline or an idle watch."""

    done: bool

    def expire(self) -> None: ...


_COMPACT_AFTER = 64
_EARLY = 0.001  # a loop timer may fire a hair before its time; a deadline may too
_loop_deadlines: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopDeadlines] = (
    weakref.WeakKeyDictionary()
)


def _deadlines_of(loop: asyncio.AbstractEventLoop) -> _LoopDeadlines:
    deadlines = _loop_deadlines.get(loop)
    if deadlines is None:
        deadlines = _loop_deadlines[loop] = _LoopDeadlines(loop)
    return deadlines


class _LastLoop:
    """The deadlines of the loop used last (skips the weak-dictionary lookup)."""

    __slots__ = ("deadlines", "loop")

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.deadlines: _LoopDeadlines | None = None


_last = _LastLoop()


class Deadline:
    """Cancels the current task once `seconds` of `clock` time pass, so the awaited call ends.

    `disarm()` stops it and says whether the deadline cut the call (then the caller records a
    timeout); a cancellation that came from elsewhere stays a cancellation. On the real clock
    it is one heap entry (`_LoopDeadlines`); on any other clock a watchdog task sleeping on it.
    """

    __slots__ = ("_cancelling", "_loop_deadlines", "_task", "_watchdog", "done", "expired")

    def __init__(self, clock: Clock, seconds: float) -> None:
        task = asyncio.current_task()
        assert task is not None, "a deadline needs a running task"
        self._task: asyncio.Task[Any] | None = task
        self._cancelling = task.cancelling()
        self.expired = False
        self.done = False
        self._watchdog: asyncio.Future[None] | None = None
        if type(clock) is LoopClock:
            loop = task.get_loop()
            deadlines = _last.deadlines
            if _last.loop is not loop or deadlines is None:
                deadlines = _last.deadlines = _deadlines_of(loop)
                _last.loop = loop
            self._loop_deadlines = deadlines
            deadlines.add(self, seconds)
        else:
            self._watchdog = asyncio.ensure_future(self._watch(clock, seconds))

    def expire(self) -> None:
        """Time is up: cancel the task (disarm() will tell it was the deadline)."""
        self.done = True
        self.expired = True
        if self._task is not None:
            self._task.cancel()

    async def _watch(self, clock: Clock, seconds: float) -> None:
        await clock.sleep(seconds)
        self.expire()

    def disarm(self) -> bool:
        """Stop the deadline; True when it expired and its cancellation is the only one.

        The task is forgotten, so a done entry waiting in the heap holds no finished request.
        """
        if self._watchdog is not None:
            self._watchdog.cancel()
        elif not self.done:
            self.done = True
            self._loop_deadlines.discard()
        task, self._task = self._task, None
        return self.expired and task is not None and task.uncancel() <= self._cancelling


class IdleWatch:
    """Cancels the current task when one wait between `watch()` and `rest()` lasts more than
    `seconds` of `clock` time (Rule 3). Made inside the task it watches; `close()` when done.

    `rest()` says whether the watch cut the wait, exactly as `Deadline.disarm` does: True only
    when its cancellation is the only one, so a cancellation from elsewhere stays one.
    """

    __slots__ = (
        "_cancelling", "_clock", "_due", "_entry", "_loop_deadlines", "_now", "_seconds",
        "_task", "_waiting", "_watchdog", "done", "expired",
    )  # fmt: skip

    def __init__(self, clock: Clock, seconds: float) -> None:
        task = asyncio.current_task()
        assert task is not None, "an idle watch needs a running task"
        self._task = task
        self._clock = clock
        self._seconds = seconds
        self._due = math.inf
        self._waiting = False
        self._entry = False  # whether a heap entry (or the watchdog) stands for the watch
        self._cancelling = 0
        self.done = False
        self.expired = False
        self._watchdog: asyncio.Task[None] | None = None
        self._loop_deadlines: _LoopDeadlines | None = None
        if type(clock) is LoopClock:
            loop = task.get_loop()
            self._loop_deadlines = _deadlines_of(loop)
            self._now = loop.time
        else:
            self._now = clock.now

    def watch(self) -> None:
        """A wait begins: it may last `seconds`."""
        self._due = self._now() + self._seconds
        self._waiting = True
        self._cancelling = self._task.cancelling()
        if not self._entry:
            self._entry = True
            deadlines = self._loop_deadlines
            if deadlines is not None:
                deadlines.add_at(self, self._due)
            else:
                self._watchdog = asyncio.ensure_future(self._watch())

    def rest(self) -> bool:
        """The wait ended: True when the watch cut it (and its cancellation is the only one)."""
        self._waiting = False
        if not self.expired:
            return False
        self.expired = False
        return self._task.uncancel() <= self._cancelling

    def expire(self) -> None:
        """The entry came due: cut the wait when it is over its time, else wait on (Rule 3)."""
        self._entry = False
        if self.done or not self._waiting:
            return  # the next wait pushes an entry again
        deadlines = self._loop_deadlines
        if deadlines is not None and self._now() < self._due - _EARLY:
            self._entry = True
            deadlines.add_at(self, self._due)
            return
        self.expired = True
        self._task.cancel()

    async def _watch(self) -> None:
        clock = self._clock
        while not self.done and self._waiting and (left := self._due - clock.now()) > 0:
            await clock.sleep(left)
        self.expire()

    def close(self) -> None:
        """No more waits: the entry (or the watchdog) goes."""
        if self.done:
            return
        self.done = True
        if self._watchdog is not None:
            self._watchdog.cancel()
        elif self._entry and self._loop_deadlines is not None:
            self._loop_deadlines.discard()


class _DeadlineBlock:
    """`async with call_deadline(...)`: a `Deadline` around a block, raising `TimeoutError`."""

    __slots__ = ("_clock", "_deadline", "_seconds")

    def __init__(self, clock: Clock, seconds: float) -> None:
        self._clock = clock
        self._seconds = seconds

    async def __aenter__(self) -> None:
        self._deadline = Deadline(self._clock, self._seconds)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._deadline.disarm() and exc_type is asyncio.CancelledError:
            raise TimeoutError from exc


def call_deadline(clock: Clock, seconds: float) -> AbstractAsyncContextManager[None]:
    """A block that raises `TimeoutError` after `seconds` of `clock` time."""
    return _DeadlineBlock(clock, seconds)
