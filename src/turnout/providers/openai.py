"""The `openai` provider kind: OpenAI's Chat Completions, Responses and Embeddings APIs (family
openai).

A caller's own Responses request is forwarded to `{base_url}/responses` with only `model`
replaced; a response it created there is read and deleted at `{base_url}/responses/{id}`
(`HttpProvider.stored_response`). Every other request speaks Chat Completions.
"""

from __future__ import annotations

from turnout.providers.base import OPENAI_CHAT, EmbeddingsSupport, KeyedProvider, ResponsesSupport

__all__ = ["OpenAI"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAI(EmbeddingsSupport, ResponsesSupport, KeyedProvider):
    """OpenAI (`kind: openai`).

    `api_key` defaults to the `OPENAI_API_KEY` environment variable (no key: no
    `Authorization` header); `base_url` defaults to `https://api.openai.com/v1`; `name`
    (default `openai`) is the provider id; `credential_mode="passthrough"` sends each call
    with the caller's own credential as `Authorization: Bearer` instead of a key of its own.
    Other options: see `HttpProvider`.
    """

    kind = "openai"
    api_key_env = "OPENAI_API_KEY"
    wire = OPENAI_CHAT
    default_base_url = DEFAULT_BASE_URL
    family = "openai"
    vendor = "openai"

    def chat_url(self, model: str) -> str:
        """`{base_url}/chat/completions`."""
        return f"{self.base_url}/chat/completions"

    def responses_url(self, model: str) -> str:
        """`{base_url}/responses`."""
        return f"{self.base_url}/responses"
