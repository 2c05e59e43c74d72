"""The `openai-compatible` provider kind: any server speaking OpenAI Chat Completions (family
none), with presets for known vendors.

A preset gives a base URL and the vendor's catalog entry (its quota signals, credit-429 flag,
reset-time parser and embeddings support; `turnout.vendors.catalog`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnout.errors import ConfigError
from turnout.providers.base import OPENAI_CHAT_COMPATIBLE, EmbeddingsSupport
from turnout.vendors.catalog import vendor_entry
from turnout.vendors.presets import KEYLESS_PRESETS, PRESETS, is_loopback

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.providers.base import CredentialMode
    from turnout.providers.transport import HttpTimeouts, Transport

__all__ = ["KEYLESS_PRESETS", "PRESETS", "OpenAICompatible", "is_loopback"]


class OpenAICompatible(EmbeddingsSupport):
    """A server that speaks OpenAI Chat Completions (`kind: openai-compatible`).

    `base_url` is required unless `preset` gives one (presets: deepseek, groq, kimi, zai, xai,
    ollama, vllm); `api_key` is optional (no key: no `Authorization` header, as local servers
    expect); `name` defaults to the preset, else `openai-compatible`. Requests carry
    `max_tokens` (the field such servers know). `embed` works when the preset's vendor serves
    embeddings (or, without a preset, always). `credential_mode="passthrough"` sends each call
    with the caller's own credential as `Authorization: Bearer`. Other options: see
    `HttpProvider`.
    """

    kind = "openai-compatible"

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        preset: str | None = None,
        name: str | None = None,
        model: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeouts: HttpTimeouts | None = None,
        max_connections: int = 100,
        prices: Mapping[str, Any] | None = None,
        model_aliases: Mapping[str, str] | None = None,
        transport: Transport | None = None,
        credential_mode: CredentialMode = "org_key",
    ) -> None:
        if preset is not None and preset not in PRESETS:
            raise ConfigError(f"preset: unknown preset {preset!r}; one of {', '.join(PRESETS)}")
        entry = vendor_entry(preset) if preset is not None else None
        url = base_url or (entry.base_url if entry is not None else None)
        if not url:
            raise ConfigError("base_url: required for an openai-compatible provider without preset")
        self.preset = preset
        self.supports_embeddings = entry.embeddings if entry is not None else True
        super().__init__(
            name=name or preset or "openai-compatible",
            vendor=preset,
            family="none",
            wire=OPENAI_CHAT_COMPATIBLE,
            base_url=url,
            auth_headers={},
            model=model,
            headers=headers,
            timeouts=timeouts,
            max_connections=max_connections,
            prices=prices,
            model_aliases=model_aliases,
            transport=transport,
            api_key=api_key,
            credential_mode=credential_mode,
        )
        self.keyless = api_key is None and (preset in KEYLESS_PRESETS or is_loopback(url))

    def chat_url(self, model: str) -> str:
        """`{base_url}/chat/completions`."""
        return f"{self.base_url}/chat/completions"
