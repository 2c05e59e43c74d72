"""Model groups -> routes: one route per `model_name`, its deployments as targets.

- Targets keep file order, stably sorted by `order` when deployments set it; deployments above
  the lowest `order` become `fallback_only` (LiteLLM tries them only when the first tier fails).
- A route serves its `model_name` as an exact pattern, so callers keep their model string; a
  wildcard group serves its patterns, and its targets without a model pass the requested one on.
- LiteLLM's strategy maps onto the route's start strategy; with one starting target it is moot.
  Simple shuffle becomes `weighted`: the first deployment decides whether `weight`, `rpm` or
  `tpm` is read (LiteLLM's order), a deployment without it weighs 0, and with none of them
  every deployment weighs 1. Weights are whole numbers in the same proportions.
- Retries: a deployment's own `max_retries`, else the file's `num_retries`, lowered until
  Σ(1 + max_retries) fits the static budget of 10; at most 10 targets per route.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from turnout.routing.options import MAX_STATIC_ATTEMPTS
from turnout.routing.strategy_settings import MAX_WEIGHT

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from turnout.config.litellm._deployments import Deployment, ProviderSpec
    from turnout.config.litellm._notes import Notes

__all__ = ["RouteDraft", "RoutePolicy", "build_route", "group_targets", "name_routes"]

_MAX_RETRIES = 9  # a target's own ceiling in the schema
_START_TYPES = {
    "simple-shuffle": "weighted",
    "usage-based-routing": "weighted",
    "usage-based-routing-v2": "weighted",
    "least-busy": "least-busy",
    "latency-based-routing": "lowest-latency",
    "cost-based-routing": "lowest-cost",
}
_WEIGHT_KEYS = ("weight", "rpm", "tpm")
_FALLBACK_KINDS = ("general", "context", "content")


@dataclass(frozen=True, slots=True)
class RoutePolicy:
    """Route settings read from `router_settings` / `litellm_settings` (seconds for times)."""

    strategy: str = "simple-shuffle"
    strategy_path: str = "router_settings.routing_strategy"
    num_retries: int | None = None
    retries_path: str = "router_settings.num_retries"
    timeout: float | None = None
    stream_timeout: float | None = None
    cache: dict[str, Any] | None = None


@dataclass(slots=True)
class RouteDraft:
    """A route being built; `as_config()` gives its `routes:` entry."""

    name: str
    group: str
    path: str
    models: list[str]
    targets: list[dict[str, Any]]
    strategy: dict[str, Any] | None = None
    cache: dict[str, Any] | None = None
    fallbacks: dict[str, list[str]] = field(default_factory=dict)

    def fallback_count(self) -> int:
        """Fallback routes declared so far, all kinds together."""
        return sum(len(names) for names in self.fallbacks.values())

    def as_config(self) -> dict[str, Any]:
        """The route as a configuration mapping, targets last."""
        config: dict[str, Any] = {"name": self.name, "models": list(self.models)}
        if self.strategy is not None:
            config["strategy"] = self.strategy
        if self.cache is not None:
            config["cache"] = self.cache
        kinds = {kind: self.fallbacks[kind] for kind in _FALLBACK_KINDS if self.fallbacks.get(kind)}
        if kinds:
            config["fallbacks"] = kinds
        config["targets"] = self.targets
        return config


def group_targets(
    deployments: Sequence[Deployment], names: dict[str, str], notes: Notes
) -> dict[str, list[Deployment]]:
    """The deployments that become targets, by `model_name` (groups in order of first
    appearance): sorted by `order` (stable; unset last), at most 10 per route."""
    groups: dict[str, list[Deployment]] = {}
    for deployment in deployments:
        groups.setdefault(deployment.group, []).append(deployment)
    for group, members in groups.items():
        members.sort(key=lambda d: (d.order is None, d.order or 0.0))
        for extra in members[MAX_STATIC_ATTEMPTS:]:
            notes.drop(
                extra.path, f"route '{names[group]}' already has {MAX_STATIC_ATTEMPTS} targets"
            )
        del members[MAX_STATIC_ATTEMPTS:]
    return groups


def name_routes(groups: Iterable[str]) -> dict[str, str]:
    """A unique route name per group: the model name, `*` spelt `any` and other characters
    than letters, digits, `.`, `_` and `-` replaced by `-`, never equal to another group's
    model name."""
    groups = list(dict.fromkeys(groups))
    patterns = {group.lower() for group in groups}
    used: set[str] = set()
    names: dict[str, str] = {}
    for group in groups:
        base = re.sub(r"[^A-Za-z0-9._-]+", "-", group.replace("*", "-any-"))
        if "*" in group:
            base = re.sub(r"-{2,}", "-", base)
        base = base.strip("-")[:120] or "route"
        name, n = base, 2
        while name.lower() in used or (name.lower() != group.lower() and name.lower() in patterns):
            name, n = f"{base}-{n}", n + 1
        used.add(name.lower())
        names[group] = name
    return names


def build_route(
    name: str,
    ordered: Sequence[Deployment],
    providers: dict[ProviderSpec, str],
    policy: RoutePolicy,
    notes: Notes,
) -> RouteDraft:
    """The route for one model group: `ordered` share one `model_name`, in try order."""
    lowest = min((d.order for d in ordered if d.order is not None), default=None)
    fallback_only = [lowest is not None and d.order != lowest for d in ordered]
    strategy, weights = _start(name, ordered, fallback_only, policy, notes)
    retries = _retries(name, ordered, policy, notes)
    targets: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, deployment in enumerate(ordered):
        target = _target(deployment, providers[deployment.provider], policy, seen)
        if weights is not None and not fallback_only[i]:
            target["weight"] = weights[i]
        if retries[i]:
            target["max_retries"] = retries[i]
        if fallback_only[i]:
            target["fallback_only"] = True
        targets.append(target)
    first = ordered[0]
    models = list(first.patterns) or [first.group]
    return RouteDraft(name, first.group, first.path, models, targets, strategy, policy.cache)


def _target(
    deployment: Deployment, provider: str, policy: RoutePolicy, seen: set[str]
) -> dict[str, Any]:
    target: dict[str, Any] = {"provider": provider}
    shown = provider  # a target without a model is named after its provider
    if deployment.model is not None:
        target["model"] = deployment.model
        shown = f"{provider}:{deployment.model}"
    name = deployment.name or shown
    unique, n = name, 2
    while unique in seen:
        unique, n = f"{name}#{n}", n + 1
    seen.add(unique)
    if unique != shown:
        target["name"] = unique
    timeout = deployment.timeout or policy.timeout
    if timeout is not None:
        target["timeout"] = _seconds(timeout)
    first_token = deployment.stream_timeout or policy.stream_timeout
    if first_token is not None:
        target["first_token_timeout"] = _seconds(first_token)
    if deployment.context_window is not None:
        target["context_window"] = deployment.context_window
    return target


def _seconds(value: float) -> float | int:
    return int(value) if value.is_integer() else value


def _start(
    name: str,
    ordered: Sequence[Deployment],
    fallback_only: Sequence[bool],
    policy: RoutePolicy,
    notes: Notes,
) -> tuple[dict[str, Any] | None, list[int] | None]:
    """The route's strategy and, under `weighted`, each target's weight."""
    starters = [d for d, only in zip(ordered, fallback_only, strict=True) if not only]
    kind = _START_TYPES.get(policy.strategy, "failover")
    if len(starters) < 2 or kind == "failover":
        _note_rate_limits(ordered, (), None, notes)
        return None, None
    if kind == "lowest-cost" and any(d.price is None for d in starters):
        notes.change(
            policy.strategy_path,
            "lowest-cost ranks targets by provider prices; targets without a price in "
            "model_info start last, as LiteLLM's built-in cost map is not carried",
        )
    if kind != "weighted":
        _note_rate_limits(ordered, (), None, notes)
        return {"type": kind}, None
    key = _weight_key(name, starters, notes)
    _note_rate_limits(ordered, starters, key, notes)
    weights = _whole([_weight_of(d, key) for d in ordered])
    if not any(w > 0 for w, only in zip(weights, fallback_only, strict=True) if not only):
        reason = f"every weight of '{name}' is 0: the route fails over in list order"
        notes.change(f"{starters[0].path}.litellm_params.{key}", reason)
        return None, None
    return {"type": "weighted"}, weights


def _weight_of(deployment: Deployment, key: str | None) -> float:
    if key is None:
        return 1.0
    value: float | None = getattr(deployment, key)
    return 0.0 if value is None else value


def _weight_key(name: str, starters: Sequence[Deployment], notes: Notes) -> str | None:
    """What the start weights come from, as LiteLLM's simple shuffle decides it: the first of
    weight / rpm / tpm that the first deployment sets; a deployment without it weighs 0. When
    the first sets none, every deployment starts alike and the others' weights go unread."""
    first = starters[0]
    key = next((k for k in _WEIGHT_KEYS if getattr(first, k) is not None), None)
    for deployment in starters[1:]:
        if key != "weight" and deployment.weight is not None:
            notes.drop(
                f"{deployment.path}.litellm_params.weight",
                f"LiteLLM does not read it either: the first deployment of '{name}' sets no "
                "weight, so its start weights come from rpm, tpm or nothing",
            )
        if key is not None and getattr(deployment, key) is None:
            notes.change(
                f"{deployment.path}.litellm_params.{key}",
                f"not set while the first deployment of '{name}' sets it: weight 0, as in "
                "LiteLLM, so it starts no request; turnout tries it in list order after the "
                "start target fails, where LiteLLM picks again among the deployments that "
                "are not cooling down",
            )
    return key


def _note_rate_limits(
    ordered: Sequence[Deployment], weighted: Sequence[Deployment], key: str | None, notes: Notes
) -> None:
    """rpm / tpm are carried only as start weights; turnout enforces no rate limits."""
    for deployment in ordered:
        for limit in ("rpm", "tpm"):
            if getattr(deployment, limit) is None or (limit == key and deployment in weighted):
                continue
            notes.drop(
                f"{deployment.path}.litellm_params.{limit}",
                "turnout does not enforce per-target rate limits",
            )


def _whole(values: Sequence[float]) -> list[int]:
    """Weights as whole numbers 0..1,000,000 in the same proportions (as near as can be)."""
    top = max(values, default=0.0)
    if top <= 0:
        return [0 for _ in values]
    if top <= MAX_WEIGHT and all(float(v).is_integer() for v in values):
        return [int(v) for v in values]
    scale = min(MAX_WEIGHT / top, 1000.0)
    return [max(1, round(v * scale)) if v > 0 else 0 for v in values]


def _retries(
    name: str, ordered: Sequence[Deployment], policy: RoutePolicy, notes: Notes
) -> list[int]:
    """Each target's `max_retries`, lowered (largest first, later targets first on ties) until
    the route's total attempts fit the static budget."""
    wanted = [
        d.max_retries if d.max_retries is not None else policy.num_retries or 0 for d in ordered
    ]
    retries = [min(w, _MAX_RETRIES) for w in wanted]
    while sum(1 + r for r in retries) > MAX_STATIC_ATTEMPTS:
        largest = max(range(len(retries)), key=lambda i: (retries[i], i))
        retries[largest] -= 1
    if retries != wanted:
        total = sum(1 + w for w in wanted)
        reason = (
            f"route '{name}' would make {total} attempts, over the maximum of "
            f"{MAX_STATIC_ATTEMPTS}: max_retries lowered to {', '.join(map(str, retries))}"
        )
        for deployment, want, got in zip(ordered, wanted, retries, strict=True):
            if want != got:
                own = deployment.max_retries is not None
                path = f"{deployment.path}.litellm_params.max_retries"
                notes.change(path if own else policy.retries_path, reason)
    return retries
