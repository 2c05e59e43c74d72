"""Hedging, cancellation and on_routed."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

import pytest

from turnout import errors
from turnout.routing.route import Route, Target
from turnout.testing import FakeClock, ScriptedModel, isolated_health, turn
from turnout.wire.model import Message, Usage

if TYPE_CHECKING:
    from turnout.record import RoutingRecord

QUESTION = [Message.user("Why is checkout failing?")]


def scripted(name: str, *turns: object, clock: FakeClock | None = None) -> ScriptedModel:
    """A scripted model whose provider is `name`."""
    return ScriptedModel(name, f"{name}-m", list(turns), clock=clock)  # type: ignore[arg-type]


async def test_hedges_start_one_delay_apart_and_the_first_answer_wins() -> None:
    """a hangs, b starts at 1 s and hangs, c starts at 2 s and answers at 2.5 s."""
    clock = FakeClock()
    health = isolated_health(clock=clock)
    route = Route(
        "r",
        [
            Target("a", scripted("a", turn.hang())),
            Target("b", scripted("b", turn.hang())),
            Target("c", scripted("c", turn.answer("ok", delay=0.5), clock=clock)),
        ],
        hedge_after=1,
        health=health,
    )
    response = await clock.run(route.complete(QUESTION))
    assert clock.now() == 2.5
    assert response.routing is not None
    assert response.routing.hedges == 2
    assert response.routing.outcomes() == [
        ("a", "lost_race"),
        ("b", "lost_race"),
        ("c", "answered"),
    ]
    assert [e.hedge for e in response.routing.attempts] == [False, True, True]


async def test_the_first_call_answering_before_the_delay_starts_no_hedge() -> None:
    """An answer within hedge_after starts no hedge; the others are not_tried."""
    clock = FakeClock()
    health = isolated_health(clock=clock)
    route = Route(
        "r",
        [
            Target("a", scripted("a", turn.answer("ok", delay=0.5), clock=clock)),
            Target("b", scripted("b")),
        ],
        hedge_after=1,
        health=health,
    )
    response = await clock.run(route.complete(QUESTION))
    assert response.routing is not None
    assert response.routing.hedges == 0
    assert response.routing.outcomes() == [("a", "answered"), ("b", "not_tried")]


async def test_a_failure_with_nothing_running_starts_the_next_at_once() -> None:
    """Under hedging a failed call with no other call running fails over immediately."""
    clock = FakeClock()
    health = isolated_health(clock=clock)
    route = Route(
        "r",
        [Target("a", scripted("a", turn.fail(503))), Target("b", scripted("b", turn.answer("ok")))],
        hedge_after=5,
        health=health,
    )
    response = await clock.run(route.complete(QUESTION))
    assert clock.now() == 0.0
    assert response.routing is not None
    assert response.routing.hedges == 0


async def test_a_rejected_hedge_does_not_win() -> None:
    """The first *accepted* answer wins: a rejected early answer lets the slower one win."""
    clock = FakeClock()
    health = isolated_health(clock=clock)
    route = Route(
        "r",
        [
            Target("a", scripted("a", turn.answer("good", delay=3), clock=clock)),
            Target("b", scripted("b", turn.answer("bad"))),
        ],
        hedge_after=1,
        accept=lambda r: None if r.text == "good" else "bad answer",
        health=health,
    )
    response = await clock.run(route.complete(QUESTION))
    assert response.text == "good"
    assert response.routing is not None
    assert response.routing.outcomes() == [("a", "answered"), ("b", "rejected")]


async def test_a_terminal_failure_cancels_the_running_calls() -> None:
    """A hedge failing terminally (401) cancels the others and raises its own error."""
    clock = FakeClock()
    health = isolated_health(clock=clock)
    route = Route(
        "r",
        [Target("a", scripted("a", turn.hang())), Target("b", scripted("b", turn.fail(401)))],
        hedge_after=1,
        health=health,
    )
    with pytest.raises(errors.AuthenticationFailed) as caught:
        await clock.run(route.complete(QUESTION))
    assert caught.value.routing is not None
    assert caught.value.routing.outcomes() == [("a", "cancelled"), ("b", "failed")]


async def test_lost_races_never_count_against_health() -> None:
    """The hedge loser is released: its key has no failures and its probe slot is free."""
    clock = FakeClock()
    health = isolated_health(clock=clock)
    route = Route(
        "r",
        [Target("a", scripted("a", turn.hang())), Target("b", scripted("b", turn.answer("ok")))],
        hedge_after=1,
        health=health,
    )
    await clock.run(route.complete(QUESTION))
    assert all(view.failures == 0 for view in health.snapshot())


async def test_hedges_count_against_max_attempts() -> None:
    """max_attempts=2 allows one hedge; the third target is never started."""
    clock = FakeClock()
    health = isolated_health(clock=clock)
    third = scripted("c", turn.answer("never"))
    with pytest.warns(UserWarning, match="max_attempts is 2"):
        route = Route(
            "r",
            [
                Target("a", scripted("a", turn.answer("slow", delay=10), clock=clock)),
                Target("b", scripted("b", turn.hang())),
                Target("c", third),
            ],
            hedge_after=1,
            max_attempts=2,
            health=health,
        )
    response = await clock.run(route.complete(QUESTION))
    assert response.text == "slow"
    assert third.calls == 0


async def test_the_callers_cancellation_cancels_the_call_and_counts_nothing() -> None:
    """Cancelling the caller cancels the in-flight call, recorded `cancelled`, not counted."""
    clock = FakeClock()
    health = isolated_health(clock=clock)
    seen: list[RoutingRecord] = []
    route = Route(
        "r",
        [Target("a", scripted("a", turn.hang())), Target("b", scripted("b"))],
        on_routed=seen.append,
        health=health,
    )
    task = asyncio.ensure_future(route.complete(QUESTION))
    await clock.settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(seen) == 1
    assert seen[0].outcomes() == [("a", "cancelled"), ("b", "not_tried")]
    assert seen[0].error is not None
    assert seen[0].error["code"] == "cancelled"
    assert all(view.failures == 0 for view in health.snapshot())


async def test_cancelling_a_hedged_request_cancels_every_call() -> None:
    """Cancelling the caller during a hedge cancels both running calls."""
    clock = FakeClock()
    health = isolated_health(clock=clock)
    seen: list[RoutingRecord] = []
    route = Route(
        "r",
        [Target("a", scripted("a", turn.hang())), Target("b", scripted("b", turn.hang()))],
        hedge_after=1,
        on_routed=seen.append,
        health=health,
    )
    task = asyncio.ensure_future(route.complete(QUESTION))
    await clock.settle()
    clock.advance(1)
    await clock.settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen[0].outcomes() == [("a", "cancelled"), ("b", "cancelled")]


async def test_an_async_on_routed_runs_as_a_task_and_never_delays_the_caller() -> None:
    """An async on_routed is scheduled, not awaited: the answer returns before it finishes."""
    clock = FakeClock()
    health = isolated_health(clock=clock)
    done: list[str] = []

    async def slow_callback(record: RoutingRecord) -> None:
        await clock.sleep(5)
        done.append(record.answered or "")

    route = Route(
        "r", [Target("a", scripted("a", turn.answer("ok")))], on_routed=slow_callback, health=health
    )
    await clock.run(route.complete(QUESTION))
    assert done == []
    clock.advance(5)
    await clock.settle()
    assert done == ["a"]


async def test_an_on_routed_that_raises_is_logged_and_ignored(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """What on_routed raises never reaches the caller; it is logged."""
    health = isolated_health()

    def broken(record: RoutingRecord) -> None:
        raise RuntimeError("metrics are down")

    route = Route(
        "r", [Target("a", scripted("a", turn.answer("ok")))], on_routed=broken, health=health
    )
    with caplog.at_level(logging.ERROR, logger="turnout.routing"):
        response = await health.clock.run(route.complete(QUESTION))
    assert response.text == "ok"
    assert "on_routed of route 'r' failed" in caplog.text


async def test_usage_of_every_started_hedge_is_recorded() -> None:
    """A losing hedge that answered but was rejected has its usage in discarded_usage."""
    clock = FakeClock()
    health = isolated_health(clock=clock)
    route = Route(
        "r",
        [
            Target(
                "a", scripted("a", turn.answer("good", usage=Usage(3, 4), delay=2), clock=clock)
            ),
            Target("b", scripted("b", turn.answer("bad", usage=Usage(5, 6)))),
        ],
        hedge_after=1,
        accept=lambda r: None if r.text == "good" else "bad",
        health=health,
    )
    response = await clock.run(route.complete(QUESTION))
    assert response.routing is not None
    assert response.routing.usage == Usage(3, 4)
    assert response.routing.discarded_usage == Usage(5, 6)
