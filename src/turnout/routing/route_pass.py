"""One route's pass at a request: which target to call next, what a finished call means for
the rest of the walk, and how the pass ends without an answer. The async loop around it
(calls, same-target retries, hedging, fallback routes) is `turnout.routing.driver`.

Rule 1: a pass walks the try order once; each target gets at most one visit, and each visit is
either calls (same-target retries are separate calls) or one skip entry (`paused`, `ineligible`,
`not_tried`, or a health skip with the seconds left).
Rule 2: nothing is called once the request's budget is spent (`max_attempts` calls, the
`request_timeout` deadline, a `cost_budget` the target's estimate would pass); the targets not
reached become `not_tried` entries.
Rule 3: every finished call is settled once (`turnout.routing.outcome`: its entry and what
health hears); a context-length or content-filter failure ends the pass for its fallback kind,
a failure outside `retry_on` ends it for good.
Rule 4: `when_all_unhealthy` applies only when every target reached was skipped by health and no
call was made; each forced probe goes through `Health.admit_forced` (one per key in flight).
Rule 5: an embeddings request walks the same way; every target is checked against it.
Rule 6: a request's plan (`turnout.routing.plan`, its rules there) shapes each pass: the
targets and order come from the route's `TargetPlan`, each visit checks the target's rule
(policy skip, the caller's credential).
Rule 7: held-back targets (the org-key fallback, the families other than the preferred one)
end the walk while their way is closed, and are then `not_tried`; the pass tells its
`TargetGate` how each target was passed by, and the gate decides when each way opens, which
call carries the family crossing's word, and how a pass held to one family ends
(`turnout.routing.gate`, its rules there). Targets closed for good do not count as targets
left, so a parked last target of the preferred family is still probed when the other
families can no longer open.
Rule 8: with health shared between replicas, a key due for its half-open probe is claimed
across them before its call (`Health.claim_probe`, a short bounded wait): the request that takes
the lease makes the probe, and one that finds another replica holding it skips the key with
that as the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from turnout.routing.attempt import Call, run_whole
from turnout.routing.ending import Ending
from turnout.routing.gate import TargetGate
from turnout.routing.health import Skip
from turnout.routing.outcome import settle_answer, settle_failure
from turnout.routing.pass_calls import PassCalls
from turnout.routing.reasons import health_skip_reason
from turnout.routing.stream import open_stream
from turnout.routing.target import ineligible_reason
from turnout.vendors.classify import RETRYABLE

if TYPE_CHECKING:
    from collections.abc import Hashable

    from turnout.errors import ProviderError
    from turnout.routing.attempt import RoutedRequest
    from turnout.routing.gate import PassedBy
    from turnout.routing.health import Admission
    from turnout.routing.plan import TargetPlan
    from turnout.routing.request_state import RequestState
    from turnout.routing.route import Route

__all__ = [
    "NO_CALLS",
    "Decision",
    "DueProbe",
    "ForcedProbes",
    "RoutePass",
    "admit_again",
    "final_ending",
    "is_denied",
    "run_call",
]

Decision = Literal["answer", "next", "retry", "stop"]
"""What comes after a settled call: the answer wins, the next target, a same-target retry, or
the end of the pass (`ending` says how)."""
NO_CALLS = Ending("zero_calls")


@dataclass(frozen=True, slots=True)
class DueProbe:
    """A target whose key is due for its probe, admitted here but still to be claimed across
    replicas (`Health.claim_probe`) before it is called."""

    index: int
    wire: RoutedRequest
    key: Hashable
    admission: Admission


_SAME_TARGET_RETRY = frozenset({"rate_limited", "provider_error"})
_ESCALATION = {"context_length": "context", "content_filtered": "content"}


class RoutePass:
    """One route's pass at a request (see the module rules).

    It only decides: `calls_made` builds each call it chooses (`turnout.routing.pass_calls`),
    and the calls themselves are made by `run_call`, from the driver's loop or the hedge's
    race. `order[:cursor]` are the targets reached so far; the rest are not tried
    (yet). With a `plan`, `gate` says which held-back targets (the org-key fallback, the other
    families) may be called now (`turnout.routing.gate`); without one it is None.
    """

    __slots__ = (
        "auth_failed",
        "blocked",
        "calls",
        "calls_made",
        "cursor",
        "ending",
        "failed",
        "forced",
        "gate",
        "health_skips",
        "hop",
        "ineligible",
        "order",
        "plan",
        "policy_skips",
        "route",
        "state",
        "stopped",
    )

    def __init__(
        self, route: Route, state: RequestState, hop: int, plan: TargetPlan | None = None
    ) -> None:
        self.route = route
        self.state = state
        self.hop = hop
        self.plan = plan
        self.gate: TargetGate | None = None
        if plan is None:
            order, reason = route.start_order(state.record.session_id)
        else:
            pinned = None if state.plan is None else state.plan.pinned_family(route)
            gate = self.gate = TargetGate(plan, pinned)
            order, reason = plan.start_order(route, state.record.session_id, gate.family)
        self.calls_made = PassCalls(route, state, hop, plan, self.gate)
        if hop == 0:
            state.record.strategy_reason = reason
        self.order = order
        self.cursor = 0
        self.calls = 0
        self.failed = 0
        self.blocked = 0
        self.health_skips: list[tuple[int, Skip, Hashable]] = []
        self.ineligible: list[tuple[str, str]] = []
        self.auth_failed: set[str] | None = None
        self.forced: ForcedProbes | None = None
        self.stopped: str | None = None
        self.ending = NO_CALLS
        self.policy_skips: list[str] = []

    # -- choosing the next call

    async def next_call(self) -> Call | None:
        """The next target that may be called now, recording an entry for each one skipped on
        the way; None when the order is done (or the budget is spent). A key due for its probe
        is first claimed across replicas (Rule 8), which is the one wait here."""
        order = self.order
        gate = self.gate
        while self.cursor < len(order) and self.stopped is None:
            index = order[self.cursor]
            if gate is not None and gate.is_held_back(index):
                break  # Rule 7: the org-key fallback or the other families are not open (yet)
            self.cursor += 1
            call = self._screen(index)
            if isinstance(call, DueProbe):
                call = await self._claimed(call)
            if call is not None:
                return call
        if self.stopped is not None:
            return None
        return self._forced_call()

    def _screen(self, index: int) -> Call | DueProbe | None:
        """Visit target `index`: the call to make, a probe still to claim across replicas, or
        None after recording why it is skipped."""
        route, state = self.route, self.state
        target = route.targets[index]
        if target.paused:
            state.skip(self.hop, index, target, "paused")
            return None
        request = state.request
        if route.facts[index].has_eligibility_rules or state.screen_all:
            reason = ineligible_reason(target, request, state.context)
            if reason is not None:
                self.ineligible.append((target.name, reason))
                state.skip(self.hop, index, target, "ineligible", reason)
                self._passed_by(index, "aside")
                return None
        rule = self.plan.rules[index] if self.plan is not None else None
        if rule is not None and rule.skip is not None:
            self.policy_skips.append(rule.skip)
            state.skip(self.hop, index, target, "policy_skipped", rule.skip)
            self._passed_by(index, "aside")
            return None
        stop = state.stop_reason()
        if stop is not None:
            self.stopped = stop
            self.cursor -= 1  # this target was not reached
            return None
        model = target.model
        wire = request if model is None else request.with_model(model)
        gate = self.gate
        if (
            self.auth_failed is not None
            or state.cost_budget is not None
            or (gate is not None and gate.credential_spent)
        ) and self._blocked(index, wire):
            return None
        key = route.table.key_for(index, wire.model)
        verdict = route.health.admit(key, lease=target.timeout, breaker=route.breaker)
        if not isinstance(verdict, Skip) and verdict.needs_lease:
            return DueProbe(index, wire, key, verdict)
        return self._admitted(index, wire, key, verdict)

    async def _claimed(self, due: DueProbe) -> Call | None:
        """Rule 8: claim `due`'s probe across replicas; the call, or None after its skip."""
        route = self.route
        target = route.targets[due.index]
        verdict = await route.health.claim_probe(
            due.admission, lease=target.timeout, breaker=route.breaker
        )
        return self._admitted(due.index, due.wire, due.key, verdict)

    def _admitted(
        self, index: int, wire: RoutedRequest, key: Hashable, verdict: Admission | Skip
    ) -> Call | None:
        """Health's answer for target `index`: its call, or None after recording its skip."""
        if isinstance(verdict, Skip):
            self._passed_by(index, "parked" if verdict.outcome == "parked" else "unhealthy")
            return self._skipped(index, wire, key, verdict)
        return self.calls_made.make(index, wire, key, verdict)

    def _passed_by(self, index: int, how: PassedBy) -> None:
        """A target was passed by without a failed call (`turnout.routing.gate`)."""
        if self.gate is not None:
            self.gate.passed_by(index, how)

    def _blocked(self, index: int, wire: RoutedRequest) -> bool:
        """Skip (`not_tried`) a target of a credential that failed auth or ran out of quota,
        or one over budget."""
        blocked = _block(
            self.route, self.state, self.gate, self.auth_failed, index=index, wire=wire
        )
        if blocked is None:
            return False
        self.blocked += 1
        self.state.skip(self.hop, index, self.route.targets[index], "not_tried", blocked[0])
        self._passed_by(index, blocked[1])
        return True

    def _skipped(self, index: int, wire: RoutedRequest, key: Hashable, skip: Skip) -> Call | None:
        """A health skip: recorded with the seconds left, unless the target is parked and the
        last one left after earlier failures (then it is probed anyway)."""
        route, state = self.route, self.state
        target = route.targets[index]
        if skip.outcome == "parked" and self.failed and self._is_last():
            forced = route.health.admit_forced(key, lease=target.timeout)
            if forced is not None:
                return self.calls_made.make(index, wire, key, forced, forced=True)
        self.health_skips.append((index, skip, key))
        state.skip_untils.append(skip.until)
        entry = state.skip(self.hop, index, target, skip.outcome)
        entry.reason = health_skip_reason(skip, state.clock.now())
        return None

    def _is_last(self) -> bool:
        """No target after the current one could still be asked."""
        targets = self.route.targets
        gate = self.gate
        return all(
            targets[i].paused or (gate is not None and gate.is_closed_for_good(i))
            for i in self.order[self.cursor :]
        )

    def _forced_call(self) -> Call | None:
        """Rule 4: once the order is done, a health-skipped target called anyway."""
        if self.forced is None:
            no_call = not (self.calls or self.blocked)
            skips = self.health_skips if no_call else []
            self.forced = ForcedProbes(self.route.when_all_unhealthy, skips)
        probe = self.forced.next(self.route, self.state)
        if probe is None:
            return None
        index, key, admission = probe
        wire = self.state.request.with_model(self.route.targets[index].model)
        return self.calls_made.make(index, wire, key, admission, forced=True)

    # -- settling a finished call

    def settle(self, call: Call) -> Decision:
        """Settle a finished call (`turnout.routing.outcome`) and decide what comes next."""
        gate = self.gate
        if call.credentialed:
            assert gate is not None
            gate.credential_call_settled()
        error = call.error
        if error is not None:
            return self._failed(call, error, settle_failure(self.state, call, error))
        if settle_answer(self.state, call):
            return "answer"
        self._passed_by(call.index, "unanswered")  # a refused or rejected answer
        return "next"

    def _failed(self, call: Call, error: ProviderError, error_class: str) -> Decision:
        route = self.route
        if error_class in RETRYABLE:
            self.failed += 1
        kind = _ESCALATION.get(error_class)
        if kind is not None:
            self.ending = Ending(
                "escalate" if route.fallbacks.of(kind) else "terminal", error, escalate=kind
            )
            return "stop"
        if error_class not in route.retry.retry_on or (call.credentialed and error_class == "auth"):
            self.ending = Ending("terminal", error)
            return "stop"
        if self.gate is not None:
            self.gate.failed(call.index, error_class, credentialed=call.credentialed)
        if error_class == "auth":
            if self.auth_failed is None:
                self.auth_failed = set()
            self.auth_failed.add(call.provider)
            return "next"
        return "retry" if error_class in _SAME_TARGET_RETRY else "next"

    def mark_not_tried(self) -> None:
        """Record the targets the pass did not reach: `paused` or `not_tried`."""
        state = self.state
        targets = self.route.targets
        for index in self.order[self.cursor :]:
            target = targets[index]
            if target.paused:
                state.skip(self.hop, index, target, "paused")
            else:
                state.skip(self.hop, index, target, "not_tried", self.stopped)


def final_ending(walk: RoutePass) -> Ending:
    """How `walk` ended once its order ran out without an answer."""
    gate = walk.gate
    if (
        gate is not None
        and (walk.calls or walk.health_skips)
        and not (walk.policy_skips or walk.stopped)
    ):
        family = gate.family_ending(walk.order, walk.route.targets, called=walk.calls > 0)
        if family is not None:
            return family
    if walk.calls:
        return Ending("exhausted")
    if walk.policy_skips or not walk.ineligible:
        return NO_CALLS  # policy skips left no call: `serve` raises PolicyDenied
    if not (walk.health_skips or walk.blocked or walk.stopped):
        return Ending("ineligible", reasons=tuple(walk.ineligible))
    return NO_CALLS


def is_denied(walk: RoutePass) -> bool:
    """Policy skips alone left `walk` no call: every remaining target was denied by policy."""
    return bool(
        walk.policy_skips and not (walk.calls or walk.health_skips or walk.blocked or walk.stopped)
    )


def _block(
    route: Route,
    state: RequestState,
    gate: TargetGate | None,
    auth_failed: set[str] | None,
    *,
    index: int,
    wire: RoutedRequest,
) -> tuple[str, PassedBy] | None:
    """Why target `index` is not tried (the same credential as one that failed auth or ran out
    of quota, or over the cost budget) and how the gate hears it; None when it may be."""
    if gate is not None and gate.is_spent(index):
        return "same credential", "spent"
    if auth_failed is not None and route.providers[index] in auth_failed:
        return "same credential", "held"
    if state.cost_budget is not None and state.is_over_budget(route.facts[index], wire.model):
        return "cost_budget", "held"
    return None


class ForcedProbes:
    """Rule 4: the health-skipped targets of a pass to call anyway under `when_all_unhealthy`
    (`probe_first`, `probe_soonest`, `try_all`; none otherwise), in turn."""

    __slots__ = ("_left",)

    def __init__(self, policy: str, skips: list[tuple[int, Skip, Hashable]]) -> None:
        self._left = _probes(policy, skips)

    def next(self, route: Route, state: RequestState) -> tuple[int, Hashable, Admission] | None:
        """The next one health admits as a forced probe (one per key in flight); None when none
        is left or the request's budget is spent."""
        while self._left:
            index, _, key = self._left.pop(0)
            if state.stop_reason() is not None:
                return None
            admission = route.health.admit_forced(key, lease=route.targets[index].timeout)
            if admission is not None:
                return index, key, admission
        return None


def _probes(
    policy: str, skips: list[tuple[int, Skip, Hashable]]
) -> list[tuple[int, Skip, Hashable]]:
    """Which health-skipped targets to call anyway under `when_all_unhealthy` (Rule 4)."""
    if not skips:
        return []
    if policy == "probe_first":
        return [skips[0]]
    if policy == "probe_soonest":
        return [min(skips, key=lambda skip: skip[1].until)]
    if policy == "try_all":
        return list(skips)
    return []


async def admit_again(walk: RoutePass, call: Call) -> Admission | Skip:
    """Health's answer for a same-target retry of `call`, claimed across replicas when it
    would be the key's probe (Rule 8)."""
    route, target = walk.route, call.target
    verdict = route.health.admit(call.key, lease=target.timeout, breaker=route.breaker)
    if isinstance(verdict, Skip) or not verdict.needs_lease:
        return verdict
    return await route.health.claim_probe(verdict, lease=target.timeout, breaker=route.breaker)


async def run_call(walk: RoutePass, call: Call) -> None:
    """Make one call of `walk` (a whole answer, or a stream up to its first token)."""
    walk.calls += 1
    state = walk.state
    if state.streaming:
        await open_stream(state, call)
    else:
        await run_whole(state, call)
