"""The idle watch: one timer bounds each of many waits in a row (a committed stream's reads)."""

from __future__ import annotations

import asyncio

import pytest

from turnout.routing import deadline as deadlines
from turnout.routing.clock import FakeClock, LoopClock
from turnout.routing.deadline import IdleWatch


async def _waits(clock: FakeClock, gaps: list[float], idle: float) -> list[bool]:
    """Wait `gaps` seconds in turn under one watch of `idle` seconds: each wait's `rest()`
    (True: the watch cut it, and the waits after it did not run)."""
    watch = IdleWatch(clock, idle)
    told = []
    try:
        for gap in gaps:
            watch.watch()
            try:
                await clock.sleep(gap)
            except asyncio.CancelledError:
                told.append(watch.rest())
                break
            told.append(watch.rest())
    finally:
        watch.close()
    return told


async def test_each_wait_has_the_whole_idle_time_not_the_waits_together() -> None:
    """Five waits of 5 s under a 7 s watch: 25 s in all, none cut."""
    clock = FakeClock()
    assert await clock.run(_waits(clock, [5, 5, 5, 5, 5], idle=7)) == [False] * 5
    assert clock.now() == 25


async def test_a_wait_past_the_idle_time_is_cut_at_its_own_start_plus_the_idle_time() -> None:
    """Waits of 5 s and 5 s, then one of 100 s: cut at 10 + 7 = 17 s."""
    clock = FakeClock()
    assert await clock.run(_waits(clock, [5, 5, 100, 5], idle=7)) == [False, False, True]
    assert clock.now() == 17


async def test_time_between_waits_does_not_count() -> None:
    """A 10 s pause between two 5 s waits (the caller was slow to read) is not idleness."""
    clock = FakeClock()
    watch = IdleWatch(clock, 7)

    async def run() -> list[bool]:
        watch.watch()
        await clock.sleep(5)
        first = watch.rest()
        await clock.sleep(10)  # outside a wait
        watch.watch()
        await clock.sleep(5)
        return [first, watch.rest()]

    try:
        assert await clock.run(run()) == [False, False]
    finally:
        watch.close()
    assert clock.now() == 20


async def test_a_cancellation_from_elsewhere_stays_a_cancellation() -> None:
    """A task cancelled during a watched wait: `rest()` says the watch did not cut it."""
    clock = FakeClock()
    told: list[bool] = []

    async def waits() -> None:
        watch = IdleWatch(clock, 60)
        watch.watch()
        try:
            await clock.sleep(10)
        except asyncio.CancelledError:
            told.append(watch.rest())
            raise
        finally:
            watch.close()

    task = asyncio.ensure_future(waits())
    await clock.settle()
    clock.advance(3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert told == [False]


async def test_on_the_loop_clock_an_entry_due_early_is_pushed_to_the_new_due_time() -> None:
    """On the real clock the watch is one heap entry: when it comes due while a later wait has
    moved the due time, it is pushed again at that time and nothing is cancelled; when it comes
    due past the due time, the wait is cut. (The entry's firing is called directly, with the
    watch's reading of the time set by the test: no real time passes.)"""
    loop = asyncio.get_running_loop()
    base = loop.time() + 1000.0
    offset = [0.0]
    watch = IdleWatch(LoopClock(), 60)
    watch._now = lambda: base + offset[0]  # the test's time
    heap = deadlines._deadlines_of(loop)._heap
    task = asyncio.current_task()
    assert task is not None
    try:
        watch.watch()  # due at base + 60
        offset[0] = 30.0
        assert watch.rest() is False
        watch.watch()  # due at base + 90, the entry still at base + 60
        assert [when for when, _, due in heap if due is watch] == [base + 60]
        offset[0] = 60.0
        heap[:] = [entry for entry in heap if entry[2] is not watch]  # as the timer pops it
        watch.expire()
        assert [when for when, _, due in heap if due is watch] == [base + 90]
        assert task.cancelling() == 0
        offset[0] = 90.0
        heap[:] = [entry for entry in heap if entry[2] is not watch]
        watch.expire()
        assert task.cancelling() == 1
        assert watch.rest() is True
        assert task.cancelling() == 0
    finally:
        watch.close()
    with pytest.raises(asyncio.CancelledError):  # the cut's cancellation reaches the next await
        await asyncio.sleep(0)


async def test_an_entry_due_between_waits_cancels_nothing_and_the_next_wait_pushes_one() -> None:
    """The entry comes due while no wait runs: nothing is cut, and the next wait adds an entry."""
    loop = asyncio.get_running_loop()
    base = loop.time() + 1000.0
    offset = [0.0]
    watch = IdleWatch(LoopClock(), 60)
    watch._now = lambda: base + offset[0]
    heap = deadlines._deadlines_of(loop)._heap
    task = asyncio.current_task()
    assert task is not None
    try:
        watch.watch()
        watch.rest()
        offset[0] = 70.0
        heap[:] = [entry for entry in heap if entry[2] is not watch]
        watch.expire()
        assert task.cancelling() == 0
        assert not [entry for entry in heap if entry[2] is watch]
        watch.watch()
        assert [when for when, _, due in heap if due is watch] == [base + 130]
    finally:
        watch.close()
        watch.rest()
