"""The OpenAI-compatible presets: each vendor's base URL, the environment variable its key is
read from, and whether it serves embeddings."""

from __future__ import annotations

from typing import get_args

import pytest

from turnout.providers import OpenAICompatible
from turnout.schema._base import Preset
from turnout.vendors.catalog import vendor_entry
from turnout.vendors.presets import KEYLESS_PRESETS, PRESETS

EXPECTED = {
    "deepseek": ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", False),
    "groq": ("https://api.groq.com/openai/v1", "GROQ_API_KEY", False),
    "kimi": ("https://api.moonshot.ai/v1", "MOONSHOT_API_KEY", False),
    "zai": ("https://api.z.ai/api/paas/v4", "ZAI_API_KEY", True),
    "xai": ("https://api.x.ai/v1", "XAI_API_KEY", False),
    "ollama": ("http://127.0.0.1:11434/v1", None, True),
    "vllm": ("http://127.0.0.1:8000/v1", None, True),
    "mistral": ("https://api.mistral.ai/v1", "MISTRAL_API_KEY", True),
    "together": ("https://api.together.xyz/v1", "TOGETHER_API_KEY", True),
    "fireworks": ("https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY", True),
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", False),
    "gemini-openai": (
        "https://generativelanguage.googleapis.com/v1beta/openai",
        "GEMINI_API_KEY",
        True,
    ),
    "cerebras": ("https://api.cerebras.ai/v1", "CEREBRAS_API_KEY", False),
    "perplexity": ("https://api.perplexity.ai", "PERPLEXITY_API_KEY", False),
    "lmstudio": ("http://127.0.0.1:1234/v1", None, True),
}


def test_every_preset_is_pinned_here() -> None:
    """The table below covers every preset, so a new one cannot go untested; the config
    file's `preset` values are the same list, in the same order."""
    assert set(EXPECTED) == set(PRESETS)
    assert get_args(Preset) == PRESETS


@pytest.mark.parametrize("preset", sorted(EXPECTED))
def test_preset_base_url_key_variable_and_embeddings(preset: str) -> None:
    """A preset's catalog entry holds the vendor's public base URL, key variable and
    embeddings support, and the provider uses them."""
    base_url, key_env, embeddings = EXPECTED[preset]
    entry = vendor_entry(preset)
    assert (entry.base_url, entry.key_env, entry.embeddings) == (base_url, key_env, embeddings)
    provider = OpenAICompatible(preset=preset, api_key="k")
    assert provider.chat_url("m") == f"{base_url}/chat/completions"
    assert provider.supports_embeddings is embeddings
    assert (key_env is None) is (preset in KEYLESS_PRESETS)


@pytest.mark.parametrize("preset", sorted(p for p, e in EXPECTED.items() if e[1] is not None))
def test_preset_reads_its_key_from_the_environment(
    preset: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without an api_key, the library reads the vendor's variable and sends it as a bearer
    token; an explicit key wins over it."""
    key_env = EXPECTED[preset][1]
    assert key_env is not None
    monkeypatch.setenv(key_env, f"env-{preset}")
    assert OpenAICompatible(preset=preset).sent_headers()["authorization"] == (
        f"Bearer env-{preset}"
    )
    explicit = OpenAICompatible(preset=preset, api_key="given")
    assert explicit.sent_headers()["authorization"] == "Bearer given"
    assert not OpenAICompatible(preset=preset).keyless


def test_lmstudio_needs_no_key() -> None:
    """LM Studio runs locally: keyless, no Authorization header."""
    provider = OpenAICompatible(preset="lmstudio")
    assert provider.keyless
    assert "authorization" not in provider.sent_headers()
