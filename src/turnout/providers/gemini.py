"""The `gemini` provider kind: Google's native Generative Language API (family gemini).

Rule 1: the key travels only in the `x-goog-api-key` header, never in the URL's query, so no
access log between turnout and Google ever holds it.
Rule 2: the model is part of the path (`/v1beta/models/{model}:generateContent`), escaped
whole, so a model name can never change the method or the path; a `models/` prefix on the
model is accepted and not doubled.
Rule 3: a streamed call goes to `:streamGenerateContent?alt=sse` (server-sent events); a
whole one to `:generateContent`.
Rule 4: embeddings go to `:batchEmbedContents`, one request per input string.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

import orjson

from turnout.errors import ProviderError
from turnout.providers._prepare import UNENCODABLE, unencodable
from turnout.providers.base import GEMINI_GENERATE, KeyedProvider
from turnout.providers.transport import local_error
from turnout.wire import gemini_embeddings

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.wire.model import EmbeddingRequest, EmbeddingResponse

__all__ = ["API_VERSION", "DEFAULT_BASE_URL", "Gemini"]

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
API_VERSION = "v1beta"
"""The API version in every path (the one that carries every Gemini feature turnout uses)."""


class Gemini(KeyedProvider):
    """Google Gemini (`kind: gemini`).

    `api_key` defaults to the `GEMINI_API_KEY` environment variable and is sent as
    `x-goog-api-key`; `base_url` defaults to `https://generativelanguage.googleapis.com`;
    `name` (default `gemini`) is the provider id. With `credential_mode="passthrough"` each call
    carries the caller's own credential in `x-goog-api-key`. Embeddings through
    `batchEmbedContents`. Other options: see `HttpProvider`.
    """

    kind = "gemini"
    api_key_env = "GEMINI_API_KEY"
    wire = GEMINI_GENERATE
    default_base_url = DEFAULT_BASE_URL
    family = "gemini"
    vendor = "gemini"
    supports_embeddings = True

    def credential_headers(self, secret: str, *, bearer: bool = False) -> dict[str, str]:
        """Rule 1: `x-goog-api-key`, however the caller sent its credential."""
        del bearer
        return {"x-goog-api-key": secret}

    def _model_url(self, model: str, method: str) -> str:
        name = quote(model.removeprefix("models/"), safe="")
        return f"{self.base_url}/{API_VERSION}/models/{name}:{method}"

    def chat_url(self, model: str) -> str:
        """`{base_url}/v1beta/models/{model}:generateContent`."""
        return self._model_url(model, "generateContent")

    def stream_url(self, model: str) -> str:
        """`{base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse`."""
        return self._model_url(model, "streamGenerateContent") + "?alt=sse"

    def embeddings_url(self, model: str) -> str:
        """`{base_url}/v1beta/models/{model}:batchEmbedContents`."""
        return self._model_url(model, "batchEmbedContents")

    def _prepare_embed(self, request: EmbeddingRequest) -> tuple[str, bytes, Mapping[str, str]]:
        """The URL, body and headers of an embeddings call (base Rule 5 on a failure)."""
        try:
            model = self.wire_model(request.model)
            try:
                body = orjson.dumps(gemini_embeddings.encode_request(request, model=model))
            except UNENCODABLE as exc:
                raise unencodable(self.name, exc) from exc
            return self.embeddings_url(model), body, self.sent_headers()
        except ProviderError:
            raise
        except Exception as exc:
            raise local_error(exc, provider=self.name) from exc

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        """Embedding vectors for `request.input`, in input order (Rule 4)."""
        url, body, headers = self._prepare_embed(request)
        response = await self._post_answer(url, body, headers, gemini_embeddings.decode_response)
        response.model = self.wire_model(request.model)
        return response
