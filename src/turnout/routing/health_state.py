"""Per-key health state and its pure transitions: the policy (`Breaker`), the
decisions (`Skip`, `Admission`) and `(state, event, now) -> state` functions.

Rule 1: `KeyState` is immutable; every change is a function below returning a new state.
Rule 2: a deadline equal to now has passed: a skip holds while `now < until`.
Rule 3: "open" is derived, never stored: a key is open under a policy while its failures in a row
reach that policy's threshold and its last counted failure is younger than that policy's
`open_for`. Two routes with different breaker policies therefore read the same counters.
Rule 4: the probe slot is a lease (token + end): an expired lease frees it, and only the token
holding it frees it early.
Rule 5: a probe's failure keeps the whole row, so it reopens the breaker whatever the window.
Rule 6: a trip learned from another replica (`tripped`) holds the key open until its deadline and
then, like a park, lets one probe through (`trip_probe`); a close learned from another replica
(`closed`) is ignored when this key failed, or learned a deadline, after that close happened,
and a trip that happened before the last close is ignored (stale news never overrides newer).
Rule 7: every opening of the breaker (a trip here, a trip learned, a failed probe, and a row of
failures that reaches a route's own threshold below the registry's, once per row:
`route_tripped`) starts a new `epoch`, and every plain admission carries the epoch it was
admitted under. The result of a
plain call admitted under an earlier epoch is stale (`is_stale`): it started before the breaker
opened, so it neither closes the breaker (only the probe's result may) nor counts as a failure
that would extend the open period or count twice. Probes are judged by their token, never by
their epoch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from turnout.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Hashable, Mapping

__all__ = [
    "DEFAULT_BREAKER",
    "DISABLED_BREAKER",
    "MAX_BREAKER_FAILURES",
    "MAX_SKIP_SECONDS",
    "PARK_DEFAULT_SECONDS",
    "Admission",
    "Breaker",
    "KeyState",
    "KeyStateName",
    "Skip",
    "SkipOutcome",
    "closed",
    "cooled",
    "counted_failure",
    "freed_probe",
    "is_number",
    "is_stale",
    "judge",
    "opened",
    "park_seconds",
    "parked",
    "probe_outcome",
    "probe_taken",
    "state_name",
    "succeeded",
    "tripped",
]

MAX_SKIP_SECONDS = 86_400.0
"""No cooldown or park lasts longer than 24 h."""
PARK_DEFAULT_SECONDS = 900.0
"""A quota failure with no Retry-After and no vendor reset time parks for 15 min."""
MAX_BREAKER_FAILURES = 1000
_NEVER = -math.inf

SkipOutcome = Literal["cooling_down", "breaker_open", "parked"]
ProbeInFlight = Literal["here", "elsewhere"]
KeyStateName = Literal["available", "cooling_down", "open", "half_open", "parked"]


def is_number(value: object) -> bool:
    """A finite int or float (not a bool)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True, slots=True)
class Breaker:
    """A circuit-breaker policy (exported as `turnout.Breaker`).

    `failures` (default 3, 1 to 1000) retryable failures in a row open the breaker for `open_for`
    seconds (default 60, > 0); then one probe call is let through (half-open). With `window`
    (seconds, default None = no window) only failures newer than the window count. `enabled=False`
    turns off the breaker and quota parking, never cooldowns.
    """

    failures: int = 3
    open_for: float = 60.0
    window: float | None = None
    enabled: bool = True

    def __post_init__(self) -> None:
        _check_breaker(
            {name: getattr(self, name) for name in _CONFIG_NAMES}, path="Breaker", names=None
        )

    @classmethod
    def from_config(cls, spec: Mapping[str, Any], *, path: str = "circuit_breaker") -> Breaker:
        """Build from config names: `enabled`, `failure_threshold`, `cooldown_seconds`,
        `failure_window_seconds`. Raises `ConfigError` naming `path.option` and the rule."""
        unknown = sorted(set(spec) - set(_CONFIG_NAMES.values()))
        if unknown:
            allowed = ", ".join(sorted(_CONFIG_NAMES.values()))
            raise ConfigError(
                f"{path}.{unknown[0]}: unknown option (allowed: {allowed})",
                [(f"{path}.{name}", "unknown option") for name in unknown],
            )
        values = {attr: spec[name] for attr, name in _CONFIG_NAMES.items() if name in spec}
        _check_breaker({**_DEFAULTS, **values}, path=path, names=_CONFIG_NAMES)
        return cls(**values)


_CONFIG_NAMES = {
    "failures": "failure_threshold",
    "open_for": "cooldown_seconds",
    "window": "failure_window_seconds",
    "enabled": "enabled",
}
_DEFAULTS: dict[str, Any] = {"failures": 3, "open_for": 60.0, "window": None, "enabled": True}


def _check_breaker(
    values: Mapping[str, Any], *, path: str, names: Mapping[str, str] | None
) -> None:
    """Raise `ConfigError` for the first invalid value; `names` maps fields to config names."""

    def fail(attr: str, rule: str) -> None:
        where = f"{path}.{names[attr] if names else attr}"
        raise ConfigError(f"{where} {rule}", [(where, rule)])

    failures, open_for, window = values["failures"], values["open_for"], values["window"]
    if not isinstance(failures, int) or isinstance(failures, bool):
        fail("failures", f"must be a whole number (got {failures!r})")
    elif not 1 <= failures <= MAX_BREAKER_FAILURES:
        fail("failures", f"must be from 1 to {MAX_BREAKER_FAILURES} (got {failures})")
    if not is_number(open_for) or open_for <= 0:
        fail("open_for", f"must be a number of seconds > 0 (got {open_for!r})")
    if window is not None and (not is_number(window) or window <= 0):
        fail("window", f"must be null or a number of seconds > 0 (got {window!r})")
    if not isinstance(values["enabled"], bool):
        fail("enabled", f"must be true or false (got {values['enabled']!r})")


DEFAULT_BREAKER = Breaker()
DISABLED_BREAKER = Breaker(enabled=False)


@dataclass(frozen=True, slots=True)
class Skip:
    """Why a key must be skipped now: `outcome` (the attempt entry's outcome) until `until`
    (a `clock.now()` reading). `probe` says when the key is skipped because its half-open probe
    is in flight, on this process (`here`) or on another replica (`elsewhere`); `until` is then
    when that probe's lease ends."""

    outcome: SkipOutcome
    until: float
    probe: ProbeInFlight | None = None

    def seconds_left(self, now: float) -> float:
        """Seconds until the skip ends (never negative)."""
        return max(0.0, self.until - now)

    def reason(self, now: float) -> str:
        """The routing record's reason for a skip: whole seconds left, rounded up (`"60 s"`)."""
        return f"{math.ceil(round(self.seconds_left(now), 3))} s"


@dataclass(frozen=True, slots=True)
class Admission:
    """Permission to call a key.

    `probe` is True when this call is the key's single probe (half-open, after a park, or forced);
    `lease_until` is then when the probe slot frees itself if the call never reports, and `token`
    identifies the lease. A plain admission has `probe=False`, `lease_until=None`, `token=0`.
    `epoch` is the key's breaker epoch when the call was admitted (module Rule 7). `needs_lease`
    is True for a probe that must still take the lease shared between replicas before it is
    called (`Health.claim_probe`).
    """

    key: Hashable
    probe: bool = False
    lease_until: float | None = None
    token: int = 0
    epoch: int = 0
    needs_lease: bool = False


@dataclass(frozen=True, slots=True)
class KeyState:
    """Everything kept for one health key (see the module rules)."""

    plain: Admission
    failures: int = 0
    last_failure: float = _NEVER
    failure_times: tuple[float, ...] = ()
    cool_until: float = _NEVER
    park_until: float = _NEVER
    park_probe: bool = False
    open_until: float = _NEVER
    probe_until: float = _NEVER
    probe_token: int = 0
    reported: Literal["closed", "open", "half_open"] = "closed"
    skip_until: float = _NEVER  # max(cool_until, park_until, open_until), for the hot path
    trip_probe: bool = False  # a learned trip ends with one probe (Rule 6)
    learned_at: float = _NEVER  # when the newest deadline learned from a replica was set
    closed_at: float = _NEVER  # when a probe last closed the key, here or on a replica
    epoch: int = 0  # one more at each opening of the breaker (Rule 7); `plain` carries it
    row_opened: bool = False  # the present row of failures has started an epoch (Rule 7)


# ---- pure transitions ----------------------------------------------------------------------


def _deadlines(state: KeyState, **changes: Any) -> KeyState:
    new = replace(state, **changes)
    skip_until = max(new.cool_until, new.park_until, new.open_until)
    return new if skip_until == new.skip_until else replace(new, skip_until=skip_until)


def counted_failure(
    state: KeyState, *, now: float, window: float | None, probe: bool, token: int
) -> KeyState:
    """A retryable failure: one more in a row. A probe's failure keeps the whole row (so it
    reopens the breaker whatever the window); otherwise failures older than `window` drop out."""
    if window is None:
        times: tuple[float, ...] = ()
        failures = state.failures + 1
    else:
        kept = (
            state.failure_times
            if probe
            else tuple(t for t in state.failure_times if t > now - window)
        )
        times = (*kept[-(MAX_BREAKER_FAILURES - 1) :], now)
        failures = len(times)
    freed = freed_probe(state, token)
    return replace(
        freed,
        failures=failures,
        last_failure=now,
        failure_times=times,
        # a probe answers for a park only once the park is over
        park_probe=freed.park_probe and not (probe and now >= state.park_until),
    )


def succeeded(state: KeyState, *, probe: bool, token: int) -> KeyState:
    """A success closes the breaker and resets the row; a probe's success also ends cooldown,
    park and a trip learned from another replica (the key has just proved itself)."""
    freed = freed_probe(state, token)
    if not probe:
        return replace(freed, failures=0, failure_times=(), last_failure=_NEVER, row_opened=False)
    return _cleared(freed)


def _cleared(state: KeyState) -> KeyState:
    return _deadlines(
        state,
        failures=0,
        failure_times=(),
        last_failure=_NEVER,
        cool_until=_NEVER,
        park_until=_NEVER,
        park_probe=False,
        open_until=_NEVER,
        trip_probe=False,
        row_opened=False,
    )


def closed(state: KeyState, at: float) -> KeyState:
    """A probe on another replica succeeded at `at`: clear the key as a probe's success here
    would (Rule 6: unless this key failed or learned a deadline after `at`). The probe slot is
    left as it is."""
    if max(state.last_failure, state.learned_at) > at:
        return state
    return replace(_cleared(state), closed_at=max(state.closed_at, at), reported="closed")


def cooled(state: KeyState, until: float) -> KeyState:
    """Cool the key until `until`, never shortening a cooldown held."""
    return _deadlines(state, cool_until=max(state.cool_until, until))


def parked(state: KeyState, until: float) -> KeyState:
    """Park the key until `until` (never shortening a park held); one probe follows the park."""
    return _deadlines(state, park_until=max(state.park_until, until), park_probe=True)


def tripped(state: KeyState, until: float, *, at: float = _NEVER) -> KeyState:
    """Hold the breaker open until `until` (a trip learned from another replica, that happened
    at `at`), then let one probe through (Rule 6). A trip older than the last close, or whose
    deadline has been held already, changes nothing."""
    if at < state.closed_at or (until <= state.open_until and state.trip_probe):
        return state
    return _deadlines(
        opened(state),
        open_until=max(state.open_until, until),
        trip_probe=True,
        learned_at=max(state.learned_at, at),
    )


def probe_taken(state: KeyState, *, token: int, until: float) -> KeyState:
    """The probe slot is leased to `token` until `until`."""
    return replace(state, probe_token=token, probe_until=until)


def freed_probe(state: KeyState, token: int) -> KeyState:
    """Free the probe slot if `token` holds it (a stale lease frees nothing)."""
    if token == 0 or token != state.probe_token or state.probe_until == _NEVER:
        return state
    return replace(state, probe_until=_NEVER)


def opened(state: KeyState) -> KeyState:
    """The breaker opened: a new epoch, so calls admitted before now are stale (Rule 7)."""
    epoch = state.epoch + 1
    plain = Admission(state.plain.key, epoch=epoch)
    return replace(state, epoch=epoch, plain=plain, row_opened=True)


def route_tripped(state: KeyState, breaker: Breaker) -> KeyState:
    """Rule 7: the row reaches `breaker`'s threshold (a route's own, which may be below the
    registry's): the first time for this row, the breaker opened for that route."""
    if state.row_opened or not breaker.enabled or state.failures < breaker.failures:
        return state
    return opened(state)


def is_stale(state: KeyState, admission: Admission) -> bool:
    """True for a plain call admitted before the breaker's latest opening (Rule 7)."""
    return not admission.probe and admission.epoch != state.epoch


def judge(state: KeyState, breaker: Breaker, now: float) -> Skip | Literal["call", "probe"]:
    """Decide a call on `state` under `breaker`: parked -> cooling down -> breaker open ->
    half-open (one probe; others skip while its lease is live) -> call."""
    if breaker.enabled and now < state.park_until:
        return Skip("parked", state.park_until)
    if now < state.cool_until:
        return Skip("cooling_down", state.cool_until)
    if not breaker.enabled:
        return "call"
    if now < state.open_until:
        return Skip("breaker_open", state.open_until)
    is_tripped = state.failures >= breaker.failures
    if is_tripped and now < state.last_failure + breaker.open_for:
        return Skip("breaker_open", state.last_failure + breaker.open_for)
    if not (is_tripped or state.park_probe or state.trip_probe):
        return "call"
    if now < state.probe_until:
        return Skip(probe_outcome(state, breaker), state.probe_until, "here")
    return "probe"


def probe_outcome(state: KeyState, breaker: Breaker) -> SkipOutcome:
    """How a key waiting for its probe is skipped: `breaker_open` after a trip, else `parked`."""
    if state.failures >= breaker.failures or state.trip_probe:
        return "breaker_open"
    return "parked"


def state_name(state: KeyState, breaker: Breaker, now: float) -> tuple[KeyStateName, float | None]:
    """The snapshot's view of `state` under `breaker`: a state name and when it ends."""
    if breaker.enabled and now < state.park_until:
        return "parked", state.park_until
    if now < state.cool_until:
        return "cooling_down", state.cool_until
    if not breaker.enabled:
        return "available", None
    if now < state.open_until:
        return "open", state.open_until
    if state.failures >= breaker.failures:
        open_end = state.last_failure + breaker.open_for
        return ("open", open_end) if now < open_end else ("half_open", None)
    if state.trip_probe:
        return "half_open", None
    return "available", None


def park_seconds(retry_after: float | None, reset_after: float | None) -> float | None:
    """How long a quota failure parks: Retry-After, else the vendor's reset, else 15 min; at most
    24 h. A zero or negative Retry-After (or reset) parks nothing (None)."""
    chosen = retry_after if retry_after is not None else reset_after
    if chosen is None:
        return PARK_DEFAULT_SECONDS
    return min(chosen, MAX_SKIP_SECONDS) if chosen > 0 else None
