"""Model patterns: parsing, specificity and overlap, and the family defaults of implicit routes.

A model pattern is an exact model name or a glob with one `*` at the start, the end, or both.
Only `*` is special; every other character is literal. Patterns and models are compared in
lower case.

    kind     example           a (lower-cased) model m matches when
    exact    claude-opus-4-1   m == literal
    prefix   claude-*          m starts with literal
    suffix   *-mini            m ends with literal
    infix    *gpt-4*           literal occurs in m
    any      *                 always: the catch-all, below every other pattern

A lone `*` is accepted as the catch-all (claude-opus-4-1 beats claude-opus-*, which beats
claude-*, which beats *). Rejected: an empty pattern, whitespace, a `*` in the middle, two
stars at one end, and stars with nothing between them (`**`).

Specificity: an exact name beats every glob; among globs, more literal characters win.
`Specificity(is_exact, literals)` orders that way as a tuple.

Same specificity and conflicts. Two enabled routes' patterns conflict when they have the same
specificity (same kind and literal count) and some model matches both: `claude-*` vs `*-mini-4`
conflict, `claude-*` vs `claude*` do not. The first example is a prefix glob against a suffix
glob, seven literals each, so "kind" there can only mean exact-name-or-glob: two patterns have
the same specificity when both are exact names, or both are globs, with equal literal counts.
That reading makes both examples come out as stated, and it is the only one under which "the most
specific pattern wins" always names one route: a prefix and a suffix glob of equal length that
both match a model would otherwise tie with nothing to decide between them.

Overlap ("some model matches both"), by kind pair, with p, q the literals:
- exact/exact: p == q. exact/glob: the glob matches p.
- prefix/prefix: one literal starts with the other (at equal length: they are equal).
- suffix/suffix: one literal ends with the other.
- every other glob pair (prefix/suffix, anything/infix, anything/any): always; p + q is a witness.
So among globs of equal literal count, only two prefix globs with different literals, or two suffix
globs with different literals, can sit side by side in different routes.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple, NoReturn

from turnout.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "FAMILY_DEFAULT_PATTERNS",
    "FAMILY_ROUTES",
    "ModelPattern",
    "PatternKind",
    "RoutePatterns",
    "Specificity",
    "implicit_patterns",
    "is_conflict",
    "model_family",
    "overlaps",
    "same_specificity",
]

FAMILY_DEFAULT_PATTERNS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "anthropic": ("claude-*", "anthropic*", "*.anthropic.*", "anthropic/*"),
        "openai": ("gpt-*", "o1-*", "o3-*", "o4-*", "chatgpt-*", "openai/*"),
        "gemini": ("gemini-*", "google/*"),
    }
)
"""The model patterns a provider of each family serves, through its implicit route, when it
has none of its own."""

FAMILY_ROUTES: Mapping[str, str] = MappingProxyType(
    {"anthropic": "anthropic-family", "openai": "openai-family", "gemini": "gemini-family"}
)
"""The family routes, by family: they serve family defaults that no enabled route covers."""


class PatternKind(StrEnum):
    """Where a pattern's stars stand."""

    EXACT = "exact"
    PREFIX = "prefix"
    SUFFIX = "suffix"
    INFIX = "infix"
    ANY = "any"


class Specificity(NamedTuple):
    """How specific a pattern is; greater tuples win (exact first, then literal count)."""

    is_exact: bool
    literals: int


@dataclass(frozen=True, slots=True)
class ModelPattern:
    """One model pattern, lower-cased. Build it with `ModelPattern.parse`.

    `text` is the pattern as written (lower case), `kind` where its stars stand, `literal` the
    text without its stars.
    """

    text: str
    kind: PatternKind
    literal: str

    @classmethod
    def parse(cls, text: str, *, path: str = "models[0]") -> ModelPattern:
        """Parse `text`; raise `ConfigError` naming `path` and the rule it breaks."""
        if not text:
            rule = "a model pattern may not be empty"
            raise ConfigError(f"{path}: {rule}", [(path, rule)])
        if any(char.isspace() for char in text):
            _reject(path, "a model pattern may not contain whitespace", text)
        lowered = text.lower()
        core = lowered.removeprefix("*")
        leading = len(core) < len(lowered)
        trimmed = core.removesuffix("*")
        trailing = len(trimmed) < len(core)
        if "*" in trimmed:
            if trimmed.startswith("*") or trimmed.endswith("*"):
                _reject(path, "a pattern may have only one '*' at each end", text)
            _reject(path, "a '*' may only stand at the start or the end of a pattern", text)
        if lowered == "*":
            return cls(lowered, PatternKind.ANY, "")
        if not trimmed:
            _reject(
                path,
                "a pattern needs literal characters between its stars ('*' alone matches"
                " every model)",
                text,
            )
        return cls(lowered, _kind(leading=leading, trailing=trailing), trimmed)

    @property
    def specificity(self) -> Specificity:
        """Exact names beat every glob; among globs, more literal characters win."""
        return Specificity(self.kind is PatternKind.EXACT, len(self.literal))

    def matches(self, model: str) -> bool:
        """Whether `model` (any case) matches this pattern."""
        return self.matches_lowered(model.lower())

    def matches_lowered(self, model: str) -> bool:
        """`matches` for a model already in lower case."""
        kind = self.kind
        if kind is PatternKind.EXACT:
            return model == self.literal
        if kind is PatternKind.PREFIX:
            return model.startswith(self.literal)
        if kind is PatternKind.SUFFIX:
            return model.endswith(self.literal)
        return self.literal in model

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class RoutePatterns:
    """One route's model patterns, as the index sees them.

    `is_implicit` marks a provider's own route (its implicit route) and `family` its provider's
    family (`anthropic`, `openai`, `google` or `none`), which settles ties between implicit
    routes.
    `created` is the creation order, used only to name the later route first in a conflict.
    `path` prefixes error paths (default: the route name), e.g. `routes[2]` gives
    `routes[2].models[1]`.
    """

    route: str
    patterns: tuple[ModelPattern, ...]
    is_implicit: bool = False
    family: str = "none"
    created: int = 0
    path: str = ""

    @classmethod
    def parse(
        cls,
        route: str,
        texts: Iterable[str],
        *,
        is_implicit: bool = False,
        family: str = "none",
        created: int = 0,
        path: str = "",
    ) -> RoutePatterns:
        """Parse each text; raise one `ConfigError` listing every invalid pattern."""
        base = path or route
        patterns: list[ModelPattern] = []
        problems: list[tuple[str, str]] = []
        for index, text in enumerate(texts):
            try:
                patterns.append(ModelPattern.parse(text, path=f"{base}.models[{index}]"))
            except ConfigError as exc:
                problems.extend(exc.errors)
        if problems:
            raise ConfigError("\n".join(f"{where}: {rule}" for where, rule in problems), problems)
        return cls(route, tuple(patterns), is_implicit, family, created, path)

    def where(self, index: int) -> str:
        """The error path of pattern number `index`."""
        return f"{self.path or self.route}.models[{index}]"


def _kind(*, leading: bool, trailing: bool) -> PatternKind:
    if leading and trailing:
        return PatternKind.INFIX
    if leading:
        return PatternKind.SUFFIX
    if trailing:
        return PatternKind.PREFIX
    return PatternKind.EXACT


def _reject(path: str, rule: str, text: str) -> NoReturn:
    message = f"{path}: {rule} (got {text!r})"
    raise ConfigError(message, errors=[(path, f"{rule} (got {text!r})")])


def same_specificity(a: ModelPattern, b: ModelPattern) -> bool:
    """Both exact names or both globs, with the same literal count (see the module notes)."""
    return a.specificity == b.specificity


def overlaps(a: ModelPattern, b: ModelPattern) -> bool:
    """Whether some model matches both patterns."""
    if a.kind is PatternKind.EXACT:
        return b.matches_lowered(a.literal)
    if b.kind is PatternKind.EXACT:
        return a.matches_lowered(b.literal)
    if a.kind is b.kind is PatternKind.PREFIX:
        return a.literal.startswith(b.literal) or b.literal.startswith(a.literal)
    if a.kind is b.kind is PatternKind.SUFFIX:
        return a.literal.endswith(b.literal) or b.literal.endswith(a.literal)
    return True


def is_conflict(a: ModelPattern, b: ModelPattern) -> bool:
    """Two routes may not hold these two patterns: same specificity and some common model."""
    return same_specificity(a, b) and overlaps(a, b)


_PARSED_DEFAULTS: tuple[tuple[str, ModelPattern], ...] = tuple(
    (family, ModelPattern.parse(text, path=f"{family} defaults"))
    for family, texts in FAMILY_DEFAULT_PATTERNS.items()
    for text in texts
)


def model_family(model: str) -> str | None:
    """The family whose default patterns match `model` most specifically.

    None when no family's defaults match, or when two families' match equally well.
    """
    lowered = model.lower()
    best: Specificity | None = None
    families: set[str] = set()
    for family, pattern in _PARSED_DEFAULTS:
        if not pattern.matches_lowered(lowered):
            continue
        if best is None or pattern.specificity > best:
            best, families = pattern.specificity, {family}
        elif pattern.specificity == best:
            families.add(family)
    return families.pop() if len(families) == 1 else None


def implicit_patterns(
    provider_patterns: Iterable[ModelPattern | str],
    family: str,
    stored_patterns: Iterable[ModelPattern | str],
) -> tuple[ModelPattern, ...]:
    """The patterns of a provider's implicit route: the route named after a provider that is in
    no enabled route.

    The provider's own `model_patterns` if it has any, else its family's defaults (none for an
    unknown family or `none`), less every pattern that `stored_patterns` (the patterns of the
    enabled stored and file routes) already holds. Duplicates are dropped; order is kept.
    """
    own = tuple(
        _as_pattern(pattern, f"model_patterns[{index}]")
        for index, pattern in enumerate(provider_patterns)
    )
    source = own or tuple(pattern for name, pattern in _PARSED_DEFAULTS if name == family)
    taken = {_as_pattern(pattern, "models").text for pattern in stored_patterns}
    kept: dict[str, ModelPattern] = {}
    for pattern in source:
        if pattern.text not in taken:
            kept.setdefault(pattern.text, pattern)
    return tuple(kept.values())


def _as_pattern(value: ModelPattern | str, path: str) -> ModelPattern:
    return value if isinstance(value, ModelPattern) else ModelPattern.parse(value, path=path)
