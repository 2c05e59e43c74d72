"""The gateway runtime: a configuration turned into live providers, routes and health, with the
per-request lookups the rooms above build over it (`turnout.gateway.runtime.lookups`; see
docs/architecture.md). The HTTP side holds one `Runtime` per loaded configuration.

Rule 1: a `Runtime` never changes after it is built: a new configuration builds a new one, with
empty caches, and the old one is closed (`aclose`) once its requests are done.
Rule 2: it is built only from a configuration the one validator accepts (`check_config`, which
does not check again a configuration the file loader already accepted); what loads with a
remark is in `warnings`.
Rule 3: with shared state (`state: redis://…`), `start()` shares its health with every replica
on that store (`turnout.gateway.runtime.state_store`); `aclose` stops sharing before closing the
store.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, cast

from turnout.access.bindings import AccessPolicy
from turnout.access.keys import KeyRing
from turnout.access.model_index import PatternIndex
from turnout.access.served_routes import credential_mode, find_served_routes
from turnout.config.gc_pause import collection_paused
from turnout.config.rules import check_config, check_config_warnings
from turnout.errors import ConfigError
from turnout.gateway.runtime.build import NO_IDS, build_entries, build_health, build_providers
from turnout.gateway.runtime.embedded import MOCK_PROVIDER, embedded_config
from turnout.gateway.runtime.pins import PinStep
from turnout.gateway.runtime.state_store import RuntimeState, is_shared_url
from turnout.state.sessions import SessionPins

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.gateway.runtime.lookups import Lookups
    from turnout.gateway.runtime.route_entry import RouteEntry
    from turnout.routing.clock import Clock
    from turnout.routing.health import Health
    from turnout.schema import ConsumerConfig, FileConfig
    from turnout.state.base import StateStore
    from turnout.state.shared_health import SharedHealth

__all__ = ["LookupsFactory", "Runtime", "StoredFacts"]

_T = TypeVar("_T")


LookupsFactory = Callable[["Runtime"], "Lookups"]
"""Builds the per-request lookups of a runtime that holds its live objects."""


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
    - `index`: the model pattern index over the routes;
    - `keys`: the key ring, None when `server.auth` is `open`;
    - `access`: the access policy compiled from `config.bindings`;
    - `lookups`: the per-request lookups the rooms above built over it
      (`turnout.gateway.runtime.lookups`: where a request goes, its plan, the models a caller
      may use); `resolve` and `plan_for` are theirs, under the runtime's names;
    - `pins`: the session family pins of cross-provider routes over `state`;
    - `warnings`: load-time warnings, each `path: message`;
    - `clock`: the clock it was built with (None: the event loop's);
    - `state`: the shared state store of `config.state`, made on first use and closed by
      `aclose`;
    - `stored`: the store's ids and default route for the project (`NO_STORE` without one).
    - `shared_health`: the health sharing started by `start()` (None without shared state).
    """

    __slots__ = (
        "_kept",
        "_make_lookups",
        "_pins",
        "_state",
        "access",
        "clock",
        "config",
        "credential_modes",
        "health",
        "index",
        "keys",
        "lookups",
        "plan_for",
        "project",
        "providers",
        "resolve",
        "routes",
        "stored",
        "warnings",
    )

    def __init__(
        self,
        *,
        config: FileConfig,
        lookups: LookupsFactory,
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
        """Use `from_config` or `embedded`. `lookups` builds the runtime's per-request
        lookups; `access` defaults to no bindings (the implicit Everyone grant); `state` is a
        state store shared with other runtimes (None: this runtime opens its own on first use
        and closes it)."""
        self.clock = clock
        self.stored = stored
        self._state = RuntimeState(config.state, clock, state)
        self._kept: dict[Callable[[Runtime], object], object] = {}
        self._pins: PinStep | None = None
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
        self._make_lookups = lookups
        self.lookups: Lookups = lookups(self)
        self.resolve = self.lookups.resolve  # the lookups' own, under the runtime's names
        self.plan_for = self.lookups.plan_for
        # Said once, also when a runtime is rebuilt from another's warnings (as `embedded` is).
        found = self.lookups.warnings
        self.warnings = (*warnings, *(text for text in found if text not in warnings))

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
        lookups: LookupsFactory,
        clock: Clock | None = None,
        stored: StoredFacts = NO_STORE,
        health: Health | None = None,
        state: StateStore | None = None,
    ) -> Runtime:
        """Build the runtime of `config`, its per-request lookups by `lookups`; `clock`
        (default: the event loop's) times health, routes and mock providers. `stored` gives
        routes and providers their stored ids; `health` is a registry to keep (a reload's: its
        breakers, cooldowns and parks carry over) when its policy is still `config.defaults`'
        and health is not shared through the state store (else a new one is built, which
        shared state catches up); `state` a shared state store (see `Runtime`).

        Raises `ConfigError` listing every violation when the one validator refuses `config`.
        The build runs with the cyclic garbage collector paused (`turnout.config.gc_pause`).
        """
        with collection_paused():
            errors = check_config(config, default_route=stored.default_route)
            if errors:
                lines = "\n".join(f"  {path}: {message}" for path, message in errors)
                raise ConfigError(f"invalid configuration ({len(errors)}):\n{lines}", errors)
            health, providers, routes, index, keys, access, warnings = _LiveObjects.build(
                config, stored, health, clock
            )
            return cls(
                config=config,
                lookups=lookups,
                health=health,
                providers=providers,
                routes=routes,
                index=index,
                keys=keys,
                access=access,
                warnings=warnings,
                clock=clock,
                stored=stored,
                state=state,
            )

    @classmethod
    def embedded(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        lookups: LookupsFactory,
        clock: Clock | None = None,
    ) -> Runtime:
        """The runtime without a configuration file (`turnout.gateway.runtime.embedded`):
        vendors from `OPENAI_API_KEY` / `ANTHROPIC_API_KEY` in `env` (default: the process
        environment), else the built-in mock provider serving any model on every endpoint."""
        config = embedded_config(os.environ if env is None else env)
        return cls.from_config(config, lookups=lookups, clock=clock).with_mock_messages()

    def with_mock_messages(self) -> Runtime:
        """This runtime with the built-in mock provider's route answering `/v1/messages` too
        (the quick start's mock speaks both formats); itself when it has no such route."""
        mock = self.routes.get(MOCK_PROVIDER)
        if mock is None or mock.kind != "implicit":
            return self
        routes = {**self.routes, MOCK_PROVIDER: replace(mock, messages_route=mock.route)}
        note = (
            "no OPENAI_API_KEY or ANTHROPIC_API_KEY is set: the built-in mock provider answers"
            " every model"
        )
        return type(self)(
            config=self.config,
            lookups=self._make_lookups,
            health=self.health,
            providers=self.providers,
            routes=routes,
            index=self.index,
            keys=self.keys,
            access=self.access,
            warnings=(*self.warnings, note),
            clock=self.clock,
            stored=self.stored,
            state=self._state.handed,
        )

    @property
    def pins(self) -> PinStep:
        """The session family pins (TTL `defaults.session_pin_ttl_seconds`), over `state`."""
        if self._pins is None:
            ttl = self.config.defaults.session_pin_ttl_seconds
            self._pins = PinStep(SessionPins(self.state, ttl))
        return self._pins

    def kept(self, build: Callable[[Runtime], _T]) -> _T:
        """What `build` makes over this runtime, made on first use and kept for the runtime's
        life: a service of a room above the runtime (the response cache)."""
        found = self._kept.get(build)
        if found is None:
            found = self._kept[build] = build(self)
        return cast("_T", found)

    # -- lifecycle

    @property
    def state(self) -> StateStore:
        """The shared state store of `config.state`: in memory, or Redis for `redis://…`."""
        return self._state.store

    @property
    def is_shared(self) -> bool:
        """True when `config.state` is a Redis URL (state shared between replicas)."""
        return is_shared_url(self.config.state)

    @property
    def shared_health(self) -> SharedHealth | None:
        """The health sharing `start()` started (None without shared state)."""
        return self._state.shared_health

    async def start(self) -> None:
        """Rule 3: share health through the state store when it is shared (idempotent)."""
        await self._state.share(self.health, self.project)

    async def aclose(self) -> None:
        """Stop sharing health, close every provider's HTTP pool, and the state store if one
        was opened."""
        await self._state.stop_sharing()
        for provider in self.providers.values():
            await provider.aclose()
        await self._state.close()


class _LiveObjects(NamedTuple):
    """What a validated configuration builds for its runtime."""

    health: Health
    providers: Mapping[str, Any]
    routes: Mapping[str, RouteEntry]
    pattern_index: PatternIndex
    keys: KeyRing | None
    access: AccessPolicy
    warnings: tuple[str, ...]

    @classmethod
    def build(
        cls, config: FileConfig, stored: StoredFacts, health: Health | None, clock: Clock | None
    ) -> _LiveObjects:
        """The live objects of `config` (see `Runtime.from_config` for when `health` is
        kept)."""
        served_routes = find_served_routes(config)
        providers = build_providers(config, clock=clock, ids=stored.ids)
        fresh = build_health(config.defaults, clock=clock)
        policy = (fresh.breaker, fresh.key_by)
        # With shared state a fresh registry catches up from the store when it starts; a kept
        # one would carry the old sharing's listeners.
        if (
            health is None
            or is_shared_url(config.state)
            or (health.breaker, health.key_by) != policy
        ):
            health = fresh
        index = PatternIndex.build(
            served_routes.index_entries(), family_routes=served_routes.families
        )
        keys = KeyRing.from_config(config.keys, config.project)
        # The validator already checked the routes grants name.
        configured = {route.name: route for route in config.routes}
        return cls(
            health,
            providers,
            build_entries(config, served_routes, providers, health, ids=stored.ids),
            index,
            keys if config.server.auth == "keys" else None,
            AccessPolicy.from_config(config.bindings, configured, index, check_routes=False),
            tuple(f"{path}: {message}" for path, message in check_config_warnings(config)),
        )
