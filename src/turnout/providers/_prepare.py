"""Preparing an `HttpProvider`'s call: its model, body, headers, credential and URL.

Rule 5 (of `turnout.providers.base`, kept here with its code): whatever fails while a call is
prepared is raised as a `ProviderError` that is never the provider's fault: a request that
cannot be encoded (nested too deeply, say) is `MalformedRequest` (400), anything else
turnout's own `local_error` (500); health never counts either (`transport` Rule 5). A
`ProviderError` raised on the way (no model, no caller's credential) goes out as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from turnout.errors import MalformedRequest, ProviderError
from turnout.providers.transport import local_error
from turnout.wire import openai_embeddings

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.providers._wire import Wire
    from turnout.providers.base import EmbeddingsSupport, HttpProvider
    from turnout.wire.model import ChatRequest, EmbeddingRequest

__all__ = ["UNENCODABLE", "prepare_chat", "prepare_embeddings", "unencodable"]

UNENCODABLE = (RecursionError, orjson.JSONEncodeError)
"""What encoding a request raises when the request itself cannot be encoded (Rule 5);
`orjson.JSONEncodeError` is `TypeError`, so only the encoding step is read this way."""


def unencodable(provider: str, exc: Exception) -> MalformedRequest:
    """Rule 5: the request holds what the JSON encoder refuses (nested too deeply, say)."""
    text = str(exc)
    too_deep = isinstance(exc, RecursionError) or "recursion" in text.lower()
    why = "it is nested too deeply" if too_deep else text
    return MalformedRequest(
        f"the request cannot be encoded for provider {provider!r}: {why}",
        reason="cannot encode",
        provider=provider,
    )


def prepare_chat(
    provider: HttpProvider, request: ChatRequest, *, stream: bool, wire: Wire | None = None
) -> tuple[str, str, bytes, Mapping[str, str]]:
    """The wire model, URL, body and headers of one chat call in `wire` (default the kind's;
    the Responses wire goes to `responses_url`) (Rule 5 on a failure)."""
    try:
        model = provider.wire_model(request.model)
        wire = wire or provider.wire
        try:
            body = provider.body_for(request, model, stream=stream, wire=wire)
        except UNENCODABLE as exc:
            raise unencodable(provider.name, exc) from exc
        headers = provider.call_headers(request)
        if stream:
            headers = {**headers, "accept": "text/event-stream"}
        responses = wire.format == "openai-responses" and wire is not provider.wire
        if responses:
            url = provider.responses_url(model)
        else:
            url = provider.stream_url(model) if stream else provider.chat_url(model)
    except ProviderError:
        raise
    except Exception as exc:
        raise local_error(exc, provider=provider.name) from exc
    return model, url, body, headers


def _embeddings_body(request: EmbeddingRequest, model: str) -> bytes:
    source = request.source
    if source is not None and source.format == "openai-embeddings":
        return openai_embeddings.forward_body(source.body, model=model)
    return orjson.dumps(openai_embeddings.encode_request(request, model=model))


def prepare_embeddings(
    provider: EmbeddingsSupport, request: EmbeddingRequest
) -> tuple[str, str, bytes, Mapping[str, str]]:
    """The wire model, URL, body and headers of one embeddings call (Rule 5 on a failure)."""
    try:
        model = provider.wire_model(request.model)
        try:
            body = _embeddings_body(request, model)
        except UNENCODABLE as exc:
            raise unencodable(provider.name, exc) from exc
        headers = provider.sent_headers()
        return model, provider.embeddings_url(model), body, headers
    except ProviderError:
        raise
    except Exception as exc:
        raise local_error(exc, provider=provider.name) from exc
