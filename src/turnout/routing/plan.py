"""The per-request plan: which targets one request may use, in which order, with whose credential,
and what the policies say of each.

`Route.complete/stream/embed(..., plan=RequestPlan(...))` walks the route under the plan; without
one (the default) every target is walked as before, at no extra cost. A plan holds one
`TargetPlan` per route it covers (the route asked and its fallback routes: the credential
filter is re-applied after a hop) and, apart from them, the caller's own credential.

Rule 1: a target a `TargetPlan` leaves out (the credential filter) is never called and never
appears in the routing record.
Rule 2: the caller's credential reaches only targets whose rule says `caller_credential`,
through their client's `with_credential(credential)`, for one call. It never shows in a repr,
the routing record or an error, and cannot be pickled.
Rule 3: org-key fallback: `fallback` targets come after every other target of the route, in
list order, and are called only while the last caller-credential target reached failed
retryably (quota included); a target skipped by health, policy or eligibility on the way is not
a failure and closes the way again. An answer from one sets `credential_fallback` on the record.
Rule 4: a call made with the caller's credential never counts for health: whatever it ends as,
its admission is only released (nothing counted, cooled or parked).
Rule 5: a 401/403 on the caller's credential ends the request with that error; a quota failure
on it leaves the other caller-credential targets `not_tried` (the same credential) and opens
the way to the fallback targets.
Rule 6: a target whose rule has a `skip` reason is recorded `policy_skipped` with it, and not
called; `shadow` decisions (observe mode) are recorded on the target's call entries, and the
target is called. When policy skips alone leave no call, the request ends 403 POLICY_DENIED.
Rule 7: family order (cross-provider routes). When the rules give targets of two or more
provider families, a request prefers one family: the family the plan's `pins` name for the
route (a session's pin), else the family of the route's first target that may start; a pin
naming a family with no target that may start counts as no pin. A target may start when it is
not paused and not fallback-only (when every target the plan keeps is fallback-only, the first
of them alone). The strategy picks the start among the preferred family's targets that may
start; the rest of the family follows in list order, then every other family's targets in
list order (fallback-only targets last in each part).
Rule 8: the preferred family is a preference, never a wall: the other families are held back
until it has no target left that can serve the request (an outage), or, on a route that
switches family on quota (`switch_family_on_quota`), until one of its targets fails with
`quota_exhausted` on its own key or is skipped as `parked` (a quota crossing). The pass's
`TargetGate` keeps this (`turnout.routing.gate`, its rules there); when the other families
stay closed and the preferred family is used up, the request ends with the family message
(`turnout.routing.ending`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, NoReturn

from turnout.routing.target_facts import starters

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from turnout.routing.route import Route
    from turnout.routing.strategies import TargetView

__all__ = ["CallerCredential", "RequestPlan", "TargetPlan", "TargetRule"]

_HIDDEN: Final = "CallerCredential(<hidden>)"
_NO_MEMBERS: Final[frozenset[int]] = frozenset()


class CallerCredential:
    """A caller's own provider credential (a bearer token or API key), for passthrough targets.

    `bearer` is True when the caller sent it as `Authorization: Bearer` (a provider whose API
    tells bearer tokens from keys, such as Anthropic's, forwards it the same way). Only
    `reveal()` gives the secret back; the repr and str are masked, equality is identity, and
    pickling or copying refuses, so the secret cannot slip into a log line, a routing record or
    a serialised object by accident.
    """

    __slots__ = ("_secret", "bearer")

    def __init__(self, secret: str, *, bearer: bool = False) -> None:
        if not isinstance(secret, str) or not secret:
            raise ValueError("a caller credential must be a non-empty string")
        self._secret = secret
        self.bearer = bearer

    def reveal(self) -> str:
        """The secret itself: for the header of one upstream call, nothing else."""
        return self._secret

    def __repr__(self) -> str:
        return _HIDDEN

    __str__ = __repr__

    def __reduce__(self) -> NoReturn:
        raise TypeError("a caller credential cannot be pickled or copied")


@dataclass(frozen=True, slots=True)
class TargetRule:
    """What a plan says of one target of one route.

    - `caller_credential`: the target authenticates with the caller's own credential (a
      passthrough provider); its calls never count for health (Rules 2, 4);
    - `fallback`: an org-key fallback target, reached only after caller-credential targets
      failed (Rule 3);
    - `skip`: why a policy or data-handling requirement skips the target (`policy_skipped`);
    - `shadow`: observe-mode decisions recorded on its calls (the target is still called);
    - `family`: the target's provider family on a route that orders by family (Rules 7, 8);
      None on a route that does not. Either every rule of a plan has one or none has.
    """

    caller_credential: bool = False
    fallback: bool = False
    skip: str | None = None
    shadow: tuple[str, ...] = ()
    family: str | None = None


OWN_KEY: Final = TargetRule()
"""The rule of a target that uses its own credential and that nothing objects to."""


class TargetPlan:
    """The targets of one route a request may use (`rules`: target index -> rule; an index
    left out is removed, Rule 1), with the start candidates and the orders precomputed.

    Build it once per (route, kind of caller) and reuse it: it keeps no per-request state.
    `switch_family_on_quota` (default True) lets a quota failure open the other families at
    once, as a quota crossing that moves a session's pin (Rule 8); `families` is empty unless
    the rules name two or more families.
    Raises `ValueError` for an index outside the route, a `caller_credential` target whose
    client has no `with_credential`, or rules of which only some name a family.
    """

    __slots__ = (
        "_by_family",
        "_first",
        "_members",
        "_orders",
        "candidates",
        "fallback",
        "families",
        "home_family",
        "no_start_reason",
        "rules",
        "switch_family_on_quota",
    )

    def __init__(
        self,
        route: Route,
        rules: Mapping[int, TargetRule],
        *,
        switch_family_on_quota: bool = True,
    ) -> None:
        targets = route.targets
        checked: dict[int, TargetRule] = {}
        for index in sorted(rules):
            if not 0 <= index < len(targets):
                raise ValueError(f'route "{route.name}" has no target {index}')
            rule = rules[index]
            client = targets[index].client
            if rule.caller_credential and not callable(getattr(client, "with_credential", None)):
                raise ValueError(
                    f'target "{targets[index].name}" of route "{route.name}" cannot take a'
                    " caller's credential: its client has no with_credential"
                )
            checked[index] = rule
        self.rules: Mapping[int, TargetRule] = MappingProxyType(checked)
        first = [i for i, rule in checked.items() if not rule.fallback]
        self._first = first
        self.fallback: tuple[int, ...] = _listed(
            (i for i, rule in checked.items() if rule.fallback), route
        )
        kept = tuple(
            c for c in route.table.unpaused if c.index in checked and not checked[c.index].fallback
        )
        self.candidates: tuple[TargetView, ...] = starters(kept, [t.fallback_only for t in targets])
        self._orders: dict[tuple[str | None, int], list[int]] = {}
        self.no_start_reason = _no_start_reason(route, self.candidates, bool(checked))
        self.switch_family_on_quota = switch_family_on_quota
        self.families, self.home_family = _families(route, checked)
        self._by_family: dict[str, tuple[TargetView, ...]] = {}
        for candidate in self.candidates if self.families else ():
            family = checked[candidate.index].family
            assert family is not None
            self._by_family[family] = (*self._by_family.get(family, ()), candidate)
        self._members: dict[str | None, frozenset[int]] = {
            family: frozenset(
                i for i, rule in checked.items() if rule.family == family and not targets[i].paused
            )
            for family in self.families
        }

    def __repr__(self) -> str:
        return f"TargetPlan({dict(self.rules)!r})"

    def rule(self, index: int) -> TargetRule | None:
        """The rule of target `index`, or None when the plan removed it."""
        return self.rules.get(index)

    def family_for(self, pinned: str | None) -> str | None:
        """The family a request prefers (Rule 7): `pinned` when a target of it may start, else
        the route's first family, else the family of the first target that may start; None
        when the plan does not order by family."""
        if not self.families:
            return None
        for family in (pinned, self.home_family):
            if family is not None and family in self._by_family:
                return family
        return next(iter(self._by_family), self.home_family)

    def start_order(
        self, route: Route, session_id: str | None, family: str | None = None
    ) -> tuple[list[int], str]:
        """The try order of one request and the strategy's reason: the strategy's start among
        the non-fallback targets, the others as `try_order` puts them, then the fallback
        targets (Rule 3). With `family` (from `family_for`), the start is among
        that family's targets and the other families follow (Rule 7)."""
        candidates = self.candidates if family is None else self._by_family.get(family, ())
        candidates = candidates or self.candidates
        start, reason = route.strategy.pick_start(
            candidates, route_id=route.route_id, session_id=session_id, now=route.clock.now()
        )
        order = self._orders.get((family, start))
        if order is None:
            order = self._orders[family, start] = self._order(route, start, family)
        return order, reason

    def _order(self, route: Route, start: int, family: str | None) -> list[int]:
        rest = [i for i in self._first if i != start]
        if family is None:
            return [start, *_listed(rest, route), *self.fallback]
        rules = self.rules
        own = [i for i in rest if rules[i].family == family]
        other = [i for i in rest if rules[i].family != family]
        return [
            start,
            *_listed(own, route),
            *(i for i in self.fallback if rules[i].family == family),
            *_listed(other, route),
            *(i for i in self.fallback if rules[i].family != family),
        ]

    def members(self, family: str | None) -> frozenset[int]:
        """The targets of `family` the plan keeps and that are not paused (empty for None or a
        family the plan does not order by)."""
        return self._members.get(family, _NO_MEMBERS)

    def is_held_back(self, index: int, family: str | None) -> bool:
        """True when target `index` belongs to a family other than `family` (Rule 8): held
        back until the pass's gate opens the other families."""
        return family is not None and self.rules[index].family != family


def _listed(indices: Iterable[int], route: Route) -> tuple[int, ...]:
    """`indices` in list order, fallback-only targets last."""
    chosen = sorted(indices)
    targets = route.targets
    return (
        *(i for i in chosen if not targets[i].fallback_only),
        *(i for i in chosen if targets[i].fallback_only),
    )


def _families(route: Route, rules: Mapping[int, TargetRule]) -> tuple[frozenset[str], str | None]:
    """The families the rules name (empty when fewer than two) and the family of the first
    target kept (Rule 7)."""
    named = [rules[i].family for i in sorted(rules)]
    if all(family is None for family in named):
        return frozenset(), None
    if any(family is None for family in named):
        raise ValueError(
            f'route "{route.name}": either every target rule names a family or none does'
        )
    families = frozenset(family for family in named if family is not None)
    if len(families) < 2:
        return frozenset(), None
    first = next((i for i in sorted(rules) if not rules[i].fallback), min(rules))
    return families, rules[first].family


def _no_start_reason(
    route: Route, candidates: tuple[TargetView, ...], any_left: bool
) -> str | None:
    """Why no request can start (`no_deployment_available`: every target paused, or no
    positive weight under `weighted`), or None."""
    if not any_left:
        return f'the credential filter leaves route "{route.name}" no target'
    if not candidates:
        return f'every target of route "{route.name}" this caller may use is paused'
    if route.strategy.type == "weighted":
        targets = route.targets
        if not any(c.weight > 0 and not targets[c.index].fallback_only for c in candidates):
            return f'no target of route "{route.name}" this caller may use has a positive weight'
    return None


@dataclass(frozen=True, slots=True, eq=False)
class RequestPlan:
    """A per-request plan (see the module rules): a `TargetPlan` per route it covers, by route
    object, the caller's own credential (None: the caller sent none), and `pins`: route id ->
    the family a session is pinned to on that route (Rule 7).

    A route the plan does not cover is walked as without a plan. Build the credential-free
    part once and add each request's credential and pins with `with_credential` and
    `with_pins` (cheap).
    """

    routes: Mapping[Route, TargetPlan] = field(default_factory=dict)
    credential: CallerCredential | None = field(default=None, repr=False)
    pins: Mapping[str, str] = field(default_factory=dict)

    def for_route(self, route: Route) -> TargetPlan | None:
        """The plan of `route`, or None when the plan does not cover it."""
        return self.routes.get(route)

    def with_credential(self, credential: CallerCredential | None) -> RequestPlan:
        """This plan carrying `credential` (for this one request)."""
        return replace(self, credential=credential)

    def with_pins(self, pins: Mapping[str, str]) -> RequestPlan:
        """This plan with the session's family pins (route id -> family), for one request."""
        return replace(self, pins=MappingProxyType(dict(pins)))

    def pinned_family(self, route: Route) -> str | None:
        """The family the session is pinned to on `route`, or None."""
        return self.pins.get(route.route_id) if self.pins else None

    @property
    def orders_by_family(self) -> bool:
        """True when some route of the plan orders its targets by family (Rule 7)."""
        return any(plan.families for plan in self.routes.values())

    @property
    def needs_credential(self) -> bool:
        """True when some target of the plan authenticates with the caller's credential."""
        return any(
            rule.caller_credential for plan in self.routes.values() for rule in plan.rules.values()
        )


def caller_client(client: Any, credential: CallerCredential | None) -> Any:
    """`client` bound to the caller's credential for one call (Rule 2). Without a credential
    the client is returned as is: a passthrough provider then refuses the call itself."""
    if credential is None:
        return client
    return client.with_credential(credential)
