"""The route driver: one request's walk over a route's targets, and its fallback hops (SPEC §3).

Rule 1: a pass walks the try order once; each target gets at most one visit, and each visit is
either calls (same-target retries are separate calls) or one skip entry (`paused`, `ineligible`,
`not_tried`, or a health skip with the seconds left).
Rule 2: nothing is called once the request's budget is spent (`max_attempts` calls, the
`request_timeout` deadline); the targets not reached become `not_tried` entries.
Rule 3: health hears of every call exactly once: `record_success` for an accepted answer (or a
committed stream), `record_failure` for a retryable failure, `release` for anything else.
Rule 4: `when_all_unhealthy` applies only when every target reached was skipped by health and no
call was made; each forced probe goes through `Health.admit_forced` (one per key in flight).
Rule 5: a general fallback route runs only after retryable failures left no target (§3.4 (2));
context and content fallbacks after their class; at most 3 hops per request.
Rule 6: an embeddings request walks the same way, its calls whole answers (`run_whole`); it is
never hedged, and has no refusal or `accept` check (an answer is vectors, not text).
Rule 7: a request's `CallPlan` (`turnout.routing.plan`, its rules there) shapes each pass: the
targets and order come from the route's `TargetPlan`, each visit checks the target's rule
(policy skip, org-key fallback gate, the caller's credential), and a caller-credential call
reports to health only as `release`.
Rule 8: held-back targets (the org-key fallback, the families other than the request's own)
end the walk while their way is closed, and are then `not_tried`; the pass's `TargetGate`
decides when each way opens and how a pass held to one family ends (`turnout.routing.gate`,
its rules there). Targets closed for good do not count as targets left, so a parked last
target of the request's family is still probed.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Literal

from turnout.errors import NoDeploymentAvailable, PolicyDenied, ProviderError
from turnout.routing.attempt import Call, run_whole
from turnout.routing.backoff import retry_wait
from turnout.routing.ending import Ending, ending_error
from turnout.routing.gate import TargetGate
from turnout.routing.health import Skip
from turnout.routing.hedge import race
from turnout.routing.options import MAX_FALLBACKS
from turnout.routing.plan import caller_client
from turnout.routing.stream import open_stream
from turnout.routing.target import ineligible_reason
from turnout.vendors.classify import RETRYABLE
from turnout.wire.model import ChatRequest

if TYPE_CHECKING:
    from collections.abc import Awaitable, Hashable

    from turnout.routing.attempt import RoutedRequest
    from turnout.routing.health import Admission
    from turnout.routing.plan import TargetPlan
    from turnout.routing.request_state import RequestState
    from turnout.routing.route import Route

__all__ = ["RoutePass", "serve"]

logger = logging.getLogger("turnout.routing")

Decision = Literal["answer", "next", "retry", "stop"]
_SAME_TARGET_RETRY = frozenset({"rate_limited", "provider_error"})
_ESCALATION = {"context_length": "context", "content_filtered": "content"}
_NO_CALLS = Ending("zero_calls")


def serve(route: Route, state: RequestState) -> Awaitable[Call]:
    """Route the request: awaits to the winning call (an accepted answer, or a committed
    stream), or raises the ending error of §3.4 (with `.routing` set)."""
    plan = _plan_of(route, state)
    no_start = route.no_start_reason if plan is None else plan.no_start_reason
    if no_start is not None:
        raise NoDeploymentAvailable(no_start, routing=state.record)
    return RoutePass(route, state, 0, plan).serve()


def _plan_of(route: Route, state: RequestState) -> TargetPlan | None:
    """The request plan's part for `route` (None without a plan, or for a route it skips)."""
    plan = state.plan
    return None if plan is None else plan.for_route(route)


async def _serve_route(route: Route, state: RequestState, hop: int) -> tuple[Call | None, Ending]:
    plan = _plan_of(route, state)
    if (route.no_start_reason if plan is None else plan.no_start_reason) is not None:
        return None, _NO_CALLS
    walk = RoutePass(route, state, hop, plan)
    call = await walk.run()
    if call is not None:
        return call, walk.ending
    return await _escalate(route, state, walk.ending)


async def _escalate(
    route: Route, state: RequestState, ending: Ending
) -> tuple[Call | None, Ending]:
    """After `route` ended without an answer: its fallback routes of the matching kind."""
    kind = "general" if ending.kind == "exhausted" else ending.escalate
    if kind is None or ending.kind == "terminal":
        return None, ending
    for fallback in route.fallbacks.of(kind):
        if state.hops >= MAX_FALLBACKS or state.stop_reason() is not None:
            break
        state.hops += 1
        state.record.fallback_route = fallback.name
        state.record.fallback_kind = kind
        call, sub = await _serve_route(fallback, state, state.hops)
        if call is not None:
            return call, sub
        if sub.kind in {"terminal", "escalate", "exhausted"}:
            ending = sub
        if sub.kind == "terminal":
            break
    return None, ending


class RoutePass:
    """One route's turn at a request (see the module rules).

    `order[:cursor]` are the targets reached so far; the rest are not tried (yet). With a
    `plan`, `gate` says which held-back targets (the org-key fallback, the other families) may
    be called now (`turnout.routing.gate`); without one it is None.
    """

    __slots__ = (
        "auth_failed",
        "blocked",
        "calls",
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
        "screen_all",
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
        # Every target is screened for an embeddings request, or one carrying server tools
        # (a target of another wire format cannot run them); else only those that ask to be.
        request = state.request
        self.screen_all = state.embedding or (
            isinstance(request, ChatRequest)
            and any(tool.native is not None for tool in request.tools)
        )
        self.gate: TargetGate | None = None
        if plan is None:
            order, reason = route.start_order(state.record.session_id)
        else:
            pinned = None if state.plan is None else state.plan.pinned_family(route)
            gate = self.gate = TargetGate(plan, pinned)
            order, reason = plan.start_order(route, state.record.session_id, gate.family)
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
        self.forced: list[tuple[int, Skip, Hashable]] | None = None
        self.stopped: str | None = None
        self.ending = _NO_CALLS
        self.policy_skips: list[str] = []

    async def serve(self) -> Call:
        """The first route's pass: the winning call, else its fallbacks, else the ending error."""
        call = await self.run()
        if call is not None:
            return call
        call, ending = await _escalate(self.route, self.state, self.ending)
        if call is not None:
            return call
        if ending is self.ending and self._is_denied():
            reasons = "; ".join(dict.fromkeys(self.policy_skips))
            raise PolicyDenied(
                f'no target of route "{self.route.name}" may be called: {reasons}',
                routing=self.state.record,
            )
        raise ending_error(self.state, ending)

    async def run(self) -> Call | None:
        """Walk the try order; the winning call, or None with `ending` set."""
        try:
            state = self.state
            if self.route.timeouts.hedge_after is not None and not state.embedding:
                return await race(self)
            make = open_stream if state.streaming else run_whole
            while (call := self.next_call()) is not None:
                self.calls += 1
                await make(state, call)
                decision = self.settle(call)
                if decision == "retry":
                    decision, call = await self._retry(call)
                if decision == "answer":
                    return call
                if decision == "stop":
                    return None
            self.ending = self.final_ending()
            return None
        finally:
            self._mark_not_tried()

    async def _retry(self, call: Call) -> tuple[Decision, Call]:
        """Same-target retries of a `rate_limited` / `provider_error` failure (SPEC §3.3)."""
        route, state = self.route, self.state
        retries = 0
        while True:
            error = call.error
            if call.forced or retries >= call.target.max_retries or error is None:
                return "next", call
            wait = retry_wait(
                retries + 1,
                retry_after=error.retry_after,
                rng=route.rng,
                time_left=state.time_left(),
            )
            if wait is None:
                return "next", call
            await state.clock.sleep(wait)
            if state.stop_reason() is not None:
                return "next", call
            verdict = route.health.admit(call.key, lease=call.target.timeout, breaker=route.breaker)
            if isinstance(verdict, Skip):
                state.skip_untils.append(verdict.until)
                return "next", call
            call = call.again(verdict)
            retries += 1
            await self.make(call)
            decision = self.settle(call)
            if decision != "retry":
                return decision, call

    async def make(self, call: Call) -> None:
        """Make one call (a whole answer, or a stream up to its first token)."""
        self.calls += 1
        if self.state.streaming:
            await open_stream(self.state, call)
        else:
            await run_whole(self.state, call)

    # -- choosing the next call

    def next_call(self) -> Call | None:
        """The next target that may be called now, recording an entry for each one skipped on
        the way; None when the order is done (or the budget is spent)."""
        order = self.order
        gate = self.gate
        while self.cursor < len(order) and self.stopped is None:
            index = order[self.cursor]
            if gate is not None and gate.is_held_back(index):
                break  # Rule 8: the org-key fallback or the other families are not open (yet)
            self.cursor += 1
            call = self._screen(index)
            if call is not None:
                return call
        if self.stopped is not None:
            return None
        return self._forced_call()

    def _screen(self, index: int) -> Call | None:
        """Visit target `index`: the call to make, or None after recording why it is skipped."""
        route, state = self.route, self.state
        target = route.targets[index]
        if target.paused:
            state.skip(self.hop, index, target, "paused")
            return None
        request = state.request
        if route.facts[index].has_eligibility_rules or self.screen_all:
            reason = ineligible_reason(target, request, state.context)
            if reason is not None:
                self.ineligible.append((target.name, reason))
                state.skip(self.hop, index, target, "ineligible", reason)
                self._passed_by(index)
                return None
        rule = self.plan.rules[index] if self.plan is not None else None
        if rule is not None and rule.skip is not None:
            self.policy_skips.append(rule.skip)
            state.skip(self.hop, index, target, "policy_skipped", rule.skip)
            self._passed_by(index)
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
        key = route.key_for(index, wire.model)
        verdict = route.health.admit(key, lease=target.timeout, breaker=route.breaker)
        if isinstance(verdict, Skip):
            self._passed_by(index)
            return self._skipped(index, wire, key, verdict)
        return self._call(index, wire, key, verdict)

    def _passed_by(self, index: int) -> None:
        """A target was passed by without a failure (the gate's Rule 1)."""
        if self.gate is not None:
            self.gate.passed_by(index)

    def _blocked(self, index: int, wire: RoutedRequest) -> bool:
        """Skip (`not_tried`) a target of a credential that failed auth or ran out of quota,
        or one over budget."""
        route, state = self.route, self.state
        target = route.targets[index]
        blocked = None
        gate = self.gate
        if (self.auth_failed is not None and route.providers[index] in self.auth_failed) or (
            gate is not None and gate.is_spent(index)
        ):
            blocked = "same credential"
        elif state.cost_budget is not None and self._over_budget(index, wire.model):
            blocked = "cost_budget"
        if blocked is None:
            return False
        self.blocked += 1
        state.skip(self.hop, index, target, "not_tried", blocked)
        return True

    def _skipped(self, index: int, wire: RoutedRequest, key: Hashable, skip: Skip) -> Call | None:
        """A health skip: recorded with the seconds left, unless the target is parked and the
        last one left after earlier failures (then it is probed anyway)."""
        route, state = self.route, self.state
        target = route.targets[index]
        if skip.outcome == "parked" and self.gate is not None:
            self.gate.parked(index)
        if skip.outcome == "parked" and self.failed and self._is_last():
            forced = route.health.admit_forced(key, lease=target.timeout)
            if forced is not None:
                return self._call(index, wire, key, forced, forced=True)
        self.health_skips.append((index, skip, key))
        state.skip_untils.append(skip.until)
        entry = state.skip(self.hop, index, target, skip.outcome)
        entry.reason = skip.reason(state.clock.now())
        return None

    def _call(
        self,
        index: int,
        wire: RoutedRequest,
        key: Hashable,
        admission: Admission,
        *,
        forced: bool = False,
    ) -> Call:
        call = Call(self.route, index, wire, key, admission, forced=forced)
        if self.hop:
            call.hop = self.hop
        plan = self.plan
        if plan is not None:
            rule = plan.rules[index]
            if rule.caller_credential:
                credential = self.state.plan.credential if self.state.plan is not None else None
                call.client = caller_client(call.client, credential)
                call.credentialed = True
                assert self.gate is not None
                self.gate.credential_call_started()
            call.fallback = rule.fallback
            call.shadow = rule.shadow
        return call

    def _over_budget(self, index: int, model: str | None) -> bool:
        """Would target `index` pass the cost budget? Spent so far + estimated input
        (characters / 4 * input price) + `max_tokens` * output price (prices per 1M tokens).
        Without a price or `max_tokens` (an embeddings request has none) the target is not
        checked."""
        state = self.state
        request = state.request
        facts = self.route.facts[index]
        if (
            not isinstance(request, ChatRequest)
            or request.max_tokens is None
            or facts.price_for is None
            or state.cost_budget is None
        ):
            return False
        prices = facts.price(model or facts.client_model)
        if prices is None:
            return False
        estimate = (request.prompt_chars / 4 * prices[0] + request.max_tokens * prices[1]) / 1e6
        return bool(state.spent + estimate > state.cost_budget)

    def _is_last(self) -> bool:
        """No target after the current one could still be asked."""
        targets = self.route.targets
        gate = self.gate
        return all(
            targets[i].paused or (gate is not None and gate.is_closed_for_good(i))
            for i in self.order[self.cursor :]
        )

    def _forced_call(self) -> Call | None:
        if self.forced is None:
            self.forced = self._probe_order()
        state = self.state
        while self.forced:
            index, _, key = self.forced.pop(0)
            if state.stop_reason() is not None:
                return None
            target = self.route.targets[index]
            admission = self.route.health.admit_forced(key, lease=target.timeout)
            if admission is None:
                continue
            return self._call(
                index, state.request.with_model(target.model), key, admission, forced=True
            )
        return None

    def _probe_order(self) -> list[tuple[int, Skip, Hashable]]:
        """Which health-skipped targets to call anyway (`when_all_unhealthy`)."""
        skips = self.health_skips
        if self.calls or self.blocked or not skips:
            return []
        policy = self.route.when_all_unhealthy
        if policy == "probe_first":
            return [skips[0]]
        if policy == "probe_soonest":
            return [min(skips, key=lambda skip: skip[1].until)]
        if policy == "try_all":
            return list(skips)
        return []

    # -- settling a finished call

    def settle(self, call: Call) -> Decision:
        """Judge a finished call: record its outcome, tell health, and decide what comes next."""
        if call.credentialed:
            assert self.gate is not None
            self.gate.credential_call_settled()
        if call.error is not None:
            return self._failed(call, call.error)
        state, route = self.state, self.route
        entry = call.entry
        assert entry is not None
        if entry.usage is not None and state.cost_budget is not None:
            state.spent += route.facts[call.index].cost(call.model, entry.usage) or 0.0
        response = call.response
        if response is not None:
            if response.finish_reason == "content_filter" and route.retry.fail_over_on_refusal:
                entry.outcome = "refused"
                route.health.release(call.admission)
                self._passed_by(call.index)
                return "next"
            if route.accept is not None:
                reason = route.accept(response)
                if reason:
                    entry.outcome = "rejected"
                    entry.reason = reason
                    route.health.release(call.admission)
                    self._passed_by(call.index)
                    return "next"
        if call.credentialed:
            route.health.release(call.admission)  # plan Rule 4
        else:
            route.health.record_success(call.admission)
        route.strategy.record_latency(call.stats_key, call.finished - call.started, call.finished)
        entry.outcome = "answered"
        entry.committed = state.streaming
        return "answer"

    def _failed(self, call: Call, error: ProviderError) -> Decision:
        route, state = self.route, self.state
        entry = call.entry
        assert entry is not None
        error_class = self._classify(call, error)
        call.error_class = error_class
        entry.outcome = "failed"
        entry.error_class = error_class
        entry.status = error.status
        entry.reason = error.reason or error_class
        entry.retry_after = error.retry_after
        state.errors[entry.index] = error
        health = route.health
        if error_class in RETRYABLE:
            self.failed += 1
        if error_class in RETRYABLE and not call.credentialed:
            health.record_failure(
                call.admission,
                error_class,
                retry_after=error.retry_after,
                reset_after=error.reset_at,
            )
            state.watched.append((health, call.key))
        else:
            health.release(call.admission)  # plan Rule 4 for a caller's credential
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

    def _classify(self, call: Call, error: ProviderError) -> str:
        route = self.route
        classifier = route.fault_classifier
        if classifier is not None:
            try:
                chosen = classifier(call.target, error)
            except Exception:
                logger.exception("fault_classifier of route %r failed", route.name)
                chosen = None
            if chosen is not None:
                return chosen
        return route.retry.reclassify(error.error_class, error.status)

    def final_ending(self) -> Ending:
        """How the pass ended once its order ran out without an answer."""
        gate = self.gate
        if (
            gate is not None
            and (self.calls or self.health_skips)
            and not (self.policy_skips or self.stopped)
        ):
            family = gate.family_ending(self.order, self.route.targets, called=self.calls > 0)
            if family is not None:
                return family
        if self.calls:
            return Ending("exhausted")
        if self.policy_skips or not self.ineligible:
            return _NO_CALLS  # policy skips left no call: `serve` raises PolicyDenied
        if not (self.health_skips or self.blocked or self.stopped):
            return Ending("ineligible", reasons=tuple(self.ineligible))
        return _NO_CALLS

    def _is_denied(self) -> bool:
        """Policy skips alone left no call (§3.4: every remaining target denied by policy)."""
        return bool(
            self.policy_skips
            and not (self.calls or self.health_skips or self.blocked or self.stopped)
        )

    def _mark_not_tried(self) -> None:
        state = self.state
        targets = self.route.targets
        for index in self.order[self.cursor :]:
            target = targets[index]
            if target.paused:
                state.skip(self.hop, index, target, "paused")
            else:
                state.skip(self.hop, index, target, "not_tried", self.stopped)
