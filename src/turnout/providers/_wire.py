"""The wire formats an `HttpProvider` speaks: each one's codec functions, as a `Wire`.

A provider kind names one of these (`OPENAI_CHAT`, `OPENAI_CHAT_COMPATIBLE`,
`ANTHROPIC_MESSAGES`, `GEMINI_GENERATE`) as its `wire`; a kind that also serves OpenAI's
Responses API natively (`supports_responses`) speaks `OPENAI_RESPONSES` to a caller's own
Responses request.
`turnout.providers.base` uses them to encode, forward and decode, and offers them under the
same names.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from turnout.wire import anthropic_messages, gemini, openai_chat, openai_responses

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from turnout.wire.model import ChatChunk, ChatRequest, ChatResponse, WireFormat
    from turnout.wire.sse import SSEEvent

__all__ = [
    "ANTHROPIC_MESSAGES",
    "GEMINI_GENERATE",
    "OPENAI_CHAT",
    "OPENAI_CHAT_COMPATIBLE",
    "OPENAI_RESPONSES",
    "RelayDecoder",
    "StreamDecoder",
    "Wire",
]


class StreamDecoder(Protocol):
    """What a codec's stream decoder offers (see `turnout.wire.openai_chat.StreamDecoder`)."""

    done: bool
    malformed: int
    finish_reason: str | None

    def feed(self, event: SSEEvent) -> list[ChatChunk]: ...


class RelayDecoder(StreamDecoder, Protocol):
    """A stream decoder that can tell a plain content event without decoding it (`plain`:
    valid, a non-empty text delta and nothing else that anything reads), for a stream whose
    events are forwarded as they are; `model` and `id` are the stream's, as seen so far."""

    model: str | None
    id: str | None

    def plain(self, event: SSEEvent) -> bool: ...


@dataclass(frozen=True, slots=True)
class Wire:
    """The codec functions of one wire format, as a provider uses them."""

    format: WireFormat
    encode: Callable[[ChatRequest, str], dict[str, Any]]
    forward: Callable[[bytes, str, bool, Mapping[str, Any] | None], bytes]
    decode: Callable[[bytes], ChatResponse]
    decoder: Callable[[], StreamDecoder]


def _encode_openai(request: ChatRequest, model: str) -> dict[str, Any]:
    return openai_chat.encode_request(request, model=model)


def _encode_openai_compatible(request: ChatRequest, model: str) -> dict[str, Any]:
    # Most OpenAI-compatible servers know only the older `max_tokens` field.
    return openai_chat.encode_request(request, model=model, max_tokens_field="max_tokens")


def _forward_openai(
    source: bytes, model: str, stream: bool, parsed: Mapping[str, Any] | None
) -> bytes:
    return openai_chat.forward_body(source, model=model, stream=stream, parsed=parsed)


def _encode_anthropic(request: ChatRequest, model: str) -> dict[str, Any]:
    return anthropic_messages.encode_request(request, model=model)


def _forward_anthropic(
    source: bytes, model: str, stream: bool, parsed: Mapping[str, Any] | None
) -> bytes:
    return anthropic_messages.forward_body(source, model=model, stream=stream, parsed=parsed)


def _encode_responses(request: ChatRequest, model: str) -> dict[str, Any]:
    return openai_responses.encode_request(request, model=model)


def _forward_responses(
    source: bytes, model: str, stream: bool, parsed: Mapping[str, Any] | None
) -> bytes:
    return openai_responses.forward_body(source, model=model, stream=stream, parsed=parsed)


OPENAI_CHAT = Wire(
    "openai-chat",
    _encode_openai,
    _forward_openai,
    openai_chat.decode_response,
    openai_chat.StreamDecoder,
)
OPENAI_CHAT_COMPATIBLE = dataclasses.replace(OPENAI_CHAT, encode=_encode_openai_compatible)
ANTHROPIC_MESSAGES = Wire(
    "anthropic-messages",
    _encode_anthropic,
    _forward_anthropic,
    anthropic_messages.decode_response,
    anthropic_messages.StreamDecoder,
)
OPENAI_RESPONSES = Wire(
    "openai-responses",
    _encode_responses,
    _forward_responses,
    openai_responses.decode_response,
    openai_responses.StreamDecoder,
)


def _encode_gemini(request: ChatRequest, model: str) -> dict[str, Any]:
    return gemini.encode_request(request, model=model)


def _forward_gemini(
    source: bytes, model: str, stream: bool, parsed: Mapping[str, Any] | None
) -> bytes:
    del parsed  # a Gemini caller's body is not parsed by the gateway
    return gemini.forward_body(source, model=model, stream=stream)


GEMINI_GENERATE = Wire(
    "gemini-generate",
    _encode_gemini,
    _forward_gemini,
    gemini.decode_response,
    gemini.StreamDecoder,
)
