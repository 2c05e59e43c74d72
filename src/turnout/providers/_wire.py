"""The wire formats an `HttpProvider` speaks: each one's codec, as a `Wire`.

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
from typing import TYPE_CHECKING, Any

from turnout.wire import anthropic_messages, gemini, openai_chat, openai_responses
from turnout.wire.codec import RelayDecoder, StreamDecoder

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from turnout.wire.codec import Codec
    from turnout.wire.model import ChatRequest, ChatResponse, WireFormat

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


@dataclass(frozen=True, slots=True)
class Wire:
    """The codec functions of one wire format, as a provider uses them."""

    format: WireFormat
    encode: Callable[[ChatRequest, str], dict[str, Any]]
    forward: Callable[[bytes, str, bool, Mapping[str, Any] | None], bytes]
    decode: Callable[[bytes], ChatResponse]
    decoder: Callable[[], StreamDecoder]

    @classmethod
    def of(cls, codec: Codec) -> Wire:
        """The upstream side of `codec`, for a format a caller may also speak."""
        encode_request, forward_body = codec.encode_request, codec.forward_body
        if forward_body is None:
            raise TypeError(f"no caller speaks {codec.format}: nothing to forward")

        def encode(request: ChatRequest, model: str) -> dict[str, Any]:
            return encode_request(request, model=model)

        def forward(
            source: bytes, model: str, stream: bool, parsed: Mapping[str, Any] | None
        ) -> bytes:
            return forward_body(source, model=model, stream=stream, parsed=parsed)

        return cls(codec.format, encode, forward, codec.decode_response, codec.stream_decoder)


def _encode_openai_compatible(request: ChatRequest, model: str) -> dict[str, Any]:
    # Most OpenAI-compatible servers know only the older `max_tokens` field.
    return openai_chat.encode_request(request, model=model, max_tokens_field="max_tokens")


OPENAI_CHAT = Wire.of(openai_chat.CODEC)
OPENAI_CHAT_COMPATIBLE = dataclasses.replace(OPENAI_CHAT, encode=_encode_openai_compatible)
ANTHROPIC_MESSAGES = Wire.of(anthropic_messages.CODEC)
OPENAI_RESPONSES = Wire.of(openai_responses.CODEC)
GEMINI_GENERATE = Wire.of(gemini.CODEC)
