"""`fallback_only` targets never start a request: every strategy picks its start among the other
targets, and the fallback-only ones come last in the try order."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.routing._plan_support import QUESTION
from turnout.routing.clock import FakeClock
from turnout.routing.plan import RequestPlan, TargetPlan, TargetRule
from turnout.routing.route import Route, Target
from turnout.testing import ScriptedModel, isolated_health, turn

ANTHROPIC = TargetRule(family="anthropic")
OPENAI = TargetRule(family="openai")
REQUESTS = 30
STRATEGIES: list[Any] = [
    "failover",
    "round-robin",
    "weighted",
    "lowest-cost",
    {"type": "lowest-latency", "exploration_share": 0.5},
    {"type": "least-busy", "exploration_share": 0.5},
]
SESSION_STRATEGIES = ["round-robin", "weighted", {"type": "lowest-latency"}]


def _name(strategy: Any) -> str:
    """A test id: the strategy's type."""
    return strategy if isinstance(strategy, str) else str(strategy["type"])


def _answers(provider: str, count: int, price: float) -> ScriptedModel:
    """A model that answers `count` times with its provider's name, at `price` per 1M tokens."""
    turns = [turn.answer(provider) for _ in range(count)]
    return ScriptedModel(provider, f"{provider}-m", turns, prices={f"{provider}-m": (price, price)})


def _tempting_route(strategy: Any) -> tuple[Route, ScriptedModel]:
    """A route whose fallback-only target is listed first, heaviest, cheapest and unmeasured:
    every strategy would start on it if it could."""
    health = isolated_health()
    spare = _answers("spare", REQUESTS, 0.01)
    targets = [
        Target("spare", spare, weight=100, fallback_only=True),
        Target("a", _answers("a", REQUESTS, 5.0)),
        Target("b", _answers("b", REQUESTS, 9.0)),
    ]
    route = Route("r", targets, health=health, strategy=strategy, rng=random.Random(7))
    return route, spare


async def _run(route: Route, *, sessions: bool, plan: RequestPlan | None = None) -> list[str]:
    """Ask `route` REQUESTS times (each with its own session id when `sessions`); the start
    target of each request."""
    clock = route.health.clock
    assert isinstance(clock, FakeClock)
    starts = []
    for number in range(REQUESTS):
        session = f"session-{number}" if sessions else None
        response = await clock.run(route.complete(QUESTION, session_id=session, plan=plan))
        assert response.routing is not None
        starts.append(response.routing.attempts[0].target)
    return starts


@pytest.mark.parametrize("strategy", STRATEGIES, ids=_name)
async def test_no_strategy_starts_on_a_fallback_only_target(strategy: Any) -> None:
    """Each strategy starts every request on a target that is not fallback-only."""
    route, spare = _tempting_route(strategy)
    starts = await _run(route, sessions=False)
    assert "spare" not in starts
    assert spare.calls == 0


@pytest.mark.parametrize("strategy", SESSION_STRATEGIES, ids=_name)
async def test_no_session_start_lands_on_a_fallback_only_target(strategy: Any) -> None:
    """Session-derived starts (hash or remembered pick) never land on a fallback-only target."""
    route, spare = _tempting_route(strategy)
    starts = await _run(route, sessions=True)
    assert "spare" not in starts
    assert spare.calls == 0


@pytest.mark.parametrize("strategy", STRATEGIES, ids=_name)
async def test_a_plan_never_starts_on_a_fallback_only_target(strategy: Any) -> None:
    """Under a request plan (own-key rules for every target) the start rule is the same."""
    route, spare = _tempting_route(strategy)
    plan = RequestPlan({route: TargetPlan(route, dict.fromkeys(range(3), TargetRule()))})
    starts = await _run(route, sessions=False, plan=plan)
    assert "spare" not in starts
    assert spare.calls == 0


async def test_a_weighted_fallback_only_target_with_weight_5_starts_nothing() -> None:
    """Weight 5 on a fallback-only target next to weight 1 never wins the weighted draw."""
    health = isolated_health()
    heavy = _answers("heavy", REQUESTS, 1.0)
    light = _answers("light", REQUESTS, 1.0)
    targets = [Target("heavy", heavy, weight=5, fallback_only=True), Target("light", light)]
    route = Route("w", targets, health=health, strategy="weighted", rng=random.Random(1))
    starts = await _run(route, sessions=False)
    assert starts == ["light"] * REQUESTS
    assert heavy.calls == 0


async def test_failover_tries_the_fallback_only_first_target_last() -> None:
    """`failover` over [m1 fallback-only, m2, m3]: m2, then m3, then m1."""
    health = isolated_health()
    m1 = ScriptedModel("m1", "m1", [turn.answer("from m1")])
    m2 = ScriptedModel("m2", "m2", [turn.fail(503)])
    m3 = ScriptedModel("m3", "m3", [turn.fail(503)])
    targets = [Target("m1", m1, fallback_only=True), Target("m2", m2), Target("m3", m3)]
    route = Route("f", targets, health=health)
    response = await health.clock.run(route.complete(QUESTION))
    assert response.routing is not None
    assert response.routing.outcomes() == [("m2", "failed"), ("m3", "failed"), ("m1", "answered")]


async def test_when_every_open_target_is_fallback_only_the_first_listed_starts() -> None:
    """With the only other target paused, round-robin starts every request on the first
    fallback-only target in list order, the next one after it."""
    health = isolated_health()
    first = _answers("first", 4, 1.0)
    second = _answers("second", 4, 1.0)
    targets = [
        Target("paused", _answers("paused", 0, 1.0), paused=True),
        Target("first", first, fallback_only=True),
        Target("second", second, fallback_only=True),
    ]
    route = Route("all-spare", targets, health=health, strategy="round-robin")
    for _ in range(4):
        response = await health.clock.run(route.complete(QUESTION))
        assert response.text == "first"
    assert second.calls == 0


async def test_a_credential_filter_leaving_only_fallback_only_targets_starts_the_first() -> None:
    """A plan that keeps only fallback-only targets starts every request on the first of them,
    round-robin or not."""
    health = isolated_health()
    spare_a = _answers("spare-a", 2, 1.0)
    spare_b = _answers("spare-b", 1, 1.0)
    targets = [
        Target("main", _answers("main", 0, 1.0)),
        Target("spare-a", spare_a, fallback_only=True),
        Target("spare-b", spare_b, fallback_only=True),
    ]
    route = Route("kept", targets, health=health, strategy="round-robin")
    plan = RequestPlan({route: TargetPlan(route, {1: TargetRule(), 2: TargetRule()})})
    for _ in range(2):
        response = await health.clock.run(route.complete(QUESTION, plan=plan))
        assert response.text == "spare-a"
    assert spare_b.calls == 0


async def test_the_family_order_starts_past_a_fallback_only_first_target() -> None:
    """On a route ordered by family, a fallback-only first target does not start: its family's
    other target starts, the fallback-only one follows it, the other family comes last."""
    health = isolated_health()
    spare = ScriptedModel("spare", "spare-m", [turn.answer("spare")])
    main = ScriptedModel("main", "main-m", [turn.answer("main")])
    other = ScriptedModel("other", "other-m", [turn.answer("other")])
    targets = [
        Target("spare", spare, fallback_only=True),
        Target("other", other),
        Target("main", main),
    ]
    route = Route("mixed", targets, health=health)
    rules = {0: ANTHROPIC, 1: OPENAI, 2: ANTHROPIC}
    plan = RequestPlan({route: TargetPlan(route, rules)})
    order, _ = plan.routes[route].start_order(route, None, "anthropic")
    assert order == [2, 0, 1]
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.routing is not None
    assert response.routing.outcomes() == [
        ("main", "answered"),
        ("spare", "not_tried"),
        ("other", "not_tried"),
    ]


async def test_a_family_of_fallback_only_targets_is_not_where_a_request_starts() -> None:
    """When the first target's family has only fallback-only targets, the request starts in
    the family of the first target that may start."""
    health = isolated_health()
    spare = ScriptedModel("spare", "spare-m", [])
    other = ScriptedModel("other", "other-m", [turn.answer("other")])
    targets = [Target("spare", spare, fallback_only=True), Target("other", other)]
    route = Route("mixed", targets, health=health)
    plan = RequestPlan({route: TargetPlan(route, {0: ANTHROPIC, 1: OPENAI})})
    assert plan.routes[route].family_for(None) == "openai"
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.text == "other"
    assert spare.calls == 0
