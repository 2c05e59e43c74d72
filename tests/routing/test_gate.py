"""The gate of one pass (`turnout.routing.gate`): when the org-key fallback and the other
provider families open (a quota crossing at once, an outage once the preferred family has no
target left), and how a pass held to one family ends."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import pytest

from tests.routing._plan_support import CALLER, FALLBACK, OWN, Passthrough, scripted
from turnout.routing.gate import TargetGate
from turnout.routing.plan import TargetPlan, TargetRule
from turnout.routing.route import Route, Target
from turnout.testing import isolated_health

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.routing.gate import PassedBy

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
    gate.passed_by(1, "aside")
    assert gate.is_held_back(2)


def test_passing_a_fallback_target_by_leaves_the_way_open() -> None:
    """A fallback target skipped on the way does not close the fallback."""
    gate = _caller_then_fallback()
    gate.failed(0, "provider_error", credentialed=True)
    gate.passed_by(2, "unhealthy")
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
    """A `quota_exhausted` failure of a target of the family opens the other families at
    once, as a `quota` crossing, and nothing closes them again."""
    gate = _families()
    gate.failed(0, "quota_exhausted", credentialed=False)
    assert gate.family_open
    assert gate.family_switch == "quota"
    gate.passed_by(2, "unanswered")
    gate.failed(2, "auth", credentialed=False)
    assert not gate.is_held_back(1)


def test_a_parked_target_of_the_family_opens_the_others() -> None:
    """A target of the family skipped as parked opens the other families."""
    gate = _families()
    gate.passed_by(2, "parked")
    assert not gate.is_held_back(1)
    assert gate.family_switch == "quota"


@pytest.mark.parametrize("error_class", ["provider_error", "rate_limited", "timeout"])
def test_an_outage_opens_the_others_once_no_member_is_left(error_class: str) -> None:
    """A retryable failure opens nothing while another member of the family is left; once
    every member is down the other families open as an `outage` crossing."""
    gate = _families()
    gate.failed(0, error_class, credentialed=False)
    assert gate.is_held_back(1)
    gate.failed(2, error_class, credentialed=False)
    assert not gate.is_held_back(1)
    assert gate.family_switch == "outage"


@pytest.mark.parametrize("how", ["unhealthy", "parked", "spent"])
def test_a_skip_for_health_or_a_spent_credential_counts_as_down(how: PassedBy) -> None:
    """A member cooling down, open, parked or left with a spent credential is down: with the
    other member failed, the others open (an outage on a route that never switches)."""
    gate = _families(switch=False)
    gate.failed(0, "provider_error", credentialed=False)
    gate.passed_by(2, how)
    assert gate.family_switch == "outage"
    assert not gate.is_held_back(1)


def test_members_that_cannot_take_the_request_are_set_aside() -> None:
    """An ineligible (or policy-skipped) member does not keep the family: one down member
    with the rest set aside opens the others; every member set aside opens nothing."""
    gate = _families()
    gate.passed_by(2, "aside")
    gate.failed(0, "timeout", credentialed=False)
    assert not gate.is_held_back(1)
    quiet = _families()
    quiet.passed_by(0, "aside")
    quiet.passed_by(2, "aside")
    assert quiet.is_held_back(1)


@pytest.mark.parametrize(
    "hold", ["auth", "unanswered", "held"], ids=["auth failure", "refused", "cost budget"]
)
def test_a_member_passed_by_for_another_reason_keeps_the_others_closed(hold: str) -> None:
    """An auth failure, a refused answer or a cost-budget skip is no outage: the family stays
    preferred for the pass, and the other families no longer count as targets left."""
    gate = _families()
    assert not gate.is_closed_for_good(1)
    if hold == "auth":
        gate.failed(0, "auth", credentialed=False)
    else:
        gate.passed_by(0, cast("PassedBy", hold))
    gate.failed(2, "provider_error", credentialed=False)
    assert gate.is_held_back(1)
    assert gate.is_closed_for_good(1)
    assert not gate.is_closed_for_good(2)


def test_the_first_call_outside_the_family_takes_the_word_once() -> None:
    """Only the first call to another family's target carries the crossing's word."""
    gate = _families()
    gate.failed(0, "provider_error", credentialed=False)
    gate.failed(2, "provider_error", credentialed=False)
    assert gate.take_family_switch(2) is None
    assert gate.take_family_switch(1) == "outage"
    assert gate.take_family_switch(1) is None


def test_a_quota_failure_on_the_callers_credential_is_no_quota_crossing() -> None:
    """Quota run out on the caller's own credential says nothing of the family's keys: it
    opens nothing at once, and counts only as that member being down (an outage)."""
    gate = _families()
    gate.failed(0, "quota_exhausted", credentialed=True)
    assert gate.is_held_back(1)
    gate.failed(2, "provider_error", credentialed=False)
    assert gate.family_switch == "outage"


def test_a_quota_failure_of_another_family_opens_nothing() -> None:
    """Only a target of the request's own family can open the other families."""
    gate = _families(pinned="openai")
    gate.failed(0, "quota_exhausted", credentialed=False)
    gate.passed_by(2, "parked")
    assert gate.is_held_back(0)


def test_a_route_that_never_switches_crosses_on_quota_as_an_outage() -> None:
    """Without switching on quota, a quota failure opens nothing at once; once every member
    is out of quota the others open, as an `outage` that leaves the pin."""
    gate = _families(switch=False)
    gate.failed(0, "quota_exhausted", credentialed=False)
    assert gate.is_held_back(1)
    gate.passed_by(2, "parked")
    assert not gate.is_held_back(1)
    assert gate.family_switch == "outage"
    assert not any(gate.is_closed_for_good(i) for i in range(3))


def test_a_pass_held_to_its_family_ends_naming_it() -> None:
    """The ending names the family and its targets in the pass's order; `zero_calls` without
    a call."""
    gate = _families()
    ending = gate.family_ending([2, 0, 1], _plan_targets(), called=True)
    assert ending is not None
    assert (ending.kind, ending.family, ending.family_targets) == (
        "exhausted",
        "anthropic",
        ("t2", "t0"),
    )
    quiet = gate.family_ending([0, 2, 1], _plan_targets(), called=False)
    assert quiet is not None
    assert (quiet.kind, quiet.family_targets) == ("zero_calls", ("t0", "t2"))


def test_no_family_ending_once_the_others_opened_or_without_families() -> None:
    """An opened family gate, or a plan without family order, ends the ordinary way."""
    gate = _families()
    gate.passed_by(0, "parked")
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
