"""Importing a LiteLLM config serves the models LiteLLM served and no others: listed model
groups, wildcard groups where turnout can ask the provider for the same model, and nothing
through implicit family routes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
import yaml

from turnout.config.litellm import convert_litellm
from turnout.config.load import parse_config
from turnout.errors import NoRoute
from turnout.gateway.resolution.lookups import build_runtime

if TYPE_CHECKING:
    from turnout.gateway.runtime.live import Runtime

LITELLM = """
model_list:
  - {model_name: gpt-4o-mini, litellm_params: {model: openai/gpt-4o-mini}}
  - {model_name: claude-haiku, litellm_params: {model: anthropic/claude-3-5-haiku-latest}}
  - {model_name: "anthropic/*", litellm_params: {model: "anthropic/*"}}
  - {model_name: "llama-*", litellm_params: {model: "ollama/llama-*"}}
  - {model_name: "fast-*", litellm_params: {model: groq/llama-3.3-70b}}
"""


def runtime_of(text: str) -> Runtime:
    """The gateway runtime of the configuration imported from LiteLLM `text`."""
    result = convert_litellm(text)
    env = dict.fromkeys(result.variables, "set")
    return build_runtime(parse_config(yaml.safe_load(result.yaml), env=env))


def served(runtime: Runtime, model: str) -> tuple[str, str, str | None]:
    """(route, first target's provider, the wire model it is asked for) for `model`."""
    found = runtime.resolve(model, endpoint="chat")
    target = found.route.targets[0]
    return found.entry.name, target.client.provider, target.model or found.requested_model


def test_a_model_the_litellm_config_does_not_list_has_no_route() -> None:
    """`gpt-4o` is an OpenAI model but not in model_list: 503 NO_ROUTE, as LiteLLM refuses
    it too; no family route exists to send it anywhere."""
    runtime = runtime_of(LITELLM)
    assert not {"openai-family", "anthropic-family"} & set(runtime.routes)
    for model in ("gpt-4o", "o3-mini", "anthropic.claude-v2"):
        with pytest.raises(NoRoute) as caught:
            runtime.resolve(model, endpoint="chat")
        assert (caught.value.status, caught.value.code) == (503, "NO_ROUTE")


def test_listed_models_and_wildcard_groups_still_resolve() -> None:
    """Exact groups win; `anthropic/*` serves bare claude names, `llama-*` passes the name on,
    `fast-*` asks for its fixed model."""
    runtime = runtime_of(LITELLM)
    assert served(runtime, "gpt-4o-mini") == ("gpt-4o-mini", "openai", "gpt-4o-mini")
    assert served(runtime, "claude-haiku") == (
        "claude-haiku",
        "anthropic",
        "claude-3-5-haiku-latest",
    )
    assert served(runtime, "claude-opus-4-1") == ("anthropic-any", "anthropic", "claude-opus-4-1")
    assert served(runtime, "llama-3.1-8b") == ("llama-any", "ollama", "llama-3.1-8b")
    assert served(runtime, "fast-chat") == ("fast-any", "groq", "llama-3.3-70b")


def test_each_provider_declares_the_models_it_serves() -> None:
    """A provider's model_patterns are its deployments' models and wildcard patterns."""
    document = yaml.safe_load(convert_litellm(LITELLM).yaml)
    patterns = {p["name"]: p["model_patterns"] for p in document["providers"]}
    assert patterns == {
        "openai": ["gpt-4o-mini"],
        "anthropic": ["claude-3-5-haiku-latest", "claude-*"],
        "ollama": ["llama-*"],
        "groq": ["llama-3.3-70b"],
    }


def test_the_openai_wildcard_group_serves_bare_openai_names() -> None:
    """`openai/*` serves what LiteLLM takes as OpenAI's bare names, with a note that
    `openai/…` names themselves are not served."""
    result = convert_litellm(
        'model_list:\n  - {model_name: "openai/*", litellm_params: {model: "openai/*"}}\n'
    )
    document = yaml.safe_load(result.yaml)
    assert document["routes"][0]["models"] == [
        "gpt-*",
        "chatgpt-*",
        "text-embedding-*",
        "o1",
        "o1-*",
        "o3",
        "o3-*",
        "o4-*",
    ]
    assert any(
        n.startswith("changed: model_list[0] (serves the bare names LiteLLM takes as openai's")
        and "'openai/…' names are not served" in n
        for n in result.notes
    )


@pytest.mark.parametrize(
    ("model_name", "model", "reason"),
    [
        ("*", "*", "LiteLLM picks each request's provider from its name"),
        ("a*b", "openai/a*b", "'a*b' is not a model pattern"),
        ("team-*", "openai/gpt-*", "wildcard routing that turns 'team-*' into 'openai/gpt-*'"),
        ("groq/*", "groq/*", "wildcard routing that turns 'groq/*' into 'groq/*'"),
    ],
)
def test_wildcards_turnout_cannot_serve_alike_are_skipped(
    model_name: str, model: str, reason: str
) -> None:
    """A wildcard that would need the requested name rewritten is skipped with a note."""
    text = (
        f'model_list:\n  - {{model_name: "{model_name}", litellm_params: {{model: "{model}"}}}}\n'
    )
    result = convert_litellm(text)
    assert yaml.safe_load(result.yaml)["routes"] == []
    assert any(n.startswith(f"not carried: model_list[0] ({reason}") for n in result.notes)


def test_wildcard_patterns_that_clash_are_kept_once() -> None:
    """Two groups serving `claude-*` cannot both: the first keeps it, the second is noted."""
    result = convert_litellm(
        """
model_list:
  - {model_name: "anthropic/*", litellm_params: {model: "anthropic/*"}}
  - {model_name: "claude-*", litellm_params: {model: "anthropic/claude-*", api_key: os.environ/K}}
"""
    )
    routes = yaml.safe_load(result.yaml)["routes"]
    assert [(r["name"], r["models"]) for r in routes] == [
        ("anthropic-any", ["claude-*"]),
        ("claude-any", []),
    ]
    assert (
        "not carried: model_list[1].model_name ('anthropic/*' serves 'claude-*' too: route "
        "'claude-any' is reached by its name only)"
    ) in result.notes


def test_a_listed_model_name_wins_over_a_wildcard_group() -> None:
    """As in LiteLLM, an exact model_name beats a wildcard: `o1` stays its own route's, even
    listed after `openai/*`, whose patterns include `o1`."""
    text = """
model_list:
  - {model_name: "openai/*", litellm_params: {model: "openai/*"}}
  - {model_name: o1, litellm_params: {model: anthropic/claude-sonnet-4-5}}
"""
    runtime = runtime_of(text)
    assert served(runtime, "o1") == ("o1", "anthropic", "claude-sonnet-4-5")
    assert served(runtime, "o1-mini") == ("openai-any", "openai", "o1-mini")
