"""What the gateway knows of each route it serves, and where one request goes (the values the
runtime hands to the HTTP side).

A configured route serves four endpoints through up to three engine `Route`s built from the
same targets: every target for chat completions, the targets that may answer Anthropic
Messages, and the targets that offer embeddings. The derived routes share the route's name,
strategy and health, so they count as one route everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.routing.route import Route
    from turnout.schema import RouteConfig

__all__ = [
    "ENDPOINT_PATHS",
    "AliasRoutes",
    "Endpoint",
    "MatchedBy",
    "Resolution",
    "RouteEntry",
]

Endpoint = Literal["chat", "messages", "embeddings", "count_tokens"]
MatchedBy = Literal["alias", "name", "pattern", "implicit", "family", "key_route", "consumer"]

ENDPOINT_PATHS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "chat": "/v1/chat/completions",
        "messages": "/v1/messages",
        "count_tokens": "/v1/messages/count_tokens",
        "embeddings": "/v1/embeddings",
    }
)
"""The HTTP path of each endpoint, for messages."""

_NO_REASONS: Final[Mapping[str, str]] = MappingProxyType({})
_NO_ALIASES: Final[Mapping[str, AliasRoutes]] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class AliasRoutes:
    """The routes one alias of a route resolves to: per endpoint, the route's
    targets that the alias maps, each asking for the alias's wire model.

    `routes` has `chat`, `messages` and `embeddings` when some target is left for them;
    `reasons` says, per missing endpoint, why none is; `providers` are the providers the alias
    maps (for the NO_ROUTE message).
    """

    alias: str
    routes: Mapping[str, Route]
    reasons: Mapping[str, str]
    providers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RouteEntry:
    """One route the gateway serves.

    - `kind`: `configured` (from the file), `implicit` (a provider's own route) or
      `family` (`openai-family`, `anthropic-family`); `config` is None unless configured.
    - `route`: serves `/v1/chat/completions` (every target).
    - `messages_route`: serves `/v1/messages`: targets speaking Anthropic Messages, or every
      target with a model mapping when the route sets `allow_cross_provider`; None = none.
    - `embeddings_route`: targets whose provider offers embeddings; None = none.
    - `patterns`: the model patterns it serves (for `turnout routes` and `/v1/models`).
    - `aliases`: by lower-cased alias; `reasons`: why `messages` or `embeddings` has no route.
    """

    name: str
    kind: Literal["configured", "implicit", "family"]
    config: RouteConfig | None
    route: Route
    messages_route: Route | None
    embeddings_route: Route | None
    commit_on_headers: bool
    patterns: tuple[str, ...]
    aliases: Mapping[str, AliasRoutes] = field(default_factory=lambda: _NO_ALIASES)
    reasons: Mapping[str, str] = field(default_factory=lambda: _NO_REASONS)

    def route_for(self, endpoint: Endpoint) -> Route | None:
        """The route serving `endpoint` (`count_tokens` uses the messages route)."""
        if endpoint == "chat":
            return self.route
        if endpoint == "embeddings":
            return self.embeddings_route
        return self.messages_route


@dataclass(frozen=True, slots=True)
class Resolution:
    """Where one request goes (`Runtime.resolve`).

    `route` is the engine route to call for the endpoint (for an alias: the alias's targets and
    wire models); `requested_model` what the caller asked for (`""` when empty and the key's
    only route was used); `matched_by` how the route was found (an alias, its name, a pattern,
    ...); `pattern` the model pattern that matched (pattern, implicit and family matches only).
    """

    entry: RouteEntry
    route: Route
    requested_model: str
    matched_by: MatchedBy
    pattern: str | None = None
