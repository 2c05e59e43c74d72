"""The pattern index: which route's model pattern serves a model, once no grant, alias or route
name has picked the route (the last steps of route resolution, see `docs/concepts.md`, Route).

An index is built once per configuration (one per project) from the patterns of every enabled
route and every implicit provider route (`RoutePatterns`, re-exported here), and never changes
afterwards: a configuration change builds a new index. Disabled routes are simply left out.

Rule 1: no two routes that are not implicit hold conflicting patterns (same specificity and some
common model, see `turnout.access.patterns`); `build` refuses them, listing every conflict. So
for any model at most one such route matches at the top specificity.
Rule 2: the most specific matching pattern wins. At equal specificity a stored route beats an
implicit one (a route you create always wins its own patterns). Implicit routes that still tie
are settled by the model's family when exactly one of them is of it; otherwise the match lists
them all and the caller answers 503 UPSTREAM_AMBIGUOUS.
Rule 3: creation order never decides resolution. Tied routes are listed by name; a route that
matches through several patterns of one specificity reports the lowest pattern text. `created`
only orders the two sides of a conflict message (the later route, the one being saved, first).
Rule 4: lookup never scans every pattern. Exact names, prefix and suffix literals are dict keys,
probed once per distinct literal length, longest first; infix literals are grouped by length
and, per length, scanned or probed window by window, whichever is fewer steps.
Rule 5: `resolve` answers are kept in a bounded LRU owned by the index, so a rebuilt index starts
with an empty cache. The cache is not locked: use an index from one thread (the event loop).
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING

from turnout.access._pattern_lookup import Hit, Nearest, Table, hits_of
from turnout.access.patterns import (
    FAMILY_DEFAULT_PATTERNS,
    FAMILY_ROUTES,
    ModelPattern,
    PatternKind,
    RoutePatterns,
    model_family,
)
from turnout.errors import ConfigError, NoRoute, UpstreamAmbiguous

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

    from turnout.access.patterns import Specificity

__all__ = [
    "Conflict",
    "Match",
    "PatternIndex",
    "RoutePatterns",
    "ambiguity_error",
    "ambiguity_message",
    "find_conflicts",
    "no_route_error",
    "no_route_message",
]

DEFAULT_CACHE_SIZE = 4096
_MAX_LISTED = 1000
# Longer model names are resolved but not cached, so the cache's memory stays bounded too.
_MAX_CACHED_LENGTH = 256


@dataclass(frozen=True, slots=True)
class Match:
    """Where a model goes: one route, or the implicit routes that tie for it.

    `routes` and `patterns` run in parallel (each route with the pattern that matched), tied
    routes in name order.
    """

    routes: tuple[str, ...]
    patterns: tuple[ModelPattern, ...]

    @property
    def is_ambiguous(self) -> bool:
        """Several implicit routes tie and family does not settle it (UPSTREAM_AMBIGUOUS)."""
        return len(self.routes) > 1

    @property
    def route(self) -> str:
        """The one route; `ValueError` for an ambiguous match (see `ambiguity_error`)."""
        if self.is_ambiguous:
            raise ValueError(f"the match is ambiguous between {', '.join(self.routes)}")
        return self.routes[0]

    @property
    def pattern(self) -> ModelPattern:
        """The pattern that matched (the first tied route's, for an ambiguous match)."""
        return self.patterns[0]


@dataclass(frozen=True, slots=True)
class Conflict:
    """Two routes' patterns that overlap at the same specificity; `route` is the later one.

    `path` locates `pattern` for error lists; `position` (route path, pattern number) orders them.
    """

    route: str
    pattern: ModelPattern
    other_route: str
    other_pattern: ModelPattern
    path: str
    position: tuple[str, int] = ("", 0)

    @property
    def message(self) -> str:
        """The rule as the validator reports it (without the path)."""
        return (
            f'model pattern "{self.pattern}" of route "{self.route}" overlaps'
            f' "{self.other_pattern}" of route "{self.other_route}" at the same specificity'
        )


def find_conflicts(entries: Iterable[RoutePatterns]) -> Iterator[Conflict]:
    """Every pair of patterns of different non-implicit routes that may not coexist.

    Pairs are grouped by specificity, so the work is proportional to the patterns plus the
    conflicts found, not to the square of the patterns.
    """
    groups: dict[Specificity, list[Hit]] = defaultdict(list)
    for entry in entries:
        if not entry.is_implicit:
            for hit in hits_of(entry):
                groups[hit.pattern.specificity].append(hit)
    for specificity in sorted(groups):
        yield from _conflicts_at(groups[specificity])


def _conflicts_at(hits: list[Hit]) -> Iterator[Conflict]:
    by_kind: dict[PatternKind, list[Hit]] = defaultdict(list)
    for hit in hits:
        by_kind[hit.pattern.kind].append(hit)
    for kind in (PatternKind.EXACT, PatternKind.PREFIX, PatternKind.SUFFIX):
        by_literal: dict[str, list[Hit]] = defaultdict(list)
        for hit in by_kind[kind]:
            by_literal[hit.pattern.literal].append(hit)
        for bucket in by_literal.values():
            yield from _pairs_within(bucket)
    prefix, suffix = by_kind[PatternKind.PREFIX], by_kind[PatternKind.SUFFIX]
    yield from _pairs_across(prefix, suffix)
    yield from _pairs_across(prefix + suffix, by_kind[PatternKind.INFIX])
    yield from _pairs_within(by_kind[PatternKind.INFIX])
    yield from _pairs_within(by_kind[PatternKind.ANY])


def _by_route(hits: Iterable[Hit]) -> dict[str, list[Hit]]:
    grouped: dict[str, list[Hit]] = defaultdict(list)
    for hit in hits:
        grouped[hit.entry.route].append(hit)
    return grouped


def _pairs_within(hits: list[Hit]) -> Iterator[Conflict]:
    grouped = _by_route(hits)
    routes = sorted(grouped)
    for position, route in enumerate(routes):
        for other in routes[position + 1 :]:
            for a in grouped[route]:
                for b in grouped[other]:
                    yield _conflict(a, b)


def _pairs_across(left: list[Hit], right: list[Hit]) -> Iterator[Conflict]:
    left_routes, right_routes = _by_route(left), _by_route(right)
    for route, left_hits in left_routes.items():
        for other, right_hits in right_routes.items():
            if route != other:
                for a in left_hits:
                    for b in right_hits:
                        yield _conflict(a, b)


def _conflict(a: Hit, b: Hit) -> Conflict:
    first, second = sorted((a, b), key=lambda hit: (-hit.entry.created, hit.entry.route))
    return Conflict(
        first.entry.route,
        first.pattern,
        second.entry.route,
        second.pattern,
        first.entry.where(first.position),
        (first.entry.path or first.entry.route, first.position),
    )


def _decide(model: str, hits: list[Hit]) -> Match | None:
    """Apply Rule 2 and Rule 3 to the hits at the top specificity."""
    if not hits:
        return None
    per_route: dict[str, Hit] = {}
    for hit in hits:
        held = per_route.get(hit.entry.route)
        if held is None or hit.pattern.text < held.pattern.text:
            per_route[hit.entry.route] = hit
    chosen = sorted(per_route.values(), key=lambda hit: hit.entry.route)
    stored = [hit for hit in chosen if not hit.entry.is_implicit]
    if stored:
        chosen = stored
    elif len(chosen) > 1:
        family = model_family(model)
        of_family = [hit for hit in chosen if hit.entry.family == family]
        if family is not None and len(of_family) == 1:
            chosen = of_family
    return Match(tuple(hit.entry.route for hit in chosen), tuple(hit.pattern for hit in chosen))


def _family_entries(families: Iterable[str]) -> list[RoutePatterns]:
    entries = []
    for family in sorted(set(families)):
        if family not in FAMILY_ROUTES:
            rule = f"only {', '.join(sorted(FAMILY_ROUTES))} have family routes (got {family!r})"
            raise ConfigError(f"family_routes: {rule}", [("family_routes", rule)])
        entries.append(
            RoutePatterns.parse(
                FAMILY_ROUTES[family],
                FAMILY_DEFAULT_PATTERNS[family],
                is_implicit=True,
                family=family,
            )
        )
    return entries


class PatternIndex:
    """Resolves a model to the route whose model pattern serves it, else a family route, else
    names the closest route for the NO_ROUTE message.

    Build it with `PatternIndex.build`; see the module notes for its rules.
    """

    __slots__ = ("_cache", "_cache_size", "_entries", "_family", "_nearest", "_table")

    def __init__(
        self,
        entries: Iterable[RoutePatterns] = (),
        *,
        family_routes: Iterable[str] = (),
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        """Same as `build`."""
        self._entries = tuple(entries)
        _check_unique(self._entries)
        found = list(islice(find_conflicts(self._entries), _MAX_LISTED + 1))
        if found:
            raise _conflict_error(found)
        hits = [hit for entry in self._entries for hit in hits_of(entry)]
        self._table = Table(hits)
        self._family = Table(hit for e in _family_entries(family_routes) for hit in hits_of(e))
        self._nearest = Nearest(hits)
        self._cache: OrderedDict[str, Match | None] = OrderedDict()
        self._cache_size = max(cache_size, 0)

    @classmethod
    def build(
        cls,
        entries: Iterable[RoutePatterns],
        *,
        family_routes: Iterable[str] = (),
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> PatternIndex:
        """Index `entries`; `family_routes` names the families (`anthropic`, `openai`) that
        have a family route, i.e. at least one provider. `cache_size` bounds the per-model
        cache of `resolve` (entries; 0 disables it; default 4096).

        Raises `ConfigError` listing every conflict between different non-implicit routes (up
        to 1000), or a route name given twice.
        """
        return cls(entries, family_routes=family_routes, cache_size=cache_size)

    @property
    def entries(self) -> tuple[RoutePatterns, ...]:
        """The routes indexed, as given."""
        return self._entries

    def resolve(self, model: str) -> Match | None:
        """The most specific pattern's route for `model` (any case), or None.

        Answers for model names up to 256 characters are cached (see `build`).
        """
        cache = self._cache
        if model in cache:
            cache.move_to_end(model)
            return cache[model]
        lowered = model.lower()
        result = _decide(lowered, self._table.lookup(lowered))
        if self._cache_size and len(model) <= _MAX_CACHED_LENGTH:
            cache[model] = result
            if len(cache) > self._cache_size:
                cache.popitem(last=False)
        return result

    def resolve_family(self, model: str) -> Match | None:
        """The family route serving `model` by its family's default patterns.

        Call it only after `resolve` found nothing, so a family route never changes where an
        already-routed model goes.
        """
        lowered = model.lower()
        return _decide(lowered, self._family.lookup(lowered))

    def closest(self, model: str) -> tuple[str, ModelPattern] | None:
        """The route and pattern nearest to `model`, for the NO_ROUTE message.

        Nearest: the longest common prefix of pattern text and model, then the higher
        specificity, then the route name. None when the index holds no pattern.
        """
        hit = self._nearest.find(model.lower())
        return None if hit is None else (hit.entry.route, hit.pattern)


def _check_unique(entries: Sequence[RoutePatterns]) -> None:
    seen: set[str] = set()
    for entry in entries:
        if entry.route in seen:
            where = entry.path or entry.route
            rule = f'route "{entry.route}" is given twice'
            raise ConfigError(f"{where}: {rule}", [(where, rule)])
        seen.add(entry.route)


def _conflict_error(found: list[Conflict]) -> ConfigError:
    listed = sorted(found[:_MAX_LISTED], key=lambda conflict: (conflict.position, conflict.message))
    lines = [f"{conflict.path}: {conflict.message}" for conflict in listed]
    if len(found) > _MAX_LISTED:
        lines.append(f"... and more conflicts (the first {_MAX_LISTED} are listed)")
    return ConfigError("\n".join(lines), [(conflict.path, conflict.message) for conflict in listed])


def no_route_message(model: str, closest: tuple[str, ModelPattern] | None) -> str:
    """The NO_ROUTE message when no route serves `model`, naming the closest route and pattern
    if any."""
    advice = "add the model to a route's model patterns"
    if closest is None:
        return f'no route serves model "{model}"; {advice}'
    route, pattern = closest
    return (
        f'no route serves model "{model}": the closest route is "{route}"'
        f" (model pattern {pattern}); {advice}"
    )


def no_route_error(model: str, closest: tuple[str, ModelPattern] | None) -> NoRoute:
    """`NoRoute` (503 NO_ROUTE) carrying `no_route_message`."""
    return NoRoute(no_route_message(model, closest))


def ambiguity_message(model: str, match: Match) -> str:
    """The UPSTREAM_AMBIGUOUS message naming the tied routes and their patterns."""
    tied = ", ".join(
        f'"{route}" (model pattern {pattern})'
        for route, pattern in zip(match.routes, match.patterns, strict=True)
    )
    return (
        f'implicit routes {tied} tie for model "{model}" and not exactly one of them is of'
        " its family; put their providers in one route"
    )


def ambiguity_error(model: str, match: Match) -> UpstreamAmbiguous:
    """`UpstreamAmbiguous` (503 UPSTREAM_AMBIGUOUS) carrying `ambiguity_message`."""
    return UpstreamAmbiguous(ambiguity_message(model, match))
