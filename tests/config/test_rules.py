"""The one validator: every cross-object rule, its path and its exact message."""

from __future__ import annotations

from typing import Any

import pytest

from turnout.config.load import parse_config
from turnout.config.rules import check_config, check_config_warnings, mock_script_steps
from turnout.errors import ConfigError
from turnout.schema import BreakerConfig, FileConfig

MOCK = [{"name": "p", "kind": "mock"}]


def route(name: str, **options: Any) -> dict[str, Any]:
    """A route on the mock provider `p`, with `options` laid over it."""
    return {"name": name, "targets": [{"provider": "p"}], **options}


def errors_of(data: dict[str, Any]) -> list[tuple[str, str]]:
    """Every error the loader reports for `data`."""
    with pytest.raises(ConfigError) as info:
        parse_config(data, env={})
    return list(info.value.errors)


def warnings_of(data: dict[str, Any]) -> list[tuple[str, str]]:
    """The warnings of a configuration that loads."""
    return check_config_warnings(parse_config(data, env={}))


def test_a_valid_configuration_has_no_errors() -> None:
    """A full sample configuration passes every rule."""
    config = parse_config(
        {
            "providers": [
                {"name": "openai", "kind": "openai", "api_key": "k"},
                {"name": "anthropic", "kind": "anthropic", "api_key": "k"},
                {"name": "local", "kind": "openai-compatible", "preset": "ollama"},
            ],
            "routes": [
                {
                    "name": "primary-with-fallback",
                    "models": ["gpt-4o-mini"],
                    "aliases": {
                        "fast": {"openai": "gpt-4o-mini", "anthropic": "claude-3-5-haiku-latest"}
                    },
                    "targets": [
                        {"provider": "openai", "model": "gpt-4o-mini", "max_retries": 1},
                        {"provider": "anthropic", "model": "claude-3-5-haiku-latest"},
                    ],
                    "fallbacks": {"context": ["long-context"]},
                },
                {
                    "name": "long-context",
                    "targets": [{"provider": "anthropic", "model": "claude-sonnet-4-5"}],
                },
            ],
            "keys": [{"name": "app", "key": "app-key-123", "routes": ["primary-with-fallback"]}],
        },
        env={},
    )
    assert check_config(config) == []


def test_every_error_comes_back_at_once() -> None:
    """Errors of different rules and objects are all reported in one pass."""
    errors = errors_of(
        {
            "providers": [{"name": "az", "kind": "azure-openai"}, *MOCK],
            "routes": [
                route("a", strategy={"type": "fastest"}),
                route("b", fallbacks={"general": ["ghost"]}),
            ],
        }
    )
    paths = [path for path, _ in errors]
    assert paths == [
        "providers[0].wire",
        "providers[0].base_url",
        "routes[0].strategy.type",
        "routes[1].fallbacks.general[0]",
    ]


# ---- names and targets -----------------------------------------------------------------------


def test_names_are_one_name_space_ignoring_case() -> None:
    """A route may not take a provider's name, even in another case."""
    errors = errors_of(
        {"providers": [{"name": "Local", "kind": "mock"}], "routes": [route("local")]}
    )
    assert ("routes[0].name", "name 'local' is already taken by providers[0]") in errors


def test_family_route_names_are_reserved() -> None:
    """`openai-family` and `anthropic-family` belong to the family routes."""
    errors = errors_of({"providers": MOCK, "routes": [route("openai-family")]})
    assert errors == [("routes[0].name", 'name "openai-family" is reserved for a family route')]


def test_an_unknown_provider_gets_the_nearest_name_suggested() -> None:
    """A target naming a misspelt provider is told the closest provider name, case aside."""
    providers = [{"name": "openai", "kind": "openai", "api_key": "k"}, *MOCK]
    targets = [{"provider": "opnai"}, {"provider": "OpenAI"}, {"provider": "zzz"}]
    errors = errors_of({"providers": providers, "routes": [route("a", targets=targets)]})
    assert errors == [
        (
            "routes[0].targets[0].provider",
            "no provider named 'opnai' in the project; did you mean 'openai'?",
        ),
        (
            "routes[0].targets[1].provider",
            "no provider named 'OpenAI' in the project; did you mean 'openai'?",
        ),
        ("routes[0].targets[2].provider", "no provider named 'zzz' in the project"),
    ]


def test_target_names_are_unique_within_a_route() -> None:
    """Two targets with one name in a route are refused at the second."""
    errors = errors_of({"providers": MOCK, "routes": [route("a", targets=[{"provider": "p"}] * 2)]})
    assert errors == [("routes[0].targets[1].name", "two targets of the route are named 'p'")]


def test_store_and_admin_keys_are_read_now() -> None:
    """`store` and `admin_keys` are accepted: the control plane and the admin API read them."""
    config = parse_config(
        {
            "store": "sqlite:///turnout.db",
            "adminKeys": ["admin-key-1"],
            "providers": MOCK,
            "routes": [route("a")],
        },
        env={},
    )
    assert config.admin_keys == ("admin-key-1",)


# ---- providers -------------------------------------------------------------------------------


def test_azure_needs_wire_and_base_url() -> None:
    """An azure-openai provider without `wire` or `base_url` fails validation."""
    errors = errors_of({"providers": [{"name": "az", "kind": "azure-openai"}]})
    assert errors == [
        (
            "providers[0].wire",
            "an azure-openai provider needs wire: openai-chat or anthropic-messages",
        ),
        ("providers[0].base_url", "an azure-openai provider needs base_url (its endpoint)"),
    ]


def test_openai_compatible_needs_base_url_or_preset() -> None:
    """An openai-compatible provider needs somewhere to send requests."""
    errors = errors_of({"providers": [{"name": "x", "kind": "openai-compatible"}]})
    assert errors == [
        ("providers[0].base_url", "an openai-compatible provider needs base_url or preset")
    ]


def test_kind_specific_options_are_refused_on_other_kinds() -> None:
    """`preset`, `wire`, `api_version` and `script` belong to their kinds only."""
    errors = errors_of(
        {
            "providers": [
                {"name": "o", "kind": "openai", "preset": "groq", "wire": "openai-chat"},
                {"name": "a", "kind": "anthropic", "api_version": "v1", "script": [{"ok": True}]},
            ]
        }
    )
    assert errors == [
        ("providers[0].preset", "is only for openai-compatible providers"),
        ("providers[0].wire", "is only for azure-openai and mock providers"),
        ("providers[1].api_version", "is only for azure-openai providers"),
        ("providers[1].script", "is only for mock providers"),
    ]


def test_prices_name_one_model() -> None:
    """A price keyed by a pattern is refused: prices are looked up by exact model."""
    errors = errors_of(
        {
            "providers": [
                {"name": "o", "kind": "openai", "prices": {"gpt-*": {"input": 1, "output": 2}}}
            ]
        }
    )
    assert errors == [
        ("providers[0].prices.gpt-*", "a price is for one model name, without '*' or spaces")
    ]


def test_mock_script_steps_use_the_fault_grammar() -> None:
    """Script items become fault steps; an invalid one is an error naming the item."""
    errors = errors_of({"providers": [{"name": "m", "kind": "mock", "script": [{"status": 999}]}]})
    assert errors == [("providers[0].script[0]", "fault item status=999: not an HTTP status")]
    config = parse_config(
        {
            "providers": [
                {"name": "m", "kind": "mock", "script": [{"status": 429, "retry_after": 8}, {}]}
            ]
        },
        env={},
    )
    assert mock_script_steps(config.providers[0]) == ["status=429;retry_after=8", "ok"]


def test_provider_model_patterns_must_parse() -> None:
    """A provider's model pattern with a middle star is refused at its path."""
    errors = errors_of({"providers": [{"name": "m", "kind": "mock", "model_patterns": ["a*b"]}]})
    assert errors == [
        (
            "providers[0].model_patterns[0]",
            "a '*' may only stand at the start or the end of a pattern (got 'a*b')",
        )
    ]


# ---- the engine's own checks, re-pathed ------------------------------------------------------


def test_unknown_strategy_is_refused_with_the_route_path() -> None:
    """The engine's strategy rule, under the route's path."""
    errors = errors_of({"providers": MOCK, "routes": [route("a", strategy={"type": "fastest"})]})
    assert errors == [
        (
            "routes[0].strategy.type",
            (
                "must be one of failover, round-robin, weighted, lowest-cost, lowest-latency,"
                " least-busy (got 'fastest')"
            ),
        )
    ]


def test_strategy_option_out_of_range() -> None:
    """A strategy option outside its range names the option and the range."""
    spec = {"type": "lowest-latency", "window_minutes": 0}
    errors = errors_of({"providers": MOCK, "routes": [route("a", strategy=spec)]})
    assert errors == [
        ("routes[0].strategy.window_minutes", "must be a number from 1 to 1440 (got 0)")
    ]


def test_weighted_route_needs_a_positive_starting_weight() -> None:
    """A weighted route whose only target has weight 0 is refused."""
    targets = [{"provider": "p", "weight": 0}]
    errors = errors_of(
        {"providers": MOCK, "routes": [route("a", strategy="weighted", targets=targets)]}
    )
    assert errors == [
        (
            "routes[0].targets",
            "a weighted route needs a target that is not fallback_only with a weight above 0",
        )
    ]


def test_breaker_values_are_checked_by_the_engine_under_their_path() -> None:
    """A breaker the shape check did not see (built in code) is refused with its path."""
    config = parse_config({"providers": MOCK, "routes": [route("a")]}, env={})
    broken = BreakerConfig.model_construct(
        enabled=True, failure_threshold=0, cooldown_seconds=60.0, failure_window_seconds=None
    )
    bad_route = config.routes[0].model_copy(update={"circuit_breaker": broken})
    bad_defaults = config.defaults.model_copy(update={"circuit_breaker": broken})
    bad = config.model_copy(update={"routes": (bad_route,), "defaults": bad_defaults})
    assert check_config(bad) == [
        ("defaults.circuit_breaker.failure_threshold", "must be from 1 to 1000 (got 0)"),
        ("routes[0].circuit_breaker.failure_threshold", "must be from 1 to 1000 (got 0)"),
    ]


def test_one_target_over_the_budget_gets_the_budget_message() -> None:
    """`max_retries: 10` on one target is refused by the attempt total, not by a 0-9 range."""
    errors = errors_of(
        {"providers": MOCK, "routes": [route("a", targets=[{"provider": "p", "max_retries": 10}])]}
    )
    assert errors == [("routes[0].targets", "total attempts 11 exceeds the maximum of 10")]


def test_a_huge_max_retries_is_still_the_budget_rule() -> None:
    """A far too large `max_retries` names the total too; only a negative one is a shape error."""
    targets = [
        {"provider": "p", "max_retries": 1000},
        {"provider": "p", "name": "b", "max_retries": -1},
    ]
    errors = errors_of(
        {
            "providers": MOCK,
            "routes": [route("a", targets=targets), route("b", targets=targets[:1])],
        }
    )
    assert errors == [
        ("routes[0].targets[1].max_retries", "must be at least 0 (got -1)"),
        ("routes[1].targets", "total attempts 1001 exceeds the maximum of 10"),
    ]


def test_static_budget_over_ten_names_the_total() -> None:
    """Σ(1 + max_retries) of 11 is refused with a message naming the total."""
    targets = [{"provider": "p", "name": f"t{i}", "max_retries": 1} for i in range(5)]
    targets.append({"provider": "p", "name": "last"})
    errors = errors_of({"providers": MOCK, "routes": [route("a", targets=targets)]})
    assert errors == [("routes[0].targets", "total attempts 11 exceeds the maximum of 10")]


def test_max_attempts_below_the_static_total_is_a_warning_naming_both() -> None:
    """A deliberate cap loads, with a warning naming the total and max_attempts."""
    targets = [{"provider": "p", "name": "a", "max_retries": 2}, {"provider": "p", "name": "b"}]
    found = warnings_of(
        {"providers": MOCK, "routes": [route("r", targets=targets, max_attempts=2)]}
    )
    assert found == [
        (
            "routes[0].max_attempts",
            (
                "route 'r': its targets allow 4 attempts in total but max_attempts is 2; requests"
                " stop after 2 calls"
            ),
        )
    ]


# ---- fallbacks -------------------------------------------------------------------------------


def test_fallback_route_must_exist() -> None:
    """A fallback naming no route of the project is refused at its path."""
    errors = errors_of({"providers": MOCK, "routes": [route("a", fallbacks={"context": ["x"]})]})
    assert errors == [("routes[0].fallbacks.context[0]", 'no route named "x" in the project')]


def test_fallback_route_must_be_enabled() -> None:
    """An enabled route may not escalate to a disabled one."""
    errors = errors_of(
        {
            "providers": MOCK,
            "routes": [route("a", fallbacks={"general": ["b"]}), route("b", enabled=False)],
        }
    )
    assert errors == [("routes[0].fallbacks.general[0]", 'route "b" is disabled')]


def test_fallback_may_not_name_its_own_route() -> None:
    """Self-reference is refused with the engine's words."""
    errors = errors_of({"providers": MOCK, "routes": [route("a", fallbacks={"general": ["a"]})]})
    assert errors == [("routes[0].fallbacks.general", "may not name the route itself ('a')")]


def test_fallbacks_at_most_three() -> None:
    """Four fallback routes in total are one too many."""
    fallbacks = {"general": ["b", "c"], "context": ["d", "e"]}
    others = [route(name) for name in "bcde"]
    errors = errors_of({"providers": MOCK, "routes": [route("a", fallbacks=fallbacks), *others]})
    assert errors == [("routes[0].fallbacks", "may name at most 3 routes (got 4)")]


def test_fallback_cycles_across_routes_are_refused() -> None:
    """a -> b -> a over fallbacks of one kind is a cycle, reported on both routes."""
    errors = errors_of(
        {
            "providers": MOCK,
            "routes": [
                route("a", fallbacks={"content": ["b"]}),
                route("b", fallbacks={"content": ["a"]}),
            ],
        }
    )
    assert errors == [
        ("routes[0].fallbacks.content", "form a cycle: a -> b -> a"),
        ("routes[1].fallbacks.content", "form a cycle: b -> a -> b"),
    ]


def test_fallbacks_of_two_kinds_do_not_form_a_cycle() -> None:
    """a -content-> b and b -general-> a are two graphs: a request hops along one kind only,
    so no request can come back to a."""
    config = parse_config(
        {
            "providers": MOCK,
            "routes": [
                route("a", fallbacks={"content": ["b"]}),
                route("b", fallbacks={"general": ["a"]}),
            ],
        },
        env={},
    )
    links = [(r.fallbacks.general, r.fallbacks.content) for r in config.routes]
    assert links == [((), ("b",)), (("a",), ())]


def test_a_cycle_further_down_does_not_hang_the_check() -> None:
    """a -> b <-> c terminates and reports the b/c cycle."""
    errors = errors_of(
        {
            "providers": MOCK,
            "routes": [
                route("a", fallbacks={"general": ["b"]}),
                route("b", fallbacks={"general": ["c"]}),
                route("c", fallbacks={"general": ["b"]}),
            ],
        }
    )
    assert ("routes[1].fallbacks.general", "form a cycle: b -> c -> b") in errors
    assert all(not path.startswith("routes[0]") for path, _ in errors)


# ---- aliases and names -----------------------------------------------------------------------


def test_alias_may_not_hold_a_wildcard() -> None:
    """Aliases are exact names."""
    errors = errors_of({"providers": MOCK, "routes": [route("a", aliases={"fast*": {"p": "m"}})]})
    assert errors == [
        ("routes[0].aliases.fast*", 'alias "fast*" must be a model name, without "*" or spaces')
    ]


def test_alias_may_not_repeat_within_its_route() -> None:
    """Aliases ignore case, so `Fast` repeats `fast`."""
    aliases = {"fast": {"p": "m"}, "Fast": {"p": "n"}}
    errors = errors_of({"providers": MOCK, "routes": [route("a", aliases=aliases)]})
    assert errors == [
        (
            "routes[0].aliases.Fast",
            'alias "Fast" repeats alias "fast" of this route (aliases ignore case)',
        )
    ]


def test_alias_may_not_be_another_routes_name_pattern_or_alias() -> None:
    """An alias equal to another route's name, exact pattern or alias is refused."""
    errors = errors_of(
        {
            "providers": MOCK,
            "routes": [
                route("a", models=["gpt-4o"], aliases={"quick": {"p": "m"}}),
                route("b", aliases={"a": {"p": "m"}, "gpt-4o": {"p": "m"}, "quick": {"p": "m"}}),
            ],
        }
    )
    assert errors == [
        ("routes[1].aliases.a", 'alias "a" is the name of route "a"'),
        ("routes[1].aliases.gpt-4o", 'alias "gpt-4o" is an exact model pattern of route "a"'),
        ("routes[1].aliases.quick", 'alias "quick" is already an alias of route "a"'),
    ]


def test_route_name_may_not_be_another_routes_alias_or_exact_pattern() -> None:
    """A route named like another route's alias or exact pattern is refused."""
    errors = errors_of(
        {
            "providers": MOCK,
            "routes": [
                route("a", models=["gpt-4o"], aliases={"quick": {"p": "m"}}),
                route("quick"),
                route("gpt-4o"),
            ],
        }
    )
    assert errors == [
        ("routes[1].name", 'route name "quick" is an alias of route "a"'),
        ("routes[2].name", 'route name "gpt-4o" is an exact model pattern of route "a"'),
    ]


def test_alias_entries_name_targets_or_providers_of_the_route() -> None:
    """An alias keyed by neither a target name nor a provider of the route is refused."""
    aliases = {"fast": {"ghost": "m"}, "slow": {}}
    errors = errors_of({"providers": MOCK, "routes": [route("a", aliases=aliases)]})
    assert errors == [
        ("routes[0].aliases.fast.ghost", 'names no target or provider of route "a"'),
        ("routes[0].aliases.slow", "an alias must map at least one target or provider to a model"),
    ]


# ---- patterns --------------------------------------------------------------------------------


def test_prefix_and_suffix_globs_of_equal_length_conflict_at_load() -> None:
    """`claude-*` vs `*-mini-4` overlap at the same specificity: refused naming both."""
    errors = errors_of(
        {
            "providers": MOCK,
            "routes": [route("claude", models=["claude-*"]), route("minis", models=["*-mini-4"])],
        }
    )
    assert errors == [
        (
            "routes[1].models[0]",
            (
                'model pattern "*-mini-4" of route "minis" overlaps "claude-*" of route "claude" at'
                " the same specificity"
            ),
        )
    ]


def test_prefix_globs_of_different_length_coexist() -> None:
    """`claude-*` and `claude*` have different specificity: accepted."""
    config = parse_config(
        {
            "providers": MOCK,
            "routes": [route("a", models=["claude-*"]), route("b", models=["claude*"])],
        },
        env={},
    )
    assert check_config(config) == []


def test_disabled_routes_do_not_conflict() -> None:
    """Only enabled routes' patterns are checked for overlap."""
    config = parse_config(
        {
            "providers": MOCK,
            "routes": [route("a", models=["gpt-*"]), route("b", models=["gpt-*"], enabled=False)],
        },
        env={},
    )
    assert check_config(config) == []


def test_an_invalid_pattern_does_not_hide_the_conflicts_of_the_others() -> None:
    """A bad pattern is reported, and the route's valid patterns are still checked, each at
    its own index."""
    errors = errors_of(
        {
            "providers": MOCK,
            "routes": [
                route("a", models=["claude-*"]),
                route("b", models=["a*b", "*-mini-4"]),
            ],
        }
    )
    assert errors == [
        (
            "routes[1].models[0]",
            "a '*' may only stand at the start or the end of a pattern (got 'a*b')",
        ),
        (
            "routes[1].models[1]",
            (
                'model pattern "*-mini-4" of route "b" overlaps "claude-*" of route "a" at the same'
                " specificity"
            ),
        ),
    ]


# ---- keys and access -------------------------------------------------------------------------


def test_key_routes_must_be_served() -> None:
    """A key limited to a route nobody serves is refused; implicit routes count."""
    errors = errors_of(
        {
            "providers": [{"name": "openai", "kind": "openai", "api_key": "k"}],
            "keys": [{"name": "app", "key": "app-key-123", "routes": ["openai", "ghost"]}],
        }
    )
    assert errors == [("keys[0].routes[1]", 'no route named "ghost" is served')]


def test_key_routes_may_not_name_a_disabled_route() -> None:
    """A key may not be limited to a route that is switched off."""
    errors = errors_of(
        {
            "providers": MOCK,
            "routes": [route("off", enabled=False)],
            "keys": [{"name": "app", "key": "app-key-123", "routes": ["off"]}],
        }
    )
    assert errors == [("keys[0].routes[0]", 'route "off" is disabled')]


def test_key_ring_rules_apply() -> None:
    """A key with both a plaintext key and a hash is refused."""
    key = {"name": "k", "key": "12345678", "hash": "sha256:00"}
    errors = errors_of({"providers": MOCK, "keys": [key]})
    assert errors == [("keys[0]", "set exactly one of key (plaintext) and hash")]


def test_binding_grants_name_served_routes() -> None:
    """A grant naming a missing route is refused by the bindings' own validator."""
    binding = {
        "name": "b",
        "subjects": [{"everyone": True}],
        "grants": [{"models": "x*", "route": "nope"}],
    }
    errors = errors_of({"providers": MOCK, "routes": [route("a")], "bindings": [binding]})
    assert errors == [
        (
            "bindings[0].grants[0].route",
            'no route named "nope"; a grant must name a route the router serves',
        )
    ]


def test_policy_names_are_unique() -> None:
    """The policies' own validator runs with the others."""
    policy = {"name": "x", "deny_when": {"provider": "p"}}
    errors = errors_of({"providers": MOCK, "policies": [policy, policy]})
    assert errors == [("policies[1].name", 'policy name "x" is already used by policies[0]')]


# ---- warnings --------------------------------------------------------------------------------


def test_family_less_provider_without_patterns_gets_a_warning() -> None:
    """A mock or openai-compatible provider in no route and without patterns serves nothing."""
    found = warnings_of({"providers": MOCK})
    assert found == [
        (
            "providers[0]",
            (
                'provider "p" is in no enabled route and has no model_patterns, so it gets no'
                " implicit route: add model_patterns or put it in a route"
            ),
        )
    ]


def test_cross_family_target_excluded_from_messages_is_warned() -> None:
    """A mixed route without allow_cross_provider leaves its OpenAI target out of /v1/messages."""
    found = warnings_of(
        {
            "providers": [
                {"name": "openai", "kind": "openai", "api_key": "k"},
                {"name": "anthropic", "kind": "anthropic", "api_key": "k"},
            ],
            "routes": [
                {
                    "name": "mixed",
                    "targets": [
                        {"provider": "anthropic", "model": "claude-x"},
                        {"provider": "openai", "model": "gpt-4o"},
                    ],
                }
            ],
        }
    )
    assert found == [
        (
            "routes[0].targets[1]",
            (
                'target "openai:gpt-4o" of route "mixed" does not serve /v1/messages: it does not'
                " speak Anthropic Messages and the route does not set allow_cross_provider"
            ),
        )
    ]


def test_cross_provider_route_needs_a_model_mapping_and_own_credential() -> None:
    """With allow_cross_provider, a target with no model mapping or no credential is left out."""
    found = warnings_of(
        {
            "providers": [
                {"name": "openai", "kind": "openai", "api_key": "k"},
                {"name": "byok", "kind": "openai"},
            ],
            "routes": [
                {
                    "name": "any",
                    "allow_cross_provider": True,
                    "targets": [{"provider": "openai"}, {"provider": "byok", "model": "gpt-4o"}],
                }
            ],
        }
    )
    assert found == [
        (
            "routes[0].targets[0]",
            (
                'target "openai" of route "any" does not serve /v1/messages: a cross-family target'
                " needs a model mapping (a target model, an alias or provider model_aliases)"
            ),
        ),
        (
            "routes[0].targets[1]",
            (
                'target "byok:gpt-4o" of route "any" does not serve /v1/messages: a cross-family'
                " target needs its own credential"
            ),
        ),
    ]


def test_an_openai_only_route_is_not_warned_about_messages() -> None:
    """A route that does not serve /v1/messages at all leaves nothing out."""
    found = warnings_of(
        {
            "providers": [{"name": "openai", "kind": "openai", "api_key": "k"}],
            "routes": [{"name": "r", "targets": [{"provider": "openai", "model": "gpt-4o"}]}],
        }
    )
    assert found == []


def test_check_config_takes_a_config_built_in_code() -> None:
    """The validator works on a `FileConfig` built without the loader (the admin API's way)."""
    config = FileConfig.model_validate({"providers": MOCK, "routes": [route("a"), route("a")]})
    assert ("routes[1].name", "name 'a' is already taken by routes[0]") in check_config(config)


@pytest.mark.parametrize("state", ["memory", "redis://127.0.0.1:6379/0", "rediss://cache:6380"])
def test_state_accepts_memory_and_redis_urls(state: str) -> None:
    """`state` is `memory` or a `redis://` / `rediss://` URL."""
    assert parse_config({"providers": MOCK, "state": state}, env={}).state == state


def test_unknown_state_store_names_the_field_without_the_url() -> None:
    """Another store is refused at `state`, repeating only the scheme (a URL may hold a
    password)."""
    errors = errors_of({"providers": MOCK, "state": "postgres://user:s3cret@db/state"})
    assert errors == [
        ("state", "unknown state store 'postgres': use 'memory' or a 'redis://' / 'rediss://' URL")
    ]
    assert "s3cret" not in str(errors)


# ---- one run lists every error ----------------------------------------------------------------


def test_a_shape_error_does_not_hide_the_rules_of_other_objects() -> None:
    """A max_retries type error in one route and an overlap between two others: both reported."""
    errors = errors_of(
        {
            "providers": MOCK,
            "routes": [
                route("a", targets=[{"provider": "p", "max_retries": "two"}]),
                route("b", models=["gpt-*"]),
                route("c", models=["gpt-*"]),
            ],
        }
    )
    assert errors == [
        ("routes[0].targets[0].max_retries", "must be a whole number (got 'two')"),
        (
            "routes[2].models[0]",
            (
                'model pattern "gpt-*" of route "c" overlaps "gpt-*" of route "b" at the same'
                " specificity"
            ),
        ),
    ]


def test_a_duplicate_name_is_reported_beside_shape_errors() -> None:
    """Two providers named alike are refused in the same run as a broken route."""
    errors = errors_of(
        {
            "providers": [*MOCK, {"name": "p", "kind": "mock"}],
            "routes": [{"name": "a", "targets": "p"}],
        }
    )
    assert errors == [
        ("routes[0].targets", "must be a list (got text)"),
        ("providers[1].name", "name 'p' is already taken by providers[0]"),
    ]


def test_rule_errors_keep_the_files_positions_after_a_broken_object() -> None:
    """Objects after a broken one are reported at their own index, in paths and in messages."""
    errors = errors_of(
        {
            "providers": [{"name": "x", "kind": "vendor"}, *MOCK, {"name": "P", "kind": "mock"}],
            "routes": [
                route("a", timeout="soon"),
                route("b", strategy={"type": "fastest"}),
            ],
            "keys": [
                {"name": "old", "key": 12345678},
                {"name": "app", "key": "app-key-123", "routes": ["a", "ghost"]},
            ],
        }
    )
    assert errors == [
        (
            "providers[0].kind",
            (
                "must be one of 'openai', 'anthropic', 'openai-compatible',"
                " 'azure-openai', 'gemini', 'vertex', 'bedrock' or 'mock' (got 'vendor')"
            ),
        ),
        ("routes[0].timeout", "unknown key 'timeout'; did you mean 'request_timeout'?"),
        ("keys[0].key", "must be text (got a number)"),
        ("providers[2].name", "name 'P' is already taken by providers[1]"),
        (
            "routes[1].strategy.type",
            (
                "must be one of failover, round-robin, weighted, lowest-cost, lowest-latency,"
                " least-busy (got 'fastest')"
            ),
        ),
        ("keys[1].routes[1]", 'no route named "ghost" is served'),
    ]


def test_references_to_a_broken_object_are_not_reported_again() -> None:
    """A target, a fallback or a key naming an object with a shape error gets no follow-on error."""
    errors = errors_of(
        {
            "providers": [{"name": "openai", "kind": "openai", "connect_timeout": -1}, *MOCK],
            "routes": [
                route("a", targets=[{"provider": "openai"}], fallbacks={"general": ["b"]}),
                route("b", max_attempts=0),
                route("c", fallbacks={"general": ["ghost"]}),
            ],
            "keys": [{"name": "app", "key": "app-key-123", "routes": ["b"]}],
        }
    )
    assert errors == [
        ("providers[0].connect_timeout", "must be greater than 0 (got -1)"),
        ("routes[1].max_attempts", "must be at least 1 (got 0)"),
        ("routes[2].fallbacks.general[0]", 'no route named "ghost" in the project'),
    ]


def test_a_whole_list_that_is_broken_stops_before_the_rules() -> None:
    """`providers: 5` reports only itself: every target would otherwise name a missing one."""
    errors = errors_of({"providers": 5, "routes": [route("a"), route("a")]})
    assert errors == [("providers", "must be a list (got a number)")]


def test_a_broken_setting_falls_back_to_its_default_for_the_rules() -> None:
    """A bad `server` or `defaults` is reported, and the routes are still checked."""
    errors = errors_of(
        {
            "server": {"port": "http"},
            "defaults": {"circuit_breaker": {"failure_threshold": 0}},
            "providers": MOCK,
            "routes": [route("a", fallbacks={"general": ["ghost"]})],
        }
    )
    assert errors == [
        ("server.port", "must be a whole number (got 'http')"),
        ("defaults.circuit_breaker.failure_threshold", "must be at least 1 (got 0)"),
        ("routes[0].fallbacks.general[0]", 'no route named "ghost" in the project'),
    ]
