"""Build live objects from a valid configuration (SPEC §4, §6.2, §7): one provider adapter per
provider, one `Health`, and per served route its engine `Route`s (`RouteEntry`).

Rule 1: one `Health` for every route, derived routes included, so a key's breaker is one
breaker whichever endpoint tripped it.
Rule 2: the routes derived from one configured route (messages, embeddings, aliases) share its
name and its strategy object, so latency windows, round-robin turns and session pins are kept
once per route.
Rule 3: fallback routes are built before the routes that name them, and a derived route falls
back to the same endpoint's route of its fallback (skipped when that one has none).
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import TYPE_CHECKING, Any

from turnout.access.served_routes import (
    MESSAGES_WIRE,
    alias_wire_model,
    chat_split,
    credential_mode,
    messages_split,
)
from turnout.config.rules import mock_script_steps
from turnout.errors import ConfigError
from turnout.gateway.resolution.route_entry import ENDPOINT_PATHS, AliasRoutes, Endpoint, RouteEntry
from turnout.gateway.runtime.engine_config import build_route_options, build_target
from turnout.providers import (
    Anthropic,
    AzureOpenAI,
    HttpOptions,
    HttpTimeouts,
    MockProvider,
    OpenAI,
    OpenAICompatible,
)
from turnout.providers.anthropic import DEFAULT_BASE_URL as ANTHROPIC_URL
from turnout.providers.azure_openai import DEFAULT_API_VERSION as AZURE_API_VERSION
from turnout.providers.openai import DEFAULT_BASE_URL as OPENAI_URL
from turnout.routing.health import Breaker, Health
from turnout.routing.options import RouteOptions
from turnout.routing.route import Route
from turnout.routing.target import Target
from turnout.vendors.redact import secrets_of

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from turnout.access.served_routes import ServedRoute, ServedRoutes
    from turnout.providers.base import ProviderKeywords
    from turnout.routing.clock import Clock
    from turnout.schema import (
        DefaultsConfig,
        FileConfig,
        ProviderConfig,
        RouteConfig,
        TargetConfig,
    )

__all__ = [
    "build_entries",
    "build_health",
    "build_http_options",
    "build_provider",
    "build_providers",
    "configured_secrets",
    "supports_embeddings",
]

_DERIVED: tuple[Endpoint, ...] = ("messages", "embeddings")


def build_http_options(config: ProviderConfig, *, secrets: Sequence[str] = ()) -> HttpOptions:
    """The HTTP options of a configured provider: its `headers`, its `connect_timeout`
    (seconds) with the default read timeout and connection cap, its `max_response_bytes`, and
    `secrets` to scrub from its errors (`configured_secrets`)."""
    return HttpOptions(
        headers=config.headers,
        timeouts=HttpTimeouts(connect=config.connect_timeout),
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
        values.extend(provider.headers.values())
    return secrets_of(values)


def build_providers(config: FileConfig, *, clock: Clock | None = None) -> dict[str, Any]:
    """The adapter of every configured provider by name (`build_provider`), each scrubbing
    every configured secret from its errors."""
    secrets = configured_secrets(config)
    return {p.name: build_provider(p, clock=clock, secrets=secrets) for p in config.providers}


def build_provider(
    config: ProviderConfig, *, clock: Clock | None = None, secrets: Sequence[str] = ()
) -> Any:
    """The adapter for one configured provider (`kind` -> class), with its options from
    `build_http_options`. A missing `api_key` means no credential: the adapters' own
    environment defaults are not read, only `${VAR}` is. The adapter gets the provider's
    credential mode: a passthrough adapter has no key of its own and sends each call with the
    caller's credential."""
    keywords: ProviderKeywords = {
        "prices": {model: (p.input, p.output) for model, p in config.prices.items()},
        "model_aliases": dict(config.model_aliases),
        "credential_mode": credential_mode(config),
    }
    name, url = config.name, config.base_url
    if config.kind == "mock":
        steps, wire = mock_script_steps(config), config.wire or "openai-chat"
        return MockProvider(name, script=steps, wire=wire, clock=clock, **keywords)
    options = build_http_options(config, secrets=secrets)
    key = config.api_key or ""  # never None, which would read the adapter's environment default
    if config.kind == "openai":
        return OpenAI(key, base_url=url or OPENAI_URL, name=name, options=options, **keywords)
    if config.kind == "anthropic":
        return Anthropic(key, base_url=url or ANTHROPIC_URL, name=name, options=options, **keywords)
    if config.kind == "azure-openai":
        version = config.api_version or AZURE_API_VERSION
        return AzureOpenAI(
            url or "",
            key or None,
            version,
            wire=config.wire or "",
            name=name,
            options=options,
            **keywords,
        )
    return OpenAICompatible(
        url, config.api_key, preset=config.preset, name=name, options=options, **keywords
    )


def supports_embeddings(provider: Any) -> bool:
    """Whether an adapter serves embeddings (the vendor catalog's word, via the adapter)."""
    return bool(getattr(provider, "supports_embeddings", False)) and hasattr(provider, "embed")


def build_health(defaults: DefaultsConfig, *, clock: Clock | None = None) -> Health:
    """The registry: `defaults.circuit_breaker` and `defaults.health_key_by` (§3.5)."""
    breaker = Breaker.from_config(
        defaults.circuit_breaker.model_dump(), path="defaults.circuit_breaker"
    )
    return Health(breaker=breaker, key_by=defaults.health_key_by, clock=clock)


def build_entries(
    config: FileConfig, served_routes: ServedRoutes, providers: Mapping[str, Any], health: Health
) -> dict[str, RouteEntry]:
    """Every served route's entry, by name (configured, then implicit, then family)."""
    builder = _Builder(config, providers, health)
    for served_route in served_routes.routes.values():
        builder.entry(served_route, served_routes)
    return {name: builder.built[name] for name in served_routes.routes}


class _Builder:
    """Builds entries in fallback dependency order (Rule 3)."""

    def __init__(self, config: FileConfig, providers: Mapping[str, Any], health: Health) -> None:
        self.providers = providers
        self.provider_configs = {p.name: p for p in config.providers}
        self.health = health
        self.pin_ttl = config.defaults.session_pin_ttl_seconds
        self.built: dict[str, RouteEntry] = {}

    def entry(self, served_route: ServedRoute, served_routes: ServedRoutes) -> RouteEntry:
        held = self.built.get(served_route.name)
        if held is not None:
            return held
        if served_route.config is not None:
            for name in _fallback_names(served_route.config):
                self.entry(served_routes.routes[name], served_routes)
            made = self._configured(served_route.config)
        else:
            made = self._provider_route(served_route)
        self.built[served_route.name] = made
        return made

    # -- configured routes

    def _configured(self, config: RouteConfig) -> RouteEntry:
        targets = [build_target(t, self.providers[t.provider]) for t in config.targets]
        options = build_route_options(config, session_pin_ttl=self.pin_ttl)

        def make(subset: Sequence[Target], endpoint: Endpoint) -> Route:
            return self._route(config, subset, options, endpoint)

        messages, _ = messages_split(config, self.provider_configs)
        chat, _ = chat_split(config, self.provider_configs)
        subsets: dict[Endpoint, frozenset[int]] = {
            "chat": frozenset(chat),
            "messages": frozenset(messages),
            "embeddings": frozenset(
                i for i, t in enumerate(targets) if _offers_embeddings(t, config.targets[i])
            ),
        }
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
    ) -> Route:
        fallbacks: dict[str, list[Route]] = {}
        for kind in ("general", "context", "content"):
            for name in getattr(config.fallbacks, kind):
                other = self.built[name].route_for(endpoint)
                if other is not None:
                    fallbacks.setdefault(kind, []).append(other)
        with warnings.catch_warnings():
            # The static-budget warning is a load warning of the validator, said once.
            warnings.simplefilter("ignore", UserWarning)
            return Route.from_options(
                config.name, targets, options, health=self.health, fallbacks=fallbacks
            )

    # -- implicit and family routes

    def _provider_route(self, served_route: ServedRoute) -> RouteEntry:
        targets = [Target(name, self.providers[name]) for name in served_route.providers]
        options = RouteOptions.build(session_pin_ttl_seconds=self.pin_ttl)

        def make(subset: Sequence[Target], endpoint: Endpoint) -> Route:
            del endpoint  # provider routes have no fallbacks
            return Route.from_options(served_route.name, subset, options, health=self.health)

        subsets: dict[Endpoint, frozenset[int]] = {
            "messages": frozenset(
                i for i, t in enumerate(targets) if _wire_format(t.client) == MESSAGES_WIRE
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


def _fallback_names(config: RouteConfig) -> tuple[str, ...]:
    fallbacks = config.fallbacks
    return (*fallbacks.general, *fallbacks.context, *fallbacks.content)


def _wire_format(client: Any) -> str | None:
    wire = getattr(client, "wire_format", None)
    return wire if isinstance(wire, str) else None


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
    """The alias's targets with its wire models (§5.3 step 3), per endpoint."""
    mapped: dict[int, Target] = {}
    for i, (target, target_config) in enumerate(zip(targets, config.targets, strict=True)):
        wire = alias_wire_model(mapping, target.name, target_config.provider)
        if wire is not None:
            mapped[i] = dataclasses.replace(target, model=wire)
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
