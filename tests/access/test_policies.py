"""Policies and data-handling requirements: skips, shadows, unset provider fields, refusals."""

from __future__ import annotations

from typing import Any

import pytest

from turnout.access.bindings import IMPLICIT_GRANT, AccessPolicy, Decision
from turnout.access.keys import Caller
from turnout.access.policies import CLEAR, Policies, ProviderFacts, provider_family
from turnout.errors import ConfigError, PolicyDenied
from turnout.schema import (
    BindingConfig,
    DataHandling,
    PolicyConfig,
    ProviderConfig,
    RequireConfig,
    RouteConfig,
)

OPENAI = ProviderFacts("openai", "openai")
ANTHROPIC_EU = ProviderFacts(
    "anthropic-eu",
    "anthropic",
    DataHandling(zero_data_retention=True, no_prompt_training=True, jurisdiction="EU"),
)
LOCAL = ProviderFacts("local", "none", DataHandling(zero_data_retention=True))


def policies(*configs: dict[str, Any]) -> Policies:
    """Policies compiled from plain data."""
    return Policies.from_config([PolicyConfig.model_validate(config) for config in configs])


def requiring(**require: Any) -> Caller:
    """A caller of key `app` with the given requirements."""
    return Caller("default", "app", require=RequireConfig.model_validate(require))


ANYONE = Caller("default", "app")


def test_nothing_objecting_gives_the_clear_verdict() -> None:
    """No policies and no requirements: every target may be called."""
    assert Policies.from_config([]).check_target(ANYONE, IMPLICIT_GRANT, OPENAI, "main") is CLEAR


def test_enforce_policy_skips_the_target_it_denies() -> None:
    """An enforce-mode deny_when on the provider skips that target, naming the policy."""
    rules = policies({"name": "no-openai", "deny_when": {"provider": "openai"}})
    verdict = rules.check_target(ANYONE, IMPLICIT_GRANT, OPENAI, "main")
    assert verdict.skipped
    assert verdict.reason is not None
    assert 'policy "no-openai"' in verdict.reason
    assert "provider openai" in verdict.reason
    assert rules.check_target(ANYONE, IMPLICIT_GRANT, ANTHROPIC_EU, "main") is CLEAR


def test_observe_policy_records_a_shadow_and_calls_anyway() -> None:
    """An observe-mode deny is a shadow decision; the target is not skipped."""
    rules = policies({"name": "watch", "mode": "observe", "deny_when": {"family": "openai"}})
    verdict = rules.check_target(ANYONE, IMPLICIT_GRANT, OPENAI, "main")
    assert not verdict.skipped
    assert verdict.reason is None
    assert len(verdict.shadow) == 1
    assert 'policy "watch" (observe)' in verdict.shadow[0]


def test_enforce_and_observe_together_skip_and_shadow() -> None:
    """A target skipped by one policy still carries the shadows of observe policies."""
    rules = policies(
        {"name": "watch", "mode": "observe", "deny_when": {"provider": "openai"}},
        {"name": "deny", "deny_when": {"family": "OpenAI"}},
    )
    verdict = rules.check_target(ANYONE, IMPLICIT_GRANT, OPENAI, "main")
    assert verdict.skipped
    assert verdict.reason is not None
    assert 'policy "deny"' in verdict.reason
    assert len(verdict.shadow) == 1
    assert "watch" in verdict.shadow[0]


def test_deny_when_conditions_all_hold_and_lists_match_any() -> None:
    """Every condition must hold; a list matches any of its values."""
    rules = policies({"name": "p", "deny_when": {"provider": ["openai", "local"], "route": "main"}})
    assert rules.check_target(ANYONE, IMPLICIT_GRANT, OPENAI, "main").skipped
    assert rules.check_target(ANYONE, IMPLICIT_GRANT, LOCAL, "main").skipped
    assert not rules.check_target(ANYONE, IMPLICIT_GRANT, OPENAI, "side").skipped
    assert not rules.check_target(ANYONE, IMPLICIT_GRANT, ANTHROPIC_EU, "main").skipped


def test_jurisdiction_condition_ignores_case_and_unset_jurisdictions() -> None:
    """deny_when jurisdiction matches in any case; a provider without one never matches."""
    rules = policies({"name": "no-eu", "deny_when": {"jurisdiction": "eu"}})
    assert rules.check_target(ANYONE, IMPLICIT_GRANT, ANTHROPIC_EU, "r").skipped
    assert not rules.check_target(ANYONE, IMPLICIT_GRANT, OPENAI, "r").skipped


def test_cached_policy_part_is_kept_per_route() -> None:
    """A verdict cached for one route never answers for another."""
    rules = policies({"name": "p", "deny_when": {"route": "main"}})
    for _ in range(2):
        assert rules.check_target(ANYONE, IMPLICIT_GRANT, OPENAI, "main").skipped
        assert not rules.check_target(ANYONE, IMPLICIT_GRANT, OPENAI, "side").skipped


@pytest.mark.parametrize(
    ("require", "provider", "fragment"),
    [
        ({"zero_data_retention": True}, OPENAI, "zero data retention"),
        ({"no_prompt_training": True}, LOCAL, "no prompt training"),
        ({"jurisdiction": ["EU"]}, LOCAL, "declares no jurisdiction"),
        (
            {"jurisdiction": ["EU"]},
            ProviderFacts("us", "openai", DataHandling(jurisdiction="US")),
            'jurisdiction "US"',
        ),
    ],
)
def test_unmet_requirement_skips_the_target(
    require: dict[str, Any], provider: ProviderFacts, fragment: str
) -> None:
    """A key requirement the provider does not declare (unset fails) skips the target."""
    verdict = Policies.from_config([]).check_target(
        requiring(**require), IMPLICIT_GRANT, provider, "main"
    )
    assert verdict.skipped
    assert verdict.reason is not None
    assert fragment in verdict.reason
    assert 'key "app"' in verdict.reason


def test_met_requirements_pass_in_any_jurisdiction_case() -> None:
    """A provider declaring every promise (jurisdiction in any case) meets the requirements."""
    caller = requiring(zero_data_retention=True, no_prompt_training=True, jurisdiction=["eu", "CH"])
    assert Policies.from_config([]).check_target(caller, IMPLICIT_GRANT, ANTHROPIC_EU, "m") is CLEAR


def binding_decision(**require: Any) -> Decision:
    """The decision of a binding `eu-only` with the given requirements."""
    binding = BindingConfig.model_validate(
        {
            "name": "eu-only",
            "subjects": [{"everyone": True}],
            "grants": [{"models": "*"}],
            "require": require,
        }
    )
    route = RouteConfig.model_validate({"name": "main", "targets": [{"provider": "p"}]})
    return AccessPolicy.from_config([binding], {"main": route}).decide(ANYONE, "m")


def test_winning_binding_requirements_apply_too() -> None:
    """The winning binding's `require` is checked as well as the key's, naming the binding."""
    decision = binding_decision(jurisdiction=["EU"])
    rules = Policies.from_config([])
    verdict = rules.check_target(ANYONE, decision, OPENAI, "main")
    assert verdict.skipped
    assert verdict.reason is not None
    assert 'binding "eu-only"' in verdict.reason
    assert rules.check_target(ANYONE, decision, ANTHROPIC_EU, "main") is CLEAR


def test_key_and_binding_requirements_must_both_hold() -> None:
    """A provider meeting the binding but not the key is still skipped."""
    decision = binding_decision(jurisdiction=["EU"])
    caller = requiring(jurisdiction=["CH"])
    verdict = Policies.from_config([]).check_target(caller, decision, ANTHROPIC_EU, "main")
    assert verdict.skipped
    assert verdict.reason is not None
    assert 'key "app"' in verdict.reason


def test_route_refused_before_any_call_when_every_target_is_skipped() -> None:
    """check_route raises 403 POLICY_DENIED when no target may be called."""
    rules = policies({"name": "no-openai", "deny_when": {"family": "openai"}})
    with pytest.raises(PolicyDenied) as info:
        rules.check_route(ANYONE, IMPLICIT_GRANT, "main", [OPENAI, OPENAI])
    assert (info.value.status, info.value.code) == (403, "POLICY_DENIED")
    assert "no-openai" in info.value.message
    verdicts = rules.check_route(ANYONE, IMPLICIT_GRANT, "main", [OPENAI, ANTHROPIC_EU])
    assert [verdict.skipped for verdict in verdicts] == [True, False]


def test_observe_only_never_refuses_a_route() -> None:
    """Observe-mode policies covering every target refuse nothing."""
    rules = policies({"name": "w", "mode": "observe", "deny_when": {"family": "openai"}})
    verdicts = rules.check_route(ANYONE, IMPLICIT_GRANT, "main", [OPENAI])
    assert not verdicts[0].skipped
    assert verdicts[0].shadow


@pytest.mark.parametrize(
    ("configs", "path", "rule"),
    [
        ([{"name": "p", "deny_when": {}}], "policies[0].deny_when", "at least one"),
        (
            [{"name": "p", "deny_when": {"family": "mistral"}}],
            "policies[0].deny_when.family",
            "unknown family",
        ),
        (
            [{"name": "p", "deny_when": {"provider": []}}],
            "policies[0].deny_when.provider",
            "non-empty",
        ),
        (
            [
                {"name": "p", "deny_when": {"provider": "a"}},
                {"name": "p", "deny_when": {"provider": "b"}},
            ],
            "policies[1].name",
            "already used",
        ),
    ],
)
def test_invalid_policies_are_refused_with_their_path(
    configs: list[dict[str, Any]], path: str, rule: str
) -> None:
    """Empty deny_when, unknown family, empty values, repeated names: 400 by path."""
    with pytest.raises(ConfigError) as info:
        policies(*configs)
    assert info.value.status == 400
    assert info.value.errors[0][0] == path
    assert rule in info.value.errors[0][1]


@pytest.mark.parametrize(
    ("config", "family"),
    [
        ({"kind": "openai"}, "openai"),
        ({"kind": "anthropic"}, "anthropic"),
        ({"kind": "azure-openai", "wire": "anthropic-messages"}, "anthropic"),
        ({"kind": "azure-openai", "wire": "openai-chat"}, "openai"),
        ({"kind": "openai-compatible", "preset": "ollama"}, "none"),
        ({"kind": "mock"}, "none"),
    ],
)
def test_provider_facts_take_the_family_of_the_kind(config: dict[str, Any], family: str) -> None:
    """A provider's family follows its kind (an Azure provider's, its wire)."""
    provider = ProviderConfig.model_validate({"name": "p", **config})
    facts = ProviderFacts.from_config(provider)
    assert provider_family(provider) == facts.family == family
    assert facts.data_handling == provider.data_handling
