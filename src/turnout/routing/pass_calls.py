"""How one route pass makes its calls (`turnout.routing.route_pass` decides which): a `Call` of
the chosen target, dressed as the request's plan says for that target, and what its entry notes.

Rule 1: with a plan, a target whose rule says `caller_credential` is called through its client
bound to the caller's credential, and the gate hears that such a call started (a same-target
retry is a call of its own); the rule's `fallback` and `shadow` go on the call, and so does the
family crossing's word when the gate has one for this target.
Rule 2: a request that came in one wire format notes on each call what a target of another
format loses (`dropped ...`), worked out once per format for the pass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnout.routing.attempt import Call
from turnout.routing.plan import caller_client
from turnout.routing.reasons import DroppedFields, EntryNotes

if TYPE_CHECKING:
    from collections.abc import Hashable

    from turnout.routing.attempt import RoutedRequest
    from turnout.routing.gate import TargetGate
    from turnout.routing.health import Admission
    from turnout.routing.plan import RequestPlan, TargetPlan
    from turnout.routing.request_state import RequestState
    from turnout.routing.route import Route

__all__ = ["PassCalls"]


class PassCalls:
    """The calls of one pass over `route` for the request of `state` (fallback hop `hop`), under
    `plan` and its `gate` (both None without a plan; the request's plan holds the caller's
    credential)."""

    __slots__ = ("dropped", "gate", "hop", "plan", "request_plan", "route")

    def __init__(
        self,
        route: Route,
        state: RequestState,
        hop: int,
        plan: TargetPlan | None,
        gate: TargetGate | None,
    ) -> None:
        self.route = route
        self.hop = hop
        self.plan = plan
        self.gate = gate
        translated = route.table.translated_origins
        self.dropped = DroppedFields.of(state.request, translated) if translated else None
        self.request_plan: RequestPlan | None = state.plan

    def make(
        self,
        index: int,
        wire: RoutedRequest,
        key: Hashable,
        admission: Admission,
        *,
        forced: bool = False,
    ) -> Call:
        """The call of target `index` with `wire` under `admission` (Rules 1 and 2)."""
        call = Call(self.route, index, wire, key, admission, forced=forced)
        if self.hop:
            call.hop = self.hop
        shadow: tuple[str, ...] = ()
        switch = None
        plan = self.plan
        if plan is not None:
            rule = plan.rules[index]
            gate = self.gate
            assert gate is not None
            if rule.caller_credential:
                request_plan = self.request_plan
                credential = request_plan.credential if request_plan is not None else None
                call.client = caller_client(call.client, credential)
                call.credentialed = True
                gate.credential_call_started()
            call.fallback = rule.fallback
            shadow = rule.shadow
            if gate.family_switch is not None:
                switch = gate.take_family_switch(index)
        translation = self.dropped
        dropped = None
        if translation is not None:
            dropped = translation.reason(self.route.facts[index].format_for(translation.origin))
        if shadow or switch is not None or dropped is not None:
            call.notes = EntryNotes(shadow, switch, dropped)
        return call

    def again(self, call: Call, admission: Admission) -> Call:
        """The same target once more, for a same-target retry; a retry on the caller's
        credential is a call of its own on it, started here as the first one was."""
        retry = call.again(admission)
        if retry.credentialed:
            assert self.gate is not None
            self.gate.credential_call_started()
        return retry
