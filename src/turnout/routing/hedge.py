"""Hedging: a call that has not answered within `hedge_after` keeps running and the
next available target starts beside it; after another delay the next, and so on.

Rule 1: each target is called at most once per pass, without same-target retries.
Rule 2: the first accepted answer (for streams: the first stream to produce a token) wins; every
other call is cancelled and recorded `lost_race`, and counts for nothing.
Rule 3: a call that fails terminally cancels the others (recorded `cancelled`) and ends the pass.
Rule 4: when no call is running, the next target starts at once (plain failover).
Rule 5: when the delay passed but no target could start (the next one is held back behind a
closed way, `turnout.routing.gate`), the next one starts as soon as a call settles and lets it:
the delay is not waited again.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Literal

from turnout.routing.route_pass import final_ending, run_call

if TYPE_CHECKING:
    from turnout.routing.attempt import Call
    from turnout.routing.route_pass import RoutePass

__all__ = ["race"]


async def race(walk: RoutePass) -> Call | None:
    """Run `walk`'s calls hedged; the winning call, or None with `walk.ending` set."""
    hedge_after = walk.route.timeouts.hedge_after
    assert hedge_after is not None
    clock = walk.state.clock
    running: dict[asyncio.Task[None], Call] = {}
    timer: asyncio.Task[None] | None = None
    try:
        due = True
        while True:
            if due and await _start_next(walk, running):
                if timer is not None:
                    timer.cancel()
                timer = asyncio.ensure_future(clock.sleep(hedge_after))
            if not running:
                walk.ending = final_ending(walk)
                return None
            waiting: set[asyncio.Task[None]] = set(running)
            if timer is not None:
                waiting.add(timer)
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if timer in done:
                timer = None
            decided = await _settle(walk, running, done)
            if decided is not None:
                return decided or None
            # Rule 5: no timer left means the delay passed with nothing started since.
            due = timer is None or not running
    finally:
        if timer is not None:
            timer.cancel()
        await _cancel(running, lost=False)


async def _start_next(walk: RoutePass, running: dict[asyncio.Task[None], Call]) -> bool:
    """Start the next available target beside the running calls (True when one started)."""
    call = await walk.next_call()
    if call is None:
        return False
    call.hedge = bool(running)
    running[asyncio.ensure_future(run_call(walk, call))] = call
    return True


async def _settle(
    walk: RoutePass, running: dict[asyncio.Task[None], Call], done: set[asyncio.Task[None]]
) -> Call | Literal[False] | None:
    """Settle the finished calls: the winner, False when the pass must stop, None to go on."""
    for task in done:
        call = running.pop(task, None)
        if call is None:
            continue
        task.result()
        decision = walk.settle(call)
        if decision == "answer":
            await _cancel(running, lost=True)
            return call
        if decision == "stop":
            await _cancel(running, lost=False)
            return False
    return None


async def _cancel(running: dict[asyncio.Task[None], Call], *, lost: bool) -> None:
    """Cancel every running call (`lost`: they lost the race) and wait until they are gone."""
    if not running:
        return
    for task, call in running.items():
        call.lost = lost
        task.cancel()
    await asyncio.gather(*running, return_exceptions=True)
    running.clear()
