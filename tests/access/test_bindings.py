"""Access bindings: implicit grant, precedence, deny, validation (400 vs 409), caching."""

from __future__ import annotations

from typing import Any

import pytest

from turnout.access.bindings import (
    IMPLICIT_GRANT,
    AccessPolicy,
    Decision,
    RouteModels,
    Subject,
    check_bindings,
    grant_route_missing,
    grant_route_not_serving,
    subjects_of,
)
from turnout.access.keys import Caller, Identity
from turnout.access.model_index import PatternIndex, RoutePatterns
from turnout.access.patterns import ModelPattern
from turnout.errors import ConfigError, NoRoute, PolicyDenied, RoutingError
from turnout.schema import BindingConfig, RouteConfig


def binding(
    name: str,
    subjects: list[dict[str, Any]],
    grants: list[dict[str, Any]],
    **fields: Any,
) -> BindingConfig:
    """A binding config from plain data."""
    return BindingConfig.model_validate(
        {"name": name, "subjects": subjects, "grants": grants, **fields}
    )


def route(name: str, *models: str, **fields: Any) -> RouteConfig:
    """A route config with one target and the given model patterns."""
    return RouteConfig.model_validate(
        {"name": name, "models": list(models), "targets": [{"provider": "p"}], **fields}
    )


ROUTES = {
    "claude": route("claude", "claude-*"),
    "claude-bedrock": route("claude-bedrock", "claude*"),
    "gpt": route("gpt", "gpt-*"),
    "alpha": route("alpha", "*"),
    "beta": route("beta", "*"),
}


def policy(*bindings: BindingConfig, routes: dict[str, RouteConfig] | None = None) -> AccessPolicy:
    """An access policy over `ROUTES` (or `routes`)."""
    return AccessPolicy.from_config(bindings, ROUTES if routes is None else routes)


def caller(key: str = "k", **identity: Any) -> Caller:
    """A caller of key `key` with the given identity fields."""
    return Caller("default", key, Identity(**identity))


EVERY_LEVEL: dict[str, dict[str, Any]] = {
    "workload": {"workload": "billing"},
    "workload_blueprint": {"workload_blueprint": "batch"},
    "team": {"teams": ("platform",)},
    "everyone": {},
}
EVERY_SUBJECT: dict[str, Any] = {
    "workload": "billing",
    "workload_blueprint": "batch",
    "team": "platform",
    "everyone": True,
}


def test_implicit_everyone_grant_while_no_binding_grants() -> None:
    """With no bindings, every caller may use every model through its own route."""
    access = policy()
    assert access.decide(caller(), "anything-at-all") is IMPLICIT_GRANT
    assert access.decide(Caller.anonymous("default"), "gpt-4o").route is None
    assert not access.grants_any


def test_implicit_grant_survives_bindings_that_grant_nothing() -> None:
    """Disabled, grant-less and deny bindings leave the implicit grant on."""
    access = policy(
        binding("off", [{"everyone": True}], [{"models": "gpt-*"}], enabled=False),
        binding("empty", [{"everyone": True}], []),
        binding("no-o1", [{"everyone": True}], [{"models": "o1-*"}], mode="deny"),
    )
    assert access.decide(caller(), "claude-x").is_implicit
    assert not access.grants_any


def test_implicit_grant_switches_off_once_an_allow_grant_exists() -> None:
    """One allow grant anywhere: a caller without a grant for the model gets 400 MODEL_DENIED."""
    access = policy(binding("platform", [{"team": "platform"}], [{"models": "gpt-*"}]))
    assert access.decide(caller(teams=("platform",)), "gpt-4o").binding == "platform"
    with pytest.raises(RoutingError) as info:
        access.decide(caller(teams=("sales",)), "gpt-4o")
    assert (info.value.status, info.value.code) == (400, "MODEL_DENIED")
    assert 'model "gpt-4o"' in info.value.message
    with pytest.raises(RoutingError, match="claude-x"):
        access.decide(caller(teams=("platform",)), "claude-x")


def test_deny_binding_refuses_with_policy_denied_over_any_allow() -> None:
    """A deny covering caller and model -> 403 POLICY_DENIED, even against a workload grant."""
    access = policy(
        binding("wl", [{"workload": "billing"}], [{"models": "gpt-*"}]),
        binding("no-gpt-for-sales", [{"team": "sales"}], [{"models": "gpt-4*"}], mode="deny"),
    )
    who = caller(workload="billing", teams=("sales",))
    with pytest.raises(PolicyDenied) as info:
        access.decide(who, "gpt-4o")
    assert (info.value.status, info.value.code) == (403, "POLICY_DENIED")
    assert "no-gpt-for-sales" in info.value.message
    assert access.decide(who, "gpt-3.5").binding == "wl"
    assert access.decide(caller(workload="billing"), "gpt-4o").binding == "wl"


def test_deny_binding_applies_under_the_implicit_grant() -> None:
    """Deny bindings refuse even while no allow binding grants anything."""
    access = policy(binding("no-o1", [{"everyone": True}], [{"models": "o1-*"}], mode="deny"))
    with pytest.raises(PolicyDenied):
        access.decide(caller(), "o1-preview")
    assert access.decide(caller(), "o3-mini") is IMPLICIT_GRANT


@pytest.mark.parametrize(
    ("higher", "lower"),
    [
        ("workload", "workload_blueprint"),
        ("workload_blueprint", "team"),
        ("team", "everyone"),
        ("workload", "everyone"),
    ],
)
def test_subject_level_beats_pattern_specificity(higher: str, lower: str) -> None:
    """A grant at a higher subject level wins even when a lower level's pattern is exact."""
    access = policy(
        binding("z-high", [{higher: EVERY_SUBJECT[higher]}], [{"models": "*", "route": "alpha"}]),
        binding("a-low", [{lower: EVERY_SUBJECT[lower]}], [{"models": "gpt-4o", "route": "gpt"}]),
    )
    identity = {**EVERY_LEVEL[higher], **EVERY_LEVEL[lower]}
    decision = access.decide(caller(**identity), "gpt-4o")
    assert (decision.binding, decision.route) == ("z-high", "alpha")
    assert decision.subject is not None
    assert decision.subject.kind == higher


@pytest.mark.parametrize(
    ("subject", "identity"),
    [
        ({"team": "platform"}, {"teams": ("platform",)}),
        ({"group": "eng"}, {"groups": ("eng",)}),
        ({"user": "ana"}, {"user": "ana"}),
        ({"agent": "bot"}, {"agent": "bot"}),
        ({"agent_label": "env=prod"}, {"agent_labels": (("env", "prod"),)}),
        ({"key": "k"}, {}),
    ],
)
def test_identity_subjects_share_one_level(
    subject: dict[str, str], identity: dict[str, Any]
) -> None:
    """Team, group, user, agent, agent label and key tie on level; specificity decides."""
    access = policy(
        binding("a-team", [{"team": "other"}], [{"models": "gpt-4o-mini"}]),
        binding("b-subject", [subject], [{"models": "gpt-4o*"}]),
        binding("c-team", [{"team": "other"}], [{"models": "gpt-4*"}]),
    )
    who = caller("k", **{**identity, "teams": (*identity.get("teams", ()), "other")})
    assert access.decide(who, "gpt-4o-mini").binding == "a-team"
    assert access.decide(who, "gpt-4o-2024").binding == "b-subject"
    assert access.decide(who, "gpt-4.1").binding == "c-team"


def test_within_a_level_the_most_specific_pattern_wins() -> None:
    """Exact beats any glob; among globs more literal characters win; order never matters."""
    grants = [
        binding("a", [{"everyone": True}], [{"models": "*gpt-4o-mini-2024*"}]),
        binding("b", [{"everyone": True}], [{"models": "gpt-4o-mini"}]),
        binding("c", [{"everyone": True}], [{"models": "gpt-*"}]),
    ]
    for ordered in (grants, grants[::-1]):
        access = policy(*ordered)
        assert access.decide(caller(), "GPT-4o-mini").binding == "b"
        assert access.decide(caller(), "gpt-4o-mini-2024-07").binding == "a"
        assert access.decide(caller(), "gpt-3.5").binding == "c"


def test_a_grant_naming_a_route_beats_one_that_names_none() -> None:
    """Same level and specificity: the grant that names a route wins over the binding name."""
    access = policy(
        binding("a-plain", [{"everyone": True}], [{"models": "claude-*"}]),
        binding("z-steer", [{"everyone": True}], [{"models": "claude-*", "route": "claude"}]),
    )
    decision = access.decide(caller(), "claude-sonnet-4")
    assert (decision.binding, decision.route) == ("z-steer", "claude")


def test_then_the_binding_name_decides() -> None:
    """Same level, specificity and route naming: the lower binding name wins."""
    access = policy(
        binding("b", [{"team": "t"}], [{"models": "gpt-*", "route": "gpt"}]),
        binding("a", [{"user": "ana"}], [{"models": "gpt-*", "route": "alpha"}]),
    )
    decision = access.decide(caller(user="ana", teams=("t",)), "gpt-4o")
    assert (decision.binding, decision.route) == ("a", "alpha")


def test_then_the_route_name_decides() -> None:
    """Two grants of one binding differing only by route: the lower route name wins."""
    access = policy(
        binding(
            "one",
            [{"everyone": True}],
            [{"models": "*", "route": "beta"}, {"models": "*", "route": "alpha"}],
        )
    )
    assert access.decide(caller(), "m").route == "alpha"


def test_aicontrols_example_steers_only_the_granted_team() -> None:
    """claude on claude-*, claude-bedrock on claude*: the team goes to Bedrock, others nowhere."""
    routes = {"claude": route("claude", "claude-*"), "bedrock": route("bedrock", "claude*")}
    index = PatternIndex.build([RoutePatterns.parse(name, r.models) for name, r in routes.items()])
    access = AccessPolicy.from_config(
        [
            binding(
                "platform-bedrock",
                [{"team": "platform"}],
                [{"models": "claude-*", "route": "bedrock"}],
            ),
            binding("everyone-claude", [{"everyone": True}], [{"models": "claude-*"}]),
        ],
        routes,
        index,
    )
    model = "claude-sonnet-4-5"
    assert access.decide(caller(teams=("platform",)), model).route == "bedrock"
    others = access.decide(caller(teams=("sales",)), model)
    assert (others.binding, others.route) == ("everyone-claude", None)
    match = index.resolve(model)
    assert match is not None
    assert match.route == "claude"
    assert access.granted_by("bedrock") == ("everyone-claude", "platform-bedrock")
    assert access.granted_by("claude") == ("everyone-claude",)


def test_aicontrols_example_without_an_everyone_grant_denies_the_rest() -> None:
    """Once the team grant exists, callers outside it have no grant: 400 MODEL_DENIED."""
    routes = {"claude": route("claude", "claude-*"), "bedrock": route("bedrock", "claude*")}
    access = AccessPolicy.from_config(
        [binding("pb", [{"team": "platform"}], [{"models": "claude-*", "route": "bedrock"}])],
        routes,
    )
    with pytest.raises(RoutingError, match="no access binding grants") as info:
        access.decide(caller(teams=("sales",)), "claude-sonnet-4-5")
    assert info.value.code == "MODEL_DENIED"


def errors_of(*bindings: BindingConfig, **kwargs: Any) -> ConfigError:
    """The ConfigError that compiling `bindings` over `ROUTES` raises."""
    with pytest.raises(ConfigError) as info:
        AccessPolicy.from_config(bindings, ROUTES, **kwargs)
    return info.value


@pytest.mark.parametrize(
    ("grant", "rule"),
    [
        ({"models": "gpt-*", "route": "missing"}, 'no route named "missing"'),
        ({"models": "gpt-*", "route": "claude"}, 'route "claude" serves none'),
        ({"models": "claude-opus", "route": "gpt"}, 'route "gpt" serves none'),
    ],
)
def test_grant_naming_a_missing_or_unrelated_route_is_a_400(
    grant: dict[str, str], rule: str
) -> None:
    """A grant's route must exist and serve some of its models: else 400 naming the path."""
    error = errors_of(binding("b", [{"everyone": True}], [{"models": "x"}, grant]))
    assert (error.status, error.code) == (400, "VALIDATION_FAILED")
    assert error.errors[0][0] == "bindings[0].grants[1].route"
    assert rule in error.errors[0][1]


def test_grant_naming_a_disabled_route_is_a_400() -> None:
    """A disabled route serves nothing, so a grant may not name it."""
    routes = {"off": route("off", "gpt-*", enabled=False)}
    with pytest.raises(ConfigError, match="disabled") as info:
        AccessPolicy.from_config(
            [binding("b", [{"everyone": True}], [{"models": "gpt-*", "route": "off"}])], routes
        )
    assert info.value.status == 400


def test_grant_may_name_a_route_serving_it_by_alias_or_implicitly() -> None:
    """A route serving the grant only by an alias, or an implicit route of the index, is valid."""
    routes = {"fast": route("fast", "gpt-4o-mini", aliases={"quick": {"p": "gpt-4o-mini"}})}
    index = PatternIndex.build(
        [RoutePatterns.parse("anthropic", ["claude-*"], is_implicit=True, family="anthropic")]
    )
    access = AccessPolicy.from_config(
        [
            binding(
                "b",
                [{"everyone": True}],
                [
                    {"models": "quick", "route": "fast"},
                    {"models": "claude-*", "route": "anthropic"},
                ],
            )
        ],
        routes,
        index,
    )
    assert access.decide(caller(), "quick").route == "fast"
    assert access.decide(caller(), "claude-x").route == "anthropic"


def test_two_bindings_steering_one_subject_differently_conflict_409() -> None:
    """Same subject, same pattern, different routes in two bindings -> 409 naming both."""
    error = errors_of(
        binding("first", [{"team": "platform"}], [{"models": "claude-*", "route": "claude"}]),
        binding(
            "second", [{"team": "platform"}], [{"models": "claude-*", "route": "claude-bedrock"}]
        ),
    )
    assert (error.status, error.code) == (409, "route_grant_conflict")
    assert [path for path, _ in error.errors] == ["bindings[1].grants[0].route"]
    assert '"first"' in error.errors[0][1]
    assert '"second"' in error.errors[0][1]


@pytest.mark.parametrize(
    "second",
    [
        binding("second", [{"team": "platform"}], [{"models": "claude-*", "route": "claude"}]),
        binding("second", [{"team": "sales"}], [{"models": "claude-*", "route": "claude-bedrock"}]),
        binding(
            "second", [{"team": "platform"}], [{"models": "claude*", "route": "claude-bedrock"}]
        ),
        binding("second", [{"team": "platform"}], [{"models": "claude-*"}]),
        binding(
            "second",
            [{"team": "platform"}],
            [{"models": "claude-*", "route": "claude-bedrock"}],
            enabled=False,
        ),
    ],
    ids=["same-route", "other-subject", "other-pattern", "no-route", "disabled"],
)
def test_bindings_that_do_not_steer_apart_do_not_conflict(second: BindingConfig) -> None:
    """Only two enabled bindings steering one subject+pattern to different routes conflict."""
    first = binding("first", [{"team": "platform"}], [{"models": "claude-*", "route": "claude"}])
    assert policy(first, second).grants_any


def test_a_conflict_among_other_errors_answers_400_and_lists_both() -> None:
    """When 400 problems and a 409 conflict come together, the answer is a 400 listing all."""
    error = errors_of(
        binding("first", [{"team": "t"}], [{"models": "claude-*", "route": "claude"}]),
        binding("second", [{"team": "t"}], [{"models": "claude-*", "route": "claude-bedrock"}]),
        binding("third", [{"team": "t"}], [{"models": "x", "route": "missing"}]),
    )
    assert (error.status, error.code) == (400, "VALIDATION_FAILED")
    assert len(error.errors) == 2
    problems = check_bindings(
        [
            binding("a", [{"team": "t"}], [{"models": "gpt-*", "route": "gpt"}]),
            binding("b", [{"team": "t"}], [{"models": "gpt-*", "route": "alpha"}]),
        ],
        {name: RouteModels.from_config(r) for name, r in ROUTES.items()},
    )
    assert [(p.status, p.code) for p in problems] == [(409, "route_grant_conflict")]


@pytest.mark.parametrize(
    ("bad", "path", "rule"),
    [
        (binding("b", [{}], [{"models": "x"}]), "bindings[0].subjects[0]", "exactly one"),
        (
            binding("b", [{"team": "t", "user": "u"}], [{"models": "x"}]),
            "bindings[0].subjects[0]",
            "exactly one",
        ),
        (
            binding("b", [{"everyone": False}], [{"models": "x"}]),
            "bindings[0].subjects[0].everyone",
            "true",
        ),
        (
            binding("b", [{"agent_label": "=x"}], [{"models": "x"}]),
            "bindings[0].subjects[0].agent_label",
            "empty",
        ),
        (
            binding("b", [{"team": "t"}], [{"models": "gpt*4"}]),
            "bindings[0].grants[0].models",
            "'*'",
        ),
        (
            binding("b", [{"team": "t"}], [{"models": "gpt-*", "route": "gpt"}], mode="deny"),
            "bindings[0].grants[0].route",
            "allow binding",
        ),
        (binding("b", [{"team": "t"}], [], mode="deny"), "bindings[0].grants", "deny binding"),
    ],
)
def test_invalid_bindings_are_refused_with_their_path(
    bad: BindingConfig, path: str, rule: str
) -> None:
    """Subjects with zero/two fields, bad patterns, steering denies, empty denies: 400 by path."""
    error = errors_of(bad)
    assert error.status == 400
    assert error.errors[0][0] == path
    assert rule in error.errors[0][1]


def test_binding_names_are_unique() -> None:
    """A repeated binding name is refused on its second occurrence."""
    error = errors_of(
        binding("same", [{"team": "a"}], [{"models": "x"}]),
        binding("same", [{"team": "b"}], [{"models": "y"}]),
    )
    assert error.errors[0][0] == "bindings[1].name"


def test_vanished_route_loads_leniently_and_fails_closed() -> None:
    """check_routes=False keeps a grant whose route vanished; its requests get NO_ROUTE."""
    access = AccessPolicy.from_config(
        [binding("b", [{"everyone": True}], [{"models": "gpt-*", "route": "gone"}])],
        {},
        check_routes=False,
    )
    decision = access.decide(caller(), "gpt-4o")
    assert decision.route == "gone"
    assert access.models_of("gone") is None
    error = grant_route_missing("gpt-4o", decision)
    assert isinstance(error, NoRoute)
    assert (error.status, error.code) == (503, "NO_ROUTE")
    assert '"gone"' in error.message
    assert "restore the route or change the binding" in error.message
    assert "does not serve it" in grant_route_not_serving("gpt-4o", decision).message


def test_agent_label_subjects_match_name_value_or_name() -> None:
    """`env=prod` covers only that value; `env` covers any value of the label."""
    access = policy(
        binding("prod", [{"agent_label": "env = prod"}], [{"models": "gpt-4o"}]),
        binding("any-env", [{"agent_label": "env"}], [{"models": "gpt-*"}]),
    )
    prod = caller(agent_labels=(("env", "prod"),))
    dev = caller(agent_labels=(("env", "dev"),))
    assert access.decide(prod, "gpt-4o").binding == "prod"
    assert access.decide(dev, "gpt-4o").binding == "any-env"
    with pytest.raises(RoutingError):
        access.decide(caller(), "gpt-4o")


def test_key_subject_matches_the_key_name_and_anonymous_only_everyone() -> None:
    """A `key` subject covers that key; the anonymous caller is covered by everyone only."""
    access = policy(binding("ci", [{"key": "ci"}], [{"models": "*"}]))
    assert access.decide(caller("ci"), "m").binding == "ci"
    with pytest.raises(RoutingError):
        access.decide(caller("other"), "m")
    assert subjects_of(Caller.anonymous("default")) == {Subject("everyone", "")}


def test_decisions_are_cached_per_identity_and_model_case() -> None:
    """A cached decision is reused for the same caller and model in any case, not for others."""
    access = policy(binding("t", [{"team": "t"}], [{"models": "gpt-*"}]))
    member, outsider = caller(teams=("t",)), caller(teams=("u",))
    first = access.decide(member, "GPT-4o")
    assert access.decide(member, "gpt-4o") is first
    for model in ("gpt-4o", "GPT-4O"):
        with pytest.raises(RoutingError) as info:
            access.decide(outsider, model)
        assert f'"{model}"' in info.value.message


def test_cache_is_bounded_and_rebuilding_starts_fresh() -> None:
    """A small cache keeps answering correctly past its size; a new policy sees new bindings."""
    bindings = [binding("t", [{"team": "t"}], [{"models": "gpt-*"}])]
    access = AccessPolicy.from_config(bindings, ROUTES, cache_size=2)
    member = caller(teams=("t",))
    for round_ in range(3):
        for index in range(5):
            assert access.decide(member, f"gpt-{index}-{round_}").binding == "t"
    assert len(access._cache) == 2
    rebuilt = AccessPolicy.from_config(
        [*bindings, binding("no", [{"team": "t"}], [{"models": "gpt-0*"}], mode="deny")], ROUTES
    )
    with pytest.raises(PolicyDenied):
        rebuilt.decide(member, "gpt-0-0")


def test_unloaded_bindings_refuse_every_model() -> None:
    """Before bindings first load, every request gets 400 MODEL_DENIED saying so."""
    access = AccessPolicy.unloaded()
    with pytest.raises(RoutingError) as info:
        access.decide(caller(), "gpt-4o")
    assert (info.value.status, info.value.code) == (400, "MODEL_DENIED")
    assert "have not loaded" in info.value.message
    assert access.granted_by("gpt") == ()


def test_granted_by_lists_bindings_reaching_a_route() -> None:
    """Grants naming the route, route-less grants overlapping it, or everyone while implicit."""
    assert policy().granted_by("gpt") == ("everyone",)
    access = policy(
        binding("steer", [{"team": "t"}], [{"models": "*", "route": "alpha"}]),
        binding("plain", [{"team": "t"}], [{"models": "gpt-4*"}]),
        binding("elsewhere", [{"team": "t"}], [{"models": "claude-*"}]),
    )
    assert access.granted_by("gpt") == ("plain",)
    assert access.granted_by("claude") == ("elsewhere",)
    assert access.granted_by("alpha") == ("elsewhere", "plain", "steer")
    assert access.granted_by("unknown") == ()


def test_decision_describes_who_granted_it() -> None:
    """granted_by names the binding, subject, pattern and route; implicit says so."""
    access = policy(
        binding("pb", [{"team": "platform"}], [{"models": "claude-*", "route": "claude"}])
    )
    decision = access.decide(caller(teams=("platform",)), "claude-x")
    assert decision.granted_by == 'binding "pb" (team "platform": claude-* via claude)'
    assert Decision().granted_by == "everyone (implicit grant)"


def test_route_models_serve_patterns_and_aliases() -> None:
    """RouteModels serve their patterns, alias names and own name, in any case."""
    served = RouteModels.from_config(route("r", "gpt-*", aliases={"Fast": {"p": "gpt-4o"}}))
    assert served.serves("GPT-4o")
    assert served.serves("fast")
    assert served.serves("R")
    assert not served.serves("claude-x")
    assert served.serves_some(ModelPattern.parse("*-4o"))
    assert served.serves_some(ModelPattern.parse("FAST"))
    assert not served.serves_some(ModelPattern.parse("claude-*"))
