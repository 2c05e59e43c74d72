"""What links model groups: `model_group_alias` and the three kinds of fallbacks.

- An alias becomes one more exact model pattern of the route it points at, unless the name is
  already a route, a provider or another route's model (patterns are case-insensitive).
- `fallbacks`, `context_window_fallbacks` and `content_policy_fallbacks` (under
  `router_settings` or `litellm_settings`, as `[{group: [groups]}]`) become the route's
  `fallbacks.general/context/content`; `default_fallbacks` adds general fallbacks to every route.
  Turnout's limits hold: at most 3 fallback routes per route in total, no self-reference and no
  cycle within one kind; an edge that would break one is left out with a note.
- A request hops along one kind of fallback only, where LiteLLM follows a fallback group's own
  fallbacks of any kind: an edge into a route that has fallbacks of another kind is noted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from turnout.routing.options import MAX_FALLBACKS

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from turnout.config.litellm._notes import Notes
    from turnout.config.litellm._routes import RouteDraft

__all__ = [
    "FallbackEdge",
    "apply_aliases",
    "apply_fallbacks",
    "drop_shared_models",
    "read_fallbacks",
]

_KINDS = (
    ("fallbacks", "general"),
    ("context_window_fallbacks", "context"),
    ("content_policy_fallbacks", "content"),
)
EVERY_ROUTE = "*"


@dataclass(frozen=True, slots=True)
class FallbackEdge:
    """`source` falls back to `targets` (model group names) on failures of `kind`."""

    kind: str
    source: str
    targets: tuple[str, ...]
    path: str


def read_fallbacks(section: Mapping[str, object], prefix: str, notes: Notes) -> list[FallbackEdge]:
    """Every fallback declaration of one settings section, in file order."""
    edges: list[FallbackEdge] = []
    for key, kind in _KINDS:
        value = section.get(key)
        entries = [value] if isinstance(value, dict) else value
        if value is None:
            continue
        if not isinstance(entries, list):
            notes.drop(f"{prefix}.{key}", "not a list of {group: [groups]} mappings")
            continue
        for i, entry in enumerate(entries):
            path = f"{prefix}.{key}[{i}]"
            if not isinstance(entry, dict):
                notes.drop(path, "not a {group: [groups]} mapping")
                continue
            edges.extend(
                FallbackEdge(kind, str(source), _names(targets), path)
                for source, targets in entry.items()
            )
    default = section.get("default_fallbacks")
    if default is not None:
        path = f"{prefix}.default_fallbacks"
        edges.append(FallbackEdge("general", EVERY_ROUTE, _names(default), path))
    return edges


def _names(value: object) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value]
    return tuple(str(item) for item in items if isinstance(item, str | int | float))


def drop_shared_models(drafts: Sequence[RouteDraft], notes: Notes) -> None:
    """Two routes may not serve patterns of the same specificity that one model matches, nor
    may a route serve another route's name. A route keeps its own name; listed model names
    come before wildcard patterns (as in LiteLLM, where an exact model_name wins), then file
    order; a later route does without the pattern. Patterns match case-insensitively, so two
    groups whose names differ only in case are such a pair."""
    owners: dict[str | tuple[int, int], tuple[RouteDraft, str]] = {
        draft.name.lower(): (draft, draft.name) for draft in drafts
    }
    for draft in sorted(drafts, key=lambda d: "*" in d.group):
        kept, clashes = [], []
        for model in draft.models:
            owner, held = owners.setdefault(_overlap_key(model), (draft, model))
            if owner is draft:
                kept.append(model)
            else:
                clashes.append(_clash(model, owner, held))
        draft.models = kept
        for clash in clashes:
            alone = "is reached by its name only" if not kept else "does without it"
            notes.drop(f"{draft.path}.model_name", f"{clash}: route '{draft.name}' {alone}")


def _clash(model: str, owner: RouteDraft, held: str) -> str:
    if held == owner.name and model.lower() == held.lower() and model != owner.group:
        return f"'{model}' is the name of route '{owner.name}'"
    if held == model:
        return f"'{owner.group}' serves '{model}' too"
    if held.lower() == model.lower():
        return (
            f"'{model}' and '{held}' differ only in case, and turnout matches model names "
            "case-insensitively"
        )
    return f"'{model}' and '{held}' of '{owner.group}' match some model alike"


def _overlap_key(pattern: str) -> str | tuple[int, int]:
    """Patterns with equal keys have the same specificity and match some model alike: an
    exact name, a prefix or a suffix only its own text; a `*x*` every other with as many
    literal characters."""
    lowered = pattern.lower()
    if len(lowered) > 2 and lowered.startswith("*") and lowered.endswith("*"):
        return (len(lowered) - 2, 0)
    return lowered


def apply_aliases(
    aliases: object, path: str, drafts: Sequence[RouteDraft], names: Iterable[str], notes: Notes
) -> dict[str, RouteDraft]:
    """Add each alias to its route's models; returns alias -> route for fallback lookups."""
    if aliases is None:
        return {}
    if not isinstance(aliases, dict):
        notes.drop(path, "not a mapping of alias to model group")
        return {}
    by_group = {draft.group: draft for draft in drafts}
    taken = {name.lower() for name in names}
    taken |= {model.lower() for draft in drafts for model in draft.models}
    found: dict[str, RouteDraft] = {}
    for alias, value in aliases.items():
        where = f"{path}.{alias}"
        group = value.get("model") if isinstance(value, dict) else value
        draft = by_group.get(group) if isinstance(group, str) else None
        text = str(alias).strip()
        if draft is None:
            notes.drop(where, "names no imported model group")
        elif not text or "*" in text or any(c.isspace() for c in text):
            notes.drop(where, "an alias with a wildcard or spaces cannot be a model pattern")
        elif text.lower() in taken:
            notes.drop(where, f"'{text}' is already a route, provider or model of its own")
        else:
            draft.models.append(text)
            taken.add(text.lower())
            found[text] = draft
            if isinstance(value, dict) and value.get("hidden"):
                notes.drop(
                    f"{where}.hidden", "turnout's /v1/models lists every exact model a route serves"
                )
    return found


def apply_fallbacks(
    edges: Sequence[FallbackEdge],
    drafts: Sequence[RouteDraft],
    aliases: Mapping[str, RouteDraft],
    notes: Notes,
) -> None:
    """Declare each edge on its route, within turnout's limits."""
    lookup = {draft.group: draft for draft in drafts} | dict(aliases)
    ordered = [e for e in edges if e.source != EVERY_ROUTE] + [
        e for e in edges if e.source == EVERY_ROUTE
    ]
    linked: list[tuple[RouteDraft, RouteDraft, FallbackEdge]] = []
    for edge in ordered:
        sources = list(drafts) if edge.source == EVERY_ROUTE else [lookup.get(edge.source)]
        if sources == [None]:
            notes.drop(edge.path, f"'{edge.source}' names no imported model group")
            continue
        for target_name in edge.targets:
            target = lookup.get(target_name)
            if target is None:
                notes.drop(edge.path, f"'{target_name}' names no imported model group")
                continue
            for source in sources:
                assert source is not None
                if (source is not target or edge.source != EVERY_ROUTE) and _link(
                    source, target, edge, drafts, notes
                ):
                    linked.append((source, target, edge))
    _note_other_kinds(linked, notes)


def _link(
    source: RouteDraft,
    target: RouteDraft,
    edge: FallbackEdge,
    drafts: Sequence[RouteDraft],
    notes: Notes,
) -> bool:
    """Declare `source -> target`; whether it was declared now."""
    declared = source.fallbacks.setdefault(edge.kind, [])
    arrow = f"{source.group} -> {target.group}"
    if target is source:
        notes.drop(edge.path, f"{arrow}: a route may not fall back to itself")
    elif target.name in declared:
        return False
    elif source.fallback_count() >= MAX_FALLBACKS:
        notes.drop(edge.path, f"{arrow}: a route may have at most {MAX_FALLBACKS} fallbacks")
    elif _reaches(target, source, drafts, edge.kind):
        notes.drop(edge.path, f"{arrow}: would make a fallback cycle")
    else:
        declared.append(target.name)
        return True
    return False


def _reaches(start: RouteDraft, goal: RouteDraft, drafts: Sequence[RouteDraft], kind: str) -> bool:
    """Whether `goal` can be reached from `start` over declared fallbacks of `kind`: the only
    chains a request follows."""
    by_name = {draft.name: draft for draft in drafts}
    stack, seen = [start], set()
    while stack:
        current = stack.pop()
        if current is goal:
            return True
        if current.name in seen:
            continue
        seen.add(current.name)
        stack.extend(by_name[name] for name in current.fallbacks.get(kind, ()))
    return False


def _note_other_kinds(
    linked: Sequence[tuple[RouteDraft, RouteDraft, FallbackEdge]], notes: Notes
) -> None:
    """LiteLLM follows a fallback group's own fallbacks of any kind; a turnout request hops
    along the kind of its first hop only."""
    for source, target, edge in linked:
        others = [k for k, names in target.fallbacks.items() if names and k != edge.kind]
        if others:
            notes.change(
                edge.path,
                f"{source.group} -> {target.group}: a request that reaches "
                f"'{target.group}' this way does not go on to its {' or '.join(others)} "
                "fallbacks as LiteLLM would: turnout follows one kind of fallback per request",
            )
