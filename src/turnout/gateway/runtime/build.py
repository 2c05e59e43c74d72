"""Build live objects from a valid configuration: one provider adapter per
provider, one `Health`, and per served route its engine `Route`s (`RouteEntry`).

Rule 1: one `Health` for every route, derived routes included, so a key's breaker is one
breaker whichever endpoint tripped it.
Rule 2: the routes derived from one configured route (messages, embeddings, aliases) share its
name and its strategy object, so latency windows, round-robin turns and session pins are kept
once per route.
Rule 3: a route reached by a fallback hop of one kind is built with its fallbacks of that kind
only (the only ones a request follows after such a hop), so the routes never form a cycle,
even when fallbacks of two kinds link two routes both ways. A derived route falls back to the
same endpoint's route of its fallback (skipped when that one has none).
"""

from __future__ import annotations

import dataclasses
import random
import warnings
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from turnout.access.policies import provider_family
from turnout.access.served_routes import (
    MESSAGES_WIRE,
    alias_wire_model,
    chat_split,
    credential_mode,
    messages_split,
)
from turnout.config.catalog import load_catalog
from turnout.config.rules import mock_script_steps
from turnout.errors import ConfigError
from turnout.gateway.runtime.engine_config import (
    build_route_options,
    build_target,
    catalog_window,
)
from turnout.gateway.runtime.route_entry import ENDPOINT_PATHS, AliasRoutes, Endpoint, RouteEntry
from turnout.providers import HttpOptions, HttpTimeouts, facts_of
from turnout.providers.kinds import KINDS
from turnout.providers.settings import ProviderBuild
from turnout.routing.health import Breaker, Health
from turnout.routing.options import FALLBACK_KINDS, MAX_STATIC_ATTEMPTS, RouteOptions
from turnout.routing.route import Route
from turnout.routing.target import Target
from turnout.vendors.redact import secrets_of

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from turnout.access.served_routes import ServedRoute, ServedRoutes
    from turnout.config.catalog import ModelCatalog
    from turnout.providers.base import HttpProvider, ProviderKeywords
    from turnout.routing.clock import Clock
    from turnout.schema import (
        DefaultsConfig,
        FileConfig,
        ProviderConfig,
        RouteConfig,
        TargetConfig,
    )

__all__ = [
    "NO_IDS",
    "build_entries",
    "build_health",
    "build_http_options",
    "build_provider",
    "build_providers",
    "configured_secrets",
    "supports_embeddings",
]

_DERIVED: tuple[Endpoint, ...] = ("messages", "embeddings")
NO_IDS: Mapping[tuple[str, str], str] = MappingProxyType({})
"""No stored ids: every route's id is its name, and providers carry none (the library, a file
served without a store)."""


def build_http_options(config: ProviderConfig, *, secrets: Sequence[str] = ()) -> HttpOptions:
    """The HTTP options of a configured provider: its `headers`, its `connect_timeout`
    (seconds) with the default read timeout, its `max_connections`, its `max_response_bytes`,
    and `secrets` to scrub from its errors (`configured_secrets`)."""
    return HttpOptions(
        headers=config.headers,
        timeouts=HttpTimeouts(connect=config.connect_timeout),
        max_connections=config.max_connections,
        max_response_bytes=config.max_response_bytes,
        secrets=tuple(secrets),
    )


def configured_secrets(config: FileConfig) -> tuple[str, ...]:
    """Every secret the configuration hands its providers (their keys and header values):
    each provider scrubs them all from what its upstream says, since an upstream may echo
    any of them."""
    values: list[str] = []
    for provider in config.providers:
        if provider.api_key:
            values.append(provider.api_key)
        values.extend(s for s in (provider.secret_access_key, provider.session_token) if s)
        values.extend(provider.headers.values())
    return secrets_of(values)


def build_providers(
    config: FileConfig, *, clock: Clock | None = None, ids: Mapping[tuple[str, str], str] = NO_IDS
) -> dict[str, HttpProvider]:
    """The adapter of every configured provider by name (`build_provider`), each scrubbing
    every configured secret from its errors; `ids` maps `("provider", name)` to the stored id
    the adapter carries (`provider_id`)."""
    secrets = configured_secrets(config)
    catalog = _catalog(config.catalog_file) if config.providers else None
    return {
        p.name: build_provider(
            p,
            clock=clock,
            secrets=secrets,
            provider_id=ids.get(("provider", p.name)),
            catalog=catalog,
        )
        for p in config.providers
    }


def _catalog(path: str | None) -> ModelCatalog:
    """The model catalog with the configuration's `catalog_file` over it; a file that cannot
    be read or has a wrong shape refuses the configuration, each problem under `catalog_file`."""
    try:
        return load_catalog(path)
    except ConfigError as exc:
        problems = [("catalog_file", f"{where}: {rule}") for where, rule in exc.errors]
        raise ConfigError(f"catalog_file: {exc}", problems) from None


def build_provider(
    config: ProviderConfig,
    *,
    clock: Clock | None = None,
    secrets: Sequence[str] = (),
    provider_id: str | None = None,
    catalog: ModelCatalog | None = None,
) -> HttpProvider:
    """The adapter for one configured provider: its kind's class (`KINDS`) builds it from the
    configuration, with its options from `build_http_options`. A missing `api_key` means no
    credential: the adapters' own environment defaults are not read, only `${VAR}` is. The
    adapter gets the provider's credential mode: a passthrough adapter has no key of its own
    and sends each call with the caller's credential. With a `catalog` the adapter prices and
    limits the models its `prices` and `catalog` do not (`turnout.config.catalog`)."""
    keywords: ProviderKeywords = {
        "prices": {model: p.model_dump() for model, p in config.prices.items()},
        "model_aliases": dict(config.model_aliases),
        "credential_mode": credential_mode(config),
        "provider_id": provider_id,
        "catalog": None if catalog is None else catalog.for_provider(config),
    }
    build = ProviderBuild(
        keywords,
        build_http_options(config, secrets=secrets),
        family=provider_family(config),
        clock=clock,
        script=tuple(mock_script_steps(config)),
    )
    return KINDS[config.kind].from_config(config, build)


def supports_embeddings(provider: object) -> bool:
    """Whether an adapter serves embeddings (the vendor catalog's word, via the adapter)."""
    return facts_of(provider).supports_embeddings


def build_health(defaults: DefaultsConfig, *, clock: Clock | None = None) -> Health:
    """The registry: `defaults.circuit_breaker` and `defaults.health_key_by`."""
    breaker = Breaker.from_config(
        defaults.circuit_breaker.model_dump(), path="defaults.circuit_breaker"
    )
    return Health(breaker=breaker, key_by=defaults.health_key_by, clock=clock)


def build_entries(
    config: FileConfig,
    served_routes: ServedRoutes,
    providers: Mapping[str, Any],
    health: Health,
    *,
    ids: Mapping[tuple[str, str], str] = NO_IDS,
) -> dict[str, RouteEntry]:
    """Every served route's entry, by name (configured, then implicit, then family); a
    configured route's engine routes carry the stored id `ids[("route", name)]` as their
    `route_id` (default: the name)."""
    builder = _Builder(config, providers, health, ids)
    for served_route in served_routes.routes.values():
        builder.entry(served_route, served_routes)
    return {name: builder.built[name] for name in served_routes.routes}


class _Builder:
    """Builds entries; a route's fallbacks are built when first named (Rule 3)."""

    def __init__(
        self,
        config: FileConfig,
        providers: Mapping[str, Any],
        health: Health,
        ids: Mapping[tuple[str, str], str],
    ) -> None:
        self.ids = ids
        self.providers = providers
        self.provider_configs = {p.name: p for p in config.providers}
        self.health = health
        self.pin_ttl = config.defaults.session_pin_ttl_seconds
        self.built: dict[str, RouteEntry] = {}
        self.route_configs: dict[str, RouteConfig] = {}
        for route in config.routes:
            if route.enabled:
                self.route_configs.setdefault(route.name, route)
        self.parts: dict[str, _Parts] = {}
        self.fallback_routes: dict[tuple[str, str, Endpoint], Route | None] = {}
        # One source of randomness for every route and strategy built here (one event loop
        # uses them): a generator each cost 2.5 KiB and a seeding from the OS per route.
        self.rng = random.Random()

    def entry(self, served_route: ServedRoute, served_routes: ServedRoutes) -> RouteEntry:
        del served_routes  # fallbacks are found by name (Rule 3)
        if served_route.config is not None:
            return self._configured_entry(served_route.config)
        held = self.built.get(served_route.name)
        if held is None:
            held = self.built[served_route.name] = self._provider_route(served_route)
        return held

    def _configured_entry(self, config: RouteConfig) -> RouteEntry:
        held = self.built.get(config.name)
        if held is None:
            held = self.built[config.name] = self._configured(config)
        return held

    # -- configured routes

    def _parts(self, config: RouteConfig) -> _Parts:
        """A configured route's targets, options and endpoint subsets, made once (Rule 2)."""
        held = self.parts.get(config.name)
        if held is not None:
            return held
        targets = [build_target(t, self.providers[t.provider]) for t in config.targets]
        options = build_route_options(config, session_pin_ttl=self.pin_ttl, rng=self.rng)
        messages, _ = messages_split(config, self.provider_configs)
        chat, _ = chat_split(config, self.provider_configs)
        subsets: dict[Endpoint, frozenset[int]] = {
            "chat": frozenset(chat),
            "messages": frozenset(messages),
            "embeddings": frozenset(
                i for i, t in enumerate(targets) if _offers_embeddings(t, config.targets[i])
            ),
        }
        made = _Parts(targets, options, subsets)
        self.parts[config.name] = made
        return made

    def _fallback(self, name: str, kind: str, endpoint: Endpoint) -> Route | None:
        """Route `name` as a fallback of `kind` for `endpoint`: its fallbacks of that kind
        only (Rule 3); None when it has no route for the endpoint."""
        config = self.route_configs[name]
        if not any(getattr(config.fallbacks, other) for other in FALLBACK_KINDS if other != kind):
            return self._configured_entry(config).route_for(endpoint)  # the route as it is
        key = (name, kind, endpoint)
        if key in self.fallback_routes:
            return self.fallback_routes[key]
        targets, options, subsets = self._parts(config)
        chosen = [t for i, t in enumerate(targets) if i in subsets[endpoint]]
        made: Route | None = None
        if chosen:
            try:
                made = self._route(config, chosen, options, endpoint, kinds=(kind,))
            except ConfigError:
                if endpoint == "chat":
                    raise
        self.fallback_routes[key] = made
        return made

    def _configured(self, config: RouteConfig) -> RouteEntry:
        targets, options, subsets = self._parts(config)

        def make(subset: Sequence[Target], endpoint: Endpoint) -> Route:
            return self._route(config, subset, options, endpoint)

        routes, reasons = _derived(config.name, targets, subsets, make)
        aliases = {
            alias.lower(): _alias_routes(
                alias, mapping, config=config, targets=targets, subsets=subsets, make=make
            )
            for alias, mapping in config.aliases.items()
        }
        return RouteEntry(
            config.name,
            "configured",
            config,
            make([t for i, t in enumerate(targets) if i in subsets["chat"]], "chat"),
            routes.get("messages"),
            routes.get("embeddings"),
            config.commit_on_headers,
            tuple(config.models),
            aliases,
            reasons,
        )

    def _route(
        self,
        config: RouteConfig,
        targets: Sequence[Target],
        options: RouteOptions,
        endpoint: Endpoint,
        *,
        kinds: Sequence[str] = FALLBACK_KINDS,
    ) -> Route:
        fallbacks: dict[str, list[Route]] = {}
        for kind in kinds:
            for name in getattr(config.fallbacks, kind):
                other = self._fallback(name, kind, endpoint)
                if other is not None:
                    fallbacks.setdefault(kind, []).append(other)
        with warnings.catch_warnings():
            # The static-budget warning is a load warning of the validator, said once.
            warnings.simplefilter("ignore", UserWarning)
            return Route.from_options(
                config.name,
                targets,
                options,
                health=self.health,
                fallbacks=fallbacks,
                route_id=self.ids.get(("route", config.name)),
                rng=self.rng,
            )

    # -- implicit and family routes

    def _provider_route(self, served_route: ServedRoute) -> RouteEntry:
        targets = [Target(name, self.providers[name]) for name in served_route.providers]
        # A generated route is never refused for its size: a family of more than ten
        # providers is served, each request capped at the most calls any route may make.
        options = RouteOptions.build(
            session_pin_ttl_seconds=self.pin_ttl, max_attempts=MAX_STATIC_ATTEMPTS
        )

        def make(subset: Sequence[Target], endpoint: Endpoint) -> Route:
            del endpoint  # provider routes have no fallbacks
            return Route.from_options(
                served_route.name,
                subset,
                options,
                health=self.health,
                generated=True,
                rng=self.rng,
            )

        subsets: dict[Endpoint, frozenset[int]] = {
            "messages": frozenset(
                i for i, t in enumerate(targets) if facts_of(t.client).wire_format == MESSAGES_WIRE
            ),
            "embeddings": frozenset(
                i for i, t in enumerate(targets) if supports_embeddings(t.client)
            ),
        }
        routes, reasons = _derived(served_route.name, targets, subsets, make)
        return RouteEntry(
            served_route.name,
            served_route.kind,
            None,
            make(targets, "chat"),
            routes.get("messages"),
            routes.get("embeddings"),
            False,
            tuple(pattern.text for pattern in served_route.patterns),
            reasons=reasons,
        )


class _Parts(NamedTuple):
    """What every engine route of one configured route shares (Rule 2)."""

    targets: list[Target]
    options: RouteOptions
    subsets: dict[Endpoint, frozenset[int]]


def _offers_embeddings(target: Target, config: TargetConfig) -> bool:
    if config.capabilities is not None and "embeddings" not in config.capabilities:
        return False
    return supports_embeddings(target.client)


_GAPS = {
    "messages": "has no target that can serve Anthropic Messages (/v1/messages)",
    "embeddings": "has no target that offers embeddings (/v1/embeddings)",
}


def _derived(
    name: str,
    targets: Sequence[Target],
    subsets: Mapping[Endpoint, frozenset[int]],
    make: Callable[[Sequence[Target], Endpoint], Route],
) -> tuple[dict[str, Route], dict[str, str]]:
    """The messages and embeddings routes of a route, and why one is missing."""
    routes: dict[str, Route] = {}
    reasons: dict[str, str] = {}
    for endpoint in _DERIVED:
        chosen = [t for i, t in enumerate(targets) if i in subsets[endpoint]]
        if not chosen:
            reasons[endpoint] = f'route "{name}" {_GAPS[endpoint]}'
            continue
        try:
            routes[endpoint] = make(chosen, endpoint)
        except ConfigError as exc:  # e.g. a weighted subset with no positive weight
            where = f'route "{name}"'
            reasons[endpoint] = f"{where} cannot serve {ENDPOINT_PATHS[endpoint]}: {_rule(exc)}"
    return routes, reasons


def _rule(exc: ConfigError) -> str:
    return exc.errors[0][1] if exc.errors else str(exc)


def _alias_routes(
    alias: str,
    mapping: Mapping[str, str],
    *,
    config: RouteConfig,
    targets: Sequence[Target],
    subsets: Mapping[Endpoint, frozenset[int]],
    make: Callable[[Sequence[Target], Endpoint], Route],
) -> AliasRoutes:
    """The alias's targets with its wire models, per endpoint."""
    mapped: dict[int, Target] = {}
    for i, (target, target_config) in enumerate(zip(targets, config.targets, strict=True)):
        wire = alias_wire_model(mapping, target.name, target_config.provider)
        if wire is not None:
            # The window follows the model: the catalog's for the alias's own wire model.
            window = target_config.context_window or catalog_window(target.client, wire)
            mapped[i] = dataclasses.replace(target, model=wire, context_window=window)
    providers = tuple(dict.fromkeys(config.targets[i].provider for i in mapped))
    routes: dict[str, Route] = {}
    reasons: dict[str, str] = {}
    every: dict[Endpoint, frozenset[int]] = {"chat": frozenset(range(len(targets)))}
    for endpoint, allowed in {**every, **subsets}.items():
        chosen = [t for i, t in mapped.items() if i in allowed]
        listed = ", ".join(providers) or "none"
        if not chosen:
            reasons[endpoint] = (
                f'alias "{alias}" of route "{config.name}" leaves no target for this endpoint'
                f" (the alias maps providers: {listed})"
            )
            continue
        try:
            routes[endpoint] = make(chosen, endpoint)
        except ConfigError as exc:
            where = f'alias "{alias}" of route "{config.name}"'
            reasons[endpoint] = f"{where} cannot serve {ENDPOINT_PATHS[endpoint]}: {_rule(exc)}"
    return AliasRoutes(alias, routes, reasons, providers)
