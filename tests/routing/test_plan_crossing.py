"""A cross-provider route never strands a request: when the preferred family (a session's pin,
else the first target's) has nothing left that can serve, the other family answers, and the
first call there says why it crossed (`family_switch`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.routing._plan_support import QUESTION, scripted
from turnout.routing.health import Breaker
from turnout.routing.plan import RequestPlan, TargetPlan, TargetRule
from turnout.routing.route import Route, Target
from turnout.testing import isolated_health, turn

if TYPE_CHECKING:
    from turnout.record import RoutingRecord
    from turnout.testing import IsolatedHealth, ScriptedModel, Turn

ANTHROPIC = TargetRule(family="anthropic")
OPENAI = TargetRule(family="openai")


def _claude_then_gpt(
    health: IsolatedHealth, claude: ScriptedModel, gpt: ScriptedModel, **options: Any
) -> tuple[Route, RequestPlan]:
    """A route over [claude (anthropic), gpt (openai)] and the plan giving each its family."""
    route = Route(
        "mixed",
        [Target("claude", claude, timeout=30), Target("gpt", gpt)],
        health=health,
        **options,
    )
    return route, RequestPlan({route: TargetPlan(route, {0: ANTHROPIC, 1: OPENAI})})


def _switches(record: RoutingRecord | None) -> list[tuple[str, str, str | None]]:
    """(target, outcome, family_switch) per entry."""
    assert record is not None
    return [(e.target, e.outcome, e.family_switch) for e in record.attempts]


FAILURES = {
    "503": turn.fail(503),
    "429": turn.fail(429),
    "500": turn.fail(500),
    "reset": turn.conn_error(),
    "timeout": turn.timeout(),
    "silent past its timeout": turn.hang(),
}


@pytest.mark.parametrize("failure", list(FAILURES.values()), ids=list(FAILURES))
@pytest.mark.parametrize("session", [None, "s-1"], ids=["per request", "pinned session"])
async def test_a_failure_of_the_only_preferred_target_is_answered_by_the_other_family(
    failure: Turn, session: str | None
) -> None:
    """A 503, 429, 500, reset or timeout on the only Anthropic target: the OpenAI target
    behind it answers, marked as an outage crossing."""
    health = isolated_health()
    claude = scripted("claude", failure, clock=health.clock)
    gpt = scripted("gpt", turn.answer("from gpt"))
    route, plan = _claude_then_gpt(health, claude, gpt)
    if session is not None:
        plan = plan.with_pins({"mixed": "anthropic"})
    response = await health.clock.run(route.complete(QUESTION, session_id=session, plan=plan))
    assert response.text == "from gpt"
    assert _switches(response.routing) == [
        ("claude", "failed", None),
        ("gpt", "answered", "outage"),
    ]


async def test_an_open_breaker_never_fails_every_request() -> None:
    """Once the Anthropic target's breaker opens, each request skips it and OpenAI answers
    (before: every request failed while the breaker was open)."""
    health = isolated_health(breaker=Breaker(failures=2, open_for=60))
    claude = scripted("claude", turn.fail(503), turn.fail(503))
    gpt = scripted("gpt", *(turn.answer(f"gpt {n}") for n in range(4)))
    route, plan = _claude_then_gpt(health, claude, gpt)
    for _ in range(2):
        await health.clock.run(route.complete(QUESTION, plan=plan))
    for _ in range(2):
        response = await health.clock.run(route.complete(QUESTION, plan=plan))
        assert _switches(response.routing) == [
            ("claude", "breaker_open", None),
            ("gpt", "answered", "outage"),
        ]
    assert claude.calls == 2


async def test_a_cooling_target_is_passed_for_the_other_family() -> None:
    """A Retry-After longer than the wait cools the Anthropic key: the next request skips it
    and OpenAI answers."""
    health = isolated_health()
    claude = scripted("claude", turn.fail(429, retry_after=60))
    gpt = scripted("gpt", turn.answer("first"), turn.answer("second"))
    route, plan = _claude_then_gpt(health, claude, gpt)
    await health.clock.run(route.complete(QUESTION, plan=plan))
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.text == "second"
    assert _switches(response.routing) == [
        ("claude", "cooling_down", None),
        ("gpt", "answered", "outage"),
    ]


async def test_a_quota_failure_is_a_quota_crossing() -> None:
    """`quota_exhausted` on the preferred family's own key marks the crossing `quota`."""
    health = isolated_health()
    claude = scripted("claude", turn.fail(402))
    gpt = scripted("gpt", turn.answer("from gpt"))
    route, plan = _claude_then_gpt(health, claude, gpt)
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert _switches(response.routing) == [
        ("claude", "failed", None),
        ("gpt", "answered", "quota"),
    ]


async def test_only_the_first_call_in_the_other_family_is_marked() -> None:
    """The mark is on the first call outside the preferred family, not on later ones nor on
    the answer after it."""
    health = isolated_health()
    claude = scripted("claude", turn.fail(503))
    gpt = scripted("gpt", turn.fail(503))
    mini = scripted("mini", turn.answer("from mini"))
    route = Route(
        "mixed",
        [Target("claude", claude), Target("gpt", gpt), Target("mini", mini)],
        health=health,
    )
    plan = RequestPlan({route: TargetPlan(route, {0: ANTHROPIC, 1: OPENAI, 2: OPENAI})})
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert _switches(response.routing) == [
        ("claude", "failed", None),
        ("gpt", "failed", "outage"),
        ("mini", "answered", None),
    ]
    assert response.routing is not None
    assert response.routing.as_dict()["attempts"][1]["family_switch"] == "outage"


async def test_a_retry_that_answers_stays_in_the_family() -> None:
    """A same-target retry that answers is served in the preferred family: no crossing."""
    health = isolated_health()
    claude = scripted("claude", turn.fail(503), turn.answer("retried"))
    gpt = scripted("gpt", turn.answer("never"))
    route = Route(
        "mixed", [Target("claude", claude, max_retries=1), Target("gpt", gpt)], health=health
    )
    plan = RequestPlan({route: TargetPlan(route, {0: ANTHROPIC, 1: OPENAI})})
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.text == "retried"
    assert gpt.calls == 0


async def test_a_stream_crosses_on_an_outage() -> None:
    """A stream whose Anthropic target resets before its first token is served by OpenAI."""
    health = isolated_health()
    claude = scripted("claude", turn.conn_error())
    gpt = scripted("gpt", turn.stream(["hel", "lo"]))
    route, plan = _claude_then_gpt(health, claude, gpt)
    chunks = route.stream(QUESTION, plan=plan)
    text = "".join([chunk.delta async for chunk in chunks])
    assert text == "hello"
    assert _switches(chunks.routing) == [
        ("claude", "failed", None),
        ("gpt", "answered", "outage"),
    ]


async def test_a_hedge_starts_the_other_family_once_the_preferred_one_is_down() -> None:
    """With hedging, the other family starts as soon as the last preferred call fails."""
    health = isolated_health()
    claude = scripted("claude", turn.fail(503, delay=3), clock=health.clock)
    gpt = scripted("gpt", turn.answer("from gpt", delay=1), clock=health.clock)
    route, plan = _claude_then_gpt(health, claude, gpt, hedge_after=1)
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.text == "from gpt"
    assert health.clock.now() == pytest.approx(4.0)
