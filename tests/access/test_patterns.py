"""Model patterns: parsing rules, specificity, overlap math, family defaults."""

from __future__ import annotations

from itertools import product

import pytest
from hypothesis import given
from hypothesis import strategies as st

from turnout.access.patterns import (
    FAMILY_DEFAULT_PATTERNS,
    ModelPattern,
    PatternKind,
    Specificity,
    implicit_patterns,
    is_conflict,
    model_family,
    overlaps,
    same_specificity,
)
from turnout.errors import ConfigError

P = ModelPattern.parse


@pytest.mark.parametrize(
    ("text", "kind", "literal"),
    [
        ("claude-opus-4-1", PatternKind.EXACT, "claude-opus-4-1"),
        ("claude-*", PatternKind.PREFIX, "claude-"),
        ("*-mini", PatternKind.SUFFIX, "-mini"),
        ("*gpt-4*", PatternKind.INFIX, "gpt-4"),
        ("*", PatternKind.ANY, ""),
        ("a", PatternKind.EXACT, "a"),
        ("a*", PatternKind.PREFIX, "a"),
        ("*a*", PatternKind.INFIX, "a"),
        ("model?[1]", PatternKind.EXACT, "model?[1]"),
    ],
)
def test_parse_finds_kind_and_literal(text: str, kind: PatternKind, literal: str) -> None:
    """Each accepted form parses to its kind and literal; only '*' is special."""
    pattern = P(text)
    assert (pattern.kind, pattern.literal, pattern.text) == (kind, literal, text)


def test_parse_lower_cases_the_pattern() -> None:
    """Patterns are kept in lower case."""
    pattern = P("Claude-OPUS-*")
    assert (pattern.text, pattern.literal, str(pattern)) == (
        "claude-opus-*",
        "claude-opus-",
        "claude-opus-*",
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "cla*de",
            "models[1]: a '*' may only stand at the start or the end of a pattern (got 'cla*de')",
        ),
        (
            "*cla*de*",
            "models[1]: a '*' may only stand at the start or the end of a pattern (got '*cla*de*')",
        ),
        ("claude**", "models[1]: a pattern may have only one '*' at each end (got 'claude**')"),
        ("**claude", "models[1]: a pattern may have only one '*' at each end (got '**claude')"),
        ("***", "models[1]: a pattern may have only one '*' at each end (got '***')"),
        (
            "**",
            (
                "models[1]: a pattern needs literal characters between its stars"
                " ('*' alone matches every model) (got '**')"
            ),
        ),
        ("", "models[1]: a model pattern may not be empty"),
        ("claude *", "models[1]: a model pattern may not contain whitespace (got 'claude *')"),
        (" claude", "models[1]: a model pattern may not contain whitespace (got ' claude')"),
    ],
)
def test_parse_rejects_with_path_and_rule(text: str, message: str) -> None:
    """Every invalid form is a ConfigError naming the path, the rule and the text as written."""
    with pytest.raises(ConfigError) as caught:
        P(text, path="models[1]")
    assert str(caught.value) == message
    assert caught.value.errors == ((("models[1]", message.removeprefix("models[1]: ")),))


def test_parse_error_keeps_the_original_case() -> None:
    """The rejected text is quoted as the user wrote it."""
    with pytest.raises(ConfigError, match=r"\(got 'CLA\*DE'\)"):
        P("CLA*DE")


def test_parse_default_path() -> None:
    """Without a path the error names models[0]."""
    with pytest.raises(ConfigError, match=r"^models\[0\]: "):
        P("a*b")


@pytest.mark.parametrize(
    ("text", "model", "expected"),
    [
        ("claude-opus-4-1", "claude-opus-4-1", True),
        ("claude-opus-4-1", "claude-opus-4-10", False),
        ("claude-*", "claude-3-haiku", True),
        ("claude-*", "claude-", True),
        ("claude-*", "my-claude-3", False),
        ("*-mini", "gpt-4o-mini", True),
        ("*-mini", "gpt-4o-mini-2", False),
        ("*gpt-4*", "openai/gpt-4o", True),
        ("*gpt-4*", "gpt-4", True),
        ("*gpt-4*", "gpt-3.5", False),
        ("*", "", True),
        ("*", "anything at all", True),
    ],
)
def test_matches(text: str, model: str, expected: bool) -> None:
    """Matching follows the kind: equal, starts with, ends with, contains, anything."""
    assert P(text).matches(model) is expected


def test_matching_ignores_case_on_both_sides() -> None:
    """A mixed-case pattern matches a model in any case."""
    pattern = P("*GPT-4o*")
    assert pattern.matches("OpenAI/gpt-4O-mini")
    assert pattern.matches("gpt-4o")


def test_specificity_order_of_the_seed_example() -> None:
    """claude-opus-4-1 beats claude-opus-*, which beats claude-*, which beats *."""
    ordered = [P("*"), P("claude-*"), P("claude-opus-*"), P("claude-opus-4-1")]
    assert sorted(ordered, key=lambda pattern: pattern.specificity) == ordered
    assert P("claude-*").specificity == Specificity(is_exact=False, literals=7)


def test_exact_beats_any_glob_however_long() -> None:
    """A two-letter exact name outranks a glob with twenty literal characters."""
    assert P("o1").specificity > P("*gpt-4-turbo-preview-x*").specificity


def test_same_specificity_ignores_glob_kind() -> None:
    """Globs compare by literal count only; exact names never match globs' specificity."""
    assert same_specificity(P("claude-*"), P("*-mini-4"))
    assert same_specificity(P("claude-*"), P("*opus-45*"))
    assert not same_specificity(P("claude-*"), P("claude*"))
    assert not same_specificity(P("claude-"), P("claude-*"))
    assert same_specificity(P("abc"), P("xyz"))


def test_spec_example_prefix_and_suffix_of_seven_conflict() -> None:
    """claude-* vs *-mini-4: seven literals each, and claude-mini-4 matches both."""
    a, b = P("claude-*"), P("*-mini-4")
    assert is_conflict(a, b)
    assert a.matches("claude-mini-4")
    assert b.matches("claude-mini-4")


def test_spec_example_more_literals_do_not_conflict() -> None:
    """claude-* vs claude*: they overlap, but seven literals beat six."""
    a, b = P("claude-*"), P("claude*")
    assert overlaps(a, b)
    assert not is_conflict(a, b)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("gpt-4o", "gpt-4o", True),
        ("gpt-4o", "gpt-4", False),
        ("gpt-4o", "gpt-*", True),
        ("gpt-4o", "*-4o", True),
        ("gpt-4o", "*t-4*", True),
        ("gpt-4o", "*", True),
        ("gpt-4o", "*mini*", False),
        ("gpt-*", "gpt-4*", True),
        ("gpt-4*", "gpt-*", True),
        ("gpt-*", "gpt_*", False),
        ("abc*", "abd*", False),
        ("*-mini", "*o-mini", True),
        ("*-mini", "*-maxi", False),
        ("gpt-*", "*-mini", True),
        ("zzz*", "*aaa", True),
        ("zzz*", "*aaa*", True),
        ("*zzz", "*aaa*", True),
        ("*zzz*", "*aaa*", True),
        ("*", "*", True),
        ("*", "x*", True),
    ],
)
def test_overlaps_per_kind_pair(a: str, b: str, expected: bool) -> None:
    """Overlap math per kind pair, in both argument orders."""
    assert overlaps(P(a), P(b)) is expected
    assert overlaps(P(b), P(a)) is expected


ALPHABET = "ab"


@st.composite
def patterns(draw: st.DrawFn) -> ModelPattern:
    """Small patterns over a two-letter alphabet, so overlaps are common."""
    kind = draw(st.sampled_from(list(PatternKind)))
    if kind is PatternKind.ANY:
        return P("*")
    literal = draw(st.text(alphabet=ALPHABET, min_size=1, max_size=3))
    lead = "*" if kind in (PatternKind.SUFFIX, PatternKind.INFIX) else ""
    trail = "*" if kind in (PatternKind.PREFIX, PatternKind.INFIX) else ""
    return P(f"{lead}{literal}{trail}")


def witness(a: ModelPattern, b: ModelPattern) -> str:
    """A model both patterns match, built from the kinds (assumes they overlap)."""
    for x, y in ((a, b), (b, a)):
        if x.kind is PatternKind.EXACT:
            return x.literal
        if x.kind is PatternKind.ANY:
            return y.literal
    if a.kind is b.kind is PatternKind.PREFIX:
        return max(a.literal, b.literal, key=len)
    if a.kind is b.kind is PatternKind.SUFFIX:
        return max(a.literal, b.literal, key=len)
    first, second = (a, b) if a.kind is not PatternKind.SUFFIX else (b, a)
    if first.kind is PatternKind.INFIX and second.kind is PatternKind.PREFIX:
        first, second = second, first
    return first.literal + second.literal


@given(patterns(), patterns())
def test_overlaps_agrees_with_exhaustive_search(a: ModelPattern, b: ModelPattern) -> None:
    """overlaps() is True exactly when some model up to the combined literal length matches both."""
    limit = len(a.literal) + len(b.literal)
    models = (
        "".join(chars) for size in range(limit + 1) for chars in product(ALPHABET, repeat=size)
    )
    found = any(a.matches(model) and b.matches(model) for model in models)
    assert overlaps(a, b) is found


@given(patterns(), patterns())
def test_overlapping_patterns_have_a_witness(a: ModelPattern, b: ModelPattern) -> None:
    """When overlaps() says True, the witness built from the kinds matches both patterns."""
    if overlaps(a, b):
        model = witness(a, b)
        assert a.matches(model)
        assert b.matches(model)
    else:
        assert not (a.matches(witness(a, b)) and b.matches(witness(a, b)))


@given(patterns(), patterns(), st.text(alphabet="abAB", max_size=8))
def test_no_model_matches_both_when_overlaps_says_no(
    a: ModelPattern, b: ModelPattern, model: str
) -> None:
    """A model matching both patterns implies overlaps() is True."""
    if a.matches(model) and b.matches(model):
        assert overlaps(a, b)


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("claude-sonnet-4-5", "anthropic"),
        ("Anthropic.Claude-v2", "anthropic"),
        ("us.anthropic.claude-3", "anthropic"),
        ("gpt-4o", "openai"),
        ("o3-mini", "openai"),
        ("openai/gpt-4o", "openai"),
        ("gemini-2.0-flash", "gemini"),
        ("llama3", None),
        ("openai/x.anthropic.y", "anthropic"),
    ],
)
def test_model_family_by_most_specific_default(model: str, family: str | None) -> None:
    """A model's family is the family whose default pattern matches it most specifically."""
    assert model_family(model) == family


def test_family_defaults_are_the_spec_lists() -> None:
    """Each family's default patterns are exactly these lists, and every one parses."""
    assert FAMILY_DEFAULT_PATTERNS["anthropic"] == (
        "claude-*",
        "anthropic*",
        "*.anthropic.*",
        "anthropic/*",
    )
    assert FAMILY_DEFAULT_PATTERNS["openai"] == (
        "gpt-*",
        "o1-*",
        "o3-*",
        "o4-*",
        "chatgpt-*",
        "openai/*",
    )
    assert FAMILY_DEFAULT_PATTERNS["gemini"] == ("gemini-*", "google/*")


def test_implicit_patterns_prefer_the_providers_own() -> None:
    """A provider's own model_patterns replace its family's defaults."""
    got = implicit_patterns(["Llama*", "mistral-*"], "anthropic", [])
    assert [pattern.text for pattern in got] == ["llama*", "mistral-*"]


def test_implicit_patterns_fall_back_to_family_defaults_less_stored() -> None:
    """Without own patterns the family defaults serve, less those a stored route holds."""
    got = implicit_patterns([], "openai", ["GPT-*", P("o1-*"), "claude-*"])
    assert [pattern.text for pattern in got] == ["o3-*", "o4-*", "chatgpt-*", "openai/*"]


def test_implicit_patterns_drop_stored_and_duplicate_own_patterns() -> None:
    """Own patterns a stored route already has, and repeats, are dropped."""
    got = implicit_patterns(["a*", "b*", "A*"], "none", ["b*"])
    assert [pattern.text for pattern in got] == ["a*"]


def test_family_less_provider_without_patterns_gets_nothing() -> None:
    """A provider of family none without model_patterns has no implicit patterns."""
    assert implicit_patterns([], "none", []) == ()


def test_implicit_patterns_report_invalid_own_patterns() -> None:
    """An invalid own pattern names its model_patterns index."""
    with pytest.raises(ConfigError, match=r"^model_patterns\[1\]: "):
        implicit_patterns(["ok*", "b*d"], "none", [])
