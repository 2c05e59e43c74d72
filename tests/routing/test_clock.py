"""FakeClock: time moves only when told, sleepers wake in deadline order, run() auto-advances."""

from __future__ import annotations

import asyncio

import pytest

from turnout.routing.clock import Clock, FakeClock, LoopClock, wait_or_sleep


def test_fake_clock_starts_where_told_and_wall_moves_with_now() -> None:
    """now() starts at `start`; wall() moves by the same amount as now()."""
    clock = FakeClock(10.0, wall_start=1000.0)
    assert clock.now() == 10.0
    clock.advance(5)
    assert clock.now() == 15.0
    assert clock.wall() == 1005.0


def test_advance_refuses_to_go_backwards() -> None:
    """A clock never runs backwards."""
    with pytest.raises(ValueError, match="backwards"):
        FakeClock().advance(-1)


async def test_sleepers_wake_only_when_their_deadline_comes() -> None:
    """A sleeper stays asleep until advance() reaches its deadline (equal counts as reached)."""
    clock = FakeClock()
    woke: list[str] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append(name)

    tasks = [asyncio.create_task(sleeper("b", 8)), asyncio.create_task(sleeper("a", 3))]
    await clock.settle()
    clock.advance(2.9)
    await clock.settle()
    assert woke == []
    clock.advance(0.1)
    await clock.settle()
    assert woke == ["a"]
    clock.advance(5)
    await asyncio.gather(*tasks)
    assert woke == ["a", "b"]


async def test_run_jumps_time_to_each_deadline_without_real_waiting() -> None:
    """run() drives a coroutine whose sleeps add up to an hour in fake time only."""
    clock = FakeClock()

    async def work() -> float:
        for _ in range(60):
            await clock.sleep(60)
        return clock.now()

    assert await clock.run(work()) == 3600.0


async def test_run_reports_a_deadlock_instead_of_hanging() -> None:
    """run() raises when the awaitable waits on something the clock never wakes."""
    clock = FakeClock()
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    with pytest.raises(AssertionError, match="waits on nothing"):
        await clock.run(never)


async def test_cancelled_sleeper_is_forgotten() -> None:
    """A cancelled sleep leaves no deadline behind."""
    clock = FakeClock()
    task = asyncio.create_task(clock.sleep(5))
    await clock.settle()
    assert clock.next_deadline == 5
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert clock.next_deadline is None


async def test_zero_sleep_yields_without_a_deadline() -> None:
    """sleep(0) yields once and registers nothing."""
    clock = FakeClock()
    await clock.sleep(0)
    assert clock.next_deadline is None


def test_both_clocks_satisfy_the_protocol() -> None:
    """LoopClock and FakeClock are Clocks."""
    assert isinstance(LoopClock(), Clock)
    assert isinstance(FakeClock(), Clock)


async def test_loop_clock_is_monotonic() -> None:
    """LoopClock.now() never decreases."""
    clock = LoopClock()
    first = clock.now()
    await clock.sleep(0)
    assert clock.now() >= first


async def test_wait_or_sleep_returns_on_the_event_or_after_the_seconds() -> None:
    """The event ends the wait early; without it the clock's seconds do; no sleeper is left."""
    clock = FakeClock()
    event = asyncio.Event()
    early = asyncio.create_task(wait_or_sleep(clock, event, 10))
    await clock.settle()
    event.set()
    await early
    assert clock.now() == 0.0
    assert clock.next_deadline is None
    event.clear()
    assert await clock.run(wait_or_sleep(clock, event, 3)) is None
    assert clock.now() == 3.0
