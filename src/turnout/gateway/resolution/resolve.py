"""How a request finds its route: the empty model, the grant's route, aliases, route names,
model patterns and family routes, and the key's ceilings (overview: `docs/concepts.md`, Route).

Rule 0: after the empty-model rule, the access policy picks the winning grant. A
winning grant that names a route sends the model to that route when the route serves it (its
patterns, aliases or name), else 503 NO_ROUTE; it never falls through to another route, with
one exception: a model that the route does not serve but one of its targets' providers
lists in its `model_aliases` goes where it would go without the grant (Rule 1). A grant naming
no route goes on to Rule 1. When the policy refuses (no grant: 400 MODEL_DENIED; a deny
binding: 403 POLICY_DENIED), the key's ceilings still come first: a model outside the key's
`allowed_models`, or whose route (as without a grant) is outside the key's `routes`, is 400
MODEL_DENIED naming the key's limits; a model no route serves meets the policy's refusal.
Rule 1: first match wins: an alias, a route name (both ignoring case), the most specific model
pattern of an enabled or implicit route (the pattern index), a family route; else 503
NO_ROUTE naming the closest route and pattern.
Rule 2: the route returned serves the endpoint asked for: a route (or alias) with no target
for `/v1/messages` is 503 NO_ROUTE saying why; with none for `/v1/embeddings`, 400
`embeddings_not_supported`. Selection never falls through to another route.
Rule 3: answers, refusals included, are cached per (model, endpoint, granted route) in a bounded
LRU owned by the resolver; a new configuration builds a new resolver. By default the bound grows
with the names the routes serve (`cache_size_for`), so a large configuration's models do not
evict one another. A cached refusal raises a
fresh error each time. The grant decision (cached per caller by the policy) comes before the
cached answer and the key's ceilings after it, per caller (a refusal: Rule 0).
Rule 4: nothing scans every pattern or route: dict probes and the pattern index only. The
cache is not locked: use a resolver from one thread (the event loop).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from turnout.access.bindings import (
    IMPLICIT_GRANT,
    AccessPolicy,
    grant_route_missing,
    grant_route_not_serving,
)
from turnout.access.keys import Caller, ceiling_check, empty_model_route
from turnout.access.model_index import ambiguity_message, no_route_message
from turnout.errors import EmbeddingsNotSupported, NoRoute, RoutingError, UpstreamAmbiguous
from turnout.gateway.runtime.route_entry import Resolution
from turnout.providers import facts_of

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.access.bindings import Decision
    from turnout.access.model_index import PatternIndex
    from turnout.access.patterns import ModelPattern
    from turnout.gateway.runtime.route_entry import AliasRoutes, Endpoint, MatchedBy, RouteEntry
    from turnout.routing.route import Route

__all__ = ["Resolver", "cache_size_for"]

DEFAULT_CACHE_SIZE = 4096
MAX_CACHE_SIZE = 65_536
_MAX_CACHED_LENGTH = 256


@dataclass(frozen=True, slots=True)
class _Refusal:
    """A cached refusal; `error()` builds a fresh exception each time."""

    message: str
    kind: type[RoutingError] = NoRoute

    def error(self) -> RoutingError:
        return self.kind(self.message)


def _unserved(message: str, endpoint: Endpoint) -> _Refusal:
    if endpoint == "embeddings":
        return _Refusal(message, EmbeddingsNotSupported)
    return _Refusal(message)


class Resolver:
    """Resolves a requested model to a `Resolution` (see the module rules)."""

    __slots__ = (
        "_access",
        "_aliases",
        "_anonymous",
        "_cache",
        "_cache_size",
        "_entries",
        "_index",
        "_member_aliases",
        "_names",
        "_open",
        "project",
    )

    def __init__(
        self,
        entries: Mapping[str, RouteEntry],
        index: PatternIndex,
        *,
        project: str,
        access: AccessPolicy | None = None,
        cache_size: int | None = None,
    ) -> None:
        """`entries` by route name; `index` over their patterns; `access` the project's
        bindings (default: none, the implicit Everyone grant); `cache_size` bounds the answer
        cache (entries; 0 disables it; default `cache_size_for(entries)`)."""
        self.project = project
        self._entries = entries
        self._index = index
        self._access = access if access is not None else AccessPolicy()
        self._open = self._access.is_open
        self._anonymous = Caller.anonymous(project)
        self._names = {name.lower(): entry for name, entry in entries.items()}
        self._aliases: dict[str, tuple[RouteEntry, AliasRoutes]] = {
            lowered: (entry, routes)
            for entry in entries.values()
            for lowered, routes in entry.aliases.items()
        }
        self._member_aliases = {name: _member_aliases(entry) for name, entry in entries.items()}
        self._cache: OrderedDict[tuple[str, str, str], Resolution | _Refusal] = OrderedDict()
        self._cache_size = max(cache_size_for(entries) if cache_size is None else cache_size, 0)

    def resolve(
        self, model: str | None, *, endpoint: Endpoint, caller: Caller | None = None
    ) -> Resolution:
        """Where a request for `model` on `endpoint` goes, for `caller` (None: the anonymous
        caller for grants, and no ceilings).

        Raises `NoRoute`, `UpstreamAmbiguous` or `EmbeddingsNotSupported`; `ModelNotAllowed`
        for an empty model without exactly one key route; `ModelDenied` without a grant or
        outside the key's ceilings; or `PolicyDenied` for a deny binding.
        """
        if not model:
            return self._key_route(endpoint, caller)
        if self._open:
            decision = IMPLICIT_GRANT
        else:
            try:
                decision = self._access.decide(
                    caller if caller is not None else self._anonymous, model
                )
            except RoutingError:
                if caller is not None:
                    self._ceilings_before_refusal(model, endpoint, caller)
                raise
        found = self._cached(model, endpoint, decision)
        if isinstance(found, _Refusal):
            raise found.error()
        if caller is not None:
            ceiling_check(caller, found.entry.name, model)
        return found

    def resolve_ungranted(self, model: str, *, endpoint: Endpoint) -> Resolution:
        """Where `model` goes by Rule 1 alone, as if no grant named a route (for the admin
        API's routing test); no grant check and no ceilings. Raises as `resolve` does."""
        found = self._cached(model, endpoint, IMPLICIT_GRANT)
        if isinstance(found, _Refusal):
            raise found.error()
        return found

    def _cached(self, model: str, endpoint: Endpoint, decision: Decision) -> Resolution | _Refusal:
        """Rule 3: the answer for `model` on `endpoint` under `decision`'s granted route."""
        granted = decision.route
        key = (model, endpoint, granted or "")
        cache = self._cache
        found = cache.get(key)
        if found is None:
            if granted is None:
                found = self._find(model, endpoint)
            else:
                found = self._find_granted(model, endpoint, decision)
            if self._cache_size and len(model) <= _MAX_CACHED_LENGTH:
                cache[key] = found
                if len(cache) > self._cache_size:
                    cache.popitem(last=False)
        else:
            cache.move_to_end(key)
        return found

    def _ceilings_before_refusal(self, model: str, endpoint: Endpoint, caller: Caller) -> None:
        """Rule 0: the key's ceilings come before the grant check, so a grant refusal first
        meets the route the model goes to without a grant (if any) and `allowed_models`."""
        found = self._cached(model, endpoint, IMPLICIT_GRANT)
        route = found.entry.name if isinstance(found, Resolution) else None
        ceiling_check(caller, route, model)

    def _key_route(self, endpoint: Endpoint, caller: Caller | None) -> Resolution:
        who = caller if caller is not None else Caller.anonymous(self.project)
        name = empty_model_route(who)
        entry = self._entries.get(name)
        if entry is None:
            raise NoRoute(f'the key\'s only route "{name}" is not served')
        route = entry.route_for(endpoint)
        if route is None:
            raise _unserved(entry.reasons.get(_slot(endpoint), ""), endpoint).error()
        ceiling_check(who, entry.name, None)
        return Resolution(entry, route, "", "key_route")

    def _find(self, model: str, endpoint: Endpoint) -> Resolution | _Refusal:
        lowered = model.lower()
        aliased = self._aliases.get(lowered)
        if aliased is not None:
            entry, alias = aliased
            route = alias.routes.get(_slot(endpoint))
            if route is None:
                return _unserved(alias.reasons.get(_slot(endpoint), ""), endpoint)
            return Resolution(entry, route, model, "alias")
        named = self._names.get(lowered)
        if named is not None:
            return self._served(named, model, endpoint, "name", None)
        match = self._index.resolve(model)
        if match is not None:
            if match.is_ambiguous:
                return _Refusal(ambiguity_message(model, match), UpstreamAmbiguous)
            entry = self._entries[match.route]
            how: MatchedBy = "implicit" if entry.kind == "implicit" else "pattern"
            return self._served(entry, model, endpoint, how, match.pattern.text)
        family = self._index.resolve_family(model)
        if family is not None and not family.is_ambiguous:
            entry = self._entries[family.route]
            return self._served(entry, model, endpoint, "family", family.pattern.text)
        return _Refusal(no_route_message(model, self._index.closest(model)))

    def _find_granted(
        self, model: str, endpoint: Endpoint, decision: Decision
    ) -> Resolution | _Refusal:
        """The route the winning grant names, or NO_ROUTE (never another route)."""
        name = decision.route or ""
        entry = self._entries.get(name)
        served = self._access.models_of(name)
        if entry is None or served is None or not served.enabled:
            return _Refusal(grant_route_missing(model, decision).message)
        if not served.serves(model):
            if model.lower() in self._member_aliases[name]:
                return self._find(model, endpoint)  # a provider alias only: as without the grant
            return _Refusal(grant_route_not_serving(model, decision).message)
        lowered = model.lower()
        alias = entry.aliases.get(lowered)
        if alias is not None:
            route = alias.routes.get(_slot(endpoint))
            if route is None:
                return _unserved(alias.reasons.get(_slot(endpoint), ""), endpoint)
            return Resolution(entry, route, model, "alias")
        if lowered == entry.name.lower():
            return self._served(entry, model, endpoint, "name", None)
        pattern = _most_specific(served.patterns, lowered)
        how: MatchedBy = "implicit" if entry.kind == "implicit" else "pattern"
        return self._served(entry, model, endpoint, how, pattern)

    @staticmethod
    def _served(
        entry: RouteEntry,
        model: str,
        endpoint: Endpoint,
        how: MatchedBy,
        pattern: str | None,
    ) -> Resolution | _Refusal:
        route: Route | None = entry.route_for(endpoint)
        if route is None:
            return _unserved(entry.reasons.get(_slot(endpoint), ""), endpoint)
        return Resolution(entry, route, model, how, pattern)

    def models(self, caller: Caller | None = None) -> list[str]:
        """The model names `caller` may ask for on chat completions (GET /v1/models): route
        names of configured routes, aliases and exact model patterns that resolve for it."""
        names: dict[str, None] = {}
        for entry in self._entries.values():
            if entry.kind == "configured":
                names[entry.name] = None
                names.update(dict.fromkeys(alias.alias for alias in entry.aliases.values()))
            names.update(dict.fromkeys(text for text in entry.patterns if "*" not in text))
        usable = []
        for name in names:
            try:
                self.resolve(name, endpoint="chat", caller=caller)
            except RoutingError:
                continue
            usable.append(name)
        return sorted(usable, key=str.lower)


def cache_size_for(entries: Mapping[str, RouteEntry]) -> int:
    """Room in the answer cache for two answers per name the routes serve (route names,
    aliases, model patterns: a pattern's models and the endpoints share the second), at least
    `DEFAULT_CACHE_SIZE` and at most `MAX_CACHE_SIZE` entries."""
    names = sum(1 + len(entry.patterns) + len(entry.aliases) for entry in entries.values())
    return min(max(2 * names, DEFAULT_CACHE_SIZE), MAX_CACHE_SIZE)


def _member_aliases(entry: RouteEntry) -> frozenset[str]:
    """The lower-cased models that some target's provider of `entry` lists in its
    `model_aliases` (a client without aliases lists none)."""
    found: set[str] = set()
    for target in entry.route.targets:
        found.update(model.lower() for model in facts_of(target.client).model_aliases)
    return frozenset(found)


def _most_specific(patterns: tuple[ModelPattern, ...], lowered: str) -> str | None:
    """The text of the most specific of `patterns` matching the lower-cased model."""
    matching = [pattern for pattern in patterns if pattern.matches_lowered(lowered)]
    if not matching:
        return None
    return str(max(matching, key=lambda pattern: pattern.specificity))


def _slot(endpoint: Endpoint) -> str:
    """Which derived route serves `endpoint`: count_tokens uses the messages route."""
    return "messages" if endpoint == "count_tokens" else endpoint
