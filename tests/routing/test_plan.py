"""The per-request plan (`turnout.routing.plan`): the credential filter, the caller's credential
reaching only its targets, policy skips and shadows, and what ends a request before any call."""

from __future__ import annotations

import copy
import pickle
from typing import TYPE_CHECKING

import pytest

from tests.routing._plan_support import (
    CALLER,
    OWN,
    QUESTION,
    SECRET,
    Passthrough,
    plan_of,
    scripted,
)
from turnout import errors
from turnout.routing.plan import CallerCredential, RequestPlan, TargetPlan, TargetRule
from turnout.routing.route import Route, Target
from turnout.testing import isolated_health, turn
from turnout.wire.model import ChatChunk, EmbeddingRequest

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


async def _collect(stream: AsyncIterator[ChatChunk]) -> list[ChatChunk]:
    return [chunk async for chunk in stream]


def test_a_caller_credential_never_shows_itself() -> None:
    """repr and str are masked; pickling and copying refuse; only reveal() gives it back."""
    credential = CallerCredential(SECRET, bearer=True)
    assert SECRET not in repr(credential)
    assert SECRET not in str(credential)
    assert SECRET not in repr(RequestPlan({}, credential))
    with pytest.raises(TypeError):
        pickle.dumps(credential)
    with pytest.raises(TypeError):
        copy.copy(credential)
    assert credential.reveal() == SECRET
    assert credential.bearer


def test_an_empty_caller_credential_is_refused() -> None:
    """A credential must be a non-empty string."""
    with pytest.raises(ValueError, match="non-empty"):
        CallerCredential("")


def test_a_caller_credential_target_needs_a_client_that_takes_it() -> None:
    """A plan giving the caller's credential to a client without with_credential is refused."""
    route = Route("r", [Target("a", scripted("a"))], health=isolated_health())
    with pytest.raises(ValueError, match="with_credential"):
        TargetPlan(route, {0: CALLER})
    with pytest.raises(ValueError, match="no target 3"):
        TargetPlan(route, {3: OWN})


async def test_removed_targets_are_never_called_nor_recorded() -> None:
    """The credential filter removes a target: it is not called and has no attempt entry."""
    health = isolated_health()
    first = scripted("first", turn.answer("never"))
    second = scripted("second", turn.fail(503))
    third = scripted("third", turn.answer("ok"))
    route = Route(
        "r",
        [Target("first", first), Target("second", second), Target("third", third)],
        health=health,
    )
    plan = plan_of({route: {1: OWN, 2: OWN}}, credential=False)
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.text == "ok"
    assert response.routing is not None
    assert response.routing.outcomes() == [("second", "failed"), ("third", "answered")]
    assert first.calls == 0


async def test_the_strategy_orders_only_the_targets_left() -> None:
    """round-robin turns over the targets the plan keeps, never a removed one."""
    health = isolated_health()
    models = [scripted(name, turn.answer(name), turn.answer(name)) for name in "abc"]
    route = Route(
        "r",
        [Target(m.provider, m) for m in models],
        health=health,
        strategy="round-robin",
    )
    plan = plan_of({route: {0: OWN, 2: OWN}}, credential=False)
    answered = []
    for _ in range(4):
        response = await health.clock.run(route.complete(QUESTION, plan=plan))
        answered.append(response.text)
    assert answered == ["a", "c", "a", "c"]
    assert models[1].calls == 0


async def test_only_caller_credential_targets_receive_the_credential() -> None:
    """The caller's credential goes to the passthrough target's call; an org-key target is
    called as it is, never bound to it."""
    health = isolated_health()
    passthrough = Passthrough(scripted("byok", turn.fail(503)))
    org = scripted("org", turn.answer("ok"))
    route = Route("r", [Target("byok", passthrough), Target("org", org)], health=health)
    plan = plan_of({route: {0: CALLER, 1: OWN}})
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert passthrough.seen == [SECRET]
    assert response.text == "ok"
    assert response.routing is not None
    assert SECRET not in repr(response.routing.as_dict())


async def test_a_stream_carries_the_caller_credential() -> None:
    """Route.stream binds the credential for the streamed call too."""
    health = isolated_health()
    passthrough = Passthrough(scripted("byok", turn.stream(["Roll ", "back."])))
    route = Route("r", [Target("byok", passthrough)], health=health)
    chunks = await health.clock.run(
        _collect(route.stream(QUESTION, plan=plan_of({route: {0: CALLER}})))
    )
    assert "".join(chunk.delta for chunk in chunks) == "Roll back."
    assert passthrough.seen == [SECRET]


async def test_an_embeddings_call_carries_the_caller_credential() -> None:
    """Route.embed binds the credential for the embeddings call too."""
    health = isolated_health()
    passthrough = Passthrough(scripted("byok", turn.embedding([[0.1, 0.2]])))
    route = Route("r", [Target("byok", passthrough)], health=health)
    plan = plan_of({route: {0: CALLER}})
    response = await health.clock.run(route.embed(EmbeddingRequest(input="hi"), plan=plan))
    assert response.data == [[0.1, 0.2]]
    assert passthrough.seen == [SECRET]


async def test_a_policy_skip_is_recorded_and_the_next_target_serves() -> None:
    """A target whose rule has a skip reason is `policy_skipped` with that reason, not called."""
    health = isolated_health()
    denied = scripted("openai", turn.answer("never"))
    allowed = scripted("local", turn.answer("ok"))
    route = Route("r", [Target("openai", denied), Target("local", allowed)], health=health)
    rule = TargetRule(skip='policy "no-openai" denies this target (provider openai)')
    plan = plan_of({route: {0: rule, 1: OWN}}, credential=False)
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.routing is not None
    assert response.routing.outcomes() == [("openai", "policy_skipped"), ("local", "answered")]
    assert response.routing.attempts[0].reason == rule.skip
    assert response.routing.fallbacks == 1
    assert denied.calls == 0


async def test_an_observe_shadow_is_recorded_and_the_target_called() -> None:
    """An observe-mode shadow lands on the call's entry; the target still answers."""
    health = isolated_health()
    watched = scripted("openai", turn.answer("ok"))
    route = Route("r", [Target("openai", watched)], health=health)
    shadow = ('policy "watch" (observe) would deny this target (family openai)',)
    plan = plan_of({route: {0: TargetRule(shadow=shadow)}}, credential=False)
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.routing is not None
    entry = response.routing.attempts[0]
    assert entry.outcome == "answered"
    assert entry.shadow == shadow
    assert entry.as_dict()["shadow"] == list(shadow)


async def test_policy_skips_covering_every_target_refuse_with_403() -> None:
    """Every target denied: PolicyDenied (403 POLICY_DENIED) naming the reasons, no call."""
    health = isolated_health()
    a, b = scripted("a"), scripted("b")
    route = Route("r", [Target("a", a), Target("b", b)], health=health)
    plan = plan_of(
        {route: {0: TargetRule(skip="reason one"), 1: TargetRule(skip="reason two")}},
        credential=False,
    )
    with pytest.raises(errors.PolicyDenied) as caught:
        await health.clock.run(route.complete(QUESTION, plan=plan))
    assert caught.value.status == 403
    assert caught.value.code == "POLICY_DENIED"
    assert "reason one; reason two" in caught.value.message
    assert caught.value.routing is not None
    assert caught.value.routing.outcomes() == [("a", "policy_skipped"), ("b", "policy_skipped")]


async def test_ineligible_then_denied_is_a_policy_denial() -> None:
    """One target ineligible, the other denied by policy: the policy filter leaves nothing
    last, so the request is 403; all ineligible stays 400."""
    health = isolated_health()
    picky = Target("picky", scripted("picky"), eligible=lambda request, context: "not today")
    route = Route("r", [picky, Target("b", scripted("b"))], health=health)
    plan = plan_of({route: {0: OWN, 1: TargetRule(skip="denied")}}, credential=False)
    with pytest.raises(errors.PolicyDenied):
        await health.clock.run(route.complete(QUESTION, plan=plan))
    only_picky = plan_of({route: {0: OWN}}, credential=False)
    with pytest.raises(errors.RouteIneligible):
        await health.clock.run(route.complete(QUESTION, plan=only_picky))


async def test_every_kept_target_paused_is_no_deployment_available() -> None:
    """When the targets the plan keeps are all paused: 503 no_deployment_available."""
    health = isolated_health()
    route = Route(
        "r",
        [Target("a", scripted("a"), paused=True), Target("b", scripted("b"))],
        health=health,
    )
    with pytest.raises(errors.NoTargetAvailable):
        await health.clock.run(route.complete(QUESTION, plan=plan_of({route: {0: OWN}})))


async def test_the_plan_is_applied_again_on_a_fallback_route() -> None:
    """After a hop, the fallback route's own part of the plan filters its targets."""
    health = isolated_health()
    removed = scripted("removed", turn.answer("never"))
    kept = scripted("kept", turn.answer("from the fallback"))
    spare = Route("spare", [Target("removed", removed), Target("kept", kept)], health=health)
    main = Route(
        "main",
        [Target("a", scripted("a", turn.fail(503))), Target("b", scripted("b", turn.fail(503)))],
        health=health,
        fallbacks={"general": [spare]},
    )
    plan = plan_of({main: {0: OWN, 1: OWN}, spare: {1: OWN}}, credential=False)
    response = await health.clock.run(main.complete(QUESTION, plan=plan))
    assert response.text == "from the fallback"
    assert response.routing is not None
    assert response.routing.fallback_route == "spare"
    assert [e.target for e in response.routing.attempts] == ["a", "b", "kept"]
    assert removed.calls == 0


async def test_without_a_plan_a_route_walks_every_target() -> None:
    """plan=None is today's behaviour: every target, in order."""
    health = isolated_health()
    route = Route(
        "r",
        [Target("a", scripted("a", turn.fail(503))), Target("b", scripted("b", turn.answer("ok")))],
        health=health,
    )
    response = await health.clock.run(route.complete(QUESTION, plan=None))
    assert response.routing is not None
    assert response.routing.outcomes() == [("a", "failed"), ("b", "answered")]
    assert not response.routing.credential_fallback
