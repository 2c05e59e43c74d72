"""`Route`: an async chat client over an ordered list of targets (SPEC §2, §3).

A route is built once (every option validated here, raising `ConfigError`) and then serves any
number of concurrent requests; the per-request walk lives in `routing.driver`. A `Route` is
itself a `ChatClient` (and an `EmbeddingClient`), so it can be another route's target.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from turnout.errors import ConfigError
from turnout.routing.clock import LoopClock
from turnout.routing.driver import serve
from turnout.routing.health import Breaker, Health
from turnout.routing.options import (
    WHEN_ALL_UNHEALTHY,
    Fallbacks,
    RetryPolicy,
    Timeouts,
    check_callable,
    check_number,
    check_seconds,
    check_static_budget,
    check_target_names,
)
from turnout.routing.request_state import RequestState
from turnout.routing.strategies import Candidate, strategy_from_config, try_order, validate_weights
from turnout.routing.stream import RoutedStream, routed_stream
from turnout.routing.target import Target, serves_embeddings
from turnout.routing.target_facts import TargetFacts
from turnout.wire.model import ChatRequest, EmbeddingRequest

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Iterable, Sequence

    from turnout.record import RoutingRecord
    from turnout.routing.attempt import Call
    from turnout.routing.clock import Clock
    from turnout.routing.plan import CallPlan
    from turnout.routing.strategies import Strategy
    from turnout.wire.model import ChatResponse, EmbeddingResponse, Message

__all__ = ["Route", "Target", "as_request", "process_health"]


@functools.cache
def process_health() -> Health:
    """The process-wide health registry used by routes given no `health` (on the real clock)."""
    return Health()


def as_request(request: ChatRequest | Sequence[Message], params: Any) -> ChatRequest:
    """A `ChatRequest` from a request (with `params` replaced) or from a list of messages."""
    if isinstance(request, ChatRequest):
        return replace(request, **params) if params else request
    return ChatRequest(messages=list(request), **params)


class Route:
    """A named, ordered list of targets plus a policy; an async chat client (`complete`,
    `stream`) that also routes embeddings (`embed`).

    Options (SPEC §7.3; times in seconds):

    - `clock`: the time source (default: the health's clock). `health`: a `Health` shared with
      other routes (default: the process-wide registry; a route given a fake clock gets a
      private one on that clock).
    - `accept(response) -> reason | None`: reject unusable answers (recorded `rejected`).
    - `on_routed(record)`: called once per request with the routing record (sync or async;
      what it raises is logged and ignored).
    - `fault_classifier(target, error) -> error_class | None`: reclassify a failure first
      (`error` is the call's `ProviderError`; anything else a client raised is wrapped in one,
      the original as its `__cause__`).
    - `strategy`: where a request starts (`"failover"` (default), a spec such as
      `{"type": "lowest-latency", "window_minutes": 15}`, or a strategy object).
    - `retry_on` (default provider_error, timeout, rate_limited, quota_exhausted; `auth`
      allowed), `retryable_statuses` (None = every 5xx but 501, and 409),
      `fail_over_on_refusal` (True), `max_attempts` (10; 1-10 calls per request).
    - `request_timeout` (None): bounds a request until commit; `stream_idle_timeout` (60);
      `hedge_after` (None = off).
    - `cost_budget` (USD, None = off): skip a target whose estimated cost would pass it.
    - `when_all_unhealthy`: `probe_first` (default), `probe_soonest`, `try_all` or `fail`.
    - `circuit_breaker`: this route's own `Breaker` thresholds (None = the health's).
    - `fallbacks`: `{"general" | "context" | "content": [Route, ...]}`, at most 3 in total.
    - `session_pin_ttl_seconds` (86400), `route_id` (default: the name), `rng` (randomness for
      jitter and strategies; default a fresh `random.Random`).
    """

    __slots__ = (
        "_candidates",
        "_fallback_only",
        "_keys",
        "_orders",
        "accept",
        "breaker",
        "clock",
        "cost_budget",
        "facts",
        "fallbacks",
        "fault_classifier",
        "health",
        "name",
        "no_start_reason",
        "on_routed",
        "providers",
        "retry",
        "rng",
        "route_id",
        "strategy",
        "targets",
        "timeouts",
        "when_all_unhealthy",
    )

    def __init__(
        self,
        name: str,
        targets: Iterable[Target],
        *,
        clock: Clock | None = None,
        health: Health | None = None,
        accept: Callable[[ChatResponse], str | None] | None = None,
        on_routed: Callable[[RoutingRecord], Any] | None = None,
        fault_classifier: Callable[[Target, Exception], str | None] | None = None,
        strategy: Mapping[str, Any] | str | Strategy | None = None,
        retry_on: Iterable[str] | None = None,
        retryable_statuses: Iterable[int] | None = None,
        fail_over_on_refusal: bool = True,
        max_attempts: int = 10,
        request_timeout: float | None = None,
        stream_idle_timeout: float = 60,
        cost_budget: float | None = None,
        hedge_after: float | None = None,
        when_all_unhealthy: str = "probe_first",
        circuit_breaker: Breaker | Mapping[str, Any] | None = None,
        fallbacks: Mapping[str, Sequence[Route]] | None = None,
        session_pin_ttl_seconds: float = 86400,
        route_id: str | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ConfigError("name must be a non-empty string", [("name", "must be non-empty")])
        self.name = name
        self.route_id = route_id or name
        self.targets: tuple[Target, ...] = tuple(targets)
        check_target_names(self.targets)
        self.retry = RetryPolicy.build(
            retry_on=retry_on,
            retryable_statuses=retryable_statuses,
            fail_over_on_refusal=fail_over_on_refusal,
            max_attempts=max_attempts,
        )
        check_static_budget(name, self.targets, max_attempts)
        self.timeouts = Timeouts.build(
            request=request_timeout, stream_idle=stream_idle_timeout, hedge_after=hedge_after
        )
        if when_all_unhealthy not in WHEN_ALL_UNHEALTHY:
            allowed = ", ".join(WHEN_ALL_UNHEALTHY)
            raise ConfigError(
                f"when_all_unhealthy must be one of {allowed} (got {when_all_unhealthy!r})",
                [("when_all_unhealthy", f"must be one of {allowed}")],
            )
        self.when_all_unhealthy = when_all_unhealthy
        self.cost_budget = check_number("cost_budget", cost_budget, minimum=0, optional=True)
        pin_ttl = check_seconds("session_pin_ttl_seconds", session_pin_ttl_seconds, optional=False)
        self.rng = rng if rng is not None else random.Random()
        self.strategy: Strategy = _strategy(strategy, self.rng, pin_ttl)
        validate_weights(
            [t.weight for t in self.targets],
            [t.fallback_only for t in self.targets],
            self.strategy.type,
            "targets",
        )
        self.breaker = _breaker(circuit_breaker)
        self.health = _health(health, clock)
        self.clock: Clock = clock if clock is not None else self.health.clock
        self.accept = check_callable("accept", accept)
        self.on_routed = check_callable("on_routed", on_routed)
        self.fault_classifier = check_callable("fault_classifier", fault_classifier)
        self.fallbacks: Fallbacks[Route] = Fallbacks.build(
            fallbacks,
            route=name,
            name_of=lambda route: route.name,
            fallbacks_of=lambda route: iter(route.fallbacks),
            is_route=lambda value: isinstance(value, Route),
        )
        self._prepare()

    def _prepare(self) -> None:
        targets = self.targets
        self._fallback_only = [t.fallback_only for t in targets]
        self.facts: tuple[TargetFacts, ...] = tuple(
            TargetFacts.of(self.name, t, health_key=_health_key(t)) for t in targets
        )
        self.providers: tuple[str, ...] = tuple(facts.provider for facts in self.facts)
        self._keys: dict[tuple[int, str | None], Hashable] = {}
        self._candidates = tuple(
            Candidate(i, t.name, t.weight, _start_price(t, self.facts[i]), self.facts[i].stats_key)
            for i, t in enumerate(targets)
            if not t.paused
        )
        self._orders: dict[int, list[int]] = {}
        self.no_start_reason: str | None = None
        if not self._candidates:
            self.no_start_reason = f'every target of route "{self.name}" is paused'
        elif self.strategy.type == "weighted" and not any(
            t.weight > 0 and not t.fallback_only for t in targets if not t.paused
        ):
            self.no_start_reason = f'no target of route "{self.name}" has a positive weight'

    def __repr__(self) -> str:
        return f"Route({self.name!r}, targets={[t.name for t in self.targets]})"

    @property
    def provider(self) -> str:
        """A route used as a target is its own provider: its name."""
        return self.name

    @property
    def supports_embeddings(self) -> bool:
        """True when some target can serve embeddings (a route used as another route's
        target is ineligible for embeddings requests otherwise)."""
        return any(serves_embeddings(target) for target in self.targets)

    # -- serving

    async def complete(
        self,
        request: ChatRequest | Sequence[Message],
        *,
        context: Any = None,
        session_id: str | None = None,
        plan: CallPlan | None = None,
        **params: Any,
    ) -> ChatResponse:
        """Route one request and return the accepted answer (`response.routing` is the record).

        A list of messages is wrapped into `ChatRequest(messages=…, **params)`; `context` is
        what each target's `eligible` receives; `plan` (default None: every target, as
        configured) limits and orders the targets of this one call, carries the caller's own
        credential and the policy verdicts (`turnout.routing.plan`). Raises the §3.4 ending
        error: the terminal call's own `ProviderError`, `RouteExhausted`, `RouteIneligible`,
        `NoDeploymentAvailable` or `PolicyDenied`, each with `.routing` set.
        """
        if params or not isinstance(request, ChatRequest):
            request = as_request(request, params)
        state = RequestState(
            self, request, context=context, session_id=session_id, streaming=False, plan=plan
        )
        try:
            call = await serve(self, state)
        except BaseException as exc:
            state.close(exc)
            raise
        assert call.response is not None
        return _answered(state, call, call.response)

    def stream(
        self,
        request: ChatRequest | Sequence[Message],
        *,
        context: Any = None,
        session_id: str | None = None,
        plan: CallPlan | None = None,
        **params: Any,
    ) -> RoutedStream:
        """Route one streamed request: chunks as they come; the last carries usage and the
        routing record, which the returned stream's `routing` also holds from the start (it
        fills in as the request goes, complete for the attempts so far at the first chunk).
        Fails over until the first token; after it a failure raises `StreamBroken`, and a
        refused or rejected stream raises `StreamRejected` at its end. `plan` as for
        `complete`."""
        request = as_request(request, params)
        state = RequestState(
            self, request, context=context, session_id=session_id, streaming=True, plan=plan
        )
        return RoutedStream(state.record, routed_stream(self, state, serve))

    async def embed(
        self,
        request: EmbeddingRequest | str | list[str],
        *,
        context: Any = None,
        session_id: str | None = None,
        plan: CallPlan | None = None,
    ) -> EmbeddingResponse:
        """Route one embeddings request and return the vectors (`response.routing` is the
        record); a string or a list of strings is wrapped into `EmbeddingRequest(input=…)`.

        The walk is `complete`'s (strategy, health, classification, `retry_on`, same-target
        retries, `max_attempts`, deadlines, `fallbacks`, `on_routed`), except that there is no
        hedging (`hedge_after` is ignored), no refusal and no `accept` check. A target whose
        client has no `embed`, says `supports_embeddings = False`, or declares `capabilities`
        without `embeddings` is `ineligible` ("no embeddings"); when that leaves no target,
        raises `RoutingError` 400 `embeddings_not_supported`. `context_window` and `cost_budget`
        are not checked (an embeddings request has no `max_tokens`); `eligible` receives the
        `EmbeddingRequest`. The record's `usage` is the serving call's and its `cost` is priced
        at the model's input price. Other failures raise as `complete` does (§3.4); `plan` as
        for `complete`.
        """
        if not isinstance(request, EmbeddingRequest):
            request = EmbeddingRequest(input=request)
        state = RequestState(
            self, request, context=context, session_id=session_id, streaming=False, plan=plan
        )
        try:
            call = await serve(self, state)
        except BaseException as exc:
            state.close(exc)
            raise
        assert call.embedding is not None
        return _answered(state, call, call.embedding)

    # -- used by the driver

    @property
    def candidates(self) -> tuple[Candidate, ...]:
        """What the strategy sees of the targets that may start a request (not paused)."""
        return self._candidates

    def start_order(self, session_id: str | None) -> tuple[list[int], str]:
        """The try order of one request (target indices) and the strategy's reason."""
        start, reason = self.strategy.pick_start(
            self._candidates, route_id=self.route_id, session_id=session_id, now=self.clock.now()
        )
        order = self._orders.get(start)
        if order is None:
            order = self._orders[start] = try_order(len(self.targets), self._fallback_only, start)
        return order, reason

    def key_for(self, index: int, model: str | None) -> Hashable:
        """The health key of target `index` asked for `model` (cached per target and model)."""
        cached = self._keys.get((index, model))
        if cached is not None:
            return cached
        facts = self.facts[index]
        key = self.health.key_for(
            provider=facts.provider,
            model=model or facts.client_model,
            route=self.name,
            target=self.targets[index].name,
            health_key=facts.health_key,
        )
        if len(self._keys) < _KEY_CACHE_SIZE:
            self._keys[(index, model)] = key
        return key


_KEY_CACHE_SIZE = 4096

_Answer = TypeVar("_Answer", "ChatResponse", "EmbeddingResponse")


def _answered(state: RequestState, call: Call, answer: _Answer) -> _Answer:
    """Close a served request's record on its accepted answer and hand the answer over."""
    state.answered(call, answer)
    answer.routing = state.record
    state.close(None)
    return answer


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


def _health(health: Health | None, clock: Clock | None) -> Health:
    if health is not None:
        if not isinstance(health, Health):
            raise ConfigError("health must be a Health", [("health", "must be a Health")])
        return health
    if clock is None or isinstance(clock, LoopClock):
        return process_health()
    return Health(clock=clock)


def _health_key(target: Target) -> str | None:
    """The target's own health key; a route used as a target keeps its health under its name."""
    return target.health_key or (target.client.name if isinstance(target.client, Route) else None)


def _start_price(target: Target, facts: TargetFacts) -> float | None:
    """What the `lowest-cost` strategy compares: input + output price of the target's model."""
    prices = facts.price(target.model or facts.client_model)
    return None if prices is None else float(prices[0] + prices[1])
