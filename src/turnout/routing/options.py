"""A route's policy as frozen value objects, each validated once, at construction.

Every check raises `turnout.errors.ConfigError` naming the option and the rule.
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

from turnout.errors import ConfigError
from turnout.routing.health import Breaker
from turnout.routing.strategies import Failover
from turnout.routing.strategy_settings import strategy_from_config
from turnout.vendors.classify import DEFAULT_RETRY_ON, RETRY_ON_ALLOWED

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

    from turnout.record import RoutingRecord
    from turnout.routing.strategies import Strategy
    from turnout.routing.target import Target
    from turnout.wire.model import ChatResponse

__all__ = [
    "FALLBACK_KINDS",
    "MAX_FALLBACKS",
    "MAX_STATIC_ATTEMPTS",
    "RETRY_ON_ALLOWED",
    "WHEN_ALL_UNHEALTHY",
    "Fallbacks",
    "RetryPolicy",
    "RouteOptions",
    "Timeouts",
    "check_static_budget",
    "check_target_names",
]

MAX_STATIC_ATTEMPTS: Final = 10
"""Σ(1 + max_retries) over a route's targets may not pass this; nor may `max_attempts`."""
MAX_FALLBACKS: Final = 3
"""Fallback routes per route in total, and fallback hops per request."""
FALLBACK_KINDS: Final = ("general", "context", "content")
WHEN_ALL_UNHEALTHY: Final = ("probe_first", "probe_soonest", "try_all", "fail")

R = TypeVar("R")


def _fail(option: str, rule: str) -> ConfigError:
    return ConfigError(f"{option} {rule}", [(option, rule)])


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_seconds(option: str, value: object, *, optional: bool) -> float | None:
    """`value` as seconds > 0 (None allowed when `optional`); ConfigError otherwise."""
    if value is None and optional:
        return None
    if not _is_number(value) or value <= 0:  # type: ignore[operator]
        rule = "must be null or a number of seconds > 0" if optional else "must be > 0 seconds"
        raise _fail(option, f"{rule} (got {value!r})")
    return float(value)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """When a failed call moves on, and how many calls a request may make.

    `retry_on` (default provider_error, timeout, rate_limited, quota_exhausted; `auth` may be
    added) lists the classes that fail over; `retryable_statuses` (None = every 5xx except 501,
    and 409) narrows which statuses count as `provider_error`; `fail_over_on_refusal` (default
    True) moves on after a `content_filter` answer; `max_attempts` (1-10, default 10) caps the
    calls of one request, hedges and fallback hops included.
    """

    retry_on: frozenset[str] = frozenset(DEFAULT_RETRY_ON)
    retryable_statuses: frozenset[int] | None = None
    fail_over_on_refusal: bool = True
    max_attempts: int = MAX_STATIC_ATTEMPTS

    @classmethod
    def build(
        cls,
        *,
        retry_on: Iterable[str] | None,
        retryable_statuses: Iterable[int] | None,
        fail_over_on_refusal: bool,
        max_attempts: int,
    ) -> RetryPolicy:
        """Validate the options and build the policy."""
        chosen = frozenset(DEFAULT_RETRY_ON if retry_on is None else _strings(retry_on))
        unknown = sorted(chosen - RETRY_ON_ALLOWED)
        if unknown:
            allowed = ", ".join(sorted(RETRY_ON_ALLOWED))
            raise _fail("retry_on", f"has unknown class {unknown[0]!r} (allowed: {allowed})")
        statuses = None
        if retryable_statuses is not None:
            statuses = frozenset(retryable_statuses)
            bad = [s for s in statuses if not isinstance(s, int) or not 100 <= s <= 599]
            if bad:
                raise _fail("retryable_statuses", f"must hold HTTP statuses (got {bad[0]!r})")
        if not isinstance(max_attempts, int) or not 1 <= max_attempts <= MAX_STATIC_ATTEMPTS:
            raise _fail(
                "max_attempts", f"must be from 1 to {MAX_STATIC_ATTEMPTS} (got {max_attempts!r})"
            )
        if not isinstance(fail_over_on_refusal, bool):
            raise _fail("fail_over_on_refusal", "must be true or false")
        return cls(chosen, statuses, fail_over_on_refusal, max_attempts)

    def reclassify(self, error_class: str, status: int | None) -> str:
        """Apply `retryable_statuses` to a classified HTTP failure: a `provider_error` status
        outside the list becomes `invalid_request`, an `invalid_request` status inside it
        becomes `provider_error`."""
        if self.retryable_statuses is None or status is None:
            return error_class
        if error_class == "provider_error" and status not in self.retryable_statuses:
            return "invalid_request"
        if error_class == "invalid_request" and status in self.retryable_statuses:
            return "provider_error"
        return error_class


def _strings(values: Iterable[str]) -> list[str]:
    if isinstance(values, str):
        raise _fail("retry_on", "must be a list of error classes, not one string")
    return list(values)


@dataclass(frozen=True, slots=True)
class Timeouts:
    """A route's deadlines, in seconds.

    `request` (default None = none) bounds a request until commit; `stream_idle` (default 60)
    ends a committed stream that goes silent; `hedge_after` (default None = no hedging) starts
    the next target beside a call that has not answered in time.
    """

    request: float | None = None
    stream_idle: float = 60.0
    hedge_after: float | None = None

    @classmethod
    def build(
        cls, *, request: float | None, stream_idle: float, hedge_after: float | None
    ) -> Timeouts:
        """Validate the options and build the deadlines."""
        idle = check_seconds("stream_idle_timeout", stream_idle, optional=False)
        assert idle is not None
        return cls(
            check_seconds("request_timeout", request, optional=True),
            idle,
            check_seconds("hedge_after", hedge_after, optional=True),
        )


@dataclass(frozen=True, slots=True)
class RouteOptions:
    """A route's policy, apart from its targets, fallback routes and collaborators (clock,
    health, randomness): validated once by `build`, then given to `Route.from_options`. Every
    route built from one `RouteOptions` shares its `strategy` object, so latency windows,
    round-robin turns and session pins are kept once for all of them.

    - `strategy`: where a request starts (default: failover).
    - `retry`: a `RetryPolicy`; `timeouts`: a `Timeouts` (seconds).
    - `cost_budget` (USD, None = off): skip a target whose estimated cost would pass it.
    - `when_all_unhealthy`: `probe_first` (default), `probe_soonest`, `try_all` or `fail`.
    - `breaker`: the route's own `Breaker` thresholds (None = the health's).
    - `accept`, `on_routed`, `fault_classifier`: the callbacks `Route` documents (None = none).
    """

    strategy: Strategy = field(default_factory=Failover)
    retry: RetryPolicy = RetryPolicy()
    timeouts: Timeouts = Timeouts()
    cost_budget: float | None = None
    when_all_unhealthy: str = "probe_first"
    breaker: Breaker | None = None
    accept: Callable[[ChatResponse], str | None] | None = None
    on_routed: Callable[[RoutingRecord], Any] | None = None
    fault_classifier: Callable[[Target, Exception], str | None] | None = None

    @classmethod
    def build(
        cls,
        *,
        strategy: Mapping[str, Any] | str | Strategy | None = None,
        retry_on: Iterable[str] | None = None,
        retryable_statuses: Iterable[int] | None = None,
        fail_over_on_refusal: bool = True,
        max_attempts: int = MAX_STATIC_ATTEMPTS,
        request_timeout: float | None = None,
        stream_idle_timeout: float = 60,
        cost_budget: float | None = None,
        hedge_after: float | None = None,
        when_all_unhealthy: str = "probe_first",
        circuit_breaker: Breaker | Mapping[str, Any] | None = None,
        session_pin_ttl_seconds: float = 86400,
        accept: Callable[[ChatResponse], str | None] | None = None,
        on_routed: Callable[[RoutingRecord], Any] | None = None,
        fault_classifier: Callable[[Target, Exception], str | None] | None = None,
        rng: random.Random | None = None,
    ) -> RouteOptions:
        """Validate `Route`'s options (the same keywords, defaults and messages) and build
        them; `strategy` may be a spec or a strategy object, and `rng` is the randomness a
        strategy built here draws on (default: a fresh `random.Random`)."""
        retry = RetryPolicy.build(
            retry_on=retry_on,
            retryable_statuses=retryable_statuses,
            fail_over_on_refusal=fail_over_on_refusal,
            max_attempts=max_attempts,
        )
        timeouts = Timeouts.build(
            request=request_timeout, stream_idle=stream_idle_timeout, hedge_after=hedge_after
        )
        if when_all_unhealthy not in WHEN_ALL_UNHEALTHY:
            allowed = ", ".join(WHEN_ALL_UNHEALTHY)
            raise ConfigError(
                f"when_all_unhealthy must be one of {allowed} (got {when_all_unhealthy!r})",
                [("when_all_unhealthy", f"must be one of {allowed}")],
            )
        budget = check_number("cost_budget", cost_budget, minimum=0, optional=True)
        pin_ttl = check_seconds("session_pin_ttl_seconds", session_pin_ttl_seconds, optional=False)
        return cls(
            _strategy(strategy, rng if rng is not None else random.Random(), pin_ttl),
            retry,
            timeouts,
            budget,
            when_all_unhealthy,
            _breaker(circuit_breaker),
            check_callable("accept", accept),
            check_callable("on_routed", on_routed),
            check_callable("fault_classifier", fault_classifier),
        )


def _strategy(spec: Any, rng: random.Random, pin_ttl: float | None) -> Strategy:
    if spec is not None and hasattr(spec, "pick_start"):
        return spec  # type: ignore[no-any-return]
    return strategy_from_config(spec, rng=rng, session_pin_ttl=pin_ttl or 86400.0, path="strategy")


def _breaker(spec: Breaker | Mapping[str, Any] | None) -> Breaker | None:
    if spec is None or isinstance(spec, Breaker):
        return spec
    if isinstance(spec, Mapping):
        return Breaker.from_config(spec)
    raise ConfigError(
        f"circuit_breaker must be a Breaker or a mapping (got {spec!r})",
        [("circuit_breaker", "must be a Breaker or a mapping")],
    )


@dataclass(frozen=True, slots=True)
class Fallbacks(Generic[R]):
    """Routes to escalate to after this route fails: `general` after retryable
    failures left no target, `context` after `context_length`, `content` after
    `content_filtered`. At most 3 in total; no self-reference and no cycles within one kind
    (a request hops along one kind only, so a chain of two kinds never runs)."""

    general: tuple[R, ...] = ()
    context: tuple[R, ...] = ()
    content: tuple[R, ...] = ()

    def of(self, kind: str) -> tuple[R, ...]:
        """The routes of `kind`."""
        return tuple(getattr(self, kind))

    def __iter__(self) -> Iterator[R]:
        return iter((*self.general, *self.context, *self.content))

    def __bool__(self) -> bool:
        return bool(self.general or self.context or self.content)

    @classmethod
    def build(
        cls,
        spec: Mapping[str, Sequence[R]] | None,
        *,
        route: str,
        name_of: Callable[[R], str],
        fallbacks_of: Callable[[R, str], Iterable[R]],
        is_route: Callable[[object], bool],
    ) -> Fallbacks[R]:
        """Validate `{kind: [routes]}` for the route named `route` and build it;
        `fallbacks_of(other, kind)` gives another route's fallbacks of one kind."""
        if not spec:
            return cls()
        unknown = sorted(set(spec) - set(FALLBACK_KINDS))
        if unknown:
            raise _fail(
                f"fallbacks.{unknown[0]}",
                f"is not a fallback kind (allowed: {', '.join(FALLBACK_KINDS)})",
            )
        kinds = {kind: tuple(spec.get(kind, ())) for kind in FALLBACK_KINDS}
        everything = [r for routes in kinds.values() for r in routes]
        if len(everything) > MAX_FALLBACKS:
            raise _fail(
                "fallbacks", f"may name at most {MAX_FALLBACKS} routes (got {len(everything)})"
            )
        for kind, routes in kinds.items():
            for other in routes:
                if not is_route(other):
                    raise _fail(f"fallbacks.{kind}", f"must hold Route objects (got {other!r})")
                if name_of(other) == route:
                    raise _fail(f"fallbacks.{kind}", f"may not name the route itself ({route!r})")
                _check_no_cycle(route, other, name_of, fallbacks_of, kind)
        return cls(kinds["general"], kinds["context"], kinds["content"])


def _check_no_cycle(
    route: str,
    start: R,
    name_of: Callable[[R], str],
    fallbacks_of: Callable[[R, str], Iterable[R]],
    kind: str,
) -> None:
    """Whether `route` can be reached again from `start` over fallbacks of `kind`: the only
    chains a request follows, since every hop of a request is of the first hop's kind."""
    path = [route, name_of(start)]
    stack: list[tuple[R, list[str]]] = [(start, path)]
    seen: set[int] = set()
    while stack:
        current, trail = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for nxt in fallbacks_of(current, kind):
            nxt_trail = [*trail, name_of(nxt)]
            if name_of(nxt) == route:
                raise _fail(f"fallbacks.{kind}", f"form a cycle: {' -> '.join(nxt_trail)}")
            stack.append((nxt, nxt_trail))


def check_target_names(targets: Sequence[Target]) -> None:
    """A route needs at least one target, each with its own name."""
    if not targets:
        raise _fail("targets", "must hold at least one target")
    seen: set[str] = set()
    for position, target in enumerate(targets):
        if not hasattr(target, "client") or not hasattr(target, "fallback_only"):
            raise _fail(f"targets[{position}]", f"must be a Target (got {target!r})")
        if target.name in seen:
            raise _fail(f"targets[{position}].name", f"{target.name!r} is used twice")
        seen.add(target.name)


def check_static_budget(
    route: str, targets: Sequence[Target], max_attempts: int, *, stacklevel: int = 3
) -> int:
    """Σ(1 + max_retries) must be ≤ 10; above the route's own `max_attempts` it is accepted
    with a warning naming both numbers (the cap is then deliberate), attributed `stacklevel`
    frames up. Returns the total."""
    total = sum(1 + target.max_retries for target in targets)
    if total > MAX_STATIC_ATTEMPTS:
        raise _fail(
            "targets", f"total attempts {total} exceeds the maximum of {MAX_STATIC_ATTEMPTS}"
        )
    if total > max_attempts:
        warnings.warn(
            f"route {route!r}: its targets allow {total} attempts in total but max_attempts is "
            f"{max_attempts}; requests stop after {max_attempts} calls",
            UserWarning,
            stacklevel=stacklevel,
        )
    return total


def check_number(option: str, value: Any, *, minimum: float, optional: bool) -> float | None:
    """`value` as a number ≥ `minimum` (None allowed when `optional`)."""
    if value is None and optional:
        return None
    if not _is_number(value) or value < minimum:
        raise _fail(option, f"must be a number ≥ {minimum:g} (got {value!r})")
    return float(value)


C = TypeVar("C")


def check_callable(option: str, value: C) -> C:
    """`value` if it is None or callable; ConfigError otherwise."""
    if value is not None and not callable(value):
        raise _fail(option, "must be callable")
    return value
