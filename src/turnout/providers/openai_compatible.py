"""The `openai-compatible` provider kind: any server speaking OpenAI Chat Completions (family
none), with presets for known vendors.

A preset gives a base URL and the vendor's catalog entry (its quota signals, credit-429 flag,
reset-time parser and embeddings support; `turnout.vendors.catalog`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Protocol

from turnout.errors import ConfigError
from turnout.providers.base import OPENAI_CHAT_COMPATIBLE, EmbeddingsSupport
from turnout.providers.settings import ConfigRules, KeyedFields
from turnout.vendors.catalog import vendor_entry
from turnout.vendors.presets import KEYLESS_PRESETS, PRESETS, is_loopback

if TYPE_CHECKING:
    from typing import Self, Unpack

    from turnout.providers.base import HttpProviderKeywords
    from turnout.providers.settings import ProviderBuild
    from turnout.providers.transport import HttpOptions

__all__ = ["KEYLESS_PRESETS", "PRESETS", "CompatibleFields", "OpenAICompatible", "is_loopback"]


class CompatibleFields(KeyedFields, Protocol):
    """What an `openai-compatible` provider reads of its configuration besides its key and
    URL: the `preset` of a known vendor."""

    @property
    def preset(self) -> str | None: ...


class OpenAICompatible(EmbeddingsSupport):
    """A server that speaks OpenAI Chat Completions (`kind: openai-compatible`).

    `base_url` is required unless `preset` gives one (presets: deepseek, groq, kimi, zai, xai,
    ollama, vllm, mistral, together, fireworks, openrouter, gemini-openai, cerebras,
    perplexity, lmstudio); `api_key` is optional: without one, a preset's key is read from
    the vendor's environment variable (`MISTRAL_API_KEY` …, `VendorEntry.key_env`), and with
    none there no `Authorization` header is sent, as local servers expect; `name` defaults to
    the preset, else `openai-compatible`. Requests carry `max_tokens` (the field such servers
    know). `embed` works when the preset's vendor serves
    embeddings (or, without a preset, always). `credential_mode="passthrough"` sends each call
    with the caller's own credential as `Authorization: Bearer`. Other options: see
    `HttpProvider`.
    """

    kind = "openai-compatible"
    config_rules = ConfigRules(options=("preset",), either=("base_url", "preset"))
    wire = OPENAI_CHAT_COMPATIBLE
    family = "none"

    @classmethod
    def from_config(cls, config: CompatibleFields, build: ProviderBuild) -> Self:
        """The provider `config` describes; a missing `api_key` is no key, never the
        environment's."""
        url, key = config.base_url, config.api_key or ""
        return cls(
            url,
            key,
            preset=config.preset,
            name=config.name,
            options=build.options,
            **build.keywords,
        )

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        preset: str | None = None,
        name: str | None = None,
        options: HttpOptions | None = None,
        **keywords: Unpack[HttpProviderKeywords],
    ) -> None:
        if preset is not None and preset not in PRESETS:
            raise ConfigError(f"preset: unknown preset {preset!r}; one of {', '.join(PRESETS)}")
        entry = vendor_entry(preset) if preset is not None else None
        url = base_url or (entry.base_url if entry is not None else None)
        if not url:
            raise ConfigError("base_url: required for an openai-compatible provider without preset")
        if api_key is None and entry is not None and entry.key_env is not None:
            api_key = os.environ.get(entry.key_env)
        self.preset = preset
        self.supports_embeddings = entry.embeddings if entry is not None else True
        super().__init__(
            name=name or preset or "openai-compatible",
            base_url=url,
            vendor=preset,
            api_key=api_key,
            options=options,
            **keywords,
        )
        self.keyless = not api_key and (preset in KEYLESS_PRESETS or is_loopback(url))

    def chat_url(self, model: str) -> str:
        """`{base_url}/chat/completions`."""
        return f"{self.base_url}/chat/completions"
