"""Org-key fallback for callers' own credentials and health never hearing
of a call made with a caller's credential."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from tests.routing._plan_support import (
    CALLER,
    FALLBACK,
    QUESTION,
    SECRET,
    Passthrough,
    plan_of,
    scripted,
)
from turnout import errors
from turnout.routing.health import Admission
from turnout.routing.plan import CallerCredential, TargetRule
from turnout.routing.route import Route, Target
from turnout.testing import isolated_health, turn

if TYPE_CHECKING:
    from turnout.routing.plan import RequestPlan
    from turnout.testing import IsolatedHealth, ScriptedModel


def _route(
    health: IsolatedHealth, passthrough: list[Passthrough], org: list[ScriptedModel], **kw: object
) -> tuple[Route, RequestPlan]:
    """A route of passthrough targets then org-key ones, and the fallback plan over it."""
    targets = [Target(p.provider, p) for p in passthrough] + [Target(m.provider, m) for m in org]
    route = Route("r", targets, health=health, **kw)  # type: ignore[arg-type]
    rules = dict.fromkeys(range(len(passthrough)), CALLER)
    rules.update({len(passthrough) + i: FALLBACK for i in range(len(org))})
    return route, plan_of({route: rules})


async def test_org_key_target_serves_after_the_passthrough_fails_retryably() -> None:
    """Passthrough 429 -> the org-key fallback answers; the record says credential_fallback."""
    health = isolated_health()
    byok = Passthrough(scripted("byok", turn.fail(429)))
    org = scripted("org", turn.answer("ok"))
    route, plan = _route(health, [byok], [org])
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.text == "ok"
    assert response.routing is not None
    assert response.routing.outcomes() == [("byok", "failed"), ("org", "answered")]
    assert response.routing.credential_fallback
    assert byok.seen == [SECRET]


async def test_the_fallback_opens_after_the_passthrough_spends_its_retries() -> None:
    """A passthrough target with a same-target retry that fails twice retryably still opens
    the org-key fallback (each retry is a call on the caller's credential, started and
    settled once)."""
    health = isolated_health()
    byok = Passthrough(scripted("byok", turn.fail(503), turn.fail(503)))
    org = scripted("org", turn.answer("ok"))
    targets = [Target("byok", byok, max_retries=1), Target("org", org)]
    route = Route("r", targets, health=health)
    plan = plan_of({route: {0: CALLER, 1: FALLBACK}})
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.text == "ok"
    assert response.routing is not None
    assert response.routing.outcomes() == [
        ("byok", "failed"),
        ("byok", "failed"),
        ("org", "answered"),
    ]
    assert response.routing.credential_fallback


async def test_every_passthrough_target_goes_first() -> None:
    """Passthrough targets are tried in order before any org-key fallback, even when an
    org-key target is listed first."""
    health = isolated_health()
    org = scripted("org", turn.answer("org answer"))
    one = Passthrough(scripted("one", turn.fail(503)))
    two = Passthrough(scripted("two", turn.answer("two answers")))
    route = Route("r", [Target("org", org), Target("one", one), Target("two", two)], health=health)
    plan = plan_of({route: {0: FALLBACK, 1: CALLER, 2: CALLER}})
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.text == "two answers"
    assert response.routing is not None
    assert response.routing.outcomes() == [
        ("one", "failed"),
        ("two", "answered"),
        ("org", "not_tried"),
    ]
    assert not response.routing.credential_fallback
    assert org.calls == 0


async def test_a_rejected_caller_credential_is_returned() -> None:
    """401 on the caller's credential ends the request with it, even with auth in retry_on;
    no org-key target is called."""
    health = isolated_health()
    byok = Passthrough(scripted("byok", turn.fail(401, message="invalid x-api-key")))
    org = scripted("org", turn.answer("never"))
    route, plan = _route(health, [byok], [org], retry_on=["provider_error", "auth"])
    with pytest.raises(errors.AuthenticationFailed) as caught:
        await health.clock.run(route.complete(QUESTION, plan=plan))
    assert caught.value.status == 401
    assert org.calls == 0
    assert caught.value.routing is not None
    assert not caught.value.routing.credential_fallback


async def test_a_passthrough_skipped_by_policy_is_not_a_failure() -> None:
    """The only passthrough target skipped by policy: the request ends as without the
    fallback (403), the org-key target is not called."""
    health = isolated_health()
    org = scripted("org", turn.answer("never"))
    byok = Passthrough(scripted("byok"))
    route = Route("r", [Target("byok", byok), Target("org", org)], health=health)
    plan = plan_of({route: {0: TargetRule(caller_credential=True, skip="denied"), 1: FALLBACK}})
    with pytest.raises(errors.PolicyDenied):
        await health.clock.run(route.complete(QUESTION, plan=plan))
    assert org.calls == 0


async def test_a_last_passthrough_skipped_after_a_failure_closes_the_fallback() -> None:
    """One passthrough fails, the last one is skipped by policy: the fallback stays closed and
    the first call's own error is returned."""
    health = isolated_health()
    one = Passthrough(scripted("one", turn.fail(503)))
    two = Passthrough(scripted("two"))
    org = scripted("org", turn.answer("never"))
    route = Route("r", [Target("one", one), Target("two", two), Target("org", org)], health=health)
    denied = TargetRule(caller_credential=True, skip="denied")
    plan = plan_of({route: {0: CALLER, 1: denied, 2: FALLBACK}})
    with pytest.raises(errors.ProviderError) as caught:
        await health.clock.run(route.complete(QUESTION, plan=plan))
    assert caught.value.status == 503
    assert org.calls == 0


async def test_a_passthrough_skipped_by_health_does_not_open_the_fallback() -> None:
    """The passthrough target's key is open (tripped elsewhere) and `fail` says not to probe:
    the org-key fallback is not called."""
    health = isolated_health()
    byok = Passthrough(scripted("byok"))
    org = scripted("org", turn.answer("never"))
    route, plan = _route(health, [byok], [org], when_all_unhealthy="fail")
    key = route.key_for(0, None)
    for _ in range(3):
        health.record_failure(Admission(key), "provider_error")
    with pytest.raises(errors.RouteExhausted) as caught:
        await health.clock.run(route.complete(QUESTION, plan=plan))
    assert caught.value.routing is not None
    assert caught.value.routing.outcomes()[0] == ("byok", "breaker_open")
    assert org.calls == 0


async def test_a_quota_failure_spends_the_credential_and_opens_the_fallback() -> None:
    """Quota on the caller's credential: the other passthrough target (same credential) is
    not_tried, and the org-key fallback answers."""
    health = isolated_health()
    one = Passthrough(scripted("one", turn.fail(402)))
    two = Passthrough(scripted("two"))
    org = scripted("org", turn.answer("ok"))
    route, plan = _route(health, [one, two], [org])
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.routing is not None
    assert response.routing.outcomes() == [
        ("one", "failed"),
        ("two", "not_tried"),
        ("org", "answered"),
    ]
    assert response.routing.attempts[1].reason == "same credential"
    assert response.routing.credential_fallback


async def test_a_quota_failure_without_fallback_is_returned() -> None:
    """Without org-key fallback targets, quota on the caller's credential returns that error
    rather than trying the same credential elsewhere."""
    health = isolated_health()
    one = Passthrough(scripted("one", turn.fail(402)))
    two = Passthrough(scripted("two"))
    route, plan = _route(health, [one, two], [])
    with pytest.raises(errors.QuotaExhausted):
        await health.clock.run(route.complete(QUESTION, plan=plan))
    assert two.seen == []


async def test_caller_credential_failures_never_count_for_health() -> None:
    """Failures on the caller's credential (5xx with Retry-After, quota) neither count, cool
    nor park the key; the same failures on the org key do."""
    health = isolated_health()
    byok = Passthrough(
        scripted("byok", *[turn.fail(503, retry_after=30) for _ in range(4)], turn.fail(402))
    )
    route, plan = _route(health, [byok], [])
    for _ in range(5):
        with pytest.raises(errors.ProviderError):
            await health.clock.run(route.complete(QUESTION, plan=plan))
    view = health.snapshot().get(route.key_for(0, None))
    assert view is None or (view.state == "available" and view.failures == 0)
    org_route = Route(
        "o", [Target("org", scripted("org", turn.fail(503, retry_after=30)))], health=health
    )
    with pytest.raises(errors.ProviderError):
        await health.clock.run(org_route.complete(QUESTION))
    counted = health.snapshot().get(org_route.key_for(0, None))
    assert counted is not None
    assert counted.state == "cooling_down"


async def test_a_broken_stream_on_the_caller_credential_is_not_counted() -> None:
    """A committed stream cut on the caller's credential raises StreamBroken and leaves the
    key's health untouched."""
    health = isolated_health()
    byok = Passthrough(scripted("byok", turn.stream(["Roll ", "back ", "now."], then=turn.cut())))
    route, plan = _route(health, [byok], [])

    async def read() -> None:
        async for _ in route.stream(QUESTION, plan=plan):
            pass

    with pytest.raises(errors.StreamBroken):
        await health.clock.run(read())
    view = health.snapshot().get(route.key_for(0, None))
    assert view is None or view.failures == 0


async def test_a_hedge_never_starts_the_fallback_beside_a_running_passthrough() -> None:
    """With hedging, an org-key fallback is not started while the caller's call still runs;
    it starts once that call failed."""
    health = isolated_health()
    byok = Passthrough(scripted("byok", turn.fail(503, delay=5), clock=health.clock))
    org = scripted("org", turn.answer("ok"))
    route, plan = _route(health, [byok], [org], hedge_after=1)
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.routing is not None
    assert response.routing.outcomes() == [("byok", "failed"), ("org", "answered")]
    assert not any(entry.hedge for entry in response.routing.attempts)
    assert health.clock.now() == pytest.approx(5.0)


async def test_concurrent_requests_keep_their_own_credentials() -> None:
    """Two requests in flight at once each reach the target with their own credential."""
    health = isolated_health()
    byok = Passthrough(
        scripted("byok", turn.answer("a", delay=1), turn.answer("b", delay=1), clock=health.clock)
    )
    route, first = _route(health, [byok], [])
    second = first.with_credential(CallerCredential("sk-second-caller"))
    both = asyncio.gather(
        route.complete(QUESTION, plan=first), route.complete(QUESTION, plan=second)
    )
    await health.clock.run(both)
    assert sorted(s for s in byok.seen if s) == sorted([SECRET, "sk-second-caller"])


async def test_a_hedged_passthrough_failure_keeps_the_fallback_shut_while_another_runs() -> None:
    """With hedging, one passthrough call failing does not open the org-key fallback while
    another call on the caller's credential still runs: that call answers, the fallback is
    never called."""
    health = isolated_health()
    one = Passthrough(scripted("one", turn.fail(503, delay=3), clock=health.clock))
    two = Passthrough(scripted("two", turn.answer("late", delay=100), clock=health.clock))
    org = scripted("org", turn.answer("org answer"), clock=health.clock)
    route = Route(
        "r",
        [Target("one", one), Target("two", two), Target("org", org)],
        health=health,
        hedge_after=1,
    )
    plan = plan_of({route: {0: CALLER, 1: CALLER, 2: FALLBACK}})
    response = await health.clock.run(route.complete(QUESTION, plan=plan))
    assert response.text == "late"
    assert response.routing is not None
    assert response.routing.outcomes() == [
        ("one", "failed"),
        ("two", "answered"),
        ("org", "not_tried"),
    ]
    assert org.calls == 0
