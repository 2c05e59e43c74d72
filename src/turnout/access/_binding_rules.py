"""Validation and compilation of access bindings, behind `turnout.access.bindings`.

`compile_bindings` turns configured bindings into one `GrantRow` per (enabled binding, subject,
grant) and lists every problem with its path, HTTP status and code, so that the config file
and the planned admin API can share one validator and the API can tell a 400 from a 409.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, NamedTuple

from turnout.access.patterns import ModelPattern, overlaps
from turnout.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from turnout.schema import (
        BindingConfig,
        GrantConfig,
        RequireConfig,
        RouteConfig,
        SubjectConfig,
    )

__all__ = [
    "EVERYONE",
    "SUBJECT_LEVELS",
    "GrantRow",
    "Problem",
    "RouteModels",
    "Subject",
    "compile_bindings",
]

SUBJECT_LEVELS: Final = {
    "workload": 0,
    "workload_blueprint": 1,
    "team": 2,
    "group": 2,
    "user": 2,
    "agent": 2,
    "agent_label": 2,
    "key": 2,
    "everyone": 3,
}
"""Subject kinds by precedence level: lower wins."""

_SUBJECT_FIELDS: Final = (
    "everyone",
    "user",
    "team",
    "group",
    "agent",
    "agent_label",
    "workload",
    "workload_blueprint",
    "key",
)


class Subject(NamedTuple):
    """One subject of a binding: a kind of `SUBJECT_LEVELS` and a value (`""` for everyone)."""

    kind: str
    value: str

    @property
    def level(self) -> int:
        """Its precedence level (`SUBJECT_LEVELS`)."""
        return SUBJECT_LEVELS[self.kind]

    def __str__(self) -> str:
        return "everyone" if self.kind == "everyone" else f'{self.kind} "{self.value}"'


EVERYONE: Final = Subject("everyone", "")


class Problem(NamedTuple):
    """One validation problem: where, what, and the status and code the planned admin API
    would answer it with."""

    path: str
    message: str
    status: int = 400
    code: str = "VALIDATION_FAILED"


class GrantRow(NamedTuple):
    """One grant of one enabled binding, reachable through one of its subjects."""

    binding: str
    allow: bool
    subject: Subject
    pattern: ModelPattern
    grant: GrantConfig
    require: RequireConfig


@dataclass(frozen=True, slots=True)
class RouteModels:
    """What a route serves, as grants see it: model patterns, alias names (lower case) and its
    own name."""

    name: str
    patterns: tuple[ModelPattern, ...] = ()
    aliases: frozenset[str] = frozenset()
    enabled: bool = True

    @classmethod
    def from_config(cls, route: RouteConfig) -> RouteModels:
        """From a configured route; an invalid pattern is left out (its own validator reports
        it)."""
        patterns: list[ModelPattern] = []
        for text in route.models:
            try:
                patterns.append(ModelPattern.parse(text))
            except ConfigError:
                continue
        aliases = frozenset(alias.lower() for alias in route.aliases)
        return cls(route.name, tuple(patterns), aliases, route.enabled)

    def serves(self, model: str) -> bool:
        """A pattern of the route matches `model` (any case), or `model` is an alias or the
        route's name (a route is reached by its name too)."""
        lowered = model.lower()
        return (
            lowered in self.aliases
            or lowered == self.name.lower()
            or any(own.matches_lowered(lowered) for own in self.patterns)
        )

    def serves_some(self, pattern: ModelPattern) -> bool:
        """Some model that `pattern` covers is one this route serves."""
        return (
            any(overlaps(pattern, own) for own in self.patterns)
            or any(pattern.matches_lowered(alias) for alias in self.aliases)
            or pattern.matches(self.name)
        )


def compile_bindings(
    bindings: Sequence[BindingConfig], routes: Mapping[str, RouteModels] | None
) -> tuple[list[GrantRow], list[Problem]]:
    """The grant rows of the enabled bindings, and every problem found in all of them.

    `routes` (by name) enables the checks of the routes grants name; None skips them.
    """
    rows: list[GrantRow] = []
    problems: list[Problem] = []
    names: dict[str, int] = {}
    steering: dict[tuple[Subject, str], tuple[str, str]] = {}
    for index, binding in enumerate(bindings):
        path = f"bindings[{index}]"
        if binding.name in names:
            problems.append(
                Problem(
                    f"{path}.name",
                    f'binding name "{binding.name}" is already used by bindings'
                    f"[{names[binding.name]}]",
                )
            )
        names.setdefault(binding.name, index)
        subjects = _subjects(binding.subjects, path, problems)
        grants = _grants(binding, path, routes, problems)
        if not binding.enabled:
            continue
        allow = binding.mode == "allow"
        for subject in subjects:
            for position, grant, pattern in grants:
                rows.append(GrantRow(binding.name, allow, subject, pattern, grant, binding.require))
                if allow and grant.route is not None:
                    where = f"{path}.grants[{position}].route"
                    problem = _steering_conflict(steering, binding.name, subject, pattern, grant)
                    if problem is not None:
                        problems.append(Problem(where, problem, 409, "route_grant_conflict"))
    return rows, problems


def _subjects(
    configs: Sequence[SubjectConfig], path: str, problems: list[Problem]
) -> list[Subject]:
    found: dict[Subject, None] = {}
    for index, config in enumerate(configs):
        where = f"{path}.subjects[{index}]"
        given = [(name, getattr(config, name)) for name in _SUBJECT_FIELDS]
        given = [(name, value) for name, value in given if value is not None]
        if len(given) != 1:
            rule = f"a subject sets exactly one of {', '.join(_SUBJECT_FIELDS)}"
            problems.append(Problem(where, rule))
            continue
        kind, value = given[0]
        if kind == "everyone":
            if value is not True:
                problems.append(Problem(f"{where}.everyone", "everyone may only be true"))
                continue
            found[EVERYONE] = None
            continue
        text = _subject_value(kind, str(value))
        if not text:
            problems.append(Problem(f"{where}.{kind}", f"a {kind} subject may not be empty"))
            continue
        found[Subject(kind, text)] = None
    return list(found)


def _subject_value(kind: str, value: str) -> str:
    text = value.strip()
    if kind != "agent_label":
        return text
    name, equals, label = text.partition("=")
    name = name.strip()
    if not name:
        return ""
    return f"{name}={label.strip()}" if equals else name


def _grants(
    binding: BindingConfig,
    path: str,
    routes: Mapping[str, RouteModels] | None,
    problems: list[Problem],
) -> list[tuple[int, GrantConfig, ModelPattern]]:
    found: list[tuple[int, GrantConfig, ModelPattern]] = []
    if binding.mode == "deny" and not binding.grants:
        rule = "a deny binding needs a grant naming the models it denies ('*' for every model)"
        problems.append(Problem(f"{path}.grants", rule))
    for index, grant in enumerate(binding.grants):
        where = f"{path}.grants[{index}]"
        try:
            pattern = ModelPattern.parse(grant.models, path=f"{where}.models")
        except ConfigError as exc:
            problems.extend(Problem(at, rule) for at, rule in exc.errors)
            continue
        if grant.route is not None:
            if binding.mode == "deny":
                rule = "only an allow binding's grant may name a route; a deny never steers"
                problems.append(Problem(f"{where}.route", rule))
            elif routes is not None and (found_rule := _route_rule(grant.route, pattern, routes)):
                problems.append(Problem(f"{where}.route", found_rule))
        found.append((index, grant, pattern))
    return found


def _route_rule(name: str, pattern: ModelPattern, routes: Mapping[str, RouteModels]) -> str | None:
    served = routes.get(name)
    if served is None:
        return f'no route named "{name}"; a grant must name a route the router serves'
    if not served.enabled:
        return f'route "{name}" is disabled; a grant must name a route the router serves'
    if served.serves_some(pattern):
        return None
    patterns = ", ".join(str(own) for own in served.patterns) or "none"
    aliases = ", ".join(sorted(served.aliases)) or "none"
    return (
        f'route "{name}" serves none of the models "{pattern}" covers (its model patterns:'
        f" {patterns}; its aliases: {aliases})"
    )


def _steering_conflict(
    steering: dict[tuple[Subject, str], tuple[str, str]],
    binding: str,
    subject: Subject,
    pattern: ModelPattern,
    grant: GrantConfig,
) -> str | None:
    route = grant.route or ""
    held = steering.setdefault((subject, pattern.text), (binding, route))
    if held[0] == binding or held[1] == route:
        return None
    return (
        f'binding "{binding}" grants {subject} model pattern "{pattern}" through route'
        f' "{route}", but binding "{held[0]}" grants the same subject and pattern through'
        f' route "{held[1]}"'
    )
