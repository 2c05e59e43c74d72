"""A finished call's outcome: written on its attempt entry and reported to health.

Rule 1: health hears of every finished call exactly once: `record_success` for an accepted
answer (or a committed stream), `record_failure` for a retryable failure, `release` for
anything else (a refused or rejected answer, a failure that is not retryable).
Rule 2: a call made with the caller's own credential reports only `release`, whatever it ends
as (`turnout.routing.plan`).
Rule 3: a failure's class is the route's `fault_classifier`'s answer when it gives one (what
the classifier raises is logged and ignored), else the client's class with the route's
`retryable_statuses` applied.
Rule 4: an embeddings answer has no refusal or `accept` check: it is vectors, not text.
Rule 5: a failed entry's `reason` says what happened in words (`turnout.routing.reasons`),
ahead of what a translation dropped; an answering entry keeps `error_class` None.
Rule 6: a settled call's span ends here (`turnout.routing.spans`), except a stream's that
answered: that one ends with the stream (`turnout.routing.stream`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from turnout.routing.reasons import failure_reason, joined, timeout_reason
from turnout.routing.spans import end_call
from turnout.vendors.classify import RETRYABLE

if TYPE_CHECKING:
    from turnout.errors import ProviderError
    from turnout.routing.attempt import Call
    from turnout.routing.request_state import RequestState

__all__ = ["settle_answer", "settle_failure"]

logger = logging.getLogger("turnout.routing")


def settle_answer(state: RequestState, call: Call) -> bool:
    """Settle a call that answered: True when the answer is accepted (`answered`, counted as
    spent money and as a latency sample), False when it was `refused` or `rejected`."""
    route = call.route
    entry = call.entry
    assert entry is not None
    if entry.usage is not None and state.cost_budget is not None:
        state.spent += route.facts[call.index].cost(call.model, entry.usage) or 0.0
    response = call.response
    if response is not None:
        if response.finish_reason == "content_filter" and route.retry.fail_over_on_refusal:
            entry.outcome = "refused"
            route.health.release(call.admission)
            if call.span is not None:
                end_call(call)
            return False
        if route.accept is not None:
            reason = route.accept(response)
            if reason:
                entry.outcome = "rejected"
                entry.reason = joined(reason, entry.reason)
                route.health.release(call.admission)
                if call.span is not None:
                    end_call(call)
                return False
    if call.credentialed:
        route.health.release(call.admission)  # Rule 2
    else:
        route.health.record_success(call.admission)
    route.strategy.record_latency(call.stats_key, call.finished - call.started, call.finished)
    entry.outcome = "answered"
    entry.committed = state.streaming
    if call.span is not None and not state.streaming:
        end_call(call)
    return True


def settle_failure(state: RequestState, call: Call, error: ProviderError) -> str:
    """Settle a call that failed with `error`: classify it (Rule 3), write it on its entry,
    keep the error for the request's ending, and tell health. Returns the class."""
    route = call.route
    entry = call.entry
    assert entry is not None
    error_class = _classify(call, error)
    call.error_class = error_class
    entry.outcome = "failed"
    entry.error_class = error_class
    entry.status = error.status
    limit = call.limit
    if limit is not None:
        words = timeout_reason(limit, first_token=state.streaming)
    else:
        words = failure_reason(error, error_class)
    entry.reason = joined(words, entry.reason)  # after what a translation dropped, if anything
    entry.retry_after = error.retry_after
    state.errors[entry.index] = error
    health = route.health
    if error_class in RETRYABLE and not call.credentialed:
        health.record_failure(
            call.admission,
            error_class,
            retry_after=error.retry_after,
            reset_after=error.reset_at,
        )
        state.watched.append((health, call.key))
    else:
        health.release(call.admission)  # Rule 2 for a caller's credential
    if call.span is not None:
        end_call(call)
    return error_class


def _classify(call: Call, error: ProviderError) -> str:
    route = call.route
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
