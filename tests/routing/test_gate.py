"""The gate of one pass (`turnout.routing.gate`): when the org-key fallback and the other
provider families open, and how a pass held to one family ends."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.routing._plan_support import CALLER, FALLBACK, OWN, Passthrough, scripted
from turnout.routing.gate import TargetGate
from turnout.routing.plan import TargetPlan, TargetRule
from turnout.routing.route import Route, Target
from turnout.testing import isolated_health

if TYPE_CHECKING:
    from collections.abc import Mapping

ANTHROPIC = TargetRule(family="anthropic")
OPENAI = TargetRule(family="openai")


def _plan(rules: Mapping[int, TargetRule], *, switch: bool = True) -> TargetPlan:
    """A plan over a route of one target per rule, named t0, t1, … (each takes a credential)."""
    targets = [Target(f"t{i}", Passthrough(scripted(f"p{i}"))) for i in range(len(rules))]
    route = Route("gated", targets, health=isolated_health())
    return TargetPlan(route, rules, switch_family_on_quota=switch)


def _caller_then_fallback() -> TargetGate:
    """A gate over [caller's credential, caller's credential, org-key fallback]."""
    return TargetGate(_plan({0: CALLER, 1: CALLER, 2: FALLBACK}))


def _families(*, switch: bool = True, pinned: str | None = None) -> TargetGate:
    """A gate over [anthropic, openai, anthropic] (the first target's family goes first)."""
    return TargetGate(_plan({0: ANTHROPIC, 1: OPENAI, 2: ANTHROPIC}, switch=switch), pinned)


def test_without_families_only_the_fallback_is_held_back() -> None:
    """A plan that does not order by family holds back only the org-key fallback targets."""
    gate = _caller_then_fallback()
    assert gate.family is None
    assert [gate.is_held_back(i) for i in range(3)] == [False, False, True]
    assert not any(gate.is_closed_for_good(i) for i in range(3))


def test_a_retryable_failure_on_the_callers_credential_opens_the_fallback() -> None:
    """A rate limit on the caller's credential opens the org-key fallback."""
    gate = _caller_then_fallback()
    gate.credential_call_started()
    gate.credential_call_settled()
    gate.failed(0, "rate_limited", credentialed=True)
    assert not gate.is_held_back(2)


def test_a_failure_outside_the_retryable_classes_keeps_the_fallback_closed() -> None:
    """An `auth` failure on the caller's credential is not retryable: the fallback stays shut."""
    gate = _caller_then_fallback()
    gate.failed(0, "auth", credentialed=True)
    assert gate.is_held_back(2)


def test_the_fallback_waits_for_the_last_running_call_on_the_credential() -> None:
    """While another call on the caller's credential runs, a failure does not open the way."""
    gate = _caller_then_fallback()
    gate.credential_call_started()
    gate.credential_call_started()
    gate.credential_call_settled()
    gate.failed(0, "timeout", credentialed=True)
    assert gate.is_held_back(2)
    gate.credential_call_settled()
    gate.failed(1, "timeout", credentialed=True)
    assert not gate.is_held_back(2)


def test_passing_a_caller_target_by_closes_the_fallback_again() -> None:
    """A caller-credential target skipped after the failure closes the way again."""
    gate = _caller_then_fallback()
    gate.failed(0, "provider_error", credentialed=True)
    gate.passed_by(1)
    assert gate.is_held_back(2)


def test_passing_a_fallback_target_by_leaves_the_way_open() -> None:
    """A fallback target skipped on the way does not close the fallback."""
    gate = _caller_then_fallback()
    gate.failed(0, "provider_error", credentialed=True)
    gate.passed_by(2)
    assert not gate.is_held_back(2)


def test_a_quota_failure_spends_the_callers_credential() -> None:
    """After a quota failure on the caller's credential, only org-key targets may be called."""
    gate = _caller_then_fallback()
    assert not gate.is_spent(1)
    gate.failed(0, "quota_exhausted", credentialed=True)
    assert gate.credential_spent
    assert [gate.is_spent(i) for i in range(3)] == [True, True, False]
    assert not gate.is_held_back(2)


def test_the_first_targets_family_goes_first_and_the_others_wait() -> None:
    """Without a pin the first target's family is tried; the other families are held back."""
    gate = _families()
    assert gate.family == "anthropic"
    assert [gate.is_held_back(i) for i in range(3)] == [False, True, False]
    assert not gate.family_open


def test_a_pin_chooses_the_family() -> None:
    """A session pinned to openai holds the anthropic targets back instead."""
    gate = _families(pinned="openai")
    assert gate.family == "openai"
    assert [gate.is_held_back(i) for i in range(3)] == [True, False, True]


def test_a_quota_failure_of_the_familys_own_key_opens_the_others_for_good() -> None:
    """A `quota_exhausted` failure of a target of the family opens the other families."""
    gate = _families()
    gate.failed(0, "quota_exhausted", credentialed=False)
    assert gate.family_open
    gate.passed_by(2)
    gate.failed(2, "rate_limited", credentialed=False)
    assert not gate.is_held_back(1)


def test_a_parked_target_of_the_family_opens_the_others() -> None:
    """A target of the family skipped as parked opens the other families."""
    gate = _families()
    gate.parked(2)
    assert not gate.is_held_back(1)


def test_other_failures_never_open_the_other_families() -> None:
    """Server errors, rate limits and timeouts keep the other families held back."""
    gate = _families()
    for error_class in ("provider_error", "rate_limited", "timeout", "auth"):
        gate.failed(0, error_class, credentialed=False)
    assert gate.is_held_back(1)


def test_a_quota_failure_on_the_callers_credential_never_opens_the_families() -> None:
    """Quota run out on the caller's own credential says nothing of the family's keys."""
    gate = _families()
    gate.failed(0, "quota_exhausted", credentialed=True)
    assert gate.is_held_back(1)


def test_a_quota_failure_of_another_family_opens_nothing() -> None:
    """Only a target of the request's own family can open the other families."""
    gate = _families(pinned="openai")
    gate.failed(0, "quota_exhausted", credentialed=False)
    gate.parked(2)
    assert gate.is_held_back(0)


def test_a_route_that_never_switches_keeps_the_others_closed_for_good() -> None:
    """Without switching on quota, a quota failure opens nothing and the others never count."""
    gate = _families(switch=False)
    gate.failed(0, "quota_exhausted", credentialed=False)
    gate.parked(2)
    assert gate.is_held_back(1)
    assert [gate.is_closed_for_good(i) for i in range(3)] == [False, True, False]


def test_a_switching_route_is_never_closed_for_good() -> None:
    """On a route that switches family on quota, no target is closed for good."""
    gate = _families()
    assert not any(gate.is_closed_for_good(i) for i in range(3))


def test_a_pass_held_to_its_family_ends_naming_it() -> None:
    """The ending names the family and its targets in the pass's order; `zero_calls` without
    a call."""
    gate = _families()
    ending = gate.family_ending([2, 0, 1], _plan_targets(), called=True)
    assert ending is not None
    assert (ending.kind, ending.family, ending.members) == ("exhausted", "anthropic", ("t2", "t0"))
    quiet = gate.family_ending([0, 2, 1], _plan_targets(), called=False)
    assert quiet is not None
    assert (quiet.kind, quiet.members) == ("zero_calls", ("t0", "t2"))


def test_no_family_ending_once_the_others_opened_or_without_families() -> None:
    """An opened family gate, or a plan without family order, ends the ordinary way."""
    gate = _families()
    gate.parked(0)
    assert gate.family_ending([0, 2, 1], _plan_targets(), called=True) is None
    assert _caller_then_fallback().family_ending([0, 1, 2], _plan_targets(), called=True) is None


def _plan_targets() -> list[Target]:
    """Targets named t0, t1, t2, as `_plan` names them."""
    return [Target(f"t{i}", scripted(f"p{i}")) for i in range(3)]


def test_an_own_key_plan_holds_nothing_back() -> None:
    """A plan of own-key targets only never holds a target back nor spends a credential."""
    gate = TargetGate(_plan({0: OWN, 1: OWN}))
    gate.failed(0, "quota_exhausted", credentialed=False)
    assert not gate.is_held_back(1)
    assert not gate.is_spent(1)
