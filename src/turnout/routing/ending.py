"""How a routed request ends when no answer is accepted.

1. A terminal failure: that call's own error, whatever failed before it.
2. Retryable failures left no target: one call -> its own error; two or more -> `RouteExhausted`
   with the status of the first rule that holds (every call timed out: 504 `upstream_timeout`;
   no HTTP response at all: 502 `upstream_unreachable`; every HTTP response had one status: that
   status; else 503 — `UPSTREAM_POOL_EXHAUSTED`). Refused and rejected answers count as failed
   calls with status 502.
3. Zero calls: 503 `route_exhausted`.
Every target ineligible ends with `RouteIneligible` (400 `route_ineligible`), or, for an
embeddings request no target can serve, 400 `embeddings_not_supported`.
In a pass that preferred one provider family and never opened the others (its targets were
passed by for reasons that are no outage, such as a rejected key), the message of 2. and 3. is
`every member of the "anthropic" provider family this session is pinned to failed (team-a:
rate_limited, team-b: auth)`, listing that family's targets only (`this request started on`
without a session id); status and code are unchanged.
Every `RouteExhausted` carries `retry_after`: the shortest time until a target that is cooling
down, open or parked can be asked again (None when there is none).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from turnout.errors import EmbeddingsNotSupported, ProviderError, RouteExhausted, RouteIneligible
from turnout.record import SKIP_OUTCOMES
from turnout.routing.target import NO_EMBEDDINGS

if TYPE_CHECKING:
    from turnout.record import AttemptEntry
    from turnout.routing.health import HealthSnapshot
    from turnout.routing.request_state import RequestState

__all__ = ["Ending", "ending_error", "retry_hint"]

EndingKind = Literal["terminal", "escalate", "exhausted", "zero_calls", "ineligible"]
FAILED_CALL = frozenset({"failed", "refused", "rejected"})
_ANSWER_STATUS = 502  # a refused or rejected answer counts as a 502 in the pool status


@dataclass(frozen=True, slots=True)
class Ending:
    """How one route's pass ended without an answer.

    `terminal` / `escalate` carry the call's own `error` (escalate: to `fallbacks.<kind>`);
    `exhausted`: retryable failures left no target; `zero_calls`: no call was made;
    `ineligible`: every target was ineligible (`reasons` lists `(target, reason)`).
    `family` (exhausted and zero calls only): the provider family the pass was held to, whose
    targets are `family_targets`; None when the pass did not order by family or opened the others.
    """

    kind: EndingKind
    error: ProviderError | None = None
    escalate: str | None = None
    reasons: tuple[tuple[str, str], ...] = ()
    family: str | None = None
    family_targets: tuple[str, ...] = ()


def ending_error(state: RequestState, ending: Ending) -> BaseException:
    """The exception a request ends with (its `routing` set to the request's record)."""
    record = state.record
    route = state.route.name
    if ending.kind in {"terminal", "escalate"} and ending.error is not None:
        ending.error.routing = record
        return ending.error
    if ending.kind == "ineligible":
        if state.embedding and all(reason == NO_EMBEDDINGS for _, reason in ending.reasons):
            return EmbeddingsNotSupported(
                f'no target of route "{route}" serves embeddings', routing=record
            )
        listed = ", ".join(f"{name} is ineligible ({reason})" for name, reason in ending.reasons)
        return RouteIneligible(
            f'no target of route "{route}" can take this request: {listed}', routing=record
        )
    calls = [entry for entry in record.attempts if entry.outcome in FAILED_CALL]
    if len(calls) == 1 and calls[0].index in state.errors:
        error = state.errors[calls[0].index]
        error.routing = record
        return error
    hint = retry_hint(state)
    summary = _summary(record.attempts)
    if not calls:
        return RouteExhausted(
            _family_message(state, ending)
            or f'no target of route "{route}" could be called ({summary})',
            status=503,
            code="route_exhausted",
            retry_after=hint,
            routing=record,
        )
    status, code = pool_status(calls)
    last = calls[-1]
    last_error = state.errors.get(last.index)
    message = last_error.message if last_error is not None else (last.reason or last.outcome)
    return RouteExhausted(
        _family_message(state, ending) or f'every target of route "{route}" failed ({summary})',
        status=status,
        code=code,
        retry_after=hint,
        last_error=(last.status, message),
        routing=record,
    )


def pool_status(calls: list[AttemptEntry]) -> tuple[int, str]:
    """Status and code of `RouteExhausted` for two or more failed calls (rule 2)."""
    if all(entry.error_class == "timeout" for entry in calls):
        return 504, "upstream_timeout"
    statuses = {
        _ANSWER_STATUS if entry.outcome != "failed" else entry.status
        for entry in calls
        if entry.outcome != "failed" or entry.status is not None
    }
    if not statuses:
        return 502, "upstream_unreachable"
    if len(statuses) == 1:
        return statuses.pop() or 503, "UPSTREAM_POOL_EXHAUSTED"
    return 503, "UPSTREAM_POOL_EXHAUSTED"


def _family_message(state: RequestState, ending: Ending) -> str | None:
    """The message for a pass held to one family: that family's targets and their words
    (None when the pass was not held to a family)."""
    if ending.family is None:
        return None
    named = set(ending.family_targets)
    summary = _summary([entry for entry in state.record.attempts if entry.target in named])
    held = "this session is pinned to" if state.record.session_id else "this request started on"
    return f'every member of the "{ending.family}" provider family {held} failed ({summary})'


def _summary(attempts: list[AttemptEntry]) -> str:
    """`primary: rate_limited, backup: provider_error`: each target's last word, in order."""
    words: dict[str, str] = {}
    for entry in attempts:
        if entry.outcome == "failed":
            words[entry.target] = entry.error_class or "failed"
        elif entry.outcome in FAILED_CALL or entry.outcome in SKIP_OUTCOMES:
            words[entry.target] = entry.outcome
        elif entry.outcome == "not_tried" and entry.reason:
            words.setdefault(entry.target, entry.reason)
    return ", ".join(f"{name}: {word}" for name, word in words.items())


def retry_hint(state: RequestState) -> float | None:
    """Seconds until the soonest cooling, open or parked target of this request can be asked
    again, from the skips seen and the health of the keys that failed (None when none)."""
    now = state.clock.now()
    untils = list(state.skip_untils)
    snapshots: dict[int, HealthSnapshot] = {}
    for health, key in state.watched:
        snapshot = snapshots.get(id(health))
        if snapshot is None:
            snapshot = snapshots[id(health)] = health.snapshot()
        view = snapshot.get(key)
        if view is not None and view.until is not None and view.state != "available":
            untils.append(view.until)
    left = [until - now for until in untils if until > now]
    return min(left) if left else None
