"""Family order on cross-provider routes (plan Rules 7 and 8, gate Rules 3-7): the preferred
family first; the other families open at once on a quota failure or a parked target, and once
the preferred family has no target left that can serve (an outage)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.routing._plan_support import QUESTION, SECRET, Passthrough, scripted
from turnout import errors
from turnout.routing.plan import CallerCredential, RequestPlan, TargetPlan, TargetRule
from turnout.routing.route import Route, Target
from turnout.testing import isolated_health, turn

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.testing import IsolatedHealth, ScriptedModel

ANTHROPIC = TargetRule(family="anthropic")
OPENAI = TargetRule(family="openai")


def _route(
    health: IsolatedHealth,
    members: list[tuple[ScriptedModel, TargetRule]],
    *,
    switch: bool = True,
    pins: Mapping[str, str] | None = None,
    **options: object,
) -> tuple[Route, RequestPlan]:
    """A route over `members` (named by provider) and a plan giving each its family."""
    targets = [Target(model.provider, model) for model, _ in members]
    route = Route("mixed", targets, health=health, **options)  # type: ignore[arg-type]
    rules = {index: rule for index, (_, rule) in enumerate(members)}
    plan = RequestPlan({route: TargetPlan(route, rules, switch_family_on_quota=switch)})
    return route, plan.with_pins(pins or {})


async def test_without_a_pin_the_first_targets_family_goes_first() -> None:
    """No pin: the first target's family is tried in member order before any other family."""
    health = isolated_health()
    gpt = scripted("gpt", turn.answer("never"))
    team_a = scripted("team-a", turn.fail(503))
    team_b = scripted("team-b", turn.answer("from b"))
    route, plan = _route(health, [(team_a, ANTHROPIC), (gpt, OPENAI), (team_b, ANTHROPIC)])
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.text == "from b"
    assert response.routing is not None
    assert response.routing.outcomes() == [
        ("team-a", "failed"),
        ("team-b", "answered"),
        ("gpt", "not_tried"),
    ]


async def test_a_pin_puts_its_family_first() -> None:
    """A session pinned to openai starts on the openai target listed last."""
    health = isolated_health()
    team_a = scripted("team-a", turn.answer("never"))
    gpt = scripted("gpt", turn.answer("from gpt"))
    route, plan = _route(health, [(team_a, ANTHROPIC), (gpt, OPENAI)], pins={"mixed": "openai"})
    response = await health.clock.run(route.complete(QUESTION, session_id="s-1", plan=plan))
    assert response.text == "from gpt"
    assert team_a.calls == 0


async def test_a_pin_to_a_family_without_targets_counts_as_none() -> None:
    """A pin naming a family the plan has no target of falls back to the first target's."""
    health = isolated_health()
    team_a = scripted("team-a", turn.answer("from a"))
    gpt = scripted("gpt")
    route, plan = _route(health, [(team_a, ANTHROPIC), (gpt, OPENAI)], pins={"mixed": "google"})
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.text == "from a"


async def test_the_strategy_starts_within_the_pinned_family() -> None:
    """Round-robin picks its start among the pinned family's targets only."""
    health = isolated_health()
    gpt = scripted("gpt", turn.answer("never"))
    team_a = scripted("team-a", turn.answer("a"))
    team_b = scripted("team-b", turn.answer("b"))
    route, plan = _route(
        health,
        [(gpt, OPENAI), (team_a, ANTHROPIC), (team_b, ANTHROPIC)],
        pins={"mixed": "anthropic"},
        strategy="round-robin",
    )
    first = await health.clock.run(route.complete(QUESTION, plan=plan))
    second = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert [first.text, second.text] == ["a", "b"]
    assert gpt.calls == 0


async def test_quota_opens_the_other_family_after_the_pinned_members() -> None:
    """A quota failure opens the other family, tried in member order after every member of
    the pinned family."""
    health = isolated_health()
    team_a = scripted("team-a", turn.fail(402, message="credit balance is too low"))
    gpt = scripted("gpt", turn.answer("from gpt"))
    team_b = scripted("team-b", turn.fail(503))
    mini = scripted("mini", turn.answer("never"))
    route, plan = _route(
        health, [(team_a, ANTHROPIC), (gpt, OPENAI), (team_b, ANTHROPIC), (mini, OPENAI)]
    )
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.text == "from gpt"
    assert response.routing is not None
    assert response.routing.outcomes() == [
        ("team-a", "failed"),
        ("team-b", "failed"),
        ("gpt", "answered"),
        ("mini", "not_tried"),
    ]
    assert response.routing.attempts[0].error_class == "quota_exhausted"


async def test_insufficient_quota_429_opens_the_other_family() -> None:
    """OpenAI's 429 insufficient_quota is a quota failure: a session pinned to openai moves."""
    health = isolated_health()
    gpt = scripted("gpt", turn.fail(429, error_type="insufficient_quota"))
    team_a = scripted("team-a", turn.answer("from claude"))
    route, plan = _route(health, [(team_a, ANTHROPIC), (gpt, OPENAI)], pins={"mixed": "openai"})
    response = await health.clock.run(route.complete(QUESTION, session_id="s", plan=plan))
    assert response.text == "from claude"


@pytest.mark.parametrize(
    ("status", "error_class"),
    [(429, "rate_limited"), (500, "provider_error"), (503, "provider_error")],
)
async def test_an_outage_of_every_pinned_member_opens_the_other_family(
    status: int, error_class: str
) -> None:
    """A rate limit or a server error on every pinned member opens the other family for this
    request: its first call is marked as an outage crossing."""
    health = isolated_health()
    team_a = scripted("team-a", turn.fail(status))
    team_b = scripted("team-b", turn.fail(status))
    gpt = scripted("gpt", turn.answer("from gpt"))
    route, plan = _route(
        health,
        [(team_a, ANTHROPIC), (team_b, ANTHROPIC), (gpt, OPENAI)],
        pins={"mixed": "anthropic"},
    )
    response = await health.clock.run(route.complete(QUESTION, session_id="s-7", plan=plan))
    assert response.text == "from gpt"
    assert response.routing is not None
    assert [(e.target, e.error_class, e.family_switch) for e in response.routing.attempts] == [
        ("team-a", error_class, None),
        ("team-b", error_class, None),
        ("gpt", None, "outage"),
    ]


async def test_auth_failures_keep_the_other_family_closed() -> None:
    """A rejected key on every pinned member is no outage: the other family stays closed and
    the request ends with the family message."""
    health = isolated_health()
    team_a = scripted("team-a", turn.fail(401))
    team_b = scripted("team-b", turn.fail(401))
    gpt = scripted("gpt", turn.answer("never"))
    route, plan = _route(
        health,
        [(team_a, ANTHROPIC), (team_b, ANTHROPIC), (gpt, OPENAI)],
        retry_on=["provider_error", "rate_limited", "timeout", "quota_exhausted", "auth"],
    )
    with pytest.raises(errors.RouteExhausted) as caught:
        await health.clock.run(route.complete(QUESTION, session_id="s-7", plan=plan))
    assert gpt.calls == 0
    assert str(caught.value) == (
        'every member of the "anthropic" provider family this session is pinned to failed'
        " (team-a: auth, team-b: auth)"
    )
    assert caught.value.status == 401
    assert caught.value.code == "UPSTREAM_POOL_EXHAUSTED"
    assert caught.value.routing is not None
    assert caught.value.routing.outcomes()[-1] == ("gpt", "not_tried")


async def test_the_family_message_lists_each_member_and_is_a_503_when_they_differ() -> None:
    """A rate limit then a rejected key: 503 UPSTREAM_POOL_EXHAUSTED naming each member's
    class, the record attached; without a session id the wording says request."""
    health = isolated_health()
    team_a = scripted("team-a", turn.fail(429))
    team_b = scripted("team-b", turn.fail(401))
    gpt = scripted("gpt")
    route, plan = _route(
        health,
        [(team_a, ANTHROPIC), (team_b, ANTHROPIC), (gpt, OPENAI)],
        retry_on=["provider_error", "rate_limited", "timeout", "quota_exhausted", "auth"],
    )
    with pytest.raises(errors.RouteExhausted) as caught:
        await health.clock.run(route.complete(QUESTION, plan=plan))
    assert str(caught.value) == (
        'every member of the "anthropic" provider family this request started on failed'
        " (team-a: rate_limited, team-b: auth)"
    )
    assert (caught.value.status, caught.value.code) == (503, "UPSTREAM_POOL_EXHAUSTED")
    assert caught.value.routing is not None
    assert caught.value.routing.route == "mixed"


async def test_one_failed_member_held_to_its_family_returns_its_own_error() -> None:
    """Only one call made in a family that stays closed: its own error, not the family
    message."""
    health = isolated_health()
    team_a = scripted("team-a", turn.fail(401, message="bad key"))
    gpt = scripted("gpt")
    route, plan = _route(
        health, [(team_a, ANTHROPIC), (gpt, OPENAI)], retry_on=["provider_error", "auth"]
    )
    with pytest.raises(errors.ProviderError) as caught:
        await health.clock.run(route.complete(QUESTION, plan=plan))
    assert caught.value.status == 401
    assert gpt.calls == 0


async def test_when_both_families_fail_the_route_is_exhausted() -> None:
    """Once the other family opened, the request ends as any route does: every target named."""
    health = isolated_health()
    team_a = scripted("team-a", turn.fail(503))
    gpt = scripted("gpt", turn.fail(503))
    route, plan = _route(health, [(team_a, ANTHROPIC), (gpt, OPENAI)])
    with pytest.raises(errors.RouteExhausted) as caught:
        await health.clock.run(route.complete(QUESTION, plan=plan))
    assert str(caught.value) == (
        'every target of route "mixed" failed (team-a: provider_error, gpt: provider_error)'
    )
    assert caught.value.status == 503


async def test_a_parked_member_opens_the_other_family() -> None:
    """The pinned family's only member parked by an earlier quota failure: the next request
    skips it as parked and the other family serves."""
    health = isolated_health()
    team_a = scripted("team-a", turn.fail(402))
    gpt = scripted("gpt", turn.answer("first"), turn.answer("second"))
    route, plan = _route(health, [(team_a, ANTHROPIC), (gpt, OPENAI)])
    first = await health.clock.run(route.complete(QUESTION, plan=plan))
    second = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert [first.text, second.text] == ["first", "second"]
    assert second.routing is not None
    assert second.routing.outcomes() == [("team-a", "parked"), ("gpt", "answered")]
    assert team_a.calls == 1


async def test_switch_off_crosses_on_quota_as_an_outage() -> None:
    """`switch_family_on_quota` off: quota failures on every pinned member still open the
    other family for this request, marked as an outage (the pin stays)."""
    health = isolated_health()
    team_a = scripted("team-a", turn.fail(402))
    team_b = scripted("team-b", turn.fail(402))
    gpt = scripted("gpt", turn.answer("from gpt"))
    route, plan = _route(
        health, [(team_a, ANTHROPIC), (team_b, ANTHROPIC), (gpt, OPENAI)], switch=False
    )
    response = await health.clock.run(route.complete(QUESTION, session_id="s", plan=plan))
    assert response.text == "from gpt"
    assert response.routing is not None
    assert response.routing.attempts[-1].family_switch == "outage"


async def test_a_parked_last_member_is_passed_while_the_other_family_can_open() -> None:
    """A parked member after a failed one is skipped, not probed, when the other family can
    still serve: the family is down and the request crosses."""
    health = isolated_health()
    team_a = scripted("team-a", turn.fail(503), turn.fail(503))
    team_b = scripted("team-b", turn.fail(402))
    gpt = scripted("gpt", turn.answer("first"), turn.answer("second"))
    route, plan = _route(
        health, [(team_a, ANTHROPIC), (team_b, ANTHROPIC), (gpt, OPENAI)], switch=False
    )
    await health.clock.run(route.complete(QUESTION, plan=plan))
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.text == "second"
    assert response.routing is not None
    assert response.routing.outcomes() == [
        ("team-a", "failed"),
        ("team-b", "parked"),
        ("gpt", "answered"),
    ]
    assert team_b.calls == 1


async def test_a_parked_last_member_is_probed_when_the_family_stays_closed() -> None:
    """When a member's rejected key keeps the other family closed, a parked member that is
    the last one left after a failure is still probed (a parked last target is called)."""
    health = isolated_health()
    team_a = scripted("team-a", turn.fail(503), turn.fail(503))
    team_c = scripted("team-c", turn.fail(401), turn.fail(401))
    team_b = scripted("team-b", turn.fail(402), turn.answer("probed"))
    gpt = scripted("gpt")
    route, plan = _route(
        health,
        [(team_a, ANTHROPIC), (team_c, ANTHROPIC), (team_b, ANTHROPIC), (gpt, OPENAI)],
        switch=False,
        retry_on=["provider_error", "quota_exhausted", "auth"],
    )
    with pytest.raises(errors.RouteExhausted):
        await health.clock.run(route.complete(QUESTION, plan=plan))
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.text == "probed"
    assert gpt.calls == 0


async def test_an_outage_on_the_callers_credential_crosses_without_quota() -> None:
    """Quota on a caller's own forwarded credential never counts as a quota crossing, but
    that member is down: the other family's own-key target serves, as an outage."""
    health = isolated_health()
    byok = Passthrough(scripted("byok", turn.fail(402)))
    gpt = scripted("gpt", turn.answer("from gpt"))
    route = Route("mixed", [Target("byok", byok), Target("gpt", gpt)], health=health)
    rules = {0: TargetRule(caller_credential=True, family="anthropic"), 1: OPENAI}
    plan = RequestPlan({route: TargetPlan(route, rules)}, CallerCredential(SECRET))
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.text == "from gpt"
    assert response.routing is not None
    assert response.routing.attempts[-1].family_switch == "outage"
    assert byok.seen == [SECRET]


async def test_an_ineligible_member_is_set_aside() -> None:
    """A pinned member that cannot take the request (ineligible) does not keep the family:
    with the other member failed, the other family serves."""
    health = isolated_health()
    team_a = scripted("team-a", turn.fail(503))
    small = scripted("small")
    gpt = scripted("gpt", turn.answer("from gpt"))
    targets = [
        Target("team-a", team_a),
        Target("small", small, context_window=1),
        Target("gpt", gpt),
    ]
    route = Route("mixed", targets, health=health)
    rules = {0: ANTHROPIC, 1: ANTHROPIC, 2: OPENAI}
    plan = RequestPlan({route: TargetPlan(route, rules)})
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.text == "from gpt"
    assert small.calls == 0


async def test_a_family_that_cannot_take_the_request_opens_nothing() -> None:
    """Every pinned member ineligible is no outage: the request ends ineligible, the other
    family untouched."""
    health = isolated_health()
    small = scripted("small")
    gpt = scripted("gpt", turn.answer("never"))
    targets = [Target("small", small, context_window=1), Target("gpt", gpt)]
    route = Route("mixed", targets, health=health)
    plan = RequestPlan({route: TargetPlan(route, {0: ANTHROPIC, 1: OPENAI})})
    with pytest.raises(errors.RouteIneligible):
        await health.clock.run(route.complete(QUESTION, plan=plan))
    assert gpt.calls == 0


async def test_a_stream_moves_family_on_quota() -> None:
    """Streams follow the same order: quota before the first token opens the other family."""
    health = isolated_health()
    team_a = scripted("team-a", turn.fail(402))
    gpt = scripted("gpt", turn.stream(["hel", "lo"]))
    route, plan = _route(health, [(team_a, ANTHROPIC), (gpt, OPENAI)])
    chunks = route.stream(QUESTION, plan=plan)
    text = "".join([chunk.delta async for chunk in chunks])
    assert text == "hello"
    assert chunks.routing.answered == "gpt"


async def test_hedged_calls_respect_the_closed_family() -> None:
    """A hedge never starts a held-back family's target."""
    health = isolated_health()
    team_a = scripted("team-a", turn.answer("slow a", delay=5), clock=health.clock)
    gpt = scripted("gpt", turn.answer("never"))
    route, plan = _route(health, [(team_a, ANTHROPIC), (gpt, OPENAI)], hedge_after=1)
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.text == "slow a"
    assert gpt.calls == 0


def test_rules_must_all_name_a_family_or_none() -> None:
    """A plan mixing rules with and without a family is refused, naming the route."""
    route = Route("mixed", [Target("a", scripted("a")), Target("b", scripted("b"))])
    with pytest.raises(ValueError, match='route "mixed"'):
        TargetPlan(route, {0: ANTHROPIC, 1: TargetRule()})


def test_one_family_orders_nothing() -> None:
    """Rules naming a single family leave the plan without a family order."""
    route = Route("one", [Target("a", scripted("a")), Target("b", scripted("b"))])
    plan = TargetPlan(route, {0: ANTHROPIC, 1: ANTHROPIC})
    assert not plan.families
    assert plan.family_for("anthropic") is None


async def test_a_hedge_starts_the_other_family_once_quota_opens_it() -> None:
    """With hedging, the other family's target starts as soon as a quota failure opens its
    gate, beside a slow call of the first family, instead of waiting for that call."""
    health = isolated_health()
    first = scripted("a1", turn.fail(402, delay=3), clock=health.clock)
    slow = scripted("a2", turn.answer("slow a2", delay=100), clock=health.clock)
    other = scripted("gpt", turn.answer("gpt", delay=1), clock=health.clock)
    route = Route(
        "mixed",
        [Target("a1", first), Target("a2", slow), Target("gpt", other)],
        health=health,
        hedge_after=1,
    )
    plan = RequestPlan({route: TargetPlan(route, {0: ANTHROPIC, 1: ANTHROPIC, 2: OPENAI})})
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.text == "gpt"
    assert response.routing is not None
    assert response.routing.outcomes() == [
        ("a1", "failed"),
        ("a2", "lost_race"),
        ("gpt", "answered"),
    ]
    assert health.clock.now() == pytest.approx(4.0)
