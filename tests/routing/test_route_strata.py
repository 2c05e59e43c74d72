"""The Strata guide's examples, reproduced through `Route` on a fake clock."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from turnout import errors
from turnout.routing.health import Breaker, Health
from turnout.routing.route import Route, Target
from turnout.testing import FakeClock, ScriptedModel, isolated_health, turn
from turnout.wire.model import ChatResponse, Message

if TYPE_CHECKING:
    from turnout.record import RoutingRecord

QUESTION = [Message.user("Why is checkout failing?")]
ROLL_BACK = "Roll back deploy 412, because the error rate rose with it."


def needs_reason(response: ChatResponse) -> str | None:
    """The guide's accept rule: an answer must give a reason."""
    return None if "because" in response.text.lower() else "it gives no reason"


async def test_triage_fails_over_past_429_refusal_and_rejection() -> None:
    """429 -> refused -> rejected -> answered, printed exactly like the guide's table."""
    health = isolated_health()
    route = Route(
        "triage",
        [
            Target("primary", ScriptedModel("northwind", "nw-large", [turn.fail(429)])),
            Target("careful", ScriptedModel("contoso", "ct-guarded", [turn.refuse()])),
            Target("terse", ScriptedModel("fabrikam", "fb-mini", [turn.answer("Roll back.")])),
            Target("local", ScriptedModel("local", "llama-local", [turn.answer(ROLL_BACK)])),
        ],
        accept=needs_reason,
        health=health,
    )
    response = await health.clock.run(route.complete(QUESTION))
    assert response.text == ROLL_BACK
    assert response.routing is not None
    assert str(response.routing) == (
        "route 'triage': answered by local (llama-local), hedges 0\n"
        "  primary   failed       429 rate limited\n"
        "  careful   refused\n"
        "  terse     rejected     it gives no reason\n"
        "  local     answered"
    )


async def test_fatal_401_stops_at_once_with_the_targets_own_error() -> None:
    """A 401 fails fast: backup is not_tried and the caller gets the provider's own error."""
    health = isolated_health()
    backup = ScriptedModel("local", "llama-local", [turn.answer(ROLL_BACK)])
    route = Route(
        "fatal",
        [
            Target(
                "primary",
                ScriptedModel(
                    "northwind",
                    "nw-large",
                    [turn.fail(401, message="401 Unauthorized: invalid API key")],
                ),
            ),
            Target("backup", backup),
        ],
        health=health,
    )
    with pytest.raises(errors.AuthenticationFailed) as caught:
        await health.clock.run(route.complete(QUESTION))
    assert caught.value.status == 401
    assert caught.value.message == "401 Unauthorized: invalid API key"
    assert caught.value.routing is not None
    assert str(caught.value.routing) == (
        "route 'fatal': answered by nobody (), hedges 0\n"
        "  primary   failed       401 key rejected\n"
        "  backup    not_tried"
    )
    assert backup.calls == 0


async def test_hedge_starts_local_after_the_delay_and_primary_loses_the_race() -> None:
    """Primary hangs; local starts after hedge_after=2 s, wins; primary is lost_race."""
    health = isolated_health()
    route = Route(
        "hedged",
        [
            Target("primary", ScriptedModel("northwind", "nw-large", [turn.hang()])),
            Target("local", ScriptedModel("local", "llama-local", [turn.answer(ROLL_BACK)])),
        ],
        hedge_after=2,
        health=health,
    )
    response = await health.clock.run(route.complete(QUESTION))
    assert health.clock.now() == 2.0
    assert str(response.routing) == (
        "route 'hedged': answered by local (llama-local), hedges 1\n"
        "  primary   lost_race\n"
        "  local     answered"
    )
    assert health.snapshot().get(("northwind", "nw-large")) is not None
    assert str(health.snapshot()).count("Available(0)") == 2


def plans_route(health: Health, frontier_turns: int = 1, local_turns: int = 1) -> Route:
    """The guide's `plans` route: a tenant rule on frontier, a prompt-size rule on local."""

    def free_plan(_request: object, context: dict[str, str] | None) -> str | None:
        plan = (context or {}).get("plan")
        return "the free plan doesn't use frontier models" if plan == "free" else None

    def short_prompts(request: object, _context: object) -> str | None:
        messages = getattr(request, "messages", [])
        long = sum(len(m.text) for m in messages) > 4_000
        return "the prompt is too long for its context" if long else None

    return Route(
        "plans",
        [
            Target(
                "frontier",
                ScriptedModel("northwind", "nw-large", [turn.answer(ROLL_BACK)] * frontier_turns),
                eligible=free_plan,
            ),
            Target(
                "local",
                ScriptedModel("local", "llama-local", [turn.answer(ROLL_BACK)] * local_turns),
                eligible=short_prompts,
            ),
        ],
        health=health,
    )


async def test_plans_paid_plan_is_answered_by_frontier() -> None:
    """With plan=paid the first target answers and local is not_tried."""
    health = isolated_health()
    response = await health.clock.run(
        plans_route(health).complete(QUESTION, context={"plan": "paid"})
    )
    assert str(response.routing) == (
        "route 'plans': answered by frontier (nw-large), hedges 0\n"
        "  frontier  answered\n"
        "  local     not_tried"
    )


async def test_plans_free_plan_skips_frontier_as_ineligible() -> None:
    """With plan=free, frontier is ineligible with the rule's reason and local answers."""
    health = isolated_health()
    response = await health.clock.run(
        plans_route(health).complete(QUESTION, context={"plan": "free"})
    )
    assert str(response.routing) == (
        "route 'plans': answered by local (llama-local), hedges 0\n"
        "  frontier  ineligible   the free plan doesn't use frontier models\n"
        "  local     answered"
    )


async def test_plans_every_target_ineligible_is_route_ineligible() -> None:
    """Free plan plus a long prompt: RouteIneligible (400) naming each target and reason."""
    health = isolated_health()
    route = plans_route(health)
    with pytest.raises(errors.RouteIneligible) as caught:
        await health.clock.run(
            route.complete([Message.user("x" * 4_001)], context={"plan": "free"})
        )
    assert caught.value.status == 400
    assert caught.value.code == "route_ineligible"
    assert str(caught.value) == (
        'no target of route "plans" can take this request: frontier is ineligible (the free '
        "plan doesn't use frontier models), local is ineligible (the prompt is too long for "
        "its context)"
    )
    assert [entry.outcome for entry in caught.value.attempts] == ["ineligible", "ineligible"]


async def test_two_routes_share_one_health_and_one_breaker() -> None:
    """One 503 in each route opens northwind's breaker (2 in a row); both routes then skip it
    with breaker_open 60 s; after 60 s it is half-open and the probe closes it."""
    clock = FakeClock()
    health = Health(breaker=Breaker(failures=2, open_for=60), key_by="provider", clock=clock)
    large = ScriptedModel("northwind", "nw-large", [turn.fail(503), turn.answer(ROLL_BACK)])
    small = ScriptedModel("northwind", "nw-small", [turn.fail(503)])
    steady = ScriptedModel("local", "llama-local", [turn.answer(ROLL_BACK)] * 5)
    diagnose = Route("diagnose", [Target("large", large), Target("steady", steady)], health=health)
    summarise = Route(
        "summarise", [Target("small", small), Target("steady", steady)], health=health
    )

    await clock.run(diagnose.complete(QUESTION))
    await clock.run(summarise.complete(QUESTION))
    assert str(health.snapshot()) == "local=Available(0), northwind=Open(2)"

    run2 = [await clock.run(route.complete(QUESTION)) for route in (diagnose, summarise)]
    assert [str(r.routing) for r in run2] == [
        (
            "route 'diagnose': answered by steady (llama-local), hedges 0\n"
            "  large     breaker_open breaker open, 60 s left\n"
            "  steady    answered"
        ),
        (
            "route 'summarise': answered by steady (llama-local), hedges 0\n"
            "  small     breaker_open breaker open, 60 s left\n"
            "  steady    answered"
        ),
    ]
    assert (large.calls, small.calls) == (1, 1)

    clock.advance(60)
    assert str(health.snapshot()) == "local=Available(0), northwind=HalfOpen(2)"
    run3 = await clock.run(diagnose.complete(QUESTION))
    assert str(run3.routing) == (
        "route 'diagnose': answered by large (nw-large), hedges 0\n"
        "  large     answered\n"
        "  steady    not_tried"
    )
    assert str(health.snapshot()) == "local=Available(0), northwind=Available(0)"


async def test_retry_after_8_and_3_gives_route_exhausted_retry_after_3() -> None:
    """Two targets fail with Retry-After 8 s and 3 s: the route's retry hint is 3 s."""
    health = isolated_health()
    route = Route(
        "triage",
        [
            Target(
                "primary", ScriptedModel("northwind", "nw-large", [turn.fail(429, retry_after=8)])
            ),
            Target(
                "backup", ScriptedModel("local", "llama-local", [turn.fail(503, retry_after=3)])
            ),
        ],
        health=health,
    )
    with pytest.raises(errors.RouteExhausted) as caught:
        await health.clock.run(route.complete(QUESTION))
    assert caught.value.retry_after == 3
    assert caught.value.transient
    assert str(caught.value) == (
        'every target of route "triage" failed (primary: rate_limited, backup: provider_error)'
    )


async def test_on_routed_reports_each_targets_outcome() -> None:
    """on_routed receives the record: primary=failed, backup=answered (the guide's test)."""
    health = isolated_health()
    seen: list[RoutingRecord] = []
    route = Route(
        "triage",
        [
            Target("primary", ScriptedModel("northwind", "nw-large", [turn.fail(503)])),
            Target("backup", ScriptedModel("local", "llama-local", [turn.answer(ROLL_BACK)])),
        ],
        on_routed=seen.append,
        health=health,
    )
    response = await health.clock.run(route.complete(QUESTION))
    assert response.text == ROLL_BACK
    assert len(seen) == 1
    assert seen[0] is response.routing
    assert seen[0].outcomes() == [("primary", "failed"), ("backup", "answered")]
