"""The gateway runtime: a configuration turned into live providers, routes and resolution
(see docs/architecture.md). The HTTP side holds one `Runtime` per loaded configuration.

Rule 1: a `Runtime` never changes after it is built: a new configuration builds a new one, with
empty caches, and the old one is closed (`aclose`) once its requests are done.
Rule 2: it is built only from a configuration the one validator accepts (`check_config`, which
does not check again a configuration the file loader already accepted); what loads with a
remark is in `warnings`.
Rule 3: with shared state (`state: redis://…`), `start()` shares its health with every replica
on that store (`turnout.state.shared_health`); `aclose` stops sharing before closing the store.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from turnout.access.bindings import AccessPolicy
from turnout.access.keys import Caller, KeyRing
from turnout.access.model_index import PatternIndex
from turnout.access.served_routes import credential_mode, find_served_routes
from turnout.config.gc_pause import collection_paused
from turnout.config.rules import check_config, check_config_warnings
from turnout.errors import ConfigError, RoutingError
from turnout.gateway.resolution.cache import ChatCache
from turnout.gateway.resolution.consumers import ConsumerRoutes
from turnout.gateway.resolution.pins import PinStep
from turnout.gateway.resolution.request_plans import RequestPlanner
from turnout.gateway.resolution.resolve import Resolver
from turnout.gateway.runtime.build import NO_IDS, build_entries, build_health, build_providers
from turnout.gateway.runtime.embedded import MOCK_PROVIDER, embedded_config
from turnout.gateway.runtime.route_entry import (
    AliasRoutes,
    Endpoint,
    MatchedBy,
    Resolution,
    RouteEntry,
)
from turnout.state.cache import ResponseCache
from turnout.state.memory import MemoryState
from turnout.state.sessions import SessionPins

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from turnout.access.keys import Credentials
    from turnout.routing.clock import Clock
    from turnout.routing.health import Health
    from turnout.routing.plan import RequestPlan
    from turnout.schema import ConsumerConfig, FileConfig
    from turnout.state.base import StateStore
    from turnout.state.shared_health import SharedHealth

__all__ = [
    "AliasRoutes",
    "Endpoint",
    "MatchedBy",
    "Resolution",
    "RouteEntry",
    "Runtime",
    "StoredFacts",
    "open_state_store",
]


@dataclass(frozen=True, slots=True)
class StoredFacts:
    """What the store knows of a project beyond its configuration: the stored ids by
    `(kind, name)` (kinds `provider`, `route`, `key`, `consumer`), the project's id and default
    route name, every stored consumer id of every project with its project's name (so a
    consumer of another project is told apart from an unknown one), and the project's consumers
    whose route or provider left the config file (served, to meet NO_ROUTE; not validated)."""

    ids: Mapping[tuple[str, str], str] = field(default_factory=lambda: NO_IDS)
    project_id: str | None = None
    default_route: str | None = None
    consumer_projects: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    dangling_consumers: tuple[ConsumerConfig, ...] = ()


NO_STORE = StoredFacts()
"""A configuration served without a store: no ids, no default route."""


class Runtime:
    """Live objects of one configuration (one project).

    - `project`, `config`: the project name and the validated configuration;
    - `health`: the one health registry every route shares;
    - `providers`: provider name -> adapter; `credential_modes`: provider name -> `org_key` or
      `passthrough`;
    - `routes`: route name -> `RouteEntry` (configured, then implicit, then family routes);
    - `keys`: the key ring, None when `server.auth` is `open`;
    - `access`: the access policy compiled from `config.bindings`;
    - `warnings`: load-time warnings, each `path: message`;
    - `clock`: the clock it was built with (None: the event loop's);
    - `state`, `cache`: the shared state store of `config.state` and the response cache over
      it, made on first use and closed by `aclose`;
    - `pins`: the session family pins of cross-provider routes over `state`;
    - `stored`: the store's ids and default route for the project (`NO_STORE` without one).
    - `shared_health`: the health sharing started by `start()` (None without shared state).
    """

    __slots__ = (
        "_cache",
        "_consumers",
        "_owns_state",
        "_pins",
        "_planner",
        "_resolver",
        "_state",
        "access",
        "clock",
        "config",
        "credential_modes",
        "health",
        "index",
        "keys",
        "project",
        "providers",
        "routes",
        "shared_health",
        "stored",
        "warnings",
    )

    def __init__(
        self,
        *,
        config: FileConfig,
        health: Health,
        providers: Mapping[str, Any],
        routes: Mapping[str, RouteEntry],
        index: PatternIndex,
        keys: KeyRing | None,
        access: AccessPolicy | None = None,
        warnings: tuple[str, ...] = (),
        clock: Clock | None = None,
        stored: StoredFacts = NO_STORE,
        state: StateStore | None = None,
    ) -> None:
        """Use `from_config` or `embedded`. `access` defaults to no bindings (the implicit
        Everyone grant); `state` is a state store shared with other runtimes (None: this
        runtime opens its own on first use and closes it)."""
        self.clock = clock
        self.stored = stored
        self._state: StateStore | None = state
        self._owns_state = state is None
        self._consumers: ConsumerRoutes | None = None
        self._cache: ChatCache | None = None
        self._pins: PinStep | None = None
        self.shared_health: SharedHealth | None = None
        self.project = config.project
        self.config = config
        self.health = health
        self.providers: Mapping[str, Any] = MappingProxyType(dict(providers))
        self.credential_modes: Mapping[str, str] = MappingProxyType(
            {p.name: credential_mode(p) for p in config.providers}
        )
        self.routes: Mapping[str, RouteEntry] = MappingProxyType(dict(routes))
        self.index = index
        self.keys = keys
        self.access = access if access is not None else AccessPolicy()
        self._resolver = Resolver(self.routes, index, project=config.project, access=self.access)
        self._planner = RequestPlanner(config, self.routes, self.credential_modes, self.access)
        # Passthrough targets no caller credential reaches (said once, also when a runtime is
        # rebuilt from another's warnings, as `embedded` does).
        unreachable = [f"{path}: {text}" for path, text in self._planner.unreachable(self.routes)]
        self.warnings = (*warnings, *(text for text in unreachable if text not in warnings))

    def __repr__(self) -> str:
        return (
            f"Runtime(project={self.project!r}, {len(self.providers)} providers,"
            f" {len(self.routes)} routes)"
        )

    @classmethod
    def from_config(
        cls,
        config: FileConfig,
        *,
        clock: Clock | None = None,
        stored: StoredFacts = NO_STORE,
        health: Health | None = None,
        state: StateStore | None = None,
    ) -> Runtime:
        """Build the runtime of `config`; `clock` (default: the event loop's) times health,
        routes and mock providers. `stored` gives routes and providers their stored ids;
        `health` is a registry to keep (a reload's: its breakers, cooldowns and parks carry
        over) when its policy is still `config.defaults`' and health is not shared through the
        state store (else a new one is built, which shared state catches up); `state` a
        shared state store (see `Runtime`).

        Raises `ConfigError` listing every violation when the one validator refuses `config`.
        The build runs with the cyclic garbage collector paused (`turnout.config.gc_pause`).
        """
        with collection_paused():
            return cls._build(config, clock=clock, stored=stored, health=health, state=state)

    @classmethod
    def _build(
        cls,
        config: FileConfig,
        *,
        clock: Clock | None,
        stored: StoredFacts,
        health: Health | None,
        state: StateStore | None,
    ) -> Runtime:
        errors = check_config(config, default_route=stored.default_route)
        if errors:
            lines = "\n".join(f"  {path}: {message}" for path, message in errors)
            raise ConfigError(f"invalid configuration ({len(errors)}):\n{lines}", errors)
        served_routes = find_served_routes(config)
        providers = build_providers(config, clock=clock, ids=stored.ids)
        fresh = build_health(config.defaults, clock=clock)
        policy = (fresh.breaker, fresh.key_by)
        # With shared state a fresh registry catches up from the store when it starts; a kept
        # one would carry the old sharing's listeners.
        shared = config.state.startswith(("redis://", "rediss://"))
        if health is None or shared or (health.breaker, health.key_by) != policy:
            health = fresh
        routes = build_entries(config, served_routes, providers, health, ids=stored.ids)
        index = PatternIndex.build(
            served_routes.index_entries(), family_routes=served_routes.families
        )
        keys = KeyRing.from_config(config.keys, config.project)
        # The validator above already checked the routes grants name.
        configured = {route.name: route for route in config.routes}
        access = AccessPolicy.from_config(config.bindings, configured, index, check_routes=False)
        warnings = tuple(f"{path}: {message}" for path, message in check_config_warnings(config))
        return cls(
            config=config,
            health=health,
            providers=providers,
            routes=routes,
            index=index,
            keys=keys if config.server.auth == "keys" else None,
            access=access,
            warnings=warnings,
            clock=clock,
            stored=stored,
            state=state,
        )

    @classmethod
    def embedded(
        cls, env: Mapping[str, str] | None = None, *, clock: Clock | None = None
    ) -> Runtime:
        """The runtime without a configuration file (`turnout.gateway.runtime.embedded`):
        vendors from `OPENAI_API_KEY` / `ANTHROPIC_API_KEY` in `env` (default: the process
        environment), else the built-in mock provider serving any model on every endpoint."""
        runtime = cls.from_config(embedded_config(os.environ if env is None else env), clock=clock)
        return runtime.with_mock_messages()

    def with_mock_messages(self) -> Runtime:
        """This runtime with the built-in mock provider's route answering `/v1/messages` too
        (the quick start's mock speaks both formats); itself when it has no such route."""
        runtime, clock = self, self.clock
        mock = runtime.routes.get(MOCK_PROVIDER)
        if mock is None or mock.kind != "implicit":
            return runtime
        # The mock speaks both formats for the quick start: let it answer /v1/messages too.
        routes = {**runtime.routes, MOCK_PROVIDER: replace(mock, messages_route=mock.route)}
        note = (
            "no OPENAI_API_KEY or ANTHROPIC_API_KEY is set: the built-in mock provider answers"
            " every model"
        )
        return type(self)(
            config=runtime.config,
            health=runtime.health,
            providers=runtime.providers,
            routes=routes,
            index=runtime.index,
            keys=runtime.keys,
            access=runtime.access,
            warnings=(*runtime.warnings, note),
            clock=clock,
            stored=runtime.stored,
            state=None if runtime._owns_state else runtime._state,
        )

    def resolve(
        self,
        model: str | None,
        *,
        endpoint: Endpoint,
        caller: Caller | None = None,
        consumer: str | None = None,
    ) -> Resolution:
        """Where a request for `model` on `endpoint` goes (the empty-model rule, then the
        caller's grant, alias, route name, model pattern and family route, then the key's
        ceilings); see
        `turnout.gateway.resolution.resolve`.
        `caller` None is the anonymous caller, without ceilings.

        A `consumer` (the `x-turnout-consumer` header: a consumer's id or name) comes first:
        its assignment decides (`turnout.gateway.resolution.consumers`).

        Raises `RoutingError` subclasses, each with its `.status` and `.code`: `NoRoute`,
        `UpstreamAmbiguous`, `EmbeddingsNotSupported`, `ModelNotAllowed`, `ModelDenied`,
        `PolicyDenied`; with a consumer, `NotFound` and `ConsumerNotAllowed` too.
        """
        if consumer is not None:
            who = caller if caller is not None else Caller.anonymous(self.project)
            return self.consumers.resolve(consumer, model, endpoint=endpoint, caller=who)
        return self._resolver.resolve(model, endpoint=endpoint, caller=caller)

    @property
    def consumers(self) -> ConsumerRoutes:
        """The resolution of requests naming a consumer, made on first use."""
        if self._consumers is None:
            stored = self.stored
            self._consumers = ConsumerRoutes(
                project=self.project,
                consumers=(*self.config.consumers, *stored.dangling_consumers),
                routes=self.routes,
                providers=self.providers,
                health=self.health,
                access=self.access,
                ids=stored.ids,
                consumer_projects=stored.consumer_projects,
                default_route=stored.default_route,
            )
        return self._consumers

    def resolve_ungranted(self, model: str, *, endpoint: Endpoint = "chat") -> Resolution:
        """Where `model` would go without a grant naming a route (alias, name, pattern,
        family route); raises `NoRoute`, `UpstreamAmbiguous` or `EmbeddingsNotSupported`."""
        return self._resolver.resolve_ungranted(model, endpoint=endpoint)

    def plan_for(
        self,
        resolution: Resolution,
        caller: Caller,
        credentials: Callable[[], Credentials],
        *,
        endpoint: Endpoint,
    ) -> RequestPlan | None:
        """The per-request plan of a resolved request (credential filter, org-key fallback,
        policies; `turnout.gateway.resolution.request_plans`), None when the route runs as
        configured.
        `credentials()` gives the request's credential headers, read only when needed.
        Raises `NoRoute` (503) or `PolicyDenied` (403) before any call."""
        return self._planner.plan_for(resolution, caller, credentials, endpoint=endpoint)

    def models(
        self, caller: Caller | None = None, credentials: Credentials | None = None
    ) -> list[str]:
        """The models `caller` could use, for `GET /v1/models`: configured route names,
        aliases and exact model patterns that resolve for it, sorted; with `credentials`,
        only those whose route keeps a target for the caller's credential mode."""
        names = self._resolver.models(caller)
        if credentials is None:
            return names
        return [name for name in names if self.can_use(name, caller, credentials)]

    def can_use(
        self, model: str, caller: Caller | None = None, credentials: Credentials | None = None
    ) -> bool:
        """Whether `caller` could send `model` to chat completions, for `GET /v1/models/{id}`:
        it resolves for the caller (grants and the key's ceilings included) and, with
        `credentials`, its route keeps a target for the caller's credential mode."""
        try:
            resolution = self.resolve(model, endpoint="chat", caller=caller)
        except RoutingError:
            return False
        if credentials is None:
            return True
        own = credentials.own_credential is not None
        return self._planner.serves(resolution, own_credential=own, endpoint="chat")

    @property
    def state(self) -> StateStore:
        """The shared state store of `config.state`: in memory, or Redis for `redis://…`."""
        if self._state is None:
            self._state = open_state_store(self.config.state, self.clock)
        return self._state

    @property
    def cache(self) -> ChatCache:
        """The response cache of every route with `cache.enabled`, over `state`."""
        if self._cache is None:
            self._cache = ChatCache(ResponseCache(self.state, clock=self.clock))
        return self._cache

    @property
    def pins(self) -> PinStep:
        """The session family pins (TTL `defaults.session_pin_ttl_seconds`), over `state`."""
        if self._pins is None:
            ttl = self.config.defaults.session_pin_ttl_seconds
            self._pins = PinStep(SessionPins(self.state, ttl))
        return self._pins

    @property
    def is_shared(self) -> bool:
        """True when `config.state` is a Redis URL (state shared between replicas)."""
        return self.config.state.startswith(("redis://", "rediss://"))

    async def start(self) -> None:
        """Rule 3: share health through the state store when it is shared (idempotent).
        Bounded by the store's own timeouts: a store that is down starts this process on local
        health, and it catches up when the store returns."""
        if self.shared_health is not None or not self.is_shared:
            return
        from turnout.state.shared_health import SharedHealth  # noqa: PLC0415 - only with Redis

        shared = SharedHealth(self.health, self.state, scope=self.project)
        try:
            await shared.start()
        except Exception:  # a failing store never stops the gateway: it serves on local health
            logging.getLogger(__name__).exception("could not share health; keeping it local")
            await shared.stop()
            return
        self.shared_health = shared

    async def aclose(self) -> None:
        """Stop sharing health, close every provider's HTTP pool, and the state store if one
        was opened."""
        if self.shared_health is not None:
            await self.shared_health.stop()
        for provider in self.providers.values():
            await provider.aclose()
        if self._state is not None and self._owns_state:
            await self._state.close()


def open_state_store(url: str, clock: Clock | None) -> StateStore:
    """The state store of `state:`: `memory` (default) or `redis://…` / `rediss://…`; anything
    else runs on memory, with a warning."""
    if url.startswith(("redis://", "rediss://")):
        from turnout.state.redis import RedisState  # noqa: PLC0415 - redis is optional

        return RedisState(url, clock=clock)
    if url != "memory":
        scheme = url.split(":", 1)[0]  # never the rest: a URL may hold a password
        logging.getLogger(__name__).warning(
            "state: must be memory or a redis:// or rediss:// URL (got %r…); using memory", scheme
        )
    return MemoryState(clock)
