"""The `openai` provider kind: OpenAI's Chat Completions and Embeddings APIs (family openai)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from turnout.providers.base import OPENAI_CHAT, EmbeddingsSupport

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.providers.transport import Timeouts, Transport

__all__ = ["OpenAI"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAI(EmbeddingsSupport):
    """OpenAI (`kind: openai`).

    `api_key` defaults to the `OPENAI_API_KEY` environment variable (no key: no
    `Authorization` header); `base_url` defaults to `https://api.openai.com/v1`; `name`
    (default `openai`) is the provider id. Other options: see `HttpProvider`.
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
        timeouts: Timeouts | None = None,
        max_connections: int = 100,
        prices: Mapping[str, Any] | None = None,
        model_aliases: Mapping[str, str] | None = None,
        transport: Transport | None = None,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        super().__init__(
            name=name,
            vendor="openai",
            family="openai",
            wire=OPENAI_CHAT,
            base_url=base_url,
            auth_headers={"authorization": f"Bearer {key}"} if key else {},
            model=model,
            headers=headers,
            timeouts=timeouts,
            max_connections=max_connections,
            prices=prices,
            model_aliases=model_aliases,
            transport=transport,
        )

    def chat_url(self, model: str) -> str:
        """`{base_url}/chat/completions`."""
        return f"{self.base_url}/chat/completions"
