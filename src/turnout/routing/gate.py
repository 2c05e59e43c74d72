"""The gate of one route pass under a request plan: which held-back targets it may call now.

A request plan holds two kinds of targets back (`turnout.routing.plan`): the org-key fallback
targets, behind the caller's own credential, and, on a route that orders by provider family,
every target of a family other than the one the request prefers (a session's pin, else the
first target's family). A `TargetGate` keeps, for one pass, whether each way is open, and hears
of the pass's skips and failures.

Rule 1: an org-key fallback target is held back until a call on the caller's credential fails
retryably (quota included) while no other call on that credential is running; a target passed
by without a failure on the way (skipped by health, policy or eligibility, an answer refused
or rejected) closes the way again, unless it is a fallback target itself.
Rule 2: a quota failure on the caller's credential spends it: the other caller-credential
targets are not called for the rest of the pass.
Rule 3: the preferred family is a preference, never a wall. The other families open, for the
rest of the pass, once no target of the preferred family is left that can serve the request:
each one is down (it failed retryably, was skipped as cooling down, breaker open or parked, or
was not tried because the caller's credential it needs is spent) or cannot take this request
whatever its health (paused, ineligible, skipped by policy), and at least one is down. That
crossing is an `outage`.
Rule 4: on a route that switches family on quota, a target of the preferred family that fails
with `quota_exhausted` on its own key, or is skipped as `parked`, opens the other families at
once: that crossing is `quota`. Only a `quota` crossing moves a session's pin; an `outage`
crossing leaves it, so the session returns to its family once that family answers again.
Rule 5: a target of the preferred family passed by for any other reason (an auth failure, an
answer refused or rejected, the cost budget) keeps the other families closed for the pass:
the family was not down. Other-family targets then do not count as targets left.
Rule 6: the first call of the pass to a target of another family carries the crossing's word
(`family_switch` on its attempt entry).
Rule 7: when the other families stayed closed, a pass that used up the preferred family ends
naming that family and its targets, in the pass's order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from turnout.routing.ending import Ending
from turnout.vendors.classify import RETRYABLE

if TYPE_CHECKING:
    from collections.abc import Sequence

    from turnout.routing.plan import TargetPlan
    from turnout.routing.target import Target

__all__ = ["FamilySwitch", "PassedBy", "TargetGate"]

FamilySwitch = Literal["quota", "outage"]
"""Why a pass crossed to another provider family (Rules 3 and 4)."""

PassedBy = Literal["aside", "unhealthy", "parked", "spent", "unanswered", "held"]
"""How a target was passed by without an answer: `aside` (paused, ineligible, policy-skipped),
`unhealthy` (cooling down or breaker open), `parked`, `spent` (the caller's credential it needs
is spent), `unanswered` (an answer refused or rejected), `held` (any other reason)."""

_DOWN: frozenset[PassedBy] = frozenset({"unhealthy", "parked", "spent"})
_CLOSES_FALLBACK: frozenset[PassedBy] = frozenset({"aside", "unhealthy", "parked", "unanswered"})


class TargetGate:
    """Which held-back targets of one pass under `plan` may be called now (module rules).

    `family` is the family the request prefers: `pinned` (a session's pin) when a target of it
    may start, else the plan's own choice; None when the plan does not order by family.
    `family_switch` is the word of the crossing once the other families opened (Rules 3, 4),
    until the first call to one of their targets takes it (`take_family_switch`).
    """

    __slots__ = (
        "_credential_running",
        "_family_open",
        "_held",
        "_members",
        "_plan",
        "_seen",
        "credential_spent",
        "fallback_open",
        "family",
        "family_switch",
    )

    def __init__(self, plan: TargetPlan, pinned: str | None = None) -> None:
        self._plan = plan
        self.family = plan.family_for(pinned)
        self.fallback_open = False
        self.credential_spent = False
        # Calls on the caller's credential started and not yet settled (hedging runs several).
        self._credential_running = 0
        self._family_open = False
        self.family_switch: FamilySwitch | None = None
        # The preferred family's targets, and what became of each one reached (True: down).
        self._members = plan.members(self.family)
        self._seen: dict[int, bool] = {}
        self._held = False

    @property
    def family_open(self) -> bool:
        """True once the families other than the preferred one may be called (Rules 3, 4)."""
        return self._family_open

    def is_held_back(self, index: int) -> bool:
        """True while target `index` is behind a closed way (Rules 1, 3 and 4)."""
        plan = self._plan
        if plan.rules[index].fallback and not self.fallback_open:
            return True
        return not self._family_open and plan.is_held_back(index, self.family)

    def is_closed_for_good(self, index: int) -> bool:
        """True when target `index` is of another family that this pass can no longer open
        (Rule 5)."""
        return self._held and not self._family_open and self._plan.is_held_back(index, self.family)

    def is_spent(self, index: int) -> bool:
        """True when target `index` would use the caller's credential, already spent (Rule 2)."""
        return self.credential_spent and self._plan.rules[index].caller_credential

    def passed_by(self, index: int, how: PassedBy) -> None:
        """Target `index` was passed by without an answer and without a failed call (Rule 1
        for the org-key fallback, Rules 3-5 for the families)."""
        if how in _CLOSES_FALLBACK and not self._plan.rules[index].fallback:
            self.fallback_open = False
        if how == "parked":
            self._quota_spent(index)
        if index in self._members:
            self._member_passed(index, how in _DOWN, held=how in {"unanswered", "held"})

    def credential_call_started(self) -> None:
        """A call on the caller's credential started."""
        self._credential_running += 1

    def credential_call_settled(self) -> None:
        """A call on the caller's credential finished and is being settled."""
        self._credential_running -= 1

    def failed(self, index: int, error_class: str, *, credentialed: bool) -> None:
        """Target `index` failed with `error_class` and the pass goes on (Rules 1-5)."""
        retryable = error_class in RETRYABLE
        if credentialed:
            self.fallback_open = retryable and not self._credential_running
            if error_class == "quota_exhausted":
                self.credential_spent = True
        elif error_class == "quota_exhausted":
            self._quota_spent(index)
        if index in self._members:
            self._member_passed(index, retryable, held=not retryable)

    def take_family_switch(self, index: int) -> FamilySwitch | None:
        """The crossing's word when target `index` is the pass's first call outside the
        preferred family (Rule 6), else None."""
        word = self.family_switch
        if word is None or not self._plan.is_held_back(index, self.family):
            return None
        self.family_switch = None
        return word

    def _member_passed(self, index: int, down: bool, *, held: bool) -> None:
        """A target of the preferred family is done with: down, set aside, or held (Rules 3, 5)."""
        self._seen[index] = down
        if held:
            self._held = True
        if (
            not self._family_open
            and not self._held
            and len(self._seen) == len(self._members)
            and any(self._seen.values())
        ):
            self._open("outage")

    def _quota_spent(self, index: int) -> None:
        plan = self._plan
        if (
            self.family is not None
            and plan.switch_family_on_quota
            and plan.rules[index].family == self.family
            and not self._family_open
        ):
            self._open("quota")

    def _open(self, word: FamilySwitch) -> None:
        self._family_open = True
        self.family_switch = word

    def family_ending(
        self, order: Sequence[int], targets: Sequence[Target], *, called: bool
    ) -> Ending | None:
        """How a pass that used up the preferred family ends (Rule 7): `exhausted` when it
        `called` a target, else `zero_calls`, naming the family's targets in `order`; None when
        the pass does not order by family or the other families opened."""
        family = self.family
        if family is None or self._family_open:
            return None
        plan = self._plan
        members = tuple(targets[i].name for i in order if not plan.is_held_back(i, family))
        return Ending(
            "exhausted" if called else "zero_calls", family=family, family_targets=members
        )
