"""What news does to a health key: a call's result here, a probe let through, or a transition
learned from another replica. Each is a pure function from a `KeyState` to the new state and the
`HealthEvent`s it publishes; `Health` reads the clock, calls one under its lock and emits the
events after it (the registry's rules are in `turnout.routing.health`).

Rule 1: only a retryable failure counts a failure, cools or parks; a stale call (admitted before
the breaker's latest opening) counts nothing and closes nothing, but the cooldown or park it
brings back still applies.
Rule 2: published transitions: `cooling_down`, `parked` and `open` carry their deadline; a
probe's success that ends a trip, park or learned trip is `closed`; a failed probe of a learned
trip reopens the key for the registry's `open_for`; a probe let through an open breaker is
`half_open`.
Rule 3: news from another replica publishes nothing, never shortens a deadline held, and is
ignored when its deadline has passed or (parks and trips) while the breaker is disabled.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from turnout.routing.health_state import (
    MAX_SKIP_SECONDS,
    closed,
    cooled,
    counted_failure,
    is_stale,
    opened,
    park_seconds,
    parked,
    probe_taken,
    state_name,
    succeeded,
    tripped,
)

if TYPE_CHECKING:
    from collections.abc import Hashable

    from turnout.routing.health_state import Admission, Breaker, KeyState

__all__ = [
    "HealthEvent",
    "RemoteState",
    "failed",
    "learned",
    "probe_let_through",
    "succeeded_call",
]

RemoteState = Literal["cooling_down", "parked", "open", "closed"]
"""What `Health.apply_remote` takes from another replica."""


@dataclass(frozen=True, slots=True)
class HealthEvent:
    """A transition of a key under the registry policy.

    `to` is `open`, `half_open`, `closed`, `cooling_down` or `parked`; `at` is when (monotonic);
    `until` when a cooldown, open breaker or park ends (None otherwise); `failures` the row then.
    """

    key: Hashable
    to: Literal["open", "half_open", "closed", "cooling_down", "parked"]
    at: float
    until: float | None = None
    failures: int = 0


def probe_let_through(
    state: KeyState, admission: Admission, *, breaker: Breaker, now: float
) -> tuple[KeyState, tuple[HealthEvent, ...]]:
    """`admission` takes the key's probe slot; an open breaker so reached is now half-open."""
    assert admission.lease_until is not None
    state = probe_taken(state, token=admission.token, until=admission.lease_until)
    if state.reported != "open" or state_name(state, breaker, now)[0] != "half_open":
        return state, ()
    event = HealthEvent(admission.key, "half_open", now, None, state.failures)
    return replace(state, reported="half_open"), (event,)


def succeeded_call(
    state: KeyState, admission: Admission, *, now: float
) -> tuple[KeyState, tuple[HealthEvent, ...]]:
    """The call answered: the row resets; a probe's answer also clears the key (Rule 2)."""
    if is_stale(state, admission):
        return state, ()  # admitted before the breaker opened: only the probe may close it
    held = state.reported != "closed" or state.trip_probe or state.park_probe
    state = succeeded(state, probe=admission.probe, token=admission.token)
    if admission.probe:
        state = replace(state, closed_at=now)
    if state.reported == "closed" and not (admission.probe and held):
        return state, ()
    return replace(state, reported="closed"), (HealthEvent(admission.key, "closed", now),)


def failed(
    state: KeyState,
    admission: Admission,
    error_class: str,
    *,
    breaker: Breaker,
    now: float,
    retry_after: float | None,
    reset_after: float | None,
) -> tuple[KeyState, list[HealthEvent]]:
    """A retryable failure of the call (Rule 1) under the registry's `breaker`: the row grows,
    `retry_after` > 0 cools the key, `quota_exhausted` parks it (see `Health.record_failure`)."""
    key = admission.key
    events: list[HealthEvent] = []
    prior = state
    stale = is_stale(state, admission)
    if not stale:
        state = counted_failure(
            state, now=now, window=breaker.window, probe=admission.probe, token=admission.token
        )
    if retry_after is not None and retry_after > 0:
        until = now + min(retry_after, MAX_SKIP_SECONDS)
        state = cooled(state, until)
        events.append(HealthEvent(key, "cooling_down", now, until, state.failures))
    if error_class == "quota_exhausted" and breaker.enabled:
        seconds = park_seconds(retry_after, reset_after)
        if seconds is not None:
            state = parked(state, now + seconds)
            events.append(HealthEvent(key, "parked", now, now + seconds, state.failures))
    if not stale:
        state = _noted_trip(state, key, breaker, now, events)
    if admission.probe and prior.trip_probe:
        state = _reopened(state, key, breaker, now, events)
    return state, events


def _noted_trip(
    state: KeyState, key: Hashable, breaker: Breaker, now: float, events: list[HealthEvent]
) -> KeyState:
    """The row has reached the registry's threshold: the breaker opens (said once)."""
    if not breaker.enabled or state.failures < breaker.failures or state.reported == "open":
        return state
    until = state.last_failure + breaker.open_for
    events.append(HealthEvent(key, "open", now, until, state.failures))
    return opened(replace(state, reported="open"))


def _reopened(
    state: KeyState, key: Hashable, breaker: Breaker, now: float, events: list[HealthEvent]
) -> KeyState:
    """The probe of a learned trip failed: open the key again here (and say so)."""
    if not breaker.enabled or state.failures >= breaker.failures:
        return state  # tripped here by its own row (`_noted_trip`)
    until = now + breaker.open_for
    events.append(HealthEvent(key, "open", now, until, state.failures))
    return replace(tripped(state, until, at=now), reported="open")


def learned(
    state: KeyState,
    to: RemoteState,
    *,
    until: float | None,
    at: float | None,
    breaker: Breaker,
    now: float,
) -> KeyState:
    """What another replica published (Rule 3): `cooling_down`, `parked` or `open` until
    `until`, or `closed` (a probe there succeeded); `at` is when it happened there (None: now).
    The same `state` when it changes nothing."""
    if to == "closed":
        return closed(state, now if at is None else at)
    if until is None or until <= now or (to != "cooling_down" and not breaker.enabled):
        return state
    happened = now if at is None else min(at, now)
    if to == "open":
        new = tripped(state, until, at=happened)
        return new if new is state else replace(new, reported="open")
    if to == "cooling_down":
        new = cooled(state, until) if until > state.cool_until else state
    else:
        new = parked(state, until) if until > state.park_until else state
    return new if new is state else replace(new, learned_at=max(new.learned_at, happened))
