"""The per-request plan of a route: the credential filter, the org-key fallback for callers'
own credentials, and the policy and data-handling verdict of each target, handed to the engine
as a `turnout.routing.plan.RequestPlan`.

Rule 1: the credential filter. A caller with its own provider credential is served only by
passthrough targets, any other caller only by org-key targets. Under `auth: open` nothing is
filtered, except that a passthrough target is never called without a credential to forward.
Rule 2: a caller's credential goes only to passthrough targets of the client's family (openai
for chat completions and embeddings, anthropic for messages) or of no family, and among those
only to one audience: the upstream origin (scheme, host, port of the provider's base URL) of
the first such target of the route asked, in the route's order. Forwarding it to another vendor
would leak it: two `openai-compatible` providers have no family and may be two vendors. The
other passthrough targets are removed by the filter, on fallback routes too.
Rule 3: with the route's `org_key_fallback_for_caller_credentials` and at least one
passthrough target left, the org-key targets of the client's family (or of no family) follow
as fallbacks (the engine's plan Rule 3).
Rule 4: an empty filter on the route asked is 503 NO_ROUTE, with a message naming the kind of
target the route lacks for this caller; on a fallback route it only leaves that hop nothing to
call (the filter is re-applied on every fallback hop).
Rule 5: policies and data-handling requirements (of the key, and of the winning binding) give
each target its verdict; when every target left that could start is denied and none of them
has an eligibility rule, the request is refused with 403 POLICY_DENIED before any call (else
the engine finds it out the same way, after eligibility).
Rule 6: plans are kept per (route, client family, kind of caller, requirements) in a bounded
LRU; a request only adds its credential. A keyed caller without a credential of its own, on a
configuration without passthrough providers, policies or requirements, costs one check (two
on a route with `allow_cross_provider` or a fallback route that has it).
Rule 7: on a route with `allow_cross_provider` whose remaining targets span two or more
provider families, each target's rule names its family and the plan switches family on quota
as the route's `switch_family_on_quota` says (the engine's plan Rules 7 and 8); the session's
pin is added per request (`turnout.gateway.runtime.pins`).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING, Final, Literal
from urllib.parse import urlsplit

from turnout.access.bindings import IMPLICIT_GRANT
from turnout.access.keys import NO_REQUIREMENTS
from turnout.access.policies import CLEAR, Policies, ProviderFacts, target_family
from turnout.errors import NoRoute, PolicyDenied, RoutingError
from turnout.providers import facts_of
from turnout.routing.plan import CallerCredential, RequestPlan, TargetPlan, TargetRule

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping

    from turnout.access.bindings import AccessPolicy, Decision
    from turnout.access.keys import Caller, Credentials
    from turnout.gateway.runtime.route_entry import Endpoint, Resolution, RouteEntry
    from turnout.routing.route import Route
    from turnout.schema import FileConfig, RouteConfig

__all__ = ["CLIENT_FAMILIES", "CallerKind", "RequestPlanner"]

CallerKind = Literal["own", "org", "open_own", "open"]
"""`own`/`org`: a keyed caller with / without its own credential; `open_own`/`open`: the same
under `auth: open` (no filter)."""

CLIENT_FAMILIES: Final[Mapping[str, str]] = {
    "chat": "openai",
    "embeddings": "openai",
    "messages": "anthropic",
    "count_tokens": "anthropic",
}
"""The provider family of each endpoint's client API."""

DEFAULT_CACHE_SIZE = 4096
_NOTHING: Final = "nothing"  # a cached "no plan needed"


class _Refusal:
    """A cached refusal; `error(model)` builds a fresh exception each time."""

    __slots__ = ("denied", "text")

    def __init__(self, text: str, *, denied: bool) -> None:
        self.text = text
        self.denied = denied

    def error(self, model: str) -> RoutingError:
        if self.denied:
            return PolicyDenied(self.text)
        return NoRoute(self.text.format(model=model))


_Planned = RequestPlan | _Refusal | str


class RequestPlanner:
    """Builds and caches the plans of one runtime's routes (see the module rules)."""

    __slots__ = (
        "_access",
        "_cache",
        "_cache_size",
        "_checks_targets",
        "_configs",
        "_cross",
        "_facts",
        "_families",
        "_has_passthrough",
        "_modes",
        "_open",
        "_policies",
        "_provider_configs",
        "_route_configs",
    )

    def __init__(
        self,
        config: FileConfig,
        routes: Mapping[str, RouteEntry],
        credential_modes: Mapping[str, str],
        access: AccessPolicy,
        *,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        """`config` is a validated configuration (its policies compile); `routes` its entries;
        `credential_modes` provider name -> `org_key` | `passthrough`; `access` its bindings."""
        self._open = config.server.auth == "open"
        self._modes = dict(credential_modes)
        self._has_passthrough = "passthrough" in self._modes.values()
        self._facts = {p.name: ProviderFacts.from_config(p) for p in config.providers}
        self._families = {name: facts.family for name, facts in self._facts.items()}
        self._provider_configs = {p.name: p for p in config.providers}
        self._configs: dict[str, RouteConfig | None] = {
            name: entry.config for name, entry in routes.items()
        }
        self._route_configs = config.routes
        self._policies = Policies.from_config(config.policies)
        self._access = access
        requirements = any(key.require != NO_REQUIREMENTS for key in config.keys) or any(
            binding.require != NO_REQUIREMENTS for binding in config.bindings
        )
        self._checks_targets = bool(config.policies) or requirements
        self._cross = _cross_provider_routes(config.routes)
        self._cache: OrderedDict[Hashable, _Planned] = OrderedDict()
        self._cache_size = max(cache_size, 0)

    def plan_for(
        self,
        resolution: Resolution,
        caller: Caller,
        credentials: Callable[[], Credentials],
        *,
        endpoint: Endpoint,
    ) -> RequestPlan | None:
        """The plan of one request to `resolution.route` on `endpoint`, or None when the route
        is walked as configured. `credentials()` reads the request's credential headers (only
        when needed). Raises `NoRoute` (503) for an empty credential filter or `PolicyDenied`
        (403) for a deny covering every target (Rules 4 and 5)."""
        own = None
        if not self._open:
            own = credentials().own_credential
            if (
                own is None
                and not self._has_passthrough
                and not self._checks_targets
                and resolution.route.name not in self._cross
            ):
                return None  # Rule 6: the common case
            kind: CallerKind = "own" if own is not None else "org"
        else:
            if self._has_passthrough:
                own = credentials().own_credential
            kind = "open_own" if own is not None else "open"
        route = resolution.route
        decision = self._decision(caller, resolution.requested_model)
        planned = self._planned(route, endpoint, kind, caller, decision)
        if isinstance(planned, _Refusal):
            raise planned.error(resolution.requested_model or route.name)
        if isinstance(planned, str):
            return None
        if own is None or not planned.needs_credential:
            return planned
        return planned.with_credential(
            CallerCredential(own.secret, bearer=own.header == "authorization")
        )

    def serves(self, resolution: Resolution, *, own_credential: bool, endpoint: Endpoint) -> bool:
        """Would the credential filter leave `resolution.route` a target for a caller with (or
        without) its own credential? (For `GET /v1/models`.)"""
        kind: CallerKind
        if self._open:
            kind = "open_own" if own_credential else "open"
        else:
            kind = "own" if own_credential else "org"
        route = resolution.route
        family = CLIENT_FAMILIES[endpoint]
        audience = self._audience(route, family) if own_credential else None
        return bool(self._rules(route, family, kind, None, None, audience=audience))

    # -- building

    def _decision(self, caller: Caller, model: str) -> Decision:
        if not self._checks_targets or not model or self._access.is_open:
            return IMPLICIT_GRANT
        return self._access.decide(caller, model)

    def _planned(
        self, route: Route, endpoint: Endpoint, kind: CallerKind, caller: Caller, decision: Decision
    ) -> _Planned:
        family = CLIENT_FAMILIES[endpoint]
        requires = None
        if self._checks_targets:
            own = caller.require != NO_REQUIREMENTS
            bound = decision.require != NO_REQUIREMENTS
            requires = (
                caller.key if own else None,
                caller.require if own else None,
                decision.binding if bound else None,
                decision.require if bound else None,
            )
        key = (route, family, kind, requires)
        cache = self._cache
        found = cache.get(key)
        if found is not None:
            cache.move_to_end(key)
            return found
        found = self._build(route, family, kind, caller, decision)
        if self._cache_size:
            cache[key] = found
            if len(cache) > self._cache_size:
                cache.popitem(last=False)
        return found

    def _build(
        self, route: Route, family: str, kind: CallerKind, caller: Caller, decision: Decision
    ) -> _Planned:
        plans: dict[Route, TargetPlan] = {}
        trivial = True
        audience = self._audience(route, family) if kind in ("own", "open_own") else None
        for each in _with_fallbacks(route):
            rules = self._rules(each, family, kind, caller, decision, audience=audience)
            if each is route and not rules:
                return _Refusal(_empty_filter_message(route.name, kind), denied=False)
            if each is route:
                denial = _denial(route, rules)
                if denial is not None:
                    return _Refusal(denial, denied=True)
            trivial = trivial and len(rules) == len(each.targets) and _plain(rules)
            config = self._configs.get(each.name)
            switch = config is None or config.switch_family_on_quota
            plans[each] = TargetPlan(each, rules, switch_family_on_quota=switch)
        return _NOTHING if trivial else RequestPlan(plans)

    def _rules(
        self,
        route: Route,
        family: str,
        kind: CallerKind,
        caller: Caller | None,
        decision: Decision | None,
        *,
        audience: str | None = None,
    ) -> dict[int, TargetRule]:
        """Rules 1-3 and 5 for the targets of `route` (without a caller: no verdicts); a
        caller's credential goes only to passthrough targets at `audience` (Rule 2)."""
        with_credential = kind in ("own", "open_own")
        allowed: dict[int, bool] = {}  # index -> is a fallback target
        for index, provider in enumerate(route.providers):
            passthrough = self._modes.get(provider) == "passthrough"
            if passthrough:
                if (
                    with_credential
                    and self._families.get(provider, "none") in (family, "none")
                    and _origin(route, index) == audience
                ):
                    allowed[index] = False
            elif kind != "own":
                allowed[index] = False
        if kind == "own" and allowed and self._org_key_fallback(route.name):
            for index, provider in enumerate(route.providers):
                org_key = self._modes.get(provider) != "passthrough"
                if org_key and self._families.get(provider, "none") in (family, "none"):
                    allowed[index] = True
        families = self._target_families(route, allowed)
        rules: dict[int, TargetRule] = {}
        for index, fallback in allowed.items():
            provider = route.providers[index]
            verdict = CLEAR
            if caller is not None and decision is not None and self._checks_targets:
                facts = self._facts.get(provider, ProviderFacts(provider))
                verdict = self._policies.check_target(caller, decision, facts, route.name)
            rules[index] = TargetRule(
                caller_credential=self._modes.get(provider) == "passthrough",
                fallback=fallback,
                skip=verdict.reason if verdict.skipped else None,
                shadow=verdict.shadow,
                family=families.get(index),
            )
        return rules

    def _audience(self, route: Route, family: str) -> str | None:
        """Rule 2: the origin of the first passthrough target of `route` that a credential of
        the client's `family` may go to (None: there is none)."""
        for index, provider in enumerate(route.providers):
            if self._modes.get(provider) == "passthrough" and self._families.get(
                provider, "none"
            ) in (family, "none"):
                return _origin(route, index)
        return None

    def unreachable(self, entries: Mapping[str, RouteEntry]) -> list[tuple[str, str]]:
        """Load-time warnings, as `(path, message)`, for the passthrough targets of configured
        routes that no caller's own credential can reach (Rule 2: on no endpoint is the target
        at the one origin a request's credential goes to)."""
        found: list[tuple[str, str]] = []
        for i, config in enumerate(self._route_configs):
            entry = entries.get(config.name)
            if entry is None:
                continue
            reached: set[str] = set()
            audiences: list[str] = []
            origins: dict[str, str] = {}
            for endpoint, engine in (("chat", entry.route), ("messages", entry.messages_route)):
                if engine is None:
                    continue
                for index, built in enumerate(engine.targets):
                    origins[built.name] = _origin(engine, index)
                family = CLIENT_FAMILIES[endpoint]
                audience = self._audience(engine, family)
                if audience is None:
                    continue
                if audience not in audiences:
                    audiences.append(audience)
                rules = self._rules(engine, family, "own", None, None, audience=audience)
                reached.update(engine.targets[index].name for index in rules)
            if not audiences:
                continue  # no passthrough target at all
            for j, target in enumerate(config.targets):
                name = target.display_name
                passthrough = self._modes.get(target.provider) == "passthrough"
                if not passthrough or name in reached or name not in origins:
                    continue
                message = (
                    f'passthrough provider "{target.provider}" at {origins[name]} never receives a '
                    "caller's own credential: a request's credential goes to one upstream "
                    f"only, the route's first passthrough target's ({' or '.join(audiences)})"
                )
                found.append((f"routes[{i}].targets[{j}]", message))
        return found

    def _target_families(self, route: Route, kept: Mapping[int, bool]) -> dict[int, str]:
        """Rule 7: each kept target's family, when the route orders by family (else empty)."""
        config = self._configs.get(route.name)
        if config is None or not config.allow_cross_provider:
            return {}
        families = {index: self._target_family(route, index) for index in kept}
        return families if len(set(families.values())) > 1 else {}

    def _target_family(self, route: Route, index: int) -> str:
        """The family of target `index` of `route`: a `vertex` target's follows its model."""
        provider = self._provider_configs.get(route.providers[index])
        if provider is None:
            return self._families.get(route.providers[index], "none")
        return target_family(provider, route.targets[index].model)

    def _org_key_fallback(self, route: str) -> bool:
        config = self._configs.get(route)
        return config is not None and config.org_key_fallback_for_caller_credentials


def _origin(route: Route, index: int) -> str:
    """Where target `index` of `route` sends its calls: the scheme, host and port of its
    client's base URL (the provider's name when the client has none)."""
    base_url = facts_of(route.targets[index].client).base_url
    return _origin_of(base_url, route.providers[index])


def _origin_of(base_url: object, provider: str) -> str:
    if not isinstance(base_url, str) or not base_url:
        return f"provider:{provider}"
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _with_fallbacks(route: Route) -> Iterator[Route]:
    """`route`, then every fallback route reachable from it (each once)."""
    seen: set[int] = set()
    stack = [route]
    while stack:
        each = stack.pop(0)
        if id(each) in seen:
            continue
        seen.add(id(each))
        yield each
        stack.extend(each.fallbacks)


def _cross_provider_routes(routes: Iterable[RouteConfig]) -> frozenset[str]:
    """The routes that may order by family: `allow_cross_provider` on the route or on a route
    its fallbacks reach (Rule 7)."""
    by_name = {route.name: route for route in routes if route.enabled}
    found: set[str] = set()
    for name in by_name:
        seen: set[str] = set()
        stack = [name]
        while stack:
            each = stack.pop()
            config = by_name.get(each)
            if each in seen or config is None:
                continue
            seen.add(each)
            if config.allow_cross_provider:
                found.add(name)
                break
            fallbacks = config.fallbacks
            stack.extend((*fallbacks.general, *fallbacks.context, *fallbacks.content))
    return frozenset(found)


def _plain(rules: Mapping[int, TargetRule]) -> bool:
    """Nothing for the engine to do: no credential, no fallback, no verdict."""
    return all(rule == TargetRule() for rule in rules.values())


def _denial(route: Route, rules: Mapping[int, TargetRule]) -> str | None:
    """Rule 5: the POLICY_DENIED message when every target that could start is denied."""
    targets = route.targets
    starting = [
        (index, rule)
        for index, rule in rules.items()
        if not rule.fallback and not targets[index].paused
    ]
    if not starting or any(rule.skip is None for _, rule in starting):
        return None
    if any(targets[index].has_eligibility_rules for index, _ in starting):
        return None  # ineligibility decides before policy: the engine checks
    reasons = "; ".join(dict.fromkeys(rule.skip or "" for _, rule in starting))
    return f'no target of route "{route.name}" may be called: {reasons}'


def _empty_filter_message(route: str, kind: CallerKind) -> str:
    """The NO_ROUTE messages of an empty credential filter (Rule 4); `{model}` is filled in
    per request."""
    name = route.replace("{", "{{").replace("}", "}}")
    if kind in ("own", "open_own"):
        return (
            'no route can serve model "{model}" for a caller with its own credential:'
            f' route "{name}" has no passthrough target'
        )
    return (
        'no route can serve model "{model}" for a caller without its own credential:'
        f' route "{name}" has no org-key target for it'
    )
