"""The `openai` provider kind: OpenAI's Chat Completions and Embeddings APIs (family openai)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from turnout.providers.base import OPENAI_CHAT, EmbeddingsSupport

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.providers.base import CredentialMode
    from turnout.providers.transport import HttpTimeouts, Transport

__all__ = ["OpenAI"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAI(EmbeddingsSupport):
    """OpenAI (`kind: openai`).

    `api_key` defaults to the `OPENAI_API_KEY` environment variable (no key: no
    `Authorization` header); `base_url` defaults to `https://api.openai.com/v1`; `name`
    (default `openai`) is the provider id; `credential_mode="passthrough"` sends each call
    with the caller's own credential as `Authorization: Bearer` instead of a key of its own.
    Other options: see `HttpProvider`.
    """

    kind = "openai"

    def __init__(
        self,
        api_key: str | None = None,
        *,
        base_url: str = DEFAULT_BASE_URL,
        name: str = "openai",
        model: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeouts: HttpTimeouts | None = None,
        max_connections: int = 100,
        prices: Mapping[str, Any] | None = None,
        model_aliases: Mapping[str, str] | None = None,
        transport: Transport | None = None,
        credential_mode: CredentialMode = "org_key",
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        super().__init__(
            name=name,
            vendor="openai",
            family="openai",
            wire=OPENAI_CHAT,
            base_url=base_url,
            auth_headers={},
            model=model,
            headers=headers,
            timeouts=timeouts,
            max_connections=max_connections,
            prices=prices,
            model_aliases=model_aliases,
            transport=transport,
            api_key=key or None,
            credential_mode=credential_mode,
        )

    def chat_url(self, model: str) -> str:
        """`{base_url}/chat/completions`."""
        return f"{self.base_url}/chat/completions"
