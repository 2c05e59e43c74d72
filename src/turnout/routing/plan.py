"""The per-call plan: which targets one request may use, in which order, with whose credential,
and what the policies say of each (SPEC §3.4, §3.5, §3.9, §5.2, §6.3).

`Route.complete/stream/embed(..., plan=CallPlan(...))` walks the route under the plan; without
one (the default) every target is walked as before, at no extra cost. A plan holds one
`TargetPlan` per route it covers (the route asked and its fallback routes, SPEC §3.8: the
credential filter is re-applied after a hop) and, apart from them, the caller's own credential.

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
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, NoReturn

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from turnout.routing.route import Route
    from turnout.routing.strategies import Candidate

__all__ = ["CallPlan", "CallerCredential", "TargetPlan", "TargetRule"]

_HIDDEN: Final = "CallerCredential(<hidden>)"


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
    - `shadow`: observe-mode decisions recorded on its calls (the target is still called).
    """

    caller_credential: bool = False
    fallback: bool = False
    skip: str | None = None
    shadow: tuple[str, ...] = ()


OWN_KEY: Final = TargetRule()
"""The rule of a target that uses its own credential and that nothing objects to."""


class TargetPlan:
    """The targets of one route a request may use (`rules`: target index -> rule; an index
    left out is removed, Rule 1), with the start candidates and the orders precomputed.

    Build it once per (route, kind of caller) and reuse it: it keeps no per-request state.
    Raises `ValueError` for an index outside the route, or a `caller_credential` target whose
    client has no `with_credential`.
    """

    __slots__ = ("_first", "_orders", "candidates", "fallback", "rules", "undeployable")

    def __init__(self, route: Route, rules: Mapping[int, TargetRule]) -> None:
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
        self.candidates: tuple[Candidate, ...] = tuple(
            c for c in route.candidates if c.index in checked and not checked[c.index].fallback
        )
        self._orders: dict[int, list[int]] = {}
        self.undeployable = _undeployable(route, self.candidates, bool(checked))

    def __repr__(self) -> str:
        return f"TargetPlan({dict(self.rules)!r})"

    def rule(self, index: int) -> TargetRule | None:
        """The rule of target `index`, or None when the plan removed it."""
        return self.rules.get(index)

    def start_order(self, route: Route, session_id: str | None) -> tuple[list[int], str]:
        """The try order of one request and the strategy's reason: the strategy's start among
        the non-fallback targets, the others as `try_order` puts them, then the fallback
        targets (SPEC §3.1, Rule 3)."""
        start, reason = route.strategy.pick_start(
            self.candidates, route_id=route.route_id, session_id=session_id, now=route.clock.now()
        )
        order = self._orders.get(start)
        if order is None:
            rest = [i for i in self._first if i != start]
            order = self._orders[start] = [
                start,
                *_listed(rest, route),
                *self.fallback,
            ]
        return order, reason


def _listed(indices: Iterable[int], route: Route) -> tuple[int, ...]:
    """`indices` in list order, fallback-only targets last."""
    chosen = sorted(indices)
    targets = route.targets
    return (
        *(i for i in chosen if not targets[i].fallback_only),
        *(i for i in chosen if targets[i].fallback_only),
    )


def _undeployable(route: Route, candidates: tuple[Candidate, ...], any_left: bool) -> str | None:
    """Why no request can start (SPEC §3.4 `no_deployment_available`), or None."""
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
class CallPlan:
    """A per-call plan (see the module rules): a `TargetPlan` per route it covers, by route
    object, and the caller's own credential (None: the caller sent none).

    A route the plan does not cover is walked as without a plan. Build the credential-free
    part once and add each request's credential with `with_credential` (cheap).
    """

    routes: Mapping[Route, TargetPlan] = field(default_factory=dict)
    credential: CallerCredential | None = field(default=None, repr=False)

    def for_route(self, route: Route) -> TargetPlan | None:
        """The plan of `route`, or None when the plan does not cover it."""
        return self.routes.get(route)

    def with_credential(self, credential: CallerCredential | None) -> CallPlan:
        """This plan carrying `credential` (for this one request)."""
        return replace(self, credential=credential)

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
