"""The health registry: cooldowns, the circuit breaker and quota parking per health key
(docs/timeouts-and-health.md). The per-key state and its pure transitions live in `health_state`,
what a call's result or a replica's news does to a key (and the events it publishes) in
`health_outcomes`, the keys and the snapshot in `health_keys`.

Rule 1: `Health` is a thin registry over a dict of immutable `KeyState`s; it reads the clock,
calls a pure transition and stores the result, under one lock.
Rule 2: at most one probe per key is in flight (half-open, after a park, or forced).
Rule 3: only retryable failures count, cool or park. Cooldowns are always on; the breaker and
parking are on only while the registry's breaker is enabled.
Rule 4: a deadline learned from another replica (`apply_remote`) never shortens a deadline
held, stale news (a trip older than the last close, a close older than the last failure) is
ignored, and applying it emits no event, so what a replica learned is never published again.
Rule 5: the hot path (`admit` + `record_success` on a healthy key) reads one dict entry and
compares a few numbers; it allocates nothing.
Rule 6: listeners run outside the lock; one that raises is logged and ignored.
Rule 7: with a `probe_gate` (replicas sharing health), one probe runs across every replica.
`admit` asks the gate, without waiting, whether another replica is known to hold the key's
probe lease (then the key is skipped, `probe="elsewhere"`, until that lease ends); otherwise the
request that finds the key due takes this process's probe slot at once (so other requests here
skip it) and gets an admission that `needs_lease`: the caller awaits `claim_probe`, which takes
the lease through the gate and returns the admission ready to call, or a skip when another
replica took it first. The request that takes the lease is the probe. The gate's claim is
bounded in time, and a failing store lets this process probe alone. Forced probes (every target
unhealthy) stay one per process and do not ask it.
Rule 8: transitions published for other replicas: `cooling_down`, `parked` and `open` carry
their deadline; a probe's success that ends a trip, park or learned trip is `closed`; a failed
probe of a learned trip reopens the key for the registry's `open_for` (`open`).
Rule 9: once the breaker is open, only its probe's result may close it: the result of a plain
call admitted before the opening (an older `epoch`, `health_state` Rule 7) resets nothing and
counts no failure, so it neither closes the breaker nor extends its open period. A route whose
own breaker trips below the registry's threshold opens an epoch too, when it first judges the
key (to skip it, or to probe it). A cooldown
(Retry-After) or a quota park such a call brings back still applies: that is the provider's
word about now.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

from turnout.routing.clock import Clock, LoopClock
from turnout.routing.health_keys import (
    HEALTH_KEY_BY,
    HealthSnapshot,
    KeyHealth,
    check_key_by,
    key_text,
    target_key,
)
from turnout.routing.health_outcomes import (
    HealthEvent,
    RemoteState,
    failed,
    learned,
    probe_let_through,
    succeeded_call,
)
from turnout.routing.health_state import (
    DEFAULT_BREAKER,
    DISABLED_BREAKER,
    MAX_SKIP_SECONDS,
    PARK_DEFAULT_SECONDS,
    Admission,
    Breaker,
    KeyState,
    Skip,
    freed_probe,
    is_number,
    judge,
    probe_outcome,
    probe_taken,
    route_tripped,
)
from turnout.vendors.classify import RETRYABLE

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Iterable

__all__ = [
    "DEFAULT_BREAKER",
    "HEALTH_KEY_BY",
    "MAX_SKIP_SECONDS",
    "PARK_DEFAULT_SECONDS",
    "Admission",
    "Breaker",
    "Health",
    "HealthEvent",
    "HealthSnapshot",
    "KeyHealth",
    "KeyState",
    "ProbeGate",
    "RemoteState",
    "Skip",
    "key_text",
]

logger = logging.getLogger(__name__)


class ProbeGate(Protocol):
    """Who may run a key's probe when replicas share health (Rule 7)."""

    def held_until(self, key: Hashable) -> float | None:
        """A `clock.now()` reading until which another replica is known to hold `key`'s probe
        lease, else None. Called under the registry's lock: it must answer at once, never wait
        on I/O and never call back into `Health`."""
        ...

    async def claim(self, key: Hashable, lease: float) -> float | None:
        """Take `key`'s probe lease for `lease` seconds: None when this process may probe now
        (it holds the lease, or decides alone because the store is failing or the key is one
        only this process can name), else a `clock.now()` reading until which another replica
        holds it. Bounded in time; never raises (cancellation aside)."""
        ...

    def probe_ended(self, key: Hashable) -> None:
        """The probe of `key` that this process ran is over (answered, failed or released);
        called after its result was recorded and emitted, outside the registry's lock."""
        ...


_MERGED: dict[str, RemoteState] = {
    "cooling_down": "cooling_down",
    "parked": "parked",
    "breaker_open": "open",
    "open": "open",
}


# ---- the registry --------------------------------------------------------------------------


class Health:
    """The health registry shared by the routes that use it: cooldowns, breaker and parking.

    `breaker` is the default policy (default `Breaker(failures=3, open_for=60)`; None = disabled),
    `key_by` how targets map to health keys (`provider`, `provider_model` (default), `target`),
    `clock` the time source (default: the event loop's clock). Safe to share between tasks and
    threads.
    """

    def __init__(
        self,
        breaker: Breaker | None = DEFAULT_BREAKER,
        key_by: str = "provider_model",
        clock: Clock | None = None,
    ) -> None:
        check_key_by(key_by)
        self.breaker: Breaker = breaker if breaker is not None else DISABLED_BREAKER
        self.key_by = key_by
        self.clock: Clock = clock if clock is not None else LoopClock()
        self._states: dict[Hashable, KeyState] = {}
        self._lock = threading.Lock()
        self._tokens = itertools.count(1)
        self._listeners: list[Callable[[HealthEvent], None]] = []
        self.probe_gate: ProbeGate | None = None

    def __repr__(self) -> str:
        return f"Health({self.snapshot()})"

    def key_for(
        self,
        *,
        provider: str,
        model: str | None,
        route: str,
        target: str,
        health_key: str | None = None,
    ) -> Hashable:
        """A target's health key: its own `health_key` if set, else by `key_by`: `provider`,
        `(provider, model)` or `(route, target)`."""
        if health_key is not None:
            return health_key
        return target_key(self.key_by, provider=provider, model=model, route=route, target=target)

    # -- decisions

    def admit(
        self, key: Hashable, *, lease: float, breaker: Breaker | None = None
    ) -> Admission | Skip:
        """May `key` be called now? An `Admission` (maybe the key's single probe, leased for
        `lease` seconds) or a `Skip`. `breaker` is a route's own policy for this decision only."""
        policy = breaker if breaker is not None else self.breaker
        now = self.clock.now()
        state = self._states.get(key)
        if state is None:
            state = self._add(key)
        if (
            now >= state.skip_until
            and state.failures < policy.failures
            and not (state.park_probe or state.trip_probe)
        ):
            return state.plain
        return self._admit_slowly(key, policy, now, lease)

    def _admit_slowly(
        self, key: Hashable, policy: Breaker, now: float, lease: float
    ) -> Admission | Skip:
        _check_lease(lease)
        with self._lock:
            state = self._states[key] = route_tripped(self._states[key], policy)  # Rule 9
            verdict = judge(state, policy, now)
            if verdict == "call":
                return state.plain
            if isinstance(verdict, Skip):
                return verdict
            gate = self.probe_gate
            if gate is not None:
                held = gate.held_until(key)
                if held is not None and now < held:  # Rule 7: another replica probes
                    return Skip(probe_outcome(state, policy), held, "elsewhere")
            token = next(self._tokens)
            admission = Admission(key, True, now + lease, token, state.epoch, gate is not None)
            state, events = probe_let_through(state, admission, breaker=self.breaker, now=now)
            self._states[key] = state
        self._emit(events)
        return admission

    def admit_forced(self, key: Hashable, *, lease: float) -> Admission | None:
        """Admit `key` as a probe despite any skip (when every target is unhealthy, or a parked
        target is the last one left). At most one probe per key is in flight: None if one is."""
        _check_lease(lease)
        now = self.clock.now()
        with self._lock:
            state = self._known(key)
            if now < state.probe_until:
                return None
            admission = Admission(key, True, now + lease, next(self._tokens), state.epoch)
            self._states[key] = probe_taken(state, token=admission.token, until=now + lease)
        return admission

    async def claim_probe(
        self, admission: Admission, *, lease: float, breaker: Breaker | None = None
    ) -> Admission | Skip:
        """Rule 7: take the probe lease shared between replicas for `admission` (a probe that
        `needs_lease`, leased for `lease` seconds): the admission ready to call, or a `Skip`
        (`probe="elsewhere"`) when another replica holds the lease; then this process's probe
        slot is free again. `breaker` is the route's own policy, as in `admit`. Cancelled while
        it waits, it frees the slot and counts nothing."""
        if not admission.needs_lease:
            return admission
        ready = replace(admission, needs_lease=False)
        gate = self.probe_gate
        if gate is None:
            return ready
        try:
            held = await gate.claim(admission.key, lease)
        except asyncio.CancelledError:
            self._free_slot(admission)
            raise
        except Exception:  # a gate that fails decides nothing: probe alone, as without one
            logger.exception("the probe gate failed on %r", admission.key)
            return ready
        if held is None:
            return ready
        policy = breaker if breaker is not None else self.breaker
        state = self._free_slot(admission)
        return Skip(probe_outcome(state, policy), max(held, self.clock.now()), "elsewhere")

    def _free_slot(self, admission: Admission) -> KeyState:
        """Free this process's probe slot held by `admission` (the gate is not told)."""
        with self._lock:
            state = self._known(admission.key)
            state = self._states[admission.key] = freed_probe(state, admission.token)
        return state

    # -- outcomes

    def record_success(self, admission: Admission) -> None:
        """The call answered: close the breaker, reset the row to 0, free a probe slot."""
        state = self._states.get(admission.key)
        if state is not None and state.failures == 0 and not admission.probe:
            return
        now = self.clock.now()
        with self._lock:
            state = self._known(admission.key)
            self._states[admission.key], events = succeeded_call(state, admission, now=now)
        self._emit(events)
        self._probe_ended(admission)

    def record_failure(
        self,
        admission: Admission,
        error_class: str,
        *,
        retry_after: float | None = None,
        reset_after: float | None = None,
    ) -> None:
        """The call failed with `error_class`. Only retryable classes count: the row grows (a
        failed probe reopens the breaker); `retry_after` > 0 (seconds) cools the key (at most
        24 h); `quota_exhausted` parks it (Retry-After, else `reset_after` seconds, else 15 min;
        at most 24 h; off with the breaker). Other classes only free a probe slot."""
        if error_class not in RETRYABLE:
            self.release(admission)
            return
        now = self.clock.now()
        with self._lock:
            key = admission.key
            self._states[key], events = failed(
                self._states.get(key) or KeyState(Admission(key)),
                admission,
                error_class,
                breaker=self.breaker,
                now=now,
                retry_after=retry_after,
                reset_after=reset_after,
            )
        self._emit(events)
        self._probe_ended(admission)

    def release(self, admission: Admission) -> None:
        """The call ended without counting (refused, rejected, lost race, cancelled, terminal
        4xx, a caller's own credential): free a probe slot and change nothing else."""
        if not admission.probe:
            return
        with self._lock:
            state = self._states.get(admission.key)
            if state is not None:
                self._states[admission.key] = freed_probe(state, admission.token)
        self._probe_ended(admission)

    def _probe_ended(self, admission: Admission) -> None:
        gate = self.probe_gate
        if gate is not None and admission.probe:
            gate.probe_ended(admission.key)

    def merge(self, key: Hashable, outcome: str, until: float) -> None:
        """Apply a cooldown (`cooling_down`), park (`parked`) or trip (`breaker_open` / `open`)
        learned from another replica, as a `clock.now()` deadline (`apply_remote`)."""
        remote = _MERGED.get(outcome)
        if remote is None:
            raise ValueError(f"cannot merge health outcome {outcome!r}")
        self.apply_remote(key, remote, until=until)

    def apply_remote(
        self,
        key: Hashable,
        to: RemoteState,
        *,
        until: float | None = None,
        at: float | None = None,
    ) -> bool:
        """Apply what another replica published (Rule 4): `cooling_down`, `parked` or `open`
        until `until`, or `closed` (a probe there succeeded); `at` is when it happened there.
        Both are `clock.now()` readings. Never shortens a deadline held; parks and trips are
        ignored while the breaker is disabled, and so are deadlines already past. Emits no
        event. True when the key's state changed."""
        now = self.clock.now()
        with self._lock:
            state = self._known(key)
            new = learned(state, to, until=until, at=at, breaker=self.breaker, now=now)
            if new is state:
                return False
            self._states[key] = new
        return True

    # -- views

    def snapshot(self) -> HealthSnapshot:
        """Every known key's state under the registry policy, sorted by key text."""
        return HealthSnapshot.of(self._states, self.breaker, self.clock.now())

    def observe(self, listener: Callable[[HealthEvent], None]) -> None:
        """Call `listener` with every transition (breaker open / half-open / closed, cooldown
        set, parked). A listener that raises is logged and ignored."""
        self._listeners.append(listener)

    def _add(self, key: Hashable) -> KeyState:
        with self._lock:
            return self._states.setdefault(key, KeyState(Admission(key)))

    def _known(self, key: Hashable) -> KeyState:
        """`key`'s state, or a fresh one (not stored) when the key is unknown."""
        return self._states.get(key) or KeyState(Admission(key))

    def _emit(self, events: Iterable[HealthEvent]) -> None:
        for event in events:
            for listener in list(self._listeners):
                try:
                    listener(event)
                except Exception:
                    logger.exception("health listener %r failed on %s", listener, event.to)


def _check_lease(lease: float) -> None:
    if not (is_number(lease) and lease > 0):
        raise ValueError(f"a probe lease must be a number of seconds > 0 (got {lease!r})")
