"""The route driver: one request's walk over a route's targets, and its fallback hops.

Each route's turn is a `RoutePass` (`turnout.routing.route_pass`, its rules there), which picks
the calls and settles them; this module makes the calls and moves between routes.

Rule 1: a pass makes its calls one at a time, or hedged when the route has `hedge_after`
(`turnout.routing.hedge`); an embeddings request's calls are whole answers, never hedged.
Rule 2: a `rate_limited` or `provider_error` failure is retried on the same target up to its
`max_retries`, after a backoff that honours the server's `retry_after` and fits in the
request's deadline; a retry is never forced and goes through health's admission again.
Rule 3: a general fallback route runs only after retryable failures left no target; context
and content fallbacks after their class; at most 3 hops per request, each within the request's
budget. The first hop's kind is the request's for good: a fallback route reached for one kind
hops on only along its fallbacks of that kind, and a failure of another kind ends the request.
So each kind's fallbacks are a graph of their own, and the validator looks for cycles within
one kind.
Rule 4: the first route's pass ends the request: with the winning call, else with
`PolicyDenied` when policy skips alone left no call, else with the ending error of
`turnout.routing.ending`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnout.errors import NoTargetAvailable, PolicyDenied
from turnout.routing.attempt import run_whole
from turnout.routing.backoff import retry_wait
from turnout.routing.ending import ending_error
from turnout.routing.health import Skip
from turnout.routing.hedge import race
from turnout.routing.options import MAX_FALLBACKS
from turnout.routing.route_pass import (
    NO_CALLS,
    RoutePass,
    admit_again,
    final_ending,
    is_denied,
    run_call,
)
from turnout.routing.spans import start_request
from turnout.routing.stream import open_stream

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from turnout.routing.attempt import Call
    from turnout.routing.ending import Ending
    from turnout.routing.plan import TargetPlan
    from turnout.routing.request_state import RequestState
    from turnout.routing.route import Route
    from turnout.routing.route_pass import Decision

__all__ = ["serve"]


def serve(route: Route, state: RequestState) -> Awaitable[Call]:
    """Route the request: awaits to the winning call (an accepted answer, or a committed
    stream), or raises how the request ended (Rule 4, with `.routing` set). A traced request's
    route span starts here, in the context current where it is awaited (`turnout.routing.spans`)."""
    state.trace = start_request(state)
    plan = _plan_of(route, state)
    no_start = route.table.no_start_reason if plan is None else plan.no_start_reason
    if no_start is not None:
        raise NoTargetAvailable(no_start, routing=state.record)
    return _serve_first(RoutePass(route, state, 0, plan))


def _plan_of(route: Route, state: RequestState) -> TargetPlan | None:
    """The request plan's part for `route` (None without a plan, or for a route it skips)."""
    plan = state.plan
    return None if plan is None else plan.for_route(route)


async def _serve_first(walk: RoutePass) -> Call:
    """The first route's pass: the winning call, else its fallbacks, else the ending error."""
    call = await run_pass(walk)
    if call is not None:
        return call
    state = walk.state
    call, ending = await _escalate(walk.route, state, walk.ending)
    if call is not None:
        return call
    if ending is walk.ending and is_denied(walk):
        reasons = "; ".join(dict.fromkeys(walk.policy_skips))
        raise PolicyDenied(
            f'no target of route "{walk.route.name}" may be called: {reasons}',
            routing=state.record,
        )
    raise ending_error(state, ending)


async def _serve_route(
    route: Route, state: RequestState, hop: int, kind: str
) -> tuple[Call | None, Ending]:
    """A fallback route's pass, reached by a hop of `kind`; then its fallbacks of that kind."""
    plan = _plan_of(route, state)
    if (route.table.no_start_reason if plan is None else plan.no_start_reason) is not None:
        return None, NO_CALLS
    walk = RoutePass(route, state, hop, plan)
    call = await run_pass(walk)
    if call is not None:
        return call, walk.ending
    return await _escalate(route, state, walk.ending, kind)


async def _escalate(
    route: Route, state: RequestState, ending: Ending, hopped: str | None = None
) -> tuple[Call | None, Ending]:
    """After `route` ended without an answer: its fallback routes of the matching kind, which
    must be `hopped`, the kind of the hop that reached it, if any (Rule 3)."""
    kind = "general" if ending.kind == "exhausted" else ending.escalate
    if kind is None or ending.kind == "terminal" or hopped not in (None, kind):
        return None, ending
    for fallback in route.fallbacks.of(kind):
        if state.hops >= MAX_FALLBACKS or state.stop_reason() is not None:
            break
        state.hops += 1
        state.record.fallback_route = fallback.name
        state.record.fallback_kind = kind
        call, sub = await _serve_route(fallback, state, state.hops, kind)
        if call is not None:
            return call, sub
        if sub.kind in {"terminal", "escalate", "exhausted"}:
            ending = sub
        if sub.kind == "terminal":
            break
    return None, ending


async def run_pass(walk: RoutePass) -> Call | None:
    """Walk the pass's try order; the winning call, or None with `walk.ending` set."""
    try:
        state = walk.state
        if walk.route.timeouts.hedge_after is not None and not state.embedding:
            return await race(walk)
        run = open_stream if state.streaming else run_whole
        while (call := await walk.next_call()) is not None:
            walk.calls += 1
            await run(state, call)
            decision = walk.settle(call)
            if decision == "retry":
                decision, call = await _retry(walk, call)
            if decision == "answer":
                return call
            if decision == "stop":
                return None
        walk.ending = final_ending(walk)
        return None
    finally:
        walk.mark_not_tried()


async def _retry(walk: RoutePass, call: Call) -> tuple[Decision, Call]:
    """Same-target retries of a `rate_limited` / `provider_error` failure (Rule 2)."""
    route, state = walk.route, walk.state
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
        verdict = await admit_again(walk, call)
        if isinstance(verdict, Skip):
            state.skip_untils.append(verdict.until)
            return "next", call
        call = walk.calls_made.again(call, verdict)
        retries += 1
        await run_call(walk, call)
        decision = walk.settle(call)
        if decision != "retry":
            return decision, call
