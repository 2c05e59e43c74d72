"""The route rules of the one validator (strategy and weights, attempt budget, breaker,
fallbacks, names, aliases and model patterns), behind `turnout.config.rules`.

Each rule reuses the engine's own check where one exists (strategies, weights, breaker, static
budget, fallbacks) and moves its error to the route's path, so that a route is refused with the
same words whether it is built in code or loaded from a file.
"""

from __future__ import annotations

import warnings
from collections import Counter
from itertools import islice
from typing import TYPE_CHECKING, Any, cast

from turnout.access.model_index import RoutePatterns, find_conflicts
from turnout.access.patterns import FAMILY_ROUTES, ModelPattern, PatternKind
from turnout.access.served_routes import parse_patterns
from turnout.errors import ConfigError
from turnout.routing.health import Breaker
from turnout.routing.options import Fallbacks, check_static_budget
from turnout.routing.strategy_settings import strategy_from_config, validate_weights

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence

    from turnout.routing.target import Target
    from turnout.schema import FileConfig, RouteConfig

__all__ = [
    "check_aliases",
    "check_fallbacks",
    "check_patterns",
    "check_policy_options",
    "check_reserved_names",
    "static_budget_warnings",
]

Problems = list[tuple[str, str]]
_MAX_CONFLICTS = 1000
"""Overlaps listed at most (a bad pattern can overlap every other route's)."""


def _repath(base: str, exc: ConfigError) -> Problems:
    """The errors of an engine check, moved under `base` (e.g. `routes[2]`)."""
    found = exc.errors or (("", str(exc)),)
    return [(f"{base}.{where}" if where else base, rule) for where, rule in found]


def _engine_check(base: str, check: Callable[[], object]) -> Problems:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            check()
    except ConfigError as exc:
        return _repath(base, exc)
    return []


def check_policy_options(config: FileConfig) -> Problems:
    """Strategy, weights, breakers and the static attempt budget of every route, and the
    default breaker."""
    problems = _breaker_problems("defaults.circuit_breaker", config.defaults.circuit_breaker)
    for r, route in enumerate(config.routes):
        problems.extend(_route_policy_problems(f"routes[{r}]", route))
    return problems


def _route_policy_problems(base: str, route: RouteConfig) -> Problems:
    problems = _engine_check(base, lambda: strategy_from_config(route.strategy, path="strategy"))
    if not problems:
        problems.extend(_weight_problems(base, route))
    if route.circuit_breaker is not None:
        problems.extend(_breaker_problems(f"{base}.circuit_breaker", route.circuit_breaker))
    targets = _as_targets(route)
    problems.extend(
        _engine_check(base, lambda: check_static_budget(route.name, targets, route.max_attempts))
    )
    return problems


def _weight_problems(base: str, route: RouteConfig) -> Problems:
    spec = route.strategy
    kind = spec if isinstance(spec, str) else str(spec.get("type", "failover"))
    weights = [target.weight for target in route.targets]
    only = [target.fallback_only for target in route.targets]
    return _engine_check(base, lambda: validate_weights(weights, only, kind, "targets"))


def _breaker_problems(path: str, breaker: Any) -> Problems:
    try:
        Breaker.from_config(breaker.model_dump(), path=path)
    except ConfigError as exc:
        return list(exc.errors) or [(path, str(exc))]
    return []


def _as_targets(route: RouteConfig) -> Sequence[Target]:
    # The budget reads only `max_retries`, which target configs carry under the same name.
    return cast("Sequence[Target]", route.targets)


def static_budget_warnings(config: FileConfig) -> Problems:
    """A route whose targets allow more attempts than its own `max_attempts`: accepted,
    with the engine's warning naming both numbers."""
    found: Problems = []
    for r, route in enumerate(config.routes):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            try:
                check_static_budget(route.name, _as_targets(route), route.max_attempts)
            except ConfigError:
                continue  # over the maximum: an error, reported by `check_policy_options`
        found.extend((f"routes[{r}].max_attempts", str(w.message)) for w in caught)
    return found


# ---- fallbacks ----------------------------------------------------------------------------


def check_fallbacks(config: FileConfig) -> Problems:
    """Fallback routes: each exists in the project and is enabled when the route is;
    then the engine's rules: at most 3 in total, no self-reference, no cycle across routes
    within one kind."""
    by_name: dict[str, RouteConfig] = {}
    for route in config.routes:
        by_name.setdefault(route.name, route)
    problems: Problems = []
    for r, route in enumerate(config.routes):
        problems.extend(_fallback_problems(f"routes[{r}]", route, by_name))
    return problems


def _fallback_problems(
    base: str, route: RouteConfig, by_name: Mapping[str, RouteConfig]
) -> Problems:
    problems: Problems = []
    known: dict[str, list[RouteConfig]] = {}
    for kind in ("general", "context", "content"):
        for i, name in enumerate(getattr(route.fallbacks, kind)):
            where = f"{base}.fallbacks.{kind}[{i}]"
            other = by_name.get(name)
            if other is None:
                problems.append((where, f'no route named "{name}" in the project'))
                continue
            if route.enabled and not other.enabled and other is not route:
                problems.append((where, f'route "{name}" is disabled'))
            known.setdefault(kind, []).append(other)

    def fallbacks_of(other: RouteConfig, kind: str) -> Iterator[RouteConfig]:
        for name in getattr(other.fallbacks, kind):
            if name in by_name:
                yield by_name[name]

    problems.extend(
        _engine_check(
            base,
            lambda: Fallbacks.build(
                known,
                route=route.name,
                name_of=lambda other: other.name,
                fallbacks_of=fallbacks_of,
                is_route=lambda _: True,
            ),
        )
    )
    return problems


# ---- names, aliases and patterns ----------------------------------------------------------


def check_reserved_names(config: FileConfig) -> Problems:
    """The family route names (`openai-family`, `anthropic-family`) belong to the family
    routes: no provider or route may take them."""
    reserved = set(FAMILY_ROUTES.values())
    named = [("providers", i, p.name) for i, p in enumerate(config.providers)]
    named += [("routes", i, r.name) for i, r in enumerate(config.routes)]
    return [
        (f"{kind}[{i}].name", f'name "{name}" is reserved for a family route')
        for kind, i, name in named
        if name.lower() in reserved
    ]


def _exact_patterns(config: FileConfig) -> dict[str, str]:
    """Lower-cased exact model patterns of the routes -> the first route holding each."""
    exact: dict[str, str] = {}
    for route in config.routes:
        for pattern in parse_patterns(route.models):
            if pattern.kind is PatternKind.EXACT:
                exact.setdefault(pattern.literal, route.name)
    return exact


def check_aliases(config: FileConfig) -> Problems:
    """Aliases: no wildcard, no repeat within the route (aliases ignore
    case), not another route's name, exact pattern or alias; each entry names a target or a
    provider of the route. A route name may not be another route's alias or exact pattern.
    A clash between a name and an alias is reported once, on the later route in the file."""
    earlier: dict[str, str] = {}
    exact = _exact_patterns(config)
    owners: dict[str, tuple[str, int]] = {}
    problems: Problems = []
    for r, route in enumerate(config.routes):
        seen: dict[str, str] = {}
        for alias, mapping in route.aliases.items():
            where = f"routes[{r}].aliases.{alias}"
            lowered = alias.lower()
            owner = owners.get(lowered, (route.name, r))[0]
            rule = _alias_rule(
                alias, route=route.name, seen=seen, names=earlier, exact=exact, owner=owner
            )
            if rule is not None:
                problems.append((where, rule))
            seen.setdefault(lowered, alias)
            owners.setdefault(lowered, (route.name, r))
            problems.extend(_alias_entries(where, route, mapping))
        earlier.setdefault(route.name.lower(), route.name)
    for r, route in enumerate(config.routes):
        lowered = route.name.lower()
        owner, position = owners.get(lowered, (route.name, r))
        if position < r:
            rule = f'route name "{route.name}" is an alias of route "{owner}"'
            problems.append((f"routes[{r}].name", rule))
        holder = exact.get(lowered)
        if holder is not None and holder != route.name:
            rule = f'route name "{route.name}" is an exact model pattern of route "{holder}"'
            problems.append((f"routes[{r}].name", rule))
    return problems


def _alias_rule(
    alias: str,
    *,
    route: str,
    seen: Mapping[str, str],
    names: Mapping[str, str],
    exact: Mapping[str, str],
    owner: str,
) -> str | None:
    lowered = alias.lower()
    if not alias or "*" in alias or any(char.isspace() for char in alias):
        return f'alias "{alias}" must be a model name, without "*" or spaces'
    if lowered in seen:
        return (
            f'alias "{alias}" repeats alias "{seen[lowered]}" of this route (aliases ignore case)'
        )
    other = names.get(lowered)
    if other is not None and other != route:
        return f'alias "{alias}" is the name of route "{other}"'
    holder = exact.get(lowered)
    if holder is not None and holder != route:
        return f'alias "{alias}" is an exact model pattern of route "{holder}"'
    if owner != route:
        return f'alias "{alias}" is already an alias of route "{owner}"'
    return None


def _alias_entries(where: str, route: RouteConfig, mapping: Mapping[str, str]) -> Problems:
    if not mapping:
        return [(where, "an alias must map at least one target or provider to a model")]
    targets = {target.display_name for target in route.targets}
    providers = {target.provider for target in route.targets}
    problems: Problems = []
    for key, model in mapping.items():
        if key not in targets and key not in providers:
            problems.append(
                (f"{where}.{key}", f'names no target or provider of route "{route.name}"')
            )
        elif not model:
            problems.append((f"{where}.{key}", "must name the model to ask for"))
    return problems


def check_patterns(config: FileConfig) -> Problems:
    """Model patterns: each valid; no two enabled routes overlap at the same
    specificity (naming both routes and both patterns). Invalid patterns are reported and
    left out, so the overlaps of the valid ones are reported in the same pass."""
    problems: Problems = []
    entries: list[RoutePatterns] = []
    # route path -> the file index of each valid pattern, to locate a conflict in the file
    positions: dict[str, list[int]] = {}
    for r, route in enumerate(config.routes):
        base = f"routes[{r}]"
        valid: list[ModelPattern] = []
        for i, text in enumerate(route.models):
            try:
                valid.append(ModelPattern.parse(text, path=f"{base}.models[{i}]"))
            except ConfigError as exc:
                problems.extend(exc.errors)
                continue
            positions.setdefault(base, []).append(i)
        if route.enabled:
            entries.append(RoutePatterns(route.name, tuple(valid), created=r, path=base))
    for p, provider in enumerate(config.providers):
        for i, text in enumerate(provider.model_patterns):
            try:
                ModelPattern.parse(text, path=f"providers[{p}].model_patterns[{i}]")
            except ConfigError as exc:
                problems.extend(exc.errors)
    counts = Counter(entry.route for entry in entries)
    unique = [entry for entry in entries if counts[entry.route] == 1]
    found = list(islice(find_conflicts(unique), _MAX_CONFLICTS + 1))
    for conflict in sorted(found[:_MAX_CONFLICTS], key=lambda c: (c.position, c.message)):
        base, index = conflict.position
        problems.append((f"{base}.models[{positions[base][index]}]", conflict.message))
    if len(found) > _MAX_CONFLICTS:
        rule = f"more patterns overlap (the first {_MAX_CONFLICTS} overlaps are listed)"
        problems.append(("routes", rule))
    return problems
