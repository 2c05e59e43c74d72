"""Which routes a configuration serves, decided from the configuration alone: the enabled
configured routes, the implicit provider routes and the family routes, each
with its model patterns; and which targets of a route may serve Anthropic Messages and Chat
Completions.

Cross-family targets: on `/v1/messages` a target of another wire format serves only on
a route with `allow_cross_provider`; on `/v1/chat/completions` every family serves,
except that on a route with `allow_cross_provider` a target of another family than the
route's first target (the family a request starts on) is held to the same rule. Such a target
needs its own credential (`org_key`: a caller's credential never goes to another vendor) and a
model mapping (a target model, an alias entry or provider `model_aliases`): without, it is
left out of that endpoint and the validator warns, naming the route and the target.

Pure and tolerant: it reads a configuration that may still be invalid (the validator runs it
to know the implicit routes) and leaves out what it cannot parse, which the validator reports
on its own. The runtime builds live routes from the same answer, so the two never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from turnout.access.model_index import RoutePatterns
from turnout.access.patterns import (
    FAMILY_DEFAULT_PATTERNS,
    FAMILY_ROUTES,
    ModelPattern,
    implicit_patterns,
)
from turnout.access.policies import provider_family, target_family
from turnout.errors import ConfigError
from turnout.vendors.presets import KEYLESS_PRESETS, is_loopback

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from turnout.schema import FileConfig, ProviderConfig, RouteConfig, TargetConfig

__all__ = [
    "MESSAGES_WIRE",
    "RouteKind",
    "ServedRoute",
    "ServedRoutes",
    "alias_wire_model",
    "chat_split",
    "credential_mode",
    "find_served_routes",
    "messages_split",
    "parse_patterns",
    "provider_wire",
]

RouteKind = Literal["configured", "implicit", "family"]
MESSAGES_WIRE: Final = "anthropic-messages"
"""The wire format of `/v1/messages`."""
_OPENAI_WIRE: Final = "openai-chat"
_GEMINI_WIRE: Final = "gemini-generate"


def provider_wire(provider: ProviderConfig, model: str | None = None) -> str:
    """The wire format a provider speaks: `anthropic-messages`, `gemini-generate` or
    `openai-chat`; for a `vertex` provider, the wire of `model`'s publisher when given
    (`target_family`)."""
    if provider.kind == "anthropic":
        return MESSAGES_WIRE
    if provider.kind == "gemini":
        return _GEMINI_WIRE
    if provider.kind == "vertex":
        return MESSAGES_WIRE if target_family(provider, model) == "anthropic" else _GEMINI_WIRE
    if provider.kind == "bedrock":
        # Claude models on Bedrock speak Anthropic Messages (the default `api`).
        return "bedrock-converse" if provider.api == "converse" else MESSAGES_WIRE
    if provider.kind in ("azure-openai", "mock") and provider.wire is not None:
        return provider.wire
    return _OPENAI_WIRE


def credential_mode(provider: ProviderConfig) -> Literal["org_key", "passthrough"]:
    """`org_key` when the provider has an `api_key` or needs none by nature (`mock`, `vertex`
    with its cloud credentials, the `ollama`/`vllm`/`lmstudio` presets, an `openai-compatible`
    server on loopback without a key), else `passthrough`; an explicit `credential_mode`
    wins."""
    if provider.credential_mode is not None:
        return provider.credential_mode
    if provider.api_key or provider.kind in ("mock", "vertex", "bedrock"):
        return "org_key"
    if provider.kind == "openai-compatible":
        if provider.preset in KEYLESS_PRESETS:
            return "org_key"
        if provider.base_url and is_loopback(provider.base_url):
            return "org_key"
    return "passthrough"


def parse_patterns(texts: Iterable[str]) -> tuple[ModelPattern, ...]:
    """The valid patterns of `texts`; invalid ones are left out (the validator names them)."""
    parsed: list[ModelPattern] = []
    for text in texts:
        try:
            parsed.append(ModelPattern.parse(text))
        except ConfigError:
            continue
    return tuple(parsed)


@dataclass(frozen=True, slots=True)
class ServedRoute:
    """One route the configuration serves.

    `providers` are the provider names of its targets (implicit: its own provider; family: every
    provider of the family, in file order); `family` is the provider family of an implicit or
    family route (`none` for configured routes); `position` is a configured route's index in
    `routes` (None otherwise).
    """

    name: str
    kind: RouteKind
    patterns: tuple[ModelPattern, ...]
    providers: tuple[str, ...]
    family: str = "none"
    config: RouteConfig | None = None
    position: int | None = None


@dataclass(frozen=True, slots=True)
class ServedRoutes:
    """The routes of a configuration by name (configured first, then implicit, then family),
    the families that have a family route, and the load warnings found on the way."""

    routes: Mapping[str, ServedRoute]
    families: tuple[str, ...]
    warnings: tuple[tuple[str, str], ...]

    def index_entries(self) -> list[RoutePatterns]:
        """The pattern index's entries: every configured and implicit route (family routes
        are the index's own)."""
        return [
            RoutePatterns(
                served.name,
                served.patterns,
                is_implicit=served.kind == "implicit",
                family=served.family,
                created=served.position if served.position is not None else 0,
                path=f"routes[{served.position}]" if served.position is not None else "",
            )
            for served in self.routes.values()
            if served.kind != "family"
        ]


def find_served_routes(config: FileConfig) -> ServedRoutes:
    """The routes `config` serves, with their patterns (disabled routes serve nothing)."""
    routes: dict[str, ServedRoute] = {}
    routed: set[str] = set()
    stored: list[ModelPattern] = []
    for position, route in enumerate(config.routes):
        if not route.enabled or route.name in routes:
            continue
        patterns = parse_patterns(route.models)
        stored.extend(patterns)
        providers = tuple(dict.fromkeys(target.provider for target in route.targets))
        routed.update(providers)
        routes[route.name] = ServedRoute(
            route.name, "configured", patterns, providers, config=route, position=position
        )
    warnings: list[tuple[str, str]] = []
    for index, provider in enumerate(config.providers):
        if provider.name in routed or provider.name in routes:
            continue
        implicit = _implicit(provider, stored, f"providers[{index}]", warnings)
        if implicit is not None:
            routes[implicit.name] = implicit
    families = _families(config.providers)
    for family, members in families.items():
        name = FAMILY_ROUTES[family]
        if name not in routes:
            defaults = parse_patterns(FAMILY_DEFAULT_PATTERNS[family])
            routes[name] = ServedRoute(name, "family", defaults, members, family=family)
    return ServedRoutes(routes, tuple(families), tuple(warnings))


def _implicit(
    provider: ProviderConfig,
    stored: list[ModelPattern],
    path: str,
    warnings: list[tuple[str, str]],
) -> ServedRoute | None:
    family = provider_family(provider)
    own = parse_patterns(provider.model_patterns)
    if not own and family == "none":
        rule = (
            f'provider "{provider.name}" is in no enabled route and has no model_patterns,'
            " so it gets no implicit route: add model_patterns or put it in a route"
        )
        warnings.append((path, rule))
        return None
    patterns = implicit_patterns(own, family, stored)
    return ServedRoute(provider.name, "implicit", patterns, (provider.name,), family=family)


def _families(providers: Iterable[ProviderConfig]) -> dict[str, tuple[str, ...]]:
    """Each family route's providers: those of the family without `model_patterns`. A
    provider's own patterns replace its family's defaults, in its implicit route and here."""
    members: dict[str, list[str]] = {}
    for provider in providers:
        family = provider_family(provider)
        if family in FAMILY_ROUTES and not provider.model_patterns:
            members.setdefault(family, []).append(provider.name)
    return {family: tuple(names) for family, names in sorted(members.items())}


def alias_wire_model(mapping: Mapping[str, str], target_name: str, provider: str) -> str | None:
    """The wire model an alias gives a target: keyed by target name, else provider name."""
    found = mapping.get(target_name)
    return found if found is not None else mapping.get(provider)


def messages_split(
    route: RouteConfig, providers: Mapping[str, ProviderConfig]
) -> tuple[tuple[int, ...], tuple[tuple[int, str], ...]]:
    """Which targets of `route` may serve `/v1/messages`: their indices, and each
    excluded target's index with the reason.

    Without `allow_cross_provider` only targets speaking Anthropic Messages serve it. With it,
    a target of another wire format also needs its own credential (`org_key`) and a model
    mapping: a target `model`, an alias entry or provider `model_aliases`.
    """
    return _split(
        route,
        providers,
        lambda target, provider: _messages_gap(route, target.display_name, target.model, provider),
    )


def chat_split(
    route: RouteConfig, providers: Mapping[str, ProviderConfig]
) -> tuple[tuple[int, ...], tuple[tuple[int, str], ...]]:
    """Which targets of `route` may serve `/v1/chat/completions`: their indices,
    and each excluded target's index with the reason.

    Every target, unless the route sets `allow_cross_provider`: then a target of another
    family than the first target's also needs its own credential and a model mapping.
    """
    first = providers.get(route.targets[0].provider) if route.targets else None
    if not route.allow_cross_provider or first is None:
        return tuple(range(len(route.targets))), ()
    home = target_family(first, route.targets[0].model)

    def gap(target: TargetConfig, provider: ProviderConfig) -> str | None:
        if target_family(provider, target.model) == home:
            return None
        return _cross_family_gap(route, target.display_name, target.model, provider)

    return _split(route, providers, gap)


def _split(
    route: RouteConfig,
    providers: Mapping[str, ProviderConfig],
    gap: Callable[[TargetConfig, ProviderConfig], str | None],
) -> tuple[tuple[int, ...], tuple[tuple[int, str], ...]]:
    """The indices of `route`'s targets that `gap` finds no reason against, and each other
    target's index with its reason; a target of an unknown provider is in neither."""
    kept: list[int] = []
    excluded: list[tuple[int, str]] = []
    for index, target in enumerate(route.targets):
        provider = providers.get(target.provider)
        if provider is None:
            continue
        reason = gap(target, provider)
        if reason is None:
            kept.append(index)
        else:
            excluded.append((index, reason))
    return tuple(kept), tuple(excluded)


def _messages_gap(
    route: RouteConfig, target_name: str, model: str | None, provider: ProviderConfig
) -> str | None:
    if provider_wire(provider, model) == MESSAGES_WIRE:
        return None
    if not route.allow_cross_provider:
        return (
            "it does not speak Anthropic Messages and the route does not set allow_cross_provider"
        )
    return _cross_family_gap(route, target_name, model, provider)


def _cross_family_gap(
    route: RouteConfig, target_name: str, model: str | None, provider: ProviderConfig
) -> str | None:
    """Why a cross-family target of a cross-provider route cannot serve, or None."""
    if credential_mode(provider) != "org_key":
        return "a cross-family target needs its own credential"
    if not _has_mapping(route, target_name, model, provider):
        return (
            "a cross-family target needs a model mapping (a target model, an alias or"
            " provider model_aliases)"
        )
    return None


def _has_mapping(
    route: RouteConfig, target_name: str, model: str | None, provider: ProviderConfig
) -> bool:
    if model or provider.model_aliases:
        return True
    return any(
        alias_wire_model(mapping, target_name, provider.name) is not None
        for mapping in route.aliases.values()
    )
