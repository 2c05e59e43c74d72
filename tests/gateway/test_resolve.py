"""Resolution (docs/concepts.md, Route): alias > name > pattern > family, NO_ROUTE,
UPSTREAM_AMBIGUOUS, endpoints, the empty model and the key's ceilings."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from turnout.access.keys import Caller
from turnout.access.patterns import ModelPattern
from turnout.config.load import parse_config
from turnout.errors import ConfigError, NoRoute, RoutingError
from turnout.gateway.resolution.lookups import build_runtime, embedded_runtime

if TYPE_CHECKING:
    from turnout.gateway.runtime.live import Runtime

OPENAI = {"name": "openai", "kind": "openai", "api_key": "sk-test"}
ANTHROPIC = {"name": "anthropic", "kind": "anthropic", "api_key": "sk-ant-test"}


def runtime_of(data: dict[str, Any]) -> Runtime:
    """A runtime from a configuration document (no environment)."""
    return build_runtime(parse_config(data, env={}))


def on(provider: str, model: str, name: str, **options: Any) -> dict[str, Any]:
    """A route named `name` with one target."""
    return {"name": name, "targets": [{"provider": provider, "model": model}], **options}


def where(runtime: Runtime, model: str | None, endpoint: Any = "chat") -> tuple[str, str]:
    """(route name, matched_by) for `model`."""
    found = runtime.resolve(model, endpoint=endpoint)
    return found.entry.name, found.matched_by


ORDER = {
    "providers": [OPENAI, ANTHROPIC],
    "routes": [
        on("openai", "gpt-4o-mini", "fast-lane", aliases={"gpt-quick": {"openai": "gpt-4o-mini"}}),
        on("anthropic", "claude-x", "gpt-special"),
        on("openai", "gpt-4o", "gpts", models=["gpt-*"]),
    ],
}


def test_an_alias_beats_a_pattern() -> None:
    """`gpt-quick` matches `gpt-*` too, but the alias wins."""
    assert where(runtime_of(ORDER), "gpt-quick") == ("fast-lane", "alias")


def test_a_route_name_beats_a_pattern() -> None:
    """`gpt-special` matches `gpt-*` too, but the route name wins."""
    assert where(runtime_of(ORDER), "gpt-special") == ("gpt-special", "name")


def test_a_pattern_beats_the_family_route() -> None:
    """`gpt-4o` is an OpenAI family default, but the route's pattern wins."""
    found = runtime_of(ORDER).resolve("gpt-4o", endpoint="chat")
    assert (found.entry.name, found.matched_by, found.pattern) == ("gpts", "pattern", "gpt-*")


def test_the_family_route_serves_what_no_route_covers() -> None:
    """`o3-mini` is covered by no route: the openai family route serves it."""
    found = runtime_of(ORDER).resolve("o3-mini", endpoint="chat")
    assert (found.entry.name, found.matched_by, found.pattern) == (
        "openai-family",
        "family",
        "o3-*",
    )
    assert found.requested_model == "o3-mini"


def test_a_provider_with_model_patterns_is_in_no_family_route() -> None:
    """Its own model_patterns replace the family defaults: with no other OpenAI provider
    there is no openai-family route, so `o3-mini` has no route."""
    own = {**OPENAI, "model_patterns": ["gpt-4o*"]}
    runtime = runtime_of({"providers": [own], "routes": [on("openai", "gpt-4o", "gpt-4o")]})
    assert "openai-family" not in runtime.routes
    with pytest.raises(NoRoute) as caught:
        runtime.resolve("o3-mini", endpoint="chat")
    assert (caught.value.status, caught.value.code) == (503, "NO_ROUTE")
    assert where(runtime, "gpt-4o") == ("gpt-4o", "name")


def test_aliases_and_names_ignore_case() -> None:
    """`GPT-Quick` and `GPT-SPECIAL` resolve like their lower-case forms."""
    runtime = runtime_of(ORDER)
    assert where(runtime, "GPT-Quick") == ("fast-lane", "alias")
    assert where(runtime, "GPT-SPECIAL") == ("gpt-special", "name")


def test_the_most_specific_pattern_wins() -> None:
    """Exact beats glob; among globs more literal characters win, whatever the order."""
    runtime = runtime_of(
        {
            "providers": [OPENAI],
            "routes": [
                on("openai", "a", "short", models=["claude*"]),
                on("openai", "b", "long", models=["claude-opus-*"]),
                on("openai", "c", "exact", models=["claude-opus-4-1"]),
                on("openai", "d", "mid", models=["claude-*"]),
            ],
        }
    )
    assert where(runtime, "claude-opus-4-1") == ("exact", "pattern")
    assert where(runtime, "claude-opus-4-2") == ("long", "pattern")
    assert where(runtime, "claude-3-haiku") == ("mid", "pattern")
    assert where(runtime, "claudette") == ("short", "pattern")


def test_claude_star_vs_mini_suffix_is_refused_at_load() -> None:
    """Patterns overlapping at one specificity stop the runtime, naming both routes."""
    config = {
        "providers": [OPENAI],
        "routes": [
            on("openai", "a", "claude", models=["claude-*"]),
            on("openai", "b", "minis", models=["*-mini-4"]),
        ],
    }
    with pytest.raises(ConfigError) as info:
        runtime_of(config)
    assert info.value.errors == (
        (
            "routes[1].models[0]",
            (
                'model pattern "*-mini-4" of route "minis" overlaps "claude-*" of route "claude" at'
                " the same specificity"
            ),
        ),
    )


def test_claude_dash_star_and_claude_star_coexist() -> None:
    """`claude-*` beside `claude*` loads, and the longer literal wins where both match."""
    runtime = runtime_of(
        {
            "providers": [OPENAI],
            "routes": [
                on("openai", "a", "dashed", models=["claude-*"]),
                on("openai", "b", "plain", models=["claude*"]),
            ],
        }
    )
    assert where(runtime, "claude-3") == ("dashed", "pattern")
    assert where(runtime, "claude3") == ("plain", "pattern")


def test_implicit_routes_with_no_route_configured() -> None:
    """Vendor keys alone: gpt-4o goes to the openai route, claude-x to anthropic's."""
    runtime = embedded_runtime({"OPENAI_API_KEY": "sk-a", "ANTHROPIC_API_KEY": "sk-b"})
    found = runtime.resolve("gpt-4o", endpoint="chat")
    assert (found.entry.name, found.matched_by, found.pattern) == ("openai", "implicit", "gpt-*")
    assert where(runtime, "claude-x") == ("anthropic", "implicit")
    assert where(runtime, "claude-x", "messages") == ("anthropic", "implicit")


def test_implicit_routes_that_tie_are_ambiguous() -> None:
    """Two family-less providers serving `llama*` tie: 503 UPSTREAM_AMBIGUOUS naming both."""
    local = {"kind": "openai-compatible", "preset": "ollama", "model_patterns": ["llama*"]}
    runtime = runtime_of({"providers": [{"name": "box-a", **local}, {"name": "box-b", **local}]})
    with pytest.raises(RoutingError) as info:
        runtime.resolve("llama3", endpoint="chat")
    assert (info.value.status, info.value.code) == (503, "UPSTREAM_AMBIGUOUS")
    assert info.value.message == (
        'implicit routes "box-a" (model pattern llama*), "box-b" (model pattern llama*) tie for'
        ' model "llama3" and not exactly one of them is of its family; put their providers in'
        " one route"
    )


def test_a_tie_is_settled_by_the_models_family() -> None:
    """An OpenAI provider and a family-less one both serving `gpt-*`: the OpenAI one wins."""
    gateway = {"name": "relay", "kind": "openai-compatible", "base_url": "http://127.0.0.1:9/v1"}
    runtime = runtime_of({"providers": [OPENAI, {**gateway, "model_patterns": ["gpt-*"]}]})
    assert where(runtime, "gpt-4o") == ("openai", "implicit")


def test_no_route_names_the_closest_route_and_pattern() -> None:
    """Nothing serves the model: 503 NO_ROUTE naming the closest route and its pattern."""
    runtime = runtime_of(
        {
            "providers": [OPENAI],
            "routes": [on("openai", "a", "claude-opus", models=["claude-opus-*"])],
        }
    )
    with pytest.raises(NoRoute) as info:
        runtime.resolve("claude-sonnet-4-6", endpoint="chat")
    assert (info.value.status, info.value.code) == (503, "NO_ROUTE")
    assert info.value.message == (
        'no route serves model "claude-sonnet-4-6": the closest route is "claude-opus" (model'
        " pattern claude-opus-*); add the model to a route's model patterns"
    )


def test_a_disabled_route_serves_nothing() -> None:
    """Neither the name nor the patterns of a disabled route resolve."""
    runtime = runtime_of(
        {
            "providers": [{"name": "m", "kind": "mock", "model_patterns": ["zz-*"]}],
            "routes": [on("m", "a", "off", models=["m-*"], enabled=False)],
        }
    )
    with pytest.raises(NoRoute):
        runtime.resolve("off", endpoint="chat")
    with pytest.raises(NoRoute):
        runtime.resolve("m-large", endpoint="chat")
    assert where(runtime, "zz-1") == ("m", "implicit")


# ---- aliases -----------------------------------------------------------------------------------

ALIASED_ROUTES: list[dict[str, Any]] = [
    {
        "name": "main",
        "aliases": {"fast": {"openai": "gpt-4o-mini", "anthropic": "claude-haiku"}},
        "targets": [
            {"provider": "openai", "model": "gpt-4o"},
            {"provider": "anthropic", "model": "claude-sonnet", "name": "claude"},
        ],
    },
    {
        "name": "openai-only",
        "aliases": {"cheap": {"openai": "gpt-4o-mini"}},
        "targets": [
            {"provider": "openai", "model": "gpt-4o"},
            {"provider": "anthropic", "model": "claude-sonnet"},
        ],
    },
]
ALIASED = {"providers": [OPENAI, ANTHROPIC], "routes": ALIASED_ROUTES}


def test_alias_wire_models_replace_target_models() -> None:
    """Resolving an alias gives the alias's route: its targets ask for the alias's models."""
    found = runtime_of(ALIASED).resolve("fast", endpoint="chat")
    assert (found.entry.name, found.matched_by, found.requested_model) == ("main", "alias", "fast")
    assert [(t.name, t.model) for t in found.route.targets] == [
        ("openai:gpt-4o", "gpt-4o-mini"),
        ("claude", "claude-haiku"),
    ]


def test_an_alias_leaves_out_targets_it_does_not_map() -> None:
    """`cheap` maps only openai: the anthropic target is not in its route."""
    found = runtime_of(ALIASED).resolve("cheap", endpoint="chat")
    assert [(t.name, t.model) for t in found.route.targets] == [("openai:gpt-4o", "gpt-4o-mini")]


def test_an_alias_with_no_target_left_is_no_route_naming_alias_route_and_providers() -> None:
    """On /v1/messages `cheap` keeps no target: 503 NO_ROUTE naming all three."""
    with pytest.raises(NoRoute) as info:
        runtime_of(ALIASED).resolve("cheap", endpoint="messages")
    assert info.value.message == (
        'alias "cheap" of route "openai-only" leaves no target for this endpoint (the alias'
        " maps providers: openai)"
    )


# ---- endpoints ---------------------------------------------------------------------------------


def test_messages_use_the_messages_route() -> None:
    """/v1/messages and count_tokens get the route's Anthropic-speaking targets."""
    runtime = runtime_of(ALIASED)
    for endpoint in ("messages", "count_tokens"):
        found = runtime.resolve("main", endpoint=endpoint)
        assert [t.name for t in found.route.targets] == ["claude"]
        assert found.route is found.entry.messages_route


def test_messages_on_a_route_with_no_anthropic_target_is_no_route() -> None:
    """An OpenAI-only route cannot serve /v1/messages: 503 NO_ROUTE saying why."""
    runtime = runtime_of({"providers": [OPENAI], "routes": [on("openai", "gpt-4o", "r")]})
    with pytest.raises(NoRoute) as info:
        runtime.resolve("r", endpoint="messages")
    assert info.value.message == (
        'route "r" has no target that can serve Anthropic Messages (/v1/messages)'
    )


def test_embeddings_on_a_route_without_embeddings_is_a_400() -> None:
    """An Anthropic-only route: 400 embeddings_not_supported."""
    runtime = runtime_of({"providers": [ANTHROPIC], "routes": [on("anthropic", "claude-x", "r")]})
    with pytest.raises(RoutingError) as info:
        runtime.resolve("r", endpoint="embeddings")
    assert (info.value.status, info.value.code) == (400, "embeddings_not_supported")
    assert info.value.message == 'route "r" has no target that offers embeddings (/v1/embeddings)'


# ---- the empty model and the key's ceilings ----------------------------------------------------

KEYED = {
    "providers": [OPENAI],
    "routes": [on("openai", "gpt-4o", "a", models=["gpt-4o"]), on("openai", "gpt-4o-mini", "b")],
}


def caller(*routes: str, allowed: tuple[str, ...] = ()) -> Caller:
    """A caller limited to `routes` and `allowed` models."""
    return Caller(
        "default",
        "app",
        routes=routes,
        allowed_models=tuple(ModelPattern.parse(text) for text in allowed),
    )


def test_an_empty_model_goes_to_the_keys_only_route() -> None:
    """A key with exactly one route gets it for an empty or missing model."""
    runtime = runtime_of(KEYED)
    for model in ("", None):
        found = runtime.resolve(model, endpoint="chat", caller=caller("b"))
        assert (found.entry.name, found.matched_by, found.requested_model) == ("b", "key_route", "")


def test_an_empty_model_without_one_key_route_is_refused() -> None:
    """Several routes, none, or no caller at all: 403 model_not_allowed."""
    runtime = runtime_of(KEYED)
    for who in (caller("a", "b"), caller(), None):
        with pytest.raises(RoutingError) as info:
            runtime.resolve("", endpoint="chat", caller=who)
        assert (info.value.status, info.value.code) == (403, "model_not_allowed")


def test_a_route_outside_the_keys_routes_is_model_denied() -> None:
    """The key may call route b only; gpt-4o resolves to a: 400 MODEL_DENIED."""
    with pytest.raises(RoutingError) as info:
        runtime_of(KEYED).resolve("gpt-4o", endpoint="chat", caller=caller("b"))
    assert (info.value.status, info.value.code) == (400, "MODEL_DENIED")
    assert info.value.message == 'key "app" may not call route "a"; its routes are: b'


def test_a_model_outside_allowed_models_is_model_denied() -> None:
    """The key may use gpt-4o-* models only."""
    runtime = runtime_of(KEYED)
    with pytest.raises(RoutingError) as info:
        runtime.resolve("gpt-4o", endpoint="chat", caller=caller(allowed=("gpt-4o-*",)))
    assert info.value.code == "MODEL_DENIED"
    found = runtime.resolve("b", endpoint="chat", caller=caller(allowed=("b",)))
    assert found.entry.name == "b"


def _bound(*bindings: dict[str, Any]) -> Runtime:
    return runtime_of({**KEYED, "bindings": list(bindings)})


EVERYONE: Any = [{"everyone": True}]
DENY_GPT_4O = {
    "name": "no-4o",
    "mode": "deny",
    "subjects": EVERYONE,
    "grants": [{"models": "gpt-4o"}],
}
ONLY_MINI = {"name": "mini", "subjects": EVERYONE, "grants": [{"models": "gpt-4o-mini"}]}


@pytest.mark.parametrize("binding", [DENY_GPT_4O, ONLY_MINI], ids=["deny", "no-grant"])
def test_the_keys_ceilings_come_before_the_grant_check(binding: dict[str, Any]) -> None:
    """A key limited to route b asking for a model of route a is 400 MODEL_DENIED naming the
    key's routes, even where a deny binding (403 POLICY_DENIED) or a missing grant would
    also refuse it: the key's ceilings are checked first."""
    runtime = _bound(binding)
    with pytest.raises(RoutingError) as info:
        runtime.resolve("gpt-4o", endpoint="chat", caller=caller("b"))
    assert (info.value.status, info.value.code) == (400, "MODEL_DENIED")
    assert info.value.message == 'key "app" may not call route "a"; its routes are: b'
    with pytest.raises(RoutingError) as outside:
        runtime.resolve("gpt-4o", endpoint="chat", caller=caller(allowed=("gpt-4o-*",)))
    assert outside.value.message.endswith("its allowed models are: gpt-4o-*")


def test_within_the_keys_ceilings_the_grant_check_still_refuses() -> None:
    """A model inside the key's ceilings meets the policy: a deny is 403 POLICY_DENIED, no
    grant 400 MODEL_DENIED from the bindings; a model no route serves keeps the policy's
    refusal too (there is no route to hold against the key's routes)."""
    with pytest.raises(RoutingError) as denied:
        _bound(DENY_GPT_4O).resolve("gpt-4o", endpoint="chat", caller=caller("a"))
    assert (denied.value.status, denied.value.code) == (403, "POLICY_DENIED")
    ungranted = _bound(ONLY_MINI)
    for model in ("gpt-4o", "llama-3"):
        with pytest.raises(RoutingError) as info:
            ungranted.resolve(model, endpoint="chat", caller=caller("a", "b"))
        assert info.value.code == "MODEL_DENIED"
        assert "no access binding grants" in info.value.message


# ---- caching and the model list ----------------------------------------------------------------


def test_answers_are_cached_per_model_and_endpoint() -> None:
    """The same request resolves to the same object; another endpoint to its own."""
    runtime = runtime_of(ALIASED)
    first = runtime.resolve("main", endpoint="chat")
    assert runtime.resolve("main", endpoint="chat") is first
    assert runtime.resolve("main", endpoint="messages") is not first


def test_the_answer_cache_grows_with_the_routes() -> None:
    """With more routes than the smallest cache holds, each route's model stays cached."""
    routes = [on("openai", "gpt-4o-mini", f"r{i}", models=[f"model-{i}"]) for i in range(4200)]
    runtime = runtime_of({"providers": [OPENAI], "routes": routes})
    first = [runtime.resolve(f"model-{i}", endpoint="chat") for i in range(4200)]
    assert all(runtime.resolve(f"model-{i}", endpoint="chat") is first[i] for i in range(4200))


def test_a_cached_refusal_raises_a_fresh_error_each_time() -> None:
    """Two refusals of one model are two exception objects with one message."""
    runtime = runtime_of(KEYED)
    errors = []
    for _ in range(2):
        with pytest.raises(NoRoute) as info:
            runtime.resolve("nothing-here", endpoint="chat")
        errors.append(info.value)
    assert errors[0] is not errors[1]
    assert errors[0].message == errors[1].message


def test_models_lists_what_the_caller_can_use() -> None:
    """Route names, aliases and exact patterns that resolve; the key's ceilings apply."""
    extra = on("openai", "x", "exact", models=["gpt-x", "gpt-y*"])
    runtime = runtime_of({**ALIASED, "routes": [*ALIASED_ROUTES, extra]})
    assert runtime.lookups.models() == ["cheap", "exact", "fast", "gpt-x", "main", "openai-only"]
    assert runtime.lookups.models(caller("main")) == ["fast", "main"]
