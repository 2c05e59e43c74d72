"""The pattern index: conflicts, most-specific resolution, implicit ties, family routes, closest."""

from __future__ import annotations

from itertools import combinations
from typing import TYPE_CHECKING

import pytest
from hypothesis import given
from hypothesis import strategies as st

from turnout.access.model_index import (
    Match,
    PatternIndex,
    RoutePatterns,
    ambiguity_error,
    find_conflicts,
    no_route_error,
    no_route_message,
)
from turnout.access.patterns import ModelPattern, PatternKind, is_conflict
from turnout.errors import ConfigError, NoRoute, RoutingError

if TYPE_CHECKING:
    from random import Random

P = ModelPattern.parse


def route(
    name: str, *texts: str, implicit: bool = False, family: str = "none", created: int = 0
) -> RoutePatterns:
    """A route entry from pattern texts."""
    return RoutePatterns.parse(name, texts, is_implicit=implicit, family=family, created=created)


def served_by(index: PatternIndex, model: str) -> str | None:
    """The single route serving `model`, or None."""
    match = index.resolve(model)
    return None if match is None else match.route


def test_exact_name_beats_every_glob() -> None:
    """An exact name wins over globs with more literal characters."""
    index = PatternIndex.build(
        [route("long", "*claude-opus-4-1-2025*"), route("exact", "claude-opus-4-1-2025")]
    )
    assert served_by(index, "claude-opus-4-1-2025") == "exact"
    assert served_by(index, "x-claude-opus-4-1-2025") == "long"


def test_more_literal_characters_win_across_kinds() -> None:
    """Among globs the one with the most literal characters wins, whatever its kind."""
    index = PatternIndex.build(
        [
            route("claude", "claude-*"),
            route("opus", "claude-opus-*"),
            route("minis", "*-mini"),
            route("fours", "*gpt-4o*"),
            route("all", "*"),
        ]
    )
    assert served_by(index, "claude-opus-4") == "opus"
    assert served_by(index, "claude-haiku") == "claude"
    assert served_by(index, "claude-mini") == "claude"
    assert served_by(index, "openai/gpt-4o-mini") == "fours"
    assert served_by(index, "llama-mini") == "minis"
    assert served_by(index, "llama") == "all"


def test_resolve_reports_the_pattern() -> None:
    """A match carries the pattern that won."""
    index = PatternIndex.build([route("opus", "claude-opus-*", "*opus*")])
    match = index.resolve("claude-opus-4")
    assert match == Match(("opus",), (P("claude-opus-*"),))
    assert match.pattern == P("claude-opus-*")
    assert not match.is_ambiguous


def test_no_pattern_matches() -> None:
    """A model no pattern matches resolves to None."""
    index = PatternIndex.build([route("claude", "claude-*")])
    assert index.resolve("gpt-4o") is None
    assert index.resolve("claude") is None


def test_resolution_ignores_case() -> None:
    """Mixed-case patterns and models meet in lower case."""
    index = PatternIndex.build([route("claude", "Claude-*"), route("exact", "GPT-4o")])
    assert served_by(index, "CLAUDE-3") == "claude"
    assert served_by(index, "gpt-4O") == "exact"


def test_spec_conflict_is_refused_naming_both_routes_and_patterns() -> None:
    """claude-* vs *-mini-4 in two routes is a ConfigError naming both (the later route first)."""
    with pytest.raises(ConfigError) as caught:
        PatternIndex.build(
            [route("claude", "claude-*", created=1), route("minis", "*-mini-4", created=2)]
        )
    assert str(caught.value) == (
        'minis.models[0]: model pattern "*-mini-4" of route "minis" overlaps "claude-*"'
        ' of route "claude" at the same specificity'
    )


def test_spec_non_conflict_lets_the_more_specific_win() -> None:
    """claude-* and claude* coexist; claude-* wins its models, claude* keeps the rest."""
    index = PatternIndex.build([route("claude", "claude-*"), route("bedrock", "claude*")])
    assert served_by(index, "claude-3") == "claude"
    assert served_by(index, "claudex") == "bedrock"


def test_build_lists_every_conflict() -> None:
    """All conflicts between routes are reported at once, each with its path."""
    with pytest.raises(ConfigError) as caught:
        PatternIndex.build(
            [
                RoutePatterns.parse("a", ["x*", "*gpt*", "same"], path="routes[0]"),
                RoutePatterns.parse("b", ["*y", "*o1-*"], path="routes[1]", created=1),
                RoutePatterns.parse("c", ["same"], path="routes[2]", created=2),
            ]
        )
    rule = 'model pattern "{}" of route "{}" overlaps "{}" of route "a" at the same specificity'
    assert caught.value.errors == (
        ("routes[1].models[0]", rule.format("*y", "b", "x*")),
        ("routes[1].models[1]", rule.format("*o1-*", "b", "*gpt*")),
        ("routes[2].models[0]", rule.format("same", "c", "same")),
    )
    assert str(caught.value).count("\n") == 2


def test_patterns_inside_one_route_may_overlap() -> None:
    """One route may hold overlapping patterns of equal specificity."""
    index = PatternIndex.build([route("mixed", "claude-*", "*-mini-4", "*opus-4*")])
    assert served_by(index, "claude-mini-4") == "mixed"


def test_disjoint_globs_of_equal_length_coexist() -> None:
    """Two prefix globs (or two suffix globs) with different literals never conflict."""
    index = PatternIndex.build(
        [route("a", "gpt-4o-*"), route("b", "gpt-4.1*"), route("c", "*-mini"), route("d", "*-nano")]
    )
    assert [served_by(index, m) for m in ("gpt-4o-x", "gpt-4.1", "o-mini", "o-nano")] == [
        "a",
        "b",
        "c",
        "d",
    ]


def test_duplicate_route_name_is_refused() -> None:
    """A route given twice is a ConfigError."""
    with pytest.raises(ConfigError, match='route "a" is given twice'):
        PatternIndex.build([route("a", "x*"), route("a", "y*")])


def test_route_patterns_parse_lists_every_invalid_pattern() -> None:
    """Parsing a route's patterns reports each invalid one with its path."""
    with pytest.raises(ConfigError) as caught:
        RoutePatterns.parse("r", ["ok*", "b*d", "", "x**"], path="routes[3]")
    assert [where for where, _ in caught.value.errors] == [
        "routes[3].models[1]",
        "routes[3].models[2]",
        "routes[3].models[3]",
    ]


def test_implicit_routes_may_overlap_and_then_tie() -> None:
    """Two implicit routes of one family serving claude-* tie: the match lists both."""
    index = PatternIndex.build(
        [
            route("anthropic-b", "claude-*", implicit=True, family="anthropic"),
            route("anthropic-a", "claude-*", implicit=True, family="anthropic"),
        ]
    )
    match = index.resolve("claude-3")
    assert match is not None
    assert match.is_ambiguous
    assert match.routes == ("anthropic-a", "anthropic-b")
    with pytest.raises(ValueError, match="ambiguous"):
        _ = match.route


def test_implicit_tie_won_by_the_one_route_of_the_models_family() -> None:
    """Among tied implicit routes exactly one of the model's family wins."""
    index = PatternIndex.build(
        [
            route("local", "claude-*", implicit=True, family="none"),
            route("anthropic", "claude-*", implicit=True, family="anthropic"),
            route("openai", "*-haiku", implicit=True, family="openai"),
        ]
    )
    assert served_by(index, "claude-haiku") == "anthropic"


def test_implicit_tie_with_no_family_route_is_ambiguous() -> None:
    """Tied implicit routes none of which is of the model's family stay ambiguous."""
    index = PatternIndex.build(
        [
            route("local-a", "llama*", implicit=True),
            route("local-b", "llama*", implicit=True),
            route("anthropic", "*lama3", implicit=True, family="anthropic"),
        ]
    )
    match = index.resolve("llama3")
    assert match is not None
    assert match.routes == ("anthropic", "local-a", "local-b")


def test_stored_route_beats_implicit_route_at_equal_specificity() -> None:
    """A stored route wins over an implicit route whose different pattern ties with it."""
    index = PatternIndex.build(
        [
            route("anthropic", "claude-*", implicit=True, family="anthropic"),
            route("minis", "*-mini-4"),
        ]
    )
    assert served_by(index, "claude-mini-4") == "minis"
    assert served_by(index, "claude-3") == "anthropic"


def test_more_specific_implicit_pattern_beats_stored_glob() -> None:
    """Specificity comes first: an implicit route's longer pattern beats a stored shorter one."""
    index = PatternIndex.build(
        [route("any", "*"), route("anthropic", "claude-*", implicit=True, family="anthropic")]
    )
    assert served_by(index, "claude-3") == "anthropic"
    assert served_by(index, "gpt-4") == "any"


def test_ambiguity_error_names_the_tied_routes() -> None:
    """The UPSTREAM_AMBIGUOUS error is a 503 naming each tied route and its pattern."""
    match = Match(("a", "b"), (P("llama*"), P("*ama3")))
    error = ambiguity_error("llama3", match)
    assert isinstance(error, RoutingError)
    assert (error.status, error.code) == (503, "UPSTREAM_AMBIGUOUS")
    assert str(error) == (
        'implicit routes "a" (model pattern llama*), "b" (model pattern *ama3) tie for model'
        ' "llama3" and not exactly one of them is of its family; put their providers in one route'
    )


def test_family_routes_serve_family_defaults() -> None:
    """resolve_family sends an unrouted family model to its family route."""
    index = PatternIndex.build(
        [route("opus", "claude-opus-*")], family_routes=["anthropic", "openai"]
    )
    assert index.resolve("claude-haiku-4") is None
    match = index.resolve_family("claude-haiku-4")
    assert match == Match(("anthropic-family",), (P("claude-*"),))
    family = index.resolve_family("us.anthropic.claude-3")
    assert family is not None
    assert family.pattern == P("*.anthropic.*")
    openai = index.resolve_family("o3-mini")
    assert openai is not None
    assert openai.route == "openai-family"


def test_family_route_exists_only_for_named_families() -> None:
    """Without an OpenAI provider there is no openai-family route; non-family models get none."""
    index = PatternIndex.build([], family_routes=["anthropic"])
    assert index.resolve_family("gpt-4o") is None
    assert index.resolve_family("llama3") is None
    assert PatternIndex.build([]).resolve_family("claude-3") is None


def test_only_known_families_have_family_routes() -> None:
    """Only anthropic, gemini and openai have family routes."""
    with pytest.raises(ConfigError, match="only anthropic, gemini, openai have family routes"):
        PatternIndex.build([], family_routes=["google"])


def test_closest_message_of_the_spec() -> None:
    """The NO_ROUTE message names the closest route and its pattern, word for word."""
    index = PatternIndex.build([route("claude-opus", "claude-opus-*"), route("gpt", "gpt-*")])
    closest = index.closest("claude-sonnet-4-6")
    assert closest == ("claude-opus", P("claude-opus-*"))
    assert no_route_message("claude-sonnet-4-6", closest) == (
        'no route serves model "claude-sonnet-4-6": the closest route is "claude-opus"'
        " (model pattern claude-opus-*); add the model to a route's model patterns"
    )


def test_closest_prefers_longest_common_prefix_then_specificity_then_name() -> None:
    """Common prefix first; equal prefixes go to the more specific pattern, then the name."""
    index = PatternIndex.build(
        [
            route("b-short", "clau*"),
            route("c-long", "claude-son*"),
            route("a-exact", "claude-sox"),
            route("z", "claude-haiku-*"),
        ]
    )
    assert index.closest("claude-sonnet-4-6") == ("c-long", P("claude-son*"))
    assert index.closest("claude-sow") == ("a-exact", P("claude-sox"))
    tie = PatternIndex.build([route("b", "gpt-4x*"), route("a", "gpt-4y*")])
    assert tie.closest("gpt-4o") == ("a", P("gpt-4y*"))


def test_closest_without_common_prefix_and_without_patterns() -> None:
    """With no shared prefix the most specific pattern is named; an empty index names none."""
    index = PatternIndex.build([route("all", "*"), route("minis", "*-mini")])
    assert index.closest("llama") == ("minis", P("*-mini"))
    assert PatternIndex.build([route("byname")]).closest("llama") is None


def test_no_route_error_without_a_closest_route() -> None:
    """NoRoute carries the short message when no route has a pattern."""
    error = no_route_error("llama3", None)
    assert isinstance(error, NoRoute)
    assert (error.status, error.code) == (503, "NO_ROUTE")
    assert (
        str(error) == 'no route serves model "llama3"; add the model to a route\'s model patterns'
    )


def test_rebuilt_index_answers_from_the_new_configuration() -> None:
    """A model cached by one index resolves afresh in a rebuilt index."""
    before = PatternIndex.build([route("old", "gpt-*")])
    assert served_by(before, "gpt-4o") == "old"
    assert served_by(before, "gpt-4o") == "old"
    after = PatternIndex.build([route("old", "gpt-*"), route("new", "gpt-4o")])
    assert served_by(after, "gpt-4o") == "new"


def test_cache_is_bounded_and_answers_stay_right() -> None:
    """The LRU keeps at most cache_size models and evicts the least recently used."""
    index = PatternIndex.build([route("a", "a*"), route("b", "b*")], cache_size=2)
    assert [served_by(index, m) for m in ("a1", "b1", "a1", "c1", "b1")] == [
        "a",
        "b",
        "a",
        None,
        "b",
    ]
    assert list(index._cache) == ["c1", "b1"]
    uncached = PatternIndex.build([route("a", "a*")], cache_size=0)
    assert served_by(uncached, "a1") == "a"
    assert not uncached._cache


def test_very_long_model_names_are_resolved_but_not_cached() -> None:
    """A model name past 256 characters is answered without taking cache memory."""
    index = PatternIndex.build([route("a", "a*")])
    long_name = "a" * 10_000
    assert served_by(index, long_name) == "a"
    assert served_by(index, "a" * 256) == "a"
    assert list(index._cache) == ["a" * 256]


def test_infix_lookup_by_windows_when_literals_outnumber_them() -> None:
    """Many infix literals of one length are probed window by window and still found."""
    literals = [f"*{index:04d}*" for index in range(500)]
    index = PatternIndex.build([route("numbers", *literals), route("word", "*abcde*")])
    assert served_by(index, "m-0042-x") == "numbers"
    assert served_by(index, "xabcdex") == "word"
    assert index.resolve("m-9999-x") is None


# Property tests over a two-letter alphabet, where overlaps and ties are frequent.

LITERALS = st.text(alphabet="ab", min_size=1, max_size=3)


@st.composite
def pattern_texts(draw: st.DrawFn) -> str:
    """One pattern text of any kind."""
    kind = draw(st.sampled_from(list(PatternKind)))
    literal = draw(LITERALS)
    return {
        PatternKind.EXACT: literal,
        PatternKind.PREFIX: f"{literal}*",
        PatternKind.SUFFIX: f"*{literal}",
        PatternKind.INFIX: f"*{literal}*",
        PatternKind.ANY: "*",
    }[kind]


@st.composite
def entries(draw: st.DrawFn, *, implicit: bool | None = None) -> list[RoutePatterns]:
    """A few routes with a few patterns each; implicit flags drawn unless fixed."""
    count = draw(st.integers(min_value=1, max_value=5))
    made = []
    for number in range(count):
        texts = draw(st.lists(pattern_texts(), min_size=1, max_size=3))
        flag = draw(st.booleans()) if implicit is None else implicit
        made.append(route(f"r{number}", *texts, implicit=flag, created=draw(st.integers(0, 9))))
    return made


MODELS = st.lists(st.text(alphabet="abAB", max_size=6), min_size=1, max_size=8)


def without_conflicts(routes: list[RoutePatterns]) -> list[RoutePatterns]:
    """Make each stored route that conflicts with an earlier stored one implicit."""
    kept: list[RoutePatterns] = []
    for entry in routes:
        stored = [r for r in kept if not r.is_implicit]
        clash = not entry.is_implicit and any(True for _ in find_conflicts([*stored, entry]))
        kept.append(
            RoutePatterns(
                entry.route, entry.patterns, clash or entry.is_implicit, entry.family, entry.created
            )
        )
    return kept


def brute_force(routes: list[RoutePatterns], model: str) -> tuple[str, ...]:
    """The answer of a scan of every pattern: top specificity, stored routes before implicit."""
    matching = [(p.specificity, r) for r in routes for p in r.patterns if p.matches(model)]
    if not matching:
        return ()
    top_specificity = max(specificity for specificity, _ in matching)
    top = {r.route: r for specificity, r in matching if specificity == top_specificity}
    stored = [name for name, r in top.items() if not r.is_implicit]
    return tuple(sorted(stored or top))


@given(entries(), MODELS)
def test_indexed_lookup_equals_a_full_scan(routes: list[RoutePatterns], models: list[str]) -> None:
    """The index gives the answer a scan of every pattern gives, without scanning."""
    routes = without_conflicts(routes)
    index = PatternIndex.build(routes)
    for model in models:
        match = index.resolve(model)
        assert (match.routes if match else ()) == brute_force(routes, model)


@given(entries())
def test_build_refuses_exactly_the_pairwise_conflicts(routes: list[RoutePatterns]) -> None:
    """build() fails iff two non-implicit routes hold patterns that conflict pairwise."""
    stored = [r for r in routes if not r.is_implicit]
    pairwise = {
        (a.route, pa.text, b.route, pb.text)
        for a, b in combinations(stored, 2)
        for pa in a.patterns
        for pb in b.patterns
        if is_conflict(pa, pb)
    }
    found = {
        tuple(sorted([(c.route, c.pattern.text), (c.other_route, c.other_pattern.text)]))
        for c in find_conflicts(routes)
    }
    assert found == {((a, pa), (b, pb)) for a, pa, b, pb in pairwise}
    if pairwise:
        with pytest.raises(ConfigError):
            PatternIndex.build(routes)
    else:
        PatternIndex.build(routes)


@given(entries(), MODELS, st.randoms(use_true_random=False))
def test_creation_order_never_matters(
    routes: list[RoutePatterns], models: list[str], rng: Random
) -> None:
    """Shuffling the routes, their patterns and their creation stamps changes no answer."""
    routes = without_conflicts(routes)
    shuffled = [
        RoutePatterns(r.route, tuple(reversed(r.patterns)), r.is_implicit, r.family, -r.created)
        for r in routes
    ]
    rng.shuffle(shuffled)
    first, second = PatternIndex.build(routes), PatternIndex.build(shuffled)
    for model in models:
        assert first.resolve(model) == second.resolve(model)
        assert first.closest(model) == second.closest(model)


@given(entries(implicit=True), MODELS)
def test_closest_equals_a_full_scan(routes: list[RoutePatterns], models: list[str]) -> None:
    """closest() names what ranking every pattern by prefix, specificity, name would name."""
    index = PatternIndex.build(routes)

    def rank(entry: RoutePatterns, pattern: ModelPattern, model: str) -> tuple[object, ...]:
        shared = next(
            (n for n in range(len(model), -1, -1) if pattern.text.startswith(model[:n])), 0
        )
        spec = pattern.specificity
        return (-shared, not spec.is_exact, -spec.literals, entry.route, pattern.text)

    for model in models:
        lowered = model.lower()
        best = min((rank(r, p, lowered), r.route, p) for r in routes for p in r.patterns)
        assert index.closest(model) == (best[1], best[2])
