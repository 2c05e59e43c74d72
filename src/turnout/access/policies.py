"""Routing policies and data-handling requirements, checked for every target before it is called.

`Policies.from_config(policies)` compiles a project's policies once; `check_target` says whether
one target may be called for one caller, and `check_route` refuses a request before any call
when no target of its route may be.

Rule 1: a target is skipped (`policy_skipped`) when an enforce-mode policy denies it, or when its
provider fails a data-handling requirement of the caller's key or of the winning binding. Only
what the provider declares in `data_handling` meets a requirement: a field left unset fails.
Rule 2: an observe-mode policy that would deny a target adds a shadow decision; the target is
still called.
Rule 3: in `deny_when`, every condition must hold (and); a list holds when any value matches
(or). `provider` and `route` compare exactly; `family` and `jurisdiction` ignore case. A
provider that declares no jurisdiction matches no `jurisdiction` condition.
Rule 4: `check_route` raises 403 POLICY_DENIED when every target of the route is skipped.
Rule 5: the policies' part of a verdict depends only on (route, provider) and is kept in a
bounded LRU owned by the `Policies`; requirements are checked afresh (a few comparisons).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from turnout.errors import ConfigError, PolicyDenied
from turnout.schema import DataHandling

if TYPE_CHECKING:
    from collections.abc import Sequence

    from turnout.access.bindings import Decision
    from turnout.access.keys import Caller
    from turnout.schema import PolicyConfig, ProviderConfig, RequireConfig

__all__ = [
    "CLEAR",
    "WIRE_FAMILIES",
    "Policies",
    "PolicyVerdict",
    "ProviderFacts",
    "provider_family",
    "requirement_failure",
    "target_family",
    "vertex_family",
]

DEFAULT_CACHE_SIZE = 4096
FAMILIES: Final = frozenset({"openai", "anthropic", "gemini", "none"})
_NO_PROMISES: Final = DataHandling()
WIRE_FAMILIES: Final = {
    "openai-chat": "openai",
    "anthropic-messages": "anthropic",
    "gemini-generate": "gemini",
}
"""The provider family each wire format belongs to."""
# The policies' part of a verdict: the first enforce-mode denial, and the observe-mode shadows.
_PolicyPart = tuple[str | None, tuple[str, ...]]


def provider_family(provider: ProviderConfig) -> str:
    """The family of a provider kind (see `docs/concepts.md`, Family): `openai`, `anthropic`,
    `gemini`, the family of an Azure provider's `wire`, else `none`."""
    if provider.kind in ("openai", "anthropic", "gemini"):
        return provider.kind
    if provider.kind == "azure-openai" and provider.wire is not None:
        return WIRE_FAMILIES[provider.wire]
    if provider.kind == "vertex":
        return vertex_family(provider)
    return "none"


def target_family(provider: ProviderConfig, model: str | None) -> str:
    """The family of one target: its provider's (`provider_family`), except that a `vertex`
    provider without a `publisher` serves a target's model by its publisher, so a Claude
    model (`claude-*`, after the provider's `model_aliases`) is anthropic and a Gemini model
    gemini."""
    if provider.kind != "vertex" or provider.publisher is not None or not model:
        return provider_family(provider)
    bare = provider.model_aliases.get(model, model).rsplit("/", 1)[-1].lower()
    if bare.startswith("claude"):
        return "anthropic"
    if bare.startswith("gemini"):
        return "gemini"
    return vertex_family(provider)


def vertex_family(provider: ProviderConfig) -> str:
    """A `vertex` provider's family: its `publisher`'s (anthropic or gemini); without one,
    anthropic when every one of its `model_patterns` names Claude models, else gemini."""
    if provider.publisher is not None:
        return "anthropic" if provider.publisher == "anthropic" else "gemini"
    patterns = provider.model_patterns
    if patterns and all(p.lower().startswith("claude") for p in patterns):
        return "anthropic"
    return "gemini"


@dataclass(frozen=True, slots=True)
class ProviderFacts:
    """What policies know of a target's provider: name, family and declared data handling."""

    name: str
    family: str = "none"
    data_handling: DataHandling = _NO_PROMISES

    @classmethod
    def from_config(cls, provider: ProviderConfig) -> ProviderFacts:
        """From a configured provider."""
        return cls(provider.name, provider_family(provider), provider.data_handling)


@dataclass(frozen=True, slots=True)
class PolicyVerdict:
    """Whether a target may be called: `skipped` with its `reason`, and the observe-mode
    `shadow` decisions (each a sentence naming the policy)."""

    skipped: bool = False
    reason: str | None = None
    shadow: tuple[str, ...] = ()


CLEAR: Final = PolicyVerdict()
"""The verdict of a target nothing objects to."""


def requirement_failure(require: RequireConfig, source: str, provider: ProviderFacts) -> str | None:
    """Why `provider` fails the requirements `source` (e.g. `key "app"`) sets, or None."""
    handling = provider.data_handling
    name = f'provider "{provider.name}"'
    if require.zero_data_retention and not handling.zero_data_retention:
        return f"{name} does not declare zero data retention, which {source} requires"
    if require.no_prompt_training and not handling.no_prompt_training:
        return f"{name} does not declare no prompt training, which {source} requires"
    if require.jurisdiction:
        wanted = ", ".join(require.jurisdiction)
        if handling.jurisdiction is None:
            return f"{name} declares no jurisdiction, and {source} requires one of: {wanted}"
        allowed = {place.casefold() for place in require.jurisdiction}
        if handling.jurisdiction.casefold() not in allowed:
            return (
                f'{name} is in jurisdiction "{handling.jurisdiction}", and {source} requires'
                f" one of: {wanted}"
            )
    return None


@dataclass(frozen=True, slots=True)
class _Policy:
    name: str
    observe: bool
    conditions: tuple[tuple[str, frozenset[str]], ...]

    def denies(self, provider: ProviderFacts, route: str) -> str | None:
        """The matched conditions as text (`provider openai, route main`), or None."""
        matched: list[str] = []
        for field, values in self.conditions:
            fact = _fact(field, provider, route)
            if fact is None or fact not in values:
                return None
            matched.append(f"{field} {fact}")
        return ", ".join(matched)


def _fact(field: str, provider: ProviderFacts, route: str) -> str | None:
    if field == "provider":
        return provider.name
    if field == "route":
        return route
    if field == "family":
        return provider.family.casefold()
    jurisdiction = provider.data_handling.jurisdiction
    return jurisdiction.casefold() if jurisdiction is not None else None


class Policies:
    """A project's policies, compiled (see the module rules)."""

    __slots__ = ("_cache", "_cache_size", "_policies")

    def __init__(
        self, policies: Sequence[_Policy] = (), *, cache_size: int = DEFAULT_CACHE_SIZE
    ) -> None:
        """Use `from_config`."""
        self._policies = tuple(policies)
        self._cache: OrderedDict[tuple[str, ProviderFacts], _PolicyPart] = OrderedDict()
        self._cache_size = max(cache_size, 0)

    @classmethod
    def from_config(
        cls, policies: Sequence[PolicyConfig], *, cache_size: int = DEFAULT_CACHE_SIZE
    ) -> Policies:
        """Validate and compile `policies`; `cache_size` bounds the per-(route, provider) cache
        (entries; 0 disables it; default 4096).

        Raises one `ConfigError` listing every problem with its path (`policies[1].deny_when`):
        a repeated name, an empty `deny_when`, an empty value, an unknown family.
        """
        problems: list[tuple[str, str]] = []
        compiled: list[_Policy] = []
        names: dict[str, int] = {}
        for index, policy in enumerate(policies):
            path = f"policies[{index}]"
            if policy.name in names:
                rule = (
                    f'policy name "{policy.name}" is already used by policies[{names[policy.name]}]'
                )
                problems.append((f"{path}.name", rule))
            names.setdefault(policy.name, index)
            conditions = _conditions(policy, f"{path}.deny_when", problems)
            compiled.append(_Policy(policy.name, policy.mode == "observe", conditions))
        if problems:
            raise ConfigError("\n".join(f"{where}: {rule}" for where, rule in problems), problems)
        return cls(compiled, cache_size=cache_size)

    def check_target(
        self, caller: Caller, decision: Decision, provider: ProviderFacts, route: str
    ) -> PolicyVerdict:
        """May `provider`'s target of `route` serve `caller` under `decision`? (Rules 1-3)"""
        reason, shadow = self._policy_part(provider, route)
        if reason is None:
            reason = requirement_failure(caller.require, caller.label, provider)
        if reason is None and decision.binding is not None:
            source = f'binding "{decision.binding}"'
            reason = requirement_failure(decision.require, source, provider)
        if reason is None and not shadow:
            return CLEAR
        return PolicyVerdict(reason is not None, reason, shadow)

    def check_route(
        self,
        caller: Caller,
        decision: Decision,
        route: str,
        providers: Sequence[ProviderFacts],
    ) -> tuple[PolicyVerdict, ...]:
        """`check_target` for each target's provider, in order; raises `PolicyDenied` (403)
        naming the reasons when every target is skipped (Rule 4)."""
        verdicts = tuple(self.check_target(caller, decision, p, route) for p in providers)
        if verdicts and all(verdict.skipped for verdict in verdicts):
            reasons = dict.fromkeys(verdict.reason or "" for verdict in verdicts)
            raise PolicyDenied(f'no target of route "{route}" may be called: {"; ".join(reasons)}')
        return verdicts

    def _policy_part(self, provider: ProviderFacts, route: str) -> _PolicyPart:
        if not self._policies:
            return None, ()
        key = (route, provider)
        cache = self._cache
        held = cache.get(key)
        if held is not None:
            cache.move_to_end(key)
            return held
        reason: str | None = None
        shadow: list[str] = []
        for policy in self._policies:
            matched = policy.denies(provider, route)
            if matched is None:
                continue
            if policy.observe:
                shadow.append(
                    f'policy "{policy.name}" (observe) would deny this target ({matched})'
                )
            elif reason is None:
                reason = f'policy "{policy.name}" denies this target ({matched})'
        result = (reason, tuple(shadow))
        if self._cache_size:
            cache[key] = result
            if len(cache) > self._cache_size:
                cache.popitem(last=False)
        return result


def _conditions(
    policy: PolicyConfig, path: str, problems: list[tuple[str, str]]
) -> tuple[tuple[str, frozenset[str]], ...]:
    if not policy.deny_when:
        problems.append(
            (path, "deny_when needs at least one of provider, family, route, jurisdiction")
        )
        return ()
    found: list[tuple[str, frozenset[str]]] = []
    for field, given in sorted(policy.deny_when.items()):
        texts = (given,) if isinstance(given, str) else given
        values = [text.strip() for text in texts]
        if not values or not all(values):
            problems.append((f"{path}.{field}", f"{field} needs non-empty values"))
            continue
        if field in ("family", "jurisdiction"):
            values = [value.casefold() for value in values]
        unknown = sorted(set(values) - FAMILIES) if field == "family" else []
        if unknown:
            rule = f"unknown family {', '.join(unknown)} (families: {', '.join(sorted(FAMILIES))})"
            problems.append((f"{path}.{field}", rule))
            continue
        found.append((field, frozenset(values)))
    return tuple(found)
