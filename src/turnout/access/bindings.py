"""Access bindings and grants: who may use which model, and through which route.

An `AccessPolicy` is built once per project from its bindings (`from_config`, which validates
them) and never changes afterwards: a binding change builds a new policy, with an empty cache.

Rule 1: deny first. An enabled `deny` binding with a subject covering the caller and a grant
matching the model refuses with 403 POLICY_DENIED, whatever the allow grants say. Deny
bindings never steer.
Rule 2: the implicit Everyone grant. While no enabled allow binding grants any model, every
caller may use every model; the decision names no binding and no route.
Rule 3: otherwise the winning grant is the lowest of `(subject level, most specific pattern
first, a grant naming a route first, binding name, route name)` among the enabled allow grants
whose subject covers the caller and whose pattern matches the model. None -> 400 MODEL_DENIED.
Rule 4: subject levels: workload 0, workload blueprint 1, team, group, user, agent, agent label
and key 2, everyone 3. An `agent_label` subject `name=value` covers a caller whose label `name`
has that value; `name` alone covers any value of the label. `key` names a key by its name.
Rule 5: decisions are cached per (key name, identity, lower-cased model) in a bounded LRU owned
by the policy, so a rebuilt policy starts empty. The cache is not locked: use a policy from one
thread (the event loop).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from turnout.access._binding_rules import (
    EVERYONE,
    SUBJECT_LEVELS,
    GrantRow,
    Problem,
    RouteModels,
    Subject,
    compile_bindings,
)
from turnout.access.keys import NO_REQUIREMENTS
from turnout.errors import ConfigError, ModelDenied, NoRoute, PolicyDenied

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from turnout.access.keys import Caller, Identity
    from turnout.access.model_index import PatternIndex
    from turnout.access.patterns import ModelPattern
    from turnout.errors import RoutingError
    from turnout.schema import BindingConfig, GrantConfig, RequireConfig, RouteConfig

__all__ = [
    "EVERYONE",
    "IMPLICIT_GRANT",
    "SUBJECT_LEVELS",
    "AccessPolicy",
    "Decision",
    "Problem",
    "RouteModels",
    "Subject",
    "check_bindings",
    "grant_route_missing",
    "grant_route_not_serving",
    "route_models",
    "subjects_of",
]

DEFAULT_CACHE_SIZE = 4096
_MAX_CACHED_LENGTH = 256


def subjects_of(caller: Caller) -> frozenset[Subject]:
    """Every subject that covers `caller` (Rule 4); everyone covers every caller."""
    identity = caller.identity
    found = {EVERYONE}
    singles = (
        ("workload", identity.workload),
        ("workload_blueprint", identity.workload_blueprint),
        ("user", identity.user),
        ("agent", identity.agent),
        ("key", caller.key),
    )
    found.update(Subject(kind, value) for kind, value in singles if value)
    found.update(Subject("team", team) for team in identity.teams)
    found.update(Subject("group", group) for group in identity.groups)
    for name, value in identity.agent_labels:
        found.add(Subject("agent_label", f"{name}={value}"))
        found.add(Subject("agent_label", name))
    return frozenset(found)


@dataclass(frozen=True, slots=True)
class Decision:
    """The grant that lets a caller use a model (`AccessPolicy.decide`).

    `binding`, `grant` and `subject` are None for the implicit Everyone grant; `route` is the
    route the grant names (None: the model's own route); `require` is the winning binding's
    data-handling requirements.
    """

    binding: str | None = None
    grant: GrantConfig | None = None
    subject: Subject | None = None
    require: RequireConfig = NO_REQUIREMENTS

    @property
    def route(self) -> str | None:
        """The route the winning grant names, or None."""
        return self.grant.route if self.grant is not None else None

    @property
    def is_implicit(self) -> bool:
        """The implicit Everyone grant (no binding grants any model)."""
        return self.binding is None

    @property
    def granted_by(self) -> str:
        """The decision in words, e.g. `binding "x" (team "t": claude-* via r)`."""
        if self.grant is None:
            return "everyone (implicit grant)"
        via = f" via {self.grant.route}" if self.grant.route else ""
        return f'binding "{self.binding}" ({self.subject}: {self.grant.models}{via})'


IMPLICIT_GRANT: Final = Decision()
"""The decision while no enabled allow binding grants any model."""


@dataclass(frozen=True, slots=True)
class _Grant:
    """One compiled grant, reachable through one subject."""

    pattern: ModelPattern
    decision: Decision
    rank: tuple[int, bool, int, bool, str, str]


@dataclass(frozen=True, slots=True)
class _Refusal:
    """A cached refusal; the error is built per request so its message carries the model."""

    deny_binding: str | None = None
    subject: Subject | None = None
    unloaded: bool = False

    def error(self, model: str) -> RoutingError:
        if self.deny_binding is not None:
            return PolicyDenied(
                f'binding "{self.deny_binding}" denies model "{model}" to this caller'
                f" (subject {self.subject})"
            )
        if self.unloaded:
            return ModelDenied(
                f'model "{model}" is refused because access bindings have not loaded since'
                " startup; retry once they load, or ask an administrator to check the server log"
            )
        return ModelDenied(
            f'no access binding grants model "{model}" to this caller; ask an administrator'
            " to grant the model"
        )


_NO_GRANT: Final = _Refusal()
_Verdict = Decision | _Refusal


def check_bindings(
    bindings: Sequence[BindingConfig], routes: Mapping[str, RouteModels] | None = None
) -> list[Problem]:
    """Every problem with `bindings`, each with its path, status and code (one validator for
    the file and the planned admin API). `routes` (by name) enables the checks of the routes
    grants name; None skips them."""
    return compile_bindings(bindings, routes)[1]


def route_models(
    routes_by_name: Mapping[str, RouteConfig], index: PatternIndex | None = None
) -> dict[str, RouteModels]:
    """What each route serves: configured routes by their patterns and aliases, plus the routes
    of `index` (implicit provider routes) that are not configured."""
    found = {name: RouteModels.from_config(route) for name, route in routes_by_name.items()}
    for entry in index.entries if index is not None else ():
        found.setdefault(entry.route, RouteModels(entry.route, entry.patterns))
    return found


class AccessPolicy:
    """Bindings of one project, compiled for `decide` (see the module rules)."""

    __slots__ = ("_allow", "_cache", "_cache_size", "_deny", "_grants_any", "_loaded", "_routes")

    def __init__(
        self,
        rows: Iterable[GrantRow] = (),
        routes: Mapping[str, RouteModels] | None = None,
        *,
        cache_size: int = DEFAULT_CACHE_SIZE,
        loaded: bool = True,
    ) -> None:
        """Use `from_config`; this takes rows that are already validated."""
        self._allow: dict[Subject, list[_Grant]] = {}
        self._deny: dict[Subject, list[_Grant]] = {}
        for row in rows:
            table = self._allow if row.allow else self._deny
            table.setdefault(row.subject, []).append(_compile(row))
        # Best rank first: the first grant of a subject matching a model is its best one.
        for table in (self._allow, self._deny):
            for grants in table.values():
                grants.sort(key=lambda grant: grant.rank)
        self._grants_any = bool(self._allow)
        self._routes: Mapping[str, RouteModels] = dict(routes or {})
        self._cache: OrderedDict[tuple[str | None, Identity, str], _Verdict] = OrderedDict()
        self._cache_size = max(cache_size, 0)
        self._loaded = loaded

    @classmethod
    def from_config(
        cls,
        bindings: Sequence[BindingConfig],
        routes_by_name: Mapping[str, RouteConfig],
        index: PatternIndex | None = None,
        *,
        check_routes: bool = True,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> AccessPolicy:
        """Validate and compile `bindings` against the project's routes.

        `routes_by_name` are the configured routes; `index` adds the implicit provider routes
        grants may name. `check_routes=False` skips the checks of the routes grants name (for
        a reload after a route vanished from the file: those grants then fail closed with
        NO_ROUTE, see `grant_route_missing`). `cache_size` bounds the decision cache (entries;
        0 disables it; default 4096).

        Raises one `ConfigError` listing every problem: status 409 `route_grant_conflict` when
        every problem is such a conflict, else 400 `VALIDATION_FAILED`.
        """
        routes = route_models(routes_by_name, index)
        rows, problems = compile_bindings(bindings, routes if check_routes else None)
        if problems:
            raise _problems_error(problems)
        return cls(rows, routes, cache_size=cache_size)

    @classmethod
    def unloaded(cls) -> AccessPolicy:
        """The policy before bindings first load: every model is refused with MODEL_DENIED."""
        return cls(loaded=False, cache_size=0)

    @property
    def grants_any(self) -> bool:
        """Some enabled allow binding grants a model (the implicit grant is off)."""
        return self._grants_any

    @property
    def is_open(self) -> bool:
        """Every caller may use every model: loaded, no allow grant and no deny binding, so
        `decide` always returns `IMPLICIT_GRANT` (callers may skip it)."""
        return self._loaded and not self._grants_any and not self._deny

    def decide(self, caller: Caller, model: str) -> Decision:
        """The winning grant for `caller` and `model` (any case), per the module rules.

        Raises `PolicyDenied` (403 POLICY_DENIED) for a deny binding, or `ModelDenied` (400
        MODEL_DENIED) when no grant covers the caller and model.
        """
        lowered = model.lower()
        key = (caller.key, caller.identity, lowered)
        cache = self._cache
        verdict = cache.get(key)
        if verdict is None:
            verdict = self._evaluate(subjects_of(caller), lowered)
            if self._cache_size and len(lowered) <= _MAX_CACHED_LENGTH:
                cache[key] = verdict
                if len(cache) > self._cache_size:
                    cache.popitem(last=False)
        else:
            cache.move_to_end(key)
        if isinstance(verdict, _Refusal):
            raise verdict.error(model)
        return verdict

    def models_of(self, route: str) -> RouteModels | None:
        """What `route` serves as the policy was built (None for an unknown route)."""
        return self._routes.get(route)

    def granted_by(self, route: str) -> tuple[str, ...]:
        """Bindings whose grants reach `route`, in name order (for the planned dashboard's
        "Granted by").

        Grants that name the route, and grants that name no route whose pattern overlaps one
        of the route's; `("everyone",)` while the implicit grant is on.
        """
        if not self._grants_any:
            return ("everyone",) if self._loaded else ()
        served = self._routes.get(route)
        names = {
            grant.decision.binding or ""
            for grants in self._allow.values()
            for grant in grants
            if grant.decision.route == route
            or (
                grant.decision.route is None
                and served is not None
                and served.serves_some(grant.pattern)
            )
        }
        return tuple(sorted(names))

    def _evaluate(self, subjects: frozenset[Subject], model: str) -> _Verdict:
        if not self._loaded:
            return _Refusal(unloaded=True)
        deny = _best(self._deny, subjects, model)
        if deny is not None:
            return _Refusal(deny.decision.binding, deny.decision.subject)
        if not self._grants_any:
            return IMPLICIT_GRANT
        best = _best(self._allow, subjects, model)
        return _NO_GRANT if best is None else best.decision


def _best(
    table: Mapping[Subject, list[_Grant]], subjects: Iterable[Subject], model: str
) -> _Grant | None:
    """The best-ranked grant of `subjects` matching `model` (each list is in rank order)."""
    best: _Grant | None = None
    for subject in subjects:
        for grant in table.get(subject, ()):
            if grant.pattern.matches_lowered(model):
                if best is None or grant.rank < best.rank:
                    best = grant
                break
    return best


def _compile(row: GrantRow) -> _Grant:
    pattern, subject = row.pattern, row.subject
    decision = Decision(row.binding, row.grant, subject, row.require)
    specificity = pattern.specificity
    rank = (
        subject.level,
        not specificity.is_exact,
        -specificity.literals,
        row.grant.route is None,
        row.binding,
        row.grant.route or "",
    )
    return _Grant(pattern, decision, rank)


def _problems_error(problems: Sequence[Problem]) -> ConfigError:
    conflict = all(problem.status == 409 for problem in problems)
    first = problems[0] if conflict else next(p for p in problems if p.status != 409)
    return ConfigError(
        "\n".join(f"{problem.path}: {problem.message}" for problem in problems),
        [(problem.path, problem.message) for problem in problems],
        status=first.status,
        code=first.code,
    )


def grant_route_missing(model: str, decision: Decision) -> NoRoute:
    """503 NO_ROUTE: the winning grant names a route that does not exist or is disabled."""
    return NoRoute(
        f'the access binding grant for model "{model}" names route "{decision.route}", which'
        " does not exist or is disabled: restore the route or change the binding"
    )


def grant_route_not_serving(model: str, decision: Decision) -> NoRoute:
    """503 NO_ROUTE: the winning grant names a route that does not serve the model."""
    return NoRoute(
        f'the access binding grant for model "{model}" names route "{decision.route}", which'
        " does not serve it: add the model to the route's model patterns or change the binding"
    )
