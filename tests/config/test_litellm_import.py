"""Importing a LiteLLM proxy config: routes, targets, strategies, budgets,
fallbacks, notes, secrets, and an output that always loads."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnout.config.litellm import ImportResult, convert_litellm, main_import_litellm
from turnout.config.load import parse_config
from turnout.errors import ConfigError
from turnout.gateway.resolution.lookups import build_runtime
from turnout.routing.options import MAX_FALLBACKS, MAX_STATIC_ATTEMPTS
from turnout.routing.strategy_settings import strategy_from_config, validate_weights

if TYPE_CHECKING:
    from turnout.schema import FileConfig, RouteConfig

FIXTURES = Path(__file__).parent.parent / "fixtures" / "litellm"
FIXTURE_NAMES = sorted(path.name for path in FIXTURES.glob("*.yaml"))
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
SECRET_KEYS = {"api_key", "master_key", "redis_password", "password", "database_url"}


def convert(name: str) -> ImportResult:
    return convert_litellm((FIXTURES / name).read_text(encoding="utf-8"))


def load(result: ImportResult) -> FileConfig:
    """The imported YAML through the real loader, every variable it reads set (a Redis URL
    variable to a Redis URL, as `state` requires)."""
    env = {
        name: "redis://cache:6379/0" if name.endswith("REDIS_URL") else f"value-of-{name.lower()}"
        for name in result.variables
    }
    document = yaml.load(result.yaml, Loader=LOADER)  # noqa: S506
    return parse_config(document, env=env)


def raw(result: ImportResult) -> dict[str, Any]:
    document: dict[str, Any] = yaml.load(result.yaml, Loader=LOADER)  # noqa: S506
    return document


def route(config: FileConfig, name: str) -> RouteConfig:
    return next(r for r in config.routes if r.name == name)


def check_engine_rules(config: FileConfig) -> None:
    """Engine rules on top of the schema: strategy, weights, attempt budget, names, fallbacks."""
    names = [p.name.lower() for p in config.providers] + [r.name.lower() for r in config.routes]
    assert len(names) == len(set(names))
    patterns: dict[str, str] = {}
    for r in config.routes:
        strategy_from_config(r.strategy)
        strategy = r.strategy if isinstance(r.strategy, str) else r.strategy["type"]
        only = [t.fallback_only for t in r.targets]
        validate_weights([t.weight for t in r.targets], only, strategy)
        assert sum(1 + t.max_retries for t in r.targets) <= MAX_STATIC_ATTEMPTS
        shown = [t.display_name for t in r.targets]
        assert len(shown) == len(set(shown))
        for model in r.models:
            assert patterns.setdefault(model.lower(), r.name) == r.name
        linked = [*r.fallbacks.general, *r.fallbacks.context, *r.fallbacks.content]
        assert len(linked) <= MAX_FALLBACKS
        assert r.name not in linked
    for r in config.routes:
        for model in r.models:
            assert patterns[model.lower()] == r.name
        assert patterns.get(r.name.lower(), r.name) == r.name
    assert not any(has_fallback_cycle(config, kind) for kind in ("general", "context", "content"))


def has_fallback_cycle(config: FileConfig, kind: str) -> bool:
    """Whether fallbacks of `kind` form a cycle (a request hops along one kind only)."""
    edges = {r.name: list(getattr(r.fallbacks, kind)) for r in config.routes}
    state: dict[str, int] = {}

    def visit(name: str) -> bool:
        if state.get(name) == 1:
            return True
        if state.get(name) == 2:
            return False
        state[name] = 1
        found = any(visit(nxt) for nxt in edges.get(name, []))
        state[name] = 2
        return found

    return any(visit(name) for name in edges)


def literal_secrets(value: object, key: str = "") -> list[str]:
    """Every literal (not `os.environ/`) secret value in a LiteLLM document."""
    if isinstance(value, dict):
        found: list[str] = []
        for k, v in value.items():
            found += literal_secrets(v, "secret" if key == "environment_variables" else str(k))
        return found
    if isinstance(value, list):
        return [s for item in value for s in literal_secrets(item, key)]
    is_secret = key in SECRET_KEYS or key == "secret"
    if is_secret and isinstance(value, str) and not value.startswith("os.environ/"):
        return [value]
    return []


# ---- every fixture ------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_every_fixture_converts_to_a_loadable_configuration(name: str) -> None:
    """The output loads through parse_config and keeps the engine's own rules."""
    config = load(convert(name))
    assert config.routes
    check_engine_rules(config)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_no_literal_secret_reaches_the_output_or_the_notes(name: str) -> None:
    """A secret written into the LiteLLM file appears nowhere in what the import produces."""
    result = convert(name)
    document = yaml.safe_load((FIXTURES / name).read_text(encoding="utf-8"))
    for secret in literal_secrets(document):
        assert secret not in result.yaml
        assert all(secret not in note for note in result.notes)


def test_the_secret_fixtures_do_hold_literal_secrets() -> None:
    """The secret test above has something to find (it would otherwise pass vacuously)."""
    for name in ("local_mix.yaml", "big_group.yaml", "unsupported.yaml"):
        document = yaml.safe_load((FIXTURES / name).read_text(encoding="utf-8"))
        assert literal_secrets(document), name


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_notes_are_the_comments_at_the_top(name: str) -> None:
    """Every note is a `# ` comment line of the header, before any YAML."""
    result = convert(name)
    header = result.yaml.split("\n\n", 1)[0].splitlines()
    assert all(line.startswith("#") for line in header)
    assert [line[2:] for line in header if line[2:] in result.notes] == result.notes


# ---- one fixture each ---------------------------------------------------------------------


def test_order_makes_a_failover_route_with_fallback_only_targets() -> None:
    """Deployments sharing a model name become one route; higher `order` is fallback_only."""
    result = convert("openai_anthropic_failover.yaml")
    config = load(result)
    chat = route(config, "chat")
    assert chat.models == ("chat",)
    assert chat.strategy == {"type": "failover"}
    assert [(t.provider, t.model, t.fallback_only) for t in chat.targets] == [
        ("openai", "gpt-4o-mini", False),
        ("anthropic", "claude-3-5-haiku-latest", True),
    ]
    assert [t.timeout for t in chat.targets] == [30, 120]
    assert [t.max_retries for t in chat.targets] == [2, 2]
    assert route(config, "gpt-4o").fallbacks.general == ("claude-sonnet",)
    assert route(config, "gpt-4o").targets[0].provider == "openai"  # a bare gpt-* model
    assert raw(result)["keys"] == [{"name": "master-key", "key": "${LITELLM_MASTER_KEY}"}]


def test_model_info_prices_and_context_window_are_carried() -> None:
    """LiteLLM's USD per token becomes USD per 1M tokens; max_input_tokens the context window."""
    config = load(convert("openai_anthropic_failover.yaml"))
    anthropic = next(p for p in config.providers if p.name == "anthropic")
    price = anthropic.prices["claude-sonnet-4-5"]
    assert (price.input, price.output) == (3.0, 15.0)
    assert route(config, "claude-sonnet").targets[0].context_window == 200_000


def test_azure_regions_become_providers_of_one_route() -> None:
    """Each Azure resource is an azure-openai provider speaking openai-chat with its version."""
    config = load(convert("azure_regions.yaml"))
    azure = [p for p in config.providers if p.kind == "azure-openai"]
    assert [p.name for p in azure] == [
        "azure-contoso-eastus",
        "azure-contoso-westeurope",
        "azure-contoso-canadaeast",
    ]
    assert {p.wire for p in azure} == {"openai-chat"}
    assert [p.api_version for p in azure] == ["2024-10-21", "2024-10-21", "2024-08-01-preview"]
    gpt = route(config, "gpt-4o")
    assert gpt.strategy == {"type": "lowest-latency"}
    assert [t.display_name for t in gpt.targets] == [
        "gpt-4o-eastus",
        "gpt-4o-westeurope",
        "gpt-4o-canadaeast",
    ]
    assert [t.first_token_timeout for t in gpt.targets] == [15, 15, 30]
    assert route(config, "text-embedding-3-large").targets[0].provider == "azure-contoso-eastus"


def test_unsupported_router_setting_is_named_with_its_path() -> None:
    """A setting turnout does not carry is one note naming its LiteLLM path and why."""
    notes = convert("azure_regions.yaml").notes
    assert (
        "not carried: router_settings.enable_pre_call_checks (turnout checks a target's context "
        "window only where one is declared, from model_info.max_input_tokens)"
    ) in notes
    assert any(n.startswith("not carried: model_list[0,1,2].model_info.base_model") for n in notes)


def test_simple_shuffle_weights_retries_and_cooldowns() -> None:
    """weight -> weighted start; num_retries fits the budget; allowed_fails/cooldown_time ->
    the default breaker; Redis -> shared state; cache -> every route's response cache."""
    result = convert("load_balanced.yaml")
    config = load(result)
    mini = route(config, "gpt-4o-mini")
    assert mini.strategy == {"type": "weighted"}
    assert [t.weight for t in mini.targets] == [6, 3, 1, 1]
    assert [t.max_retries for t in mini.targets] == [2, 2, 1, 1]
    assert route(config, "gpt-4.1").targets[0].max_retries == 3
    breaker = config.defaults.circuit_breaker
    assert (breaker.failure_threshold, breaker.cooldown_seconds) == (3, 30)
    assert breaker.failure_window_seconds == 60
    assert raw(result)["state"] == "redis://:${REDIS_PASSWORD}@${REDIS_HOST}:6379/0"
    assert all(r.cache.enabled and r.cache.ttl_seconds == 600 for r in config.routes)
    assert any("router_settings.num_retries" in n and "16 attempts" in n for n in result.notes)
    assert any(
        n.startswith("not carried: model_list[0,1,2,3,4].litellm_params.rpm") for n in result.notes
    )


def test_fallbacks_of_three_kinds_within_turnout_limits() -> None:
    """fallbacks / context / content map to the route's kinds; a self reference, a cycle, a
    fourth fallback and an unknown group are left out, each with a note."""
    result = convert("fallbacks.yaml")
    config = load(result)
    gpt = route(config, "gpt-4o")
    assert gpt.fallbacks.general == ("claude-sonnet", "gpt-4o-mini")
    assert gpt.fallbacks.context == ("long-context",)
    assert gpt.fallbacks.content == ()
    assert route(config, "claude-sonnet").fallbacks.general == ("claude-haiku",)
    assert route(config, "gpt-4o-mini").fallbacks.context == ("long-context",)
    assert route(config, "claude-haiku").fallbacks.general == ()
    notes = "\n".join(result.notes)
    assert "gpt-4o -> gpt-4o: a route may not fall back to itself" in notes
    assert "claude-sonnet -> gpt-4o: would make a fallback cycle" in notes
    assert "gpt-4o -> safe-model: a route may have at most 3 fallbacks" in notes
    assert "'mistral-large' names no imported model group" in notes


def test_a_content_policy_link_is_no_cycle_with_a_general_one() -> None:
    """content_policy_fallbacks a -> b and fallbacks b -> a are both kept: each kind is its
    own graph; a note says a content hop into b does not go on to b's general fallbacks."""
    result, config = convert_text(
        """
model_list:
  - {model_name: a, litellm_params: {model: openai/gpt-4o}}
  - {model_name: b, litellm_params: {model: anthropic/claude-sonnet-4-5}}
router_settings:
  content_policy_fallbacks: [{a: [b]}]
  fallbacks: [{b: [a]}]
"""
    )
    assert route(config, "a").fallbacks.content == ("b",)
    assert route(config, "b").fallbacks.general == ("a",)
    assert not any("cycle" in note for note in result.notes)
    assert (
        "changed: router_settings.content_policy_fallbacks[0] (a -> b: a request that reaches "
        "'b' this way does not go on to its general fallbacks as LiteLLM would: turnout "
        "follows one kind of fallback per request)"
    ) in result.notes


def test_model_group_alias_adds_an_exact_model_to_the_route() -> None:
    """An alias becomes one more model of its route; one that is already a model is noted."""
    result = convert("fallbacks.yaml")
    config = load(result)
    assert route(config, "gpt-4o").models == ("gpt-4o", "gpt-4")
    assert route(config, "claude-sonnet").models == ("claude-sonnet", "smart")
    assert any(
        n.startswith("not carried: router_settings.model_group_alias.gpt-4o-mini")
        for n in result.notes
    )


def test_local_and_hosted_open_models_use_presets() -> None:
    """ollama/ollama_chat, hosted_vllm, groq, deepseek, moonshot, zai, xai -> presets; Ollama's
    base gets /v1; local servers need no key; one literal key shared -> one merged provider."""
    result = convert("local_mix.yaml")
    config = load(result)
    by_name = {p.name: p for p in config.providers}
    assert by_name["ollama"].preset == "ollama"
    assert by_name["ollama"].base_url == "http://localhost:11434/v1"
    assert by_name["ollama"].api_key is None
    assert by_name["vllm"].base_url == "http://gpu-box.internal:8000/v1"
    assert {p.preset for p in config.providers} >= {"groq", "deepseek", "kimi", "zai", "xai"}
    assert by_name["local"].kind == "openai-compatible"
    assert by_name["local"].api_key is None
    deepseek = [p for p in config.providers if p.preset == "deepseek"]
    assert len(deepseek) == 1
    assert raw(result)["providers"][list(by_name).index("deepseek")]["api_key"] == (
        "${TURNOUT_IMPORTED_KEY_2}"
    )
    assert route(config, "llama3").strategy == {"type": "least-busy"}
    assert route(config, "kimi").targets[0].provider == "kimi-api"


def test_literal_secrets_become_variables_with_a_note() -> None:
    """Each literal key becomes ${TURNOUT_IMPORTED_KEY_n}, the same literal the same n."""
    result = convert("local_mix.yaml")
    assert "TURNOUT_IMPORTED_KEY_1" in result.variables
    assert "TURNOUT_IMPORTED_KEY_2" in result.variables
    assert (
        "changed: model_list[2].litellm_params.api_key "
        "(a literal secret, not copied: set TURNOUT_IMPORTED_KEY_1 to it)"
    ) in result.notes
    assert (
        "changed: model_list[5].litellm_params.api_key "
        "(the same literal secret as TURNOUT_IMPORTED_KEY_2, not copied)"
    ) in result.notes
    assert any(n.startswith("changed: general_settings.master_key") for n in result.notes)
    assert any(n.startswith("not carried: general_settings.database_url") for n in result.notes)


def test_unsupported_providers_are_skipped_and_noted() -> None:
    """Replicate and Cohere deployments are skipped, each noted (Bedrock's and Vertex's are
    imported)."""
    result = convert("unsupported.yaml")
    config = load(result)
    assert [r.name for r in config.routes] == [
        "claude-bedrock",
        "gemini-pro",
        "anthropic-any",
        "gpt-4o",
    ]
    for index, provider in [(2, "replicate"), (3, "cohere")]:
        assert any(
            n.startswith(f"not carried: model_list[{index}] (") and f"'{provider}'" in n
            for n in result.notes
        )
    for path in ("guardrails", "litellm_settings.success_callback", "general_settings.alerting"):
        assert any(n.startswith(f"not carried: {path} (") for n in result.notes)


def test_notes_claim_only_what_turnout_does() -> None:
    """Callbacks, verbose logs and the database are noted as missing or planned, never as
    carried by an audit log, metrics or a store that turnout does not have yet."""
    notes = convert("unsupported.yaml").notes
    assert (
        "not carried: litellm_settings.success_callback (LiteLLM's logging callbacks have no "
        "turnout equivalent; audit log and metrics are planned)"
    ) in notes
    assert (
        "not carried: litellm_settings.set_verbose (turnout has no setting for its log level "
        "or format yet)"
    ) in notes
    assert (
        "not carried: general_settings.database_url (turnout keeps no database yet: its keys "
        "and routes are this file; LiteLLM's virtual keys and spend records are not carried)"
    ) in notes
    assert "not carried: litellm_settings.max_budget (turnout has no budgets)" in notes


def test_usage_based_routing_starts_weighted_by_rpm() -> None:
    """usage-based-routing-v2 has no equivalent: noted, and the route starts weighted by rpm."""
    result = convert("unsupported.yaml")
    gpt = route(load(result), "gpt-4o")
    assert gpt.strategy == {"type": "weighted"}
    assert [t.weight for t in gpt.targets] == [600, 300]
    assert any(n.startswith("changed: router_settings.routing_strategy") for n in result.notes)
    assert raw(result)["state"] == "${REDIS_URL}"


def test_environment_variables_section_names_variables_but_no_values() -> None:
    """environment_variables is not copied; the note names the variables to set."""
    notes = convert("unsupported.yaml").notes
    assert (
        "not carried: environment_variables (values are not copied: set LANGFUSE_PUBLIC_KEY, "
        "LANGFUSE_SECRET_KEY in the environment)"
    ) in notes


def test_a_route_holds_at_most_ten_targets_and_fits_the_budget() -> None:
    """An eleventh deployment is left out; retries are lowered until Σ(1+r) ≤ 10."""
    result = convert("big_group.yaml")
    config = load(result)
    mini = route(config, "gpt-4o-mini")
    assert len(mini.targets) == 10
    assert [t.max_retries for t in mini.targets] == [0] * 10
    assert len(config.providers) == 10  # the skipped deployment leaves no unused provider
    assert "not carried: model_list[10] (route 'gpt-4o-mini' already has 10 targets)" in (
        result.notes
    )


def test_fractional_weights_keep_their_proportions() -> None:
    """Weights 0.1 … 0.9 become whole numbers in the same proportions."""
    mini = route(load(convert("big_group.yaml")), "gpt-4o-mini")
    assert [t.weight for t in mini.targets] == [100, 200, 300, 400, 500, 600, 700, 800, 900, 100]


def test_a_deployment_without_a_weight_weighs_zero_when_the_first_has_one() -> None:
    """As in LiteLLM's simple shuffle, the first deployment decides what weights are read: a
    deployment missing that key weighs 0 (a failover target only), with a note saying how
    turnout differs; when the first has none, every deployment starts alike."""
    result, config = convert_text(
        """
model_list:
  - {model_name: a, litellm_params: {model: openai/gpt-4o, weight: 3}}
  - {model_name: a, litellm_params: {model: anthropic/claude-sonnet-4-5}}
  - {model_name: a, litellm_params: {model: openai/gpt-4o-mini, weight: 1}}
  - {model_name: b, litellm_params: {model: openai/gpt-4o}}
  - {model_name: b, litellm_params: {model: anthropic/claude-sonnet-4-5, weight: 5}}
  - {model_name: c, litellm_params: {model: openai/gpt-4o, rpm: 900}}
  - {model_name: c, litellm_params: {model: anthropic/claude-sonnet-4-5, weight: 2}}
"""
    )
    assert route(config, "a").strategy == {"type": "weighted"}
    assert [t.weight for t in route(config, "a").targets] == [3, 0, 1]
    assert [t.weight for t in route(config, "b").targets] == [1, 1]
    assert [t.weight for t in route(config, "c").targets] == [900, 0]
    assert any(
        n.startswith("changed: model_list[1].litellm_params.weight (not set while the first")
        and "turnout tries it in list order after the start target fails" in n
        for n in result.notes
    )
    for index in (4, 6):
        assert any(
            n.startswith(f"not carried: model_list[{index}].litellm_params.weight (LiteLLM does")
            for n in result.notes
        )
    assert any(n.startswith("changed: model_list[6].litellm_params.rpm (") for n in result.notes)


def test_disable_cooldowns_turns_the_breaker_off() -> None:
    """disable_cooldowns -> defaults.circuit_breaker.enabled false, with a note."""
    result = convert("big_group.yaml")
    assert load(result).defaults.circuit_breaker.enabled is False
    assert result.variables == ["TURNOUT_IMPORTED_KEY_1"]


# ---- small configs ------------------------------------------------------------------------


def convert_text(text: str) -> tuple[ImportResult, FileConfig]:
    result = convert_litellm(text)
    config = load(result)
    check_engine_rules(config)
    return result, config


def test_missing_keys_and_bases_read_litellm_variables() -> None:
    """Without api_key / api_base a provider reads the variable LiteLLM itself would read."""
    result, config = convert_text(
        """
model_list:
  - {model_name: a, litellm_params: {model: openai/gpt-4o}}
  - {model_name: b, litellm_params: {model: azure/my-deployment}}
  - {model_name: c, litellm_params: {model: claude-3-5-haiku-latest}}
"""
    )
    providers = raw(result)["providers"]
    assert providers[0] == {
        "name": "openai",
        "kind": "openai",
        "api_key": "${OPENAI_API_KEY}",
        "model_patterns": ["gpt-4o"],
    }
    assert providers[1]["base_url"] == "${AZURE_API_BASE}"
    assert providers[1]["api_key"] == "${AZURE_API_KEY}"
    assert route(config, "c").targets[0].provider == "anthropic"


def test_model_names_that_are_not_patterns_get_safe_route_names() -> None:
    """`openai/gpt-4o` stays the model callers use; the route name is `openai-gpt-4o`."""
    _, config = convert_text(
        "model_list:\n  - {model_name: openai/gpt-4o, litellm_params: {model: openai/gpt-4o}}\n"
    )
    assert [(r.name, r.models) for r in config.routes] == [("openai-gpt-4o", ("openai/gpt-4o",))]


def test_a_route_named_like_a_vendor_leaves_the_provider_another_name() -> None:
    """Routes and providers share one name space: the provider of route `groq` is `groq-api`."""
    _, config = convert_text(
        "model_list:\n  - {model_name: groq, litellm_params: {model: groq/llama-3.3-70b}}\n"
    )
    assert [p.name for p in config.providers] == ["groq-api"]
    assert [r.name for r in config.routes] == ["groq"]


def test_model_names_differing_only_in_case_keep_one_pattern() -> None:
    """Patterns are case-insensitive: the second group is reachable by route name only."""
    result, config = convert_text(
        """
model_list:
  - {model_name: GPT-4o, litellm_params: {model: openai/gpt-4o}}
  - {model_name: gpt-4o, litellm_params: {model: openai/gpt-4o-2024-08-06}}
"""
    )
    assert [(r.name, r.models) for r in config.routes] == [
        ("GPT-4o", ("GPT-4o",)),
        ("gpt-4o-2", ()),
    ]
    assert any(n.startswith("not carried: model_list[1].model_name") for n in result.notes)


def test_literal_redis_password_is_not_copied() -> None:
    """redis_host/port/password -> state; a literal password becomes a variable."""
    result, _ = convert_text(
        """
model_list:
  - {model_name: a, litellm_params: {model: openai/gpt-4o}}
router_settings: {redis_host: redis.internal, redis_port: 6380, redis_password: hunter2-redis}
"""
    )
    assert raw(result)["state"] == "redis://:${TURNOUT_IMPORTED_KEY_1}@redis.internal:6380/0"
    assert "hunter2-redis" not in result.yaml


def test_unknown_strategy_fails_over_and_cooldown_zero_disables_the_breaker() -> None:
    """An unknown routing_strategy is noted and the route fails over; cooldown_time 0 is off."""
    result, config = convert_text(
        """
model_list:
  - {model_name: a, litellm_params: {model: openai/gpt-4o}}
  - {model_name: a, litellm_params: {model: anthropic/claude-sonnet-4-5}}
router_settings: {routing_strategy: custom-magic, cooldown_time: 0}
"""
    )
    assert route(config, "a").strategy == {"type": "failover"}
    assert config.defaults.circuit_breaker.enabled is False
    assert any(n.startswith("not carried: router_settings.routing_strategy") for n in result.notes)


def test_cost_based_routing_is_lowest_cost_with_a_note_for_missing_prices() -> None:
    """cost-based-routing -> lowest-cost; targets without a price are named in a note."""
    result, config = convert_text(
        """
model_list:
  - model_name: a
    litellm_params: {model: openai/gpt-4o-mini, input_cost_per_token: 1.5e-7,
                     output_cost_per_token: 6.0e-7}
  - {model_name: a, litellm_params: {model: anthropic/claude-3-5-haiku-latest}}
router_settings: {routing_strategy: cost-based-routing}
"""
    )
    assert route(config, "a").strategy == {"type": "lowest-cost"}
    price = config.providers[0].prices["gpt-4o-mini"]
    assert (price.input, price.output) == (0.15, 0.6)
    assert any(n.startswith("changed: router_settings.routing_strategy") for n in result.notes)


def test_an_empty_config_gives_an_empty_but_valid_configuration() -> None:
    """No model_list: no providers, no routes, still loadable; the only notes are about
    who may call and where the server listens."""
    result, config = convert_text("router_settings: {num_retries: 2}\n")
    assert (config.providers, config.routes) == ((), ())
    assert [note.split(" (")[0] for note in result.notes] == [
        "changed: general_settings.master_key",
        "changed: --host",
    ]


def test_the_master_key_becomes_the_caller_key() -> None:
    """A literal master key becomes the one caller key under auth: keys, read from a
    variable: the literal is nowhere in the output or the notes, and no admin key is written
    (the operator chooses their own)."""
    result, config = convert_text(
        """
model_list:
  - {model_name: a, litellm_params: {model: openai/gpt-4o, api_key: os.environ/OPENAI_KEY}}
general_settings: {master_key: sk-1234}
"""
    )
    document = raw(result)
    assert document["server"] == {"host": "127.0.0.1", "port": 4000, "auth": "keys"}
    assert document["keys"] == [{"name": "master-key", "key": "${TURNOUT_IMPORTED_KEY_1}"}]
    assert "admin_keys" not in document
    assert "sk-1234" not in result.yaml
    assert all("sk-1234" not in note for note in result.notes)
    assert config.server.auth == "keys"
    assert [key.name for key in config.keys] == ["master-key"]
    assert (
        "changed: general_settings.master_key (a literal secret, not copied: set "
        "TURNOUT_IMPORTED_KEY_1 to it)"
    ) in result.notes


def test_without_a_master_key_the_server_is_open_on_loopback() -> None:
    """LiteLLM without a master key accepts every caller: auth open, on 127.0.0.1, no keys."""
    result, config = convert_text(
        "model_list:\n  - {model_name: a, litellm_params: {model: openai/gpt-4o}}\n"
    )
    assert raw(result)["server"] == {"host": "127.0.0.1", "port": 4000, "auth": "open"}
    assert (config.keys, config.admin_keys) == ((), ())
    assert any(
        n.startswith("changed: general_settings.master_key (not set, so LiteLLM accepts")
        for n in result.notes
    )


def test_text_that_is_not_a_litellm_config_is_an_error() -> None:
    """Broken YAML and a non-mapping document raise ConfigError."""
    with pytest.raises(ConfigError, match="invalid YAML at line"):
        convert_litellm("model_list: [unclosed\n")
    with pytest.raises(ConfigError, match="must be a mapping"):
        convert_litellm("- just\n- a list\n")


def test_main_writes_the_configuration_and_returns_zero(tmp_path: Path) -> None:
    """The command writes the converted YAML to its output and exits 0."""
    out = io.StringIO()
    assert main_import_litellm(str(FIXTURES / "fallbacks.yaml"), out) == 0
    assert out.getvalue() == convert("fallbacks.yaml").yaml


def test_main_reports_an_unreadable_file_and_returns_one(tmp_path: Path) -> None:
    """A missing file is reported on the error stream with exit code 1, nothing written."""
    out, err = io.StringIO(), io.StringIO()
    assert main_import_litellm(str(tmp_path / "missing.yaml"), out, err=err) == 1
    assert out.getvalue() == ""
    assert "cannot read" in err.getvalue()


# ---- any config ---------------------------------------------------------------------------

_PREFIXES = ["openai/", "anthropic/", "azure/", "groq/", "ollama/", "bedrock/", "", "deepseek/"]
_GROUPS = ["a", "A", "b", "c", "d/e", "gpt-4o", "o1", "gpt-*", "openai/*", "*x*", "*yy*"]
_KEYS = st.one_of(
    st.none(), st.just("os.environ/KEY_ONE"), st.just("os.environ/KEY_TWO"), st.just("sk-lit")
)
_DEPLOYMENT = st.fixed_dictionaries(
    {"model_name": st.sampled_from(_GROUPS)},
    optional={
        "litellm_params": st.fixed_dictionaries(
            {
                "model": st.builds(
                    str.__add__,
                    st.sampled_from(_PREFIXES),
                    st.sampled_from(["gpt-4o", "claude-x", "m1", "*", "gpt-*", "*x*"]),
                )
            },
            optional={
                "api_key": _KEYS,
                "api_base": st.sampled_from(["http://localhost:9/v1", "https://h.example/v1"]),
                "order": st.integers(0, 3),
                "weight": st.one_of(st.integers(0, 5), st.floats(0, 2_000_000)),
                "rpm": st.integers(0, 3_000_000),
                "max_retries": st.integers(0, 12),
                "timeout": st.one_of(st.floats(-1, 900), st.text(max_size=3)),
            },
        )
    },
)
_LINKS = st.lists(st.dictionaries(st.sampled_from(_GROUPS), st.lists(st.sampled_from(_GROUPS))))
_SETTINGS = st.fixed_dictionaries(
    {},
    optional={
        "routing_strategy": st.sampled_from(
            [
                "simple-shuffle",
                "least-busy",
                "usage-based-routing",
                "latency-based-routing",
                "cost-based-routing",
                "unknown",
            ]
        ),
        "num_retries": st.integers(0, 12),
        "allowed_fails": st.integers(0, 5000),
        "cooldown_time": st.floats(0, 200_000),
        "fallbacks": _LINKS,
        "context_window_fallbacks": _LINKS,
        "content_policy_fallbacks": _LINKS,
        "default_fallbacks": st.lists(st.sampled_from(_GROUPS), max_size=3),
        "model_group_alias": st.dictionaries(
            st.sampled_from(["x", "a", "B", "y*"]), st.sampled_from(_GROUPS)
        ),
    },
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model_list=st.lists(_DEPLOYMENT, max_size=12), router_settings=_SETTINGS)
def test_any_litellm_config_converts_to_a_loadable_configuration(
    model_list: list[dict[str, Any]], router_settings: dict[str, Any]
) -> None:
    """Whatever the LiteLLM file holds (wildcard groups and fallbacks of every kind among
    them), the output loads, keeps the engine's rules and builds the gateway's routes."""
    document = {"model_list": model_list, "router_settings": router_settings}
    text = yaml.dump(document, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper))
    result, config = convert_text(text)
    assert "sk-lit" not in result.yaml
    build_runtime(config)


def test_gemini_and_new_preset_prefixes_are_imported() -> None:
    """`gemini/` becomes the gemini kind and the newer vendors' prefixes their presets, each
    with the key variable LiteLLM would read; Vertex and Bedrock become their own
    kinds."""
    result = convert("gemini_and_presets.yaml")
    config = load(result)
    check_engine_rules(config)
    kinds = {(p.kind, p.preset, p.api_key) for p in config.providers}
    assert kinds == {
        ("gemini", None, "value-of-gemini_api_key"),
        ("openai-compatible", "mistral", "value-of-mistral_api_key"),
        ("openai-compatible", "together", "value-of-togetherai_api_key"),
        ("openai-compatible", "fireworks", "value-of-fireworks_key"),
        ("openai-compatible", "openrouter", "value-of-openrouter_api_key"),
        ("openai-compatible", "cerebras", "value-of-cerebras_api_key"),
        ("openai-compatible", "perplexity", "value-of-perplexityai_api_key"),
        ("openai-compatible", "lmstudio", None),
        ("vertex", None, None),
        ("bedrock", None, None),
    }
    flash = route(config, "flash")
    assert [t.model for t in flash.targets] == ["gemini-2.5-flash", "gemini-2.5-flash-lite"]
    assert len({t.provider for t in flash.targets}) == 1
    assert [t.model for t in route(config, "routed").targets] == ["anthropic/claude-sonnet-4.5"]
    assert [t.model for t in route(config, "open-large").targets] == [
        "mistral-large-latest",
        "meta-llama/Llama-3.3-70B-Instruct-Turbo",
        "accounts/fireworks/models/llama-v3p3-70b-instruct",
    ]
    assert not [n for n in result.notes if "deployment skipped" in n]
    document = raw(result)
    gemini = next(p for p in document["providers"] if p["kind"] == "gemini")
    assert gemini["name"] == "gemini"
    assert "base_url" not in gemini


def test_vertex_deployments_become_vertex_providers() -> None:
    """`vertex_ai/…` deployments keep their project, location and credentials (a literal JSON
    behind a variable, a path as a file, a variable as JSON with a note), one provider per
    publisher."""
    result, config = convert_text(
        """
model_list:
  - model_name: pro
    litellm_params:
      model: vertex_ai/gemini-2.5-pro
      vertex_project: proj-a
      vertex_location: europe-west4
      vertex_credentials: /secrets/sa.json
  - model_name: sonnet
    litellm_params:
      model: vertex_ai/claude-sonnet-4-5@20250929
      vertex_project: os.environ/VERTEX_PROJECT
      vertex_location: us-east5
      vertex_credentials: os.environ/VERTEX_SA
  - model_name: opus
    litellm_params:
      model: vertex_ai/claude-opus-4-1
      vertex_credentials: '{"type": "service_account", "private_key": "LITERAL"}'
"""
    )
    assert {p.name: p.kind for p in config.providers}["vertex-claude"] == "vertex"
    document = raw(result)
    vertex = {p["name"]: p for p in document["providers"] if p["kind"] == "vertex"}
    assert vertex["vertex-gemini"] == {
        "name": "vertex-gemini",
        "kind": "vertex",
        "project": "proj-a",
        "location": "europe-west4",
        "credentials_file": "/secrets/sa.json",
        "publisher": "google",
        "model_patterns": ["gemini-2.5-pro"],
    }
    assert vertex["vertex-claude"]["credentials_json"] == "${VERTEX_SA}"
    assert vertex["vertex-claude"]["project"] == "${VERTEX_PROJECT}"
    assert vertex["vertex-claude"]["publisher"] == "anthropic"
    opus = vertex["vertex-claude-2"]
    assert opus["project"] == "${VERTEXAI_PROJECT}"
    assert opus["credentials_json"].startswith("${TURNOUT_IMPORTED_KEY_")
    assert "LITERAL" not in str(document)
    assert any("rename credentials_json to credentials_file" in n for n in result.notes)
    assert not any("vertex_project" in n or "vertex_location" in n for n in result.notes)


def test_bedrock_deployments_are_imported() -> None:
    """`bedrock/…` becomes the bedrock kind with LiteLLM's region, keys (as variables, a
    literal one replaced) and profile; `bedrock/converse/…` sets `api` on its own provider."""
    result, config = convert_text(
        """
model_list:
  - model_name: claude
    litellm_params:
      model: bedrock/us.anthropic.claude-sonnet-4-20250514-v1:0
      aws_region_name: us-west-2
      aws_access_key_id: os.environ/AWS_KEY_ID
      aws_secret_access_key: literal-aws-secret
  - model_name: llama
    litellm_params:
      model: bedrock/converse/meta.llama3-70b-instruct-v1:0
      aws_region_name: eu-central-1
      aws_profile_name: prod
"""
    )
    assert "literal-aws-secret" not in result.yaml
    claude, llama = config.providers
    assert (claude.kind, claude.region, claude.api) == ("bedrock", "us-west-2", None)
    assert claude.access_key_id == "value-of-aws_key_id"
    assert claude.secret_access_key == "value-of-turnout_imported_key_1"
    assert (llama.kind, llama.region, llama.api, llama.profile) == (
        "bedrock",
        "eu-central-1",
        "converse",
        "prod",
    )
    assert [t.model for t in route(config, "llama").targets] == ["meta.llama3-70b-instruct-v1:0"]
    assert [t.model for t in route(config, "claude").targets] == [
        "us.anthropic.claude-sonnet-4-20250514-v1:0"
    ]
    assert not [n for n in result.notes if "aws_" in n and "not carried" in n]
