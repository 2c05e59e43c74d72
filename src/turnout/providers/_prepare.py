"""Preparing an `HttpProvider`'s call: its model, body, headers, credential and URL.

Rule 5 (of `turnout.providers.base`, kept here with its code): whatever fails while a call is
prepared is raised as a `ProviderError` that is never the provider's fault: a request that
cannot be encoded (nested too deeply, say) is `MalformedRequest` (400), anything else
turnout's own `local_error` (500); health never counts either (`transport` Rule 5). A
`ProviderError` raised on the way (no model, no caller's credential) goes out as it is.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import orjson

from turnout.errors import MalformedRequest, ProviderError
from turnout.providers.transport import local_error
from turnout.wire import openai_embeddings

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.providers._wire import Wire
    from turnout.providers.base import EmbeddingsSupport, HttpProvider
    from turnout.providers.transport import HttpOptions
    from turnout.wire.model import ChatRequest, EmbeddingRequest, WireFormat

__all__ = [
    "UNENCODABLE",
    "chat_body",
    "common_headers",
    "forwarded_headers",
    "prepare_chat",
    "prepare_embeddings",
    "unencodable",
]

_FORWARDED_HEADERS = frozenset({"anthropic-version", "anthropic-beta"})
_USER_AGENT = "turnout"

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


def common_headers(
    options: HttpOptions, auth_headers: Mapping[str, str], own_key: Mapping[str, str]
) -> dict[str, str]:
    """The headers every call of a provider sends: JSON both ways, turnout's user agent, the
    extra `options.headers` (names lower-cased), the kind's `auth_headers`, and the header of
    its own key (`own_key`, empty without one)."""
    return {
        "content-type": "application/json",
        "accept": "application/json",
        "user-agent": _USER_AGENT,
        **{k.lower(): v for k, v in options.headers.items()},
        **auth_headers,
        **own_key,
    }


def chat_body(wire: Wire, request: ChatRequest, model: str, *, stream: bool) -> bytes:
    """Rule 1: the caller's own bytes, with `model` put in, when they are in `wire`'s format,
    else the request encoded in it."""
    source = request.source
    if source is not None and source.format == wire.format:
        return wire.forward(source.body, model, stream, source.parsed)
    if request.stream != stream:
        request = dataclasses.replace(request, stream=stream)
    return orjson.dumps(wire.encode(request, model))


def forwarded_headers(
    headers: Mapping[str, str], request: ChatRequest, wire_format: WireFormat
) -> Mapping[str, str]:
    """`headers`, with a caller's own `anthropic-version` and `anthropic-beta` when both the
    caller's request and the call (`wire_format`) are Anthropic Messages."""
    source = request.source
    if source is None or not source.headers or source.format != "anthropic-messages":
        return headers
    if wire_format != "anthropic-messages":
        return headers
    kept = {k.lower(): v for k, v in source.headers if k.lower() in _FORWARDED_HEADERS}
    return {**headers, **kept} if kept else headers


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
