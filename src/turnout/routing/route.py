"""`Route`: an async chat client over an ordered list of targets.

A route is built once (every option validated here, raising `ConfigError`) and then serves any
number of concurrent requests; the per-request walk lives in `routing.driver`. A `Route` is
itself a `ChatClient` (and an `EmbeddingClient`), so it can be another route's target.
"""

from __future__ import annotations

import functools
import random
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from turnout.errors import ConfigError
from turnout.routing.clock import LoopClock
from turnout.routing.driver import serve
from turnout.routing.health import Health
from turnout.routing.options import (
    Fallbacks,
    RouteOptions,
    check_static_budget,
    check_target_names,
)
from turnout.routing.request_state import RequestState
from turnout.routing.strategy_settings import validate_weights
from turnout.routing.stream import RoutedStream, routed_stream
from turnout.routing.target import Target, serves_embeddings
from turnout.routing.target_facts import TargetFacts, TargetTable
from turnout.wire.model import ChatRequest, EmbeddingRequest

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence

    from turnout.record import RoutingRecord
    from turnout.routing.attempt import Call
    from turnout.routing.clock import Clock
    from turnout.routing.health import Breaker
    from turnout.routing.plan import RequestPlan
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

    Options (the route options of the configuration file; times in seconds):

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
        "accept",
        "breaker",
        "clock",
        "cost_budget",
        "facts",
        "fallbacks",
        "fault_classifier",
        "health",
        "name",
        "on_routed",
        "providers",
        "retry",
        "rng",
        "route_id",
        "strategy",
        "table",
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
        checked = _checked(name, targets)
        rng = rng if rng is not None else random.Random()
        options = RouteOptions.build(
            strategy=strategy,
            retry_on=retry_on,
            retryable_statuses=retryable_statuses,
            fail_over_on_refusal=fail_over_on_refusal,
            max_attempts=max_attempts,
            request_timeout=request_timeout,
            stream_idle_timeout=stream_idle_timeout,
            cost_budget=cost_budget,
            hedge_after=hedge_after,
            when_all_unhealthy=when_all_unhealthy,
            circuit_breaker=circuit_breaker,
            session_pin_ttl_seconds=session_pin_ttl_seconds,
            accept=accept,
            on_routed=on_routed,
            fault_classifier=fault_classifier,
            rng=rng,
        )
        self._setup(
            name,
            checked,
            options,
            clock=clock,
            health=health,
            fallbacks=fallbacks,
            route_id=route_id,
            rng=rng,
        )

    @classmethod
    def from_options(
        cls,
        name: str,
        targets: Iterable[Target],
        options: RouteOptions,
        *,
        clock: Clock | None = None,
        health: Health | None = None,
        fallbacks: Mapping[str, Sequence[Route]] | None = None,
        route_id: str | None = None,
        rng: random.Random | None = None,
        generated: bool = False,
    ) -> Route:
        """A route over `targets` under `options` (built once, validated, and shared by as
        many routes as need the same policy and strategy). `clock`, `health`, `fallbacks`,
        `route_id` and `rng` (here: the retry jitter's randomness) are as for `Route`; the
        targets are checked as `Route` checks them, but a `generated` route (one a configuration
        implies, such as a family route) skips the static budget: `max_attempts` caps it."""
        route = cls.__new__(cls)
        route._setup(
            name,
            _checked(name, targets),
            options,
            clock=clock,
            health=health,
            fallbacks=fallbacks,
            route_id=route_id,
            rng=rng,
            generated=generated,
        )
        return route

    def _setup(
        self,
        name: str,
        targets: tuple[Target, ...],
        options: RouteOptions,
        *,
        clock: Clock | None,
        health: Health | None,
        fallbacks: Mapping[str, Sequence[Route]] | None,
        route_id: str | None,
        rng: random.Random | None,
        generated: bool = False,
    ) -> None:
        self.name = name
        self.route_id = route_id or name
        self.targets = targets
        if not generated:
            # Four frames up is the caller of `Route(...)` or `Route.from_options(...)`.
            check_static_budget(name, targets, options.retry.max_attempts, stacklevel=4)
        strategy = self.strategy = options.strategy
        validate_weights(
            [t.weight for t in targets],
            [t.fallback_only for t in targets],
            strategy.type,
            "targets",
        )
        self.retry = options.retry
        self.timeouts = options.timeouts
        self.when_all_unhealthy = options.when_all_unhealthy
        self.cost_budget = options.cost_budget
        self.breaker = options.breaker
        self.accept = options.accept
        self.on_routed = options.on_routed
        self.fault_classifier = options.fault_classifier
        self.rng = rng if rng is not None else random.Random()
        self.health = _health(health, clock)
        self.clock: Clock = clock if clock is not None else self.health.clock
        self.fallbacks: Fallbacks[Route] = Fallbacks.build(
            fallbacks,
            route=name,
            name_of=lambda route: route.name,
            fallbacks_of=lambda route, kind: route.fallbacks.of(kind),
            is_route=lambda value: isinstance(value, Route),
        )
        facts = tuple(TargetFacts.of(name, t, health_key=_health_key(t)) for t in targets)
        self.facts: tuple[TargetFacts, ...] = facts
        self.providers: tuple[str, ...] = tuple(each.provider for each in facts)
        weighted = strategy.type == "weighted"
        self.table = TargetTable(name, targets, facts, health=self.health, weighted=weighted)

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
        plan: RequestPlan | None = None,
        **params: Any,
    ) -> ChatResponse:
        """Route one request and return the accepted answer (`response.routing` is the record).

        A list of messages is wrapped into `ChatRequest(messages=…, **params)`; `context` is
        what each target's `eligible` receives; `plan` (default None: every target, as
        configured) limits and orders the targets of this one call, carries the caller's own
        credential and the policy verdicts (`turnout.routing.plan`). Raises the error the
        request ended with: the terminal call's own `ProviderError`, `RouteExhausted`,
        `RouteIneligible`, `NoTargetAvailable` or `PolicyDenied`, each with `.routing` set.
        """
        if params or not isinstance(request, ChatRequest):
            request = as_request(request, params)
        state = RequestState(
            self, request, context=context, session_id=session_id, streaming=False, plan=plan
        )
        call = await _serve_whole(self, state)
        assert call.response is not None
        return _answered(state, call, call.response)

    def stream(
        self,
        request: ChatRequest | Sequence[Message],
        *,
        context: Any = None,
        session_id: str | None = None,
        plan: RequestPlan | None = None,
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
        plan: RequestPlan | None = None,
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
        at the model's input price. Other failures raise as `complete` does; `plan` as for
        `complete`.
        """
        if not isinstance(request, EmbeddingRequest):
            request = EmbeddingRequest(input=request)
        state = RequestState(
            self, request, context=context, session_id=session_id, streaming=False, plan=plan
        )
        call = await _serve_whole(self, state)
        assert call.embedding is not None
        return _answered(state, call, call.embedding)

    # -- used by the driver

    def start_order(self, session_id: str | None) -> tuple[list[int], str]:
        """The try order of one request (target indices) and the strategy's reason."""
        table = self.table
        start, reason = self.strategy.pick_start(
            table.candidates, route_id=self.route_id, session_id=session_id, now=self.clock.now()
        )
        return table.order_from(start), reason

    def key_for(self, index: int, model: str | None) -> Hashable:
        """The health key of target `index` asked for `model`."""
        return self.table.key_for(index, model)


_Answer = TypeVar("_Answer", "ChatResponse", "EmbeddingResponse")


async def _serve_whole(route: Route, state: RequestState) -> Call:
    """The winning call of a request answered whole; the request's record is closed when it
    ends otherwise."""
    try:
        return await serve(route, state)
    except BaseException as exc:
        state.close(exc)
        raise


def _answered(state: RequestState, call: Call, answer: _Answer) -> _Answer:
    """Close a served request's record on its accepted answer and hand the answer over."""
    state.answered(call, answer)
    answer.routing = state.record
    state.close(None)
    return answer


def _checked(name: str, targets: Iterable[Target]) -> tuple[Target, ...]:
    """A route's name and targets, checked before anything else."""
    if not isinstance(name, str) or not name:
        raise ConfigError("name must be a non-empty string", [("name", "must be non-empty")])
    checked = tuple(targets)
    check_target_names(checked)
    return checked


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
