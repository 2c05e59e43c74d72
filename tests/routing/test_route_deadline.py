"""Call deadlines on the real event-loop clock: one loop timer, bounded memory, exact semantics."""

from __future__ import annotations

import asyncio

import pytest

from turnout.routing import deadline as deadlines
from turnout.routing.clock import LoopClock
from turnout.routing.deadline import Deadline, call_deadline
from turnout.routing.health import Health
from turnout.routing.route import Route, Target
from turnout.testing import ScriptedModel, turn
from turnout.wire.model import Message

QUESTION = [Message.user("Why is checkout failing?")]


async def test_a_hung_call_on_the_real_clock_is_cut_at_its_timeout() -> None:
    """On the loop clock, a 20 ms target timeout cuts a hung call and the backup answers."""
    route = Route(
        "r",
        [
            Target("a", ScriptedModel("a", "a-m", [turn.hang()]), timeout=0.02),
            Target("b", ScriptedModel("b", "b-m", [turn.answer("ok")])),
        ],
        health=Health(),
    )
    loop = asyncio.get_running_loop()
    started = loop.time()
    response = await asyncio.wait_for(route.complete(QUESTION), 5)
    assert 0.015 <= loop.time() - started < 2
    assert response.routing is not None
    assert response.routing.attempts[0].error_class == "timeout"


async def test_finished_calls_leave_no_growing_heap() -> None:
    """Thousands of quick calls with 600 s deadlines keep the loop's deadline heap small."""
    route = Route("r", [Target("a", ScriptedModel("a", "a-m", [turn.answer("ok")] * 2000))])
    for _ in range(2000):
        await route.complete(QUESTION)
    heap = deadlines._deadlines_of(asyncio.get_running_loop())._heap
    assert len(heap) <= 2 * deadlines._COMPACT_AFTER + 2


async def test_an_outer_cancellation_stays_a_cancellation() -> None:
    """A task cancelled from outside while under a deadline sees CancelledError, not timeout."""

    async def guarded() -> None:
        async with call_deadline(LoopClock(), 60):
            await asyncio.sleep(60)

    task = asyncio.ensure_future(guarded())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_an_expired_block_raises_timeout_error() -> None:
    """call_deadline raises TimeoutError when its time runs out on the loop clock."""
    with pytest.raises(TimeoutError):
        async with call_deadline(LoopClock(), 0.01):
            await asyncio.sleep(5)


async def test_disarm_reports_only_its_own_expiry() -> None:
    """disarm() is False for a deadline that never expired, and frees its task."""
    deadline = Deadline(LoopClock(), 60)
    assert deadline.disarm() is False
    assert deadline.done


async def test_shorter_deadlines_rearm_the_loop_timer() -> None:
    """A 10 ms deadline added after a 60 s one still fires on time."""
    slow = Deadline(LoopClock(), 60)
    with pytest.raises(TimeoutError):
        async with call_deadline(LoopClock(), 0.01):
            await asyncio.sleep(5)
    assert slow.disarm() is False
