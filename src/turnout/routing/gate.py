"""The gate of one route pass under a request plan: which held-back targets it may call now.

A request plan holds two kinds of targets back (`turnout.routing.plan`): the org-key fallback
targets, behind the caller's own credential, and, on a route that orders by provider family,
every target of a family other than the one the request tries first. A `TargetGate` keeps, for
one pass, whether each way is open, and hears of the pass's skips and failures.

Rule 1: an org-key fallback target is held back until a call on the caller's credential fails
retryably (quota included) while no other call on that credential is running; a target passed
by without a failure on the way (skipped by health, policy or eligibility, an answer refused
or rejected) closes the way again, unless it is a fallback target itself.
Rule 2: a quota failure on the caller's credential spends it: the other caller-credential
targets are not called for the rest of the pass.
Rule 3: the other families stay held back until a target of the request's family fails with
`quota_exhausted` on its own key, or is skipped as `parked`, on a route that switches family on
quota; then they stay open for the rest of the pass. Nothing else opens them: no other failure,
and no failure on the caller's credential.
Rule 4: on a route that never switches family, the other families are closed for good: their
targets do not count as targets left.
Rule 5: when the other families stayed closed, a pass that used up the request's family ends
naming that family and its targets, in the pass's order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnout.routing.ending import Ending
from turnout.vendors.classify import RETRYABLE

if TYPE_CHECKING:
    from collections.abc import Sequence

    from turnout.routing.plan import TargetPlan
    from turnout.routing.target import Target

__all__ = ["TargetGate"]


class TargetGate:
    """Which held-back targets of one pass under `plan` may be called now (module rules).

    `family` is the family the request tries first: `pinned` (a session's pin) when a target
    of it may start, else the plan's own choice; None when the plan does not order by family.
    """

    __slots__ = (
        "_credential_running",
        "_family_open",
        "_plan",
        "credential_spent",
        "fallback_open",
        "family",
    )

    def __init__(self, plan: TargetPlan, pinned: str | None = None) -> None:
        self._plan = plan
        self.family = plan.family_for(pinned)
        self.fallback_open = False
        self.credential_spent = False
        # Calls on the caller's credential started and not yet settled (hedging runs several).
        self._credential_running = 0
        self._family_open = False

    @property
    def family_open(self) -> bool:
        """True once the families other than the request's may be called (Rule 3)."""
        return self._family_open

    def is_held_back(self, index: int) -> bool:
        """True while target `index` is behind a closed way (Rules 1 and 3)."""
        plan = self._plan
        if plan.rules[index].fallback and not self.fallback_open:
            return True
        return not self._family_open and plan.is_held_back(index, self.family)

    def is_closed_for_good(self, index: int) -> bool:
        """True when target `index` is of another family that this pass can never open (Rule 4)."""
        plan = self._plan
        return not plan.switch_family_on_quota and plan.is_held_back(index, self.family)

    def is_spent(self, index: int) -> bool:
        """True when target `index` would use the caller's credential, already spent (Rule 2)."""
        return self.credential_spent and self._plan.rules[index].caller_credential

    def passed_by(self, index: int) -> None:
        """Target `index` was passed by without a failure (Rule 1)."""
        if not self._plan.rules[index].fallback:
            self.fallback_open = False

    def parked(self, index: int) -> None:
        """Target `index` was skipped as parked: out of quota (Rule 3)."""
        self._quota_spent(index)

    def credential_call_started(self) -> None:
        """A call on the caller's credential started."""
        self._credential_running += 1

    def credential_call_settled(self) -> None:
        """A call on the caller's credential finished and is being settled."""
        self._credential_running -= 1

    def failed(self, index: int, error_class: str, *, credentialed: bool) -> None:
        """Target `index` failed with `error_class` and the pass goes on (Rules 1-3)."""
        if credentialed:
            self.fallback_open = error_class in RETRYABLE and not self._credential_running
            if error_class == "quota_exhausted":
                self.credential_spent = True
        elif error_class == "quota_exhausted":
            self._quota_spent(index)

    def _quota_spent(self, index: int) -> None:
        plan = self._plan
        if (
            self.family is not None
            and plan.switch_family_on_quota
            and plan.rules[index].family == self.family
        ):
            self._family_open = True

    def family_ending(
        self, order: Sequence[int], targets: Sequence[Target], *, called: bool
    ) -> Ending | None:
        """How a pass that used up the request's family ends (Rule 5): `exhausted` when it
        `called` a target, else `zero_calls`, naming the family's targets in `order`; None when
        the pass does not order by family or the other families opened."""
        family = self.family
        if family is None or self._family_open:
            return None
        plan = self._plan
        members = tuple(targets[i].name for i in order if not plan.is_held_back(i, family))
        return Ending("exhausted" if called else "zero_calls", family=family, members=members)
