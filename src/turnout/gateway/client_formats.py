"""The wire formats a caller may speak to the gateway for chat (OpenAI Chat Completions,
Anthropic Messages, OpenAI Responses), as the gateway uses them.

A `ClientFormat` is the caller's side of one `turnout.wire.codec.Codec`, with what only the
HTTP side knows: the endpoint its requests resolve as and the caller's headers a target of the
same format receives.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from turnout.wire import anthropic_messages, openai_chat, openai_responses
from turnout.wire.codec import ErrorBody, NumberedEncoder, StreamEncoder

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from turnout.wire.codec import Codec
    from turnout.wire.model import ChatRequest, ChatResponse, WireFormat

__all__ = [
    "ANTHROPIC",
    "OPENAI",
    "RESPONSES",
    "ClientFormat",
    "ErrorBody",
    "NumberedEncoder",
    "StreamEncoder",
]

ChatEndpoint = Literal["chat", "messages"]
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class ClientFormat:
    """One caller-facing wire format: the caller's side of `codec`.

    - `name`: the wire format (`openai-chat`, `anthropic-messages`); `endpoint`: the endpoint
      name `Runtime.resolve` takes for its chat requests.
    - `decode(body)`: the caller's parsed JSON body -> a neutral request (raises
      `InvalidRequest` naming the field).
    - `encode(response, model)`: an answer from a target of another format -> the caller's body.
    - `encoder(model, include_usage)`: a stream encoder for chunks from another format.
    - `terminator`: the bytes that end a successful stream (`data: [DONE]`, `message_stop`).
    - `error_event(status, message, code, type)`: an in-stream error event that replaces it
      (`type` as for `error_body`).
    - `error_body`: the error envelope in the caller's format (`docs/gateway-api.md`, Errors).
    - `forwarded_headers`: the caller's request headers a same-format target receives.
    - `numbered_error_event(status, message, code, type, sequence_number)`: for a format whose
      stream events are numbered (Responses), the in-stream error event numbered after the
      events sent; None for the others.
    """

    codec: Codec
    endpoint: ChatEndpoint
    forwarded_headers: tuple[str, ...] = ()

    @property
    def name(self) -> WireFormat:
        return self.codec.format

    @property
    def terminator(self) -> bytes:
        return self.codec.terminator

    @property
    def error_body(self) -> ErrorBody:
        return _needed(self.codec.error_body)

    def decode(self, body: Mapping[str, Any]) -> ChatRequest:
        return _needed(self.codec.decode_request)(body)

    def encode(self, response: ChatResponse, model: str) -> dict[str, Any]:
        return _needed(self.codec.encode_response)(
            response, model=model, request_id=self._own_id(response)
        )

    def encoder(self, model: str, include_usage: bool) -> StreamEncoder:
        return _needed(self.codec.stream_encoder)(model, include_usage)

    def error_event(
        self,
        status: int,
        message: str,
        code: str | None,
        type: str | None,  # noqa: A002 - the envelope's own field name
    ) -> bytes:
        return _needed(self.codec.error_event)(status, message, code, type)

    @property
    def numbered_error_event(
        self,
    ) -> Callable[[int, str, str | None, str | None, int], bytes] | None:
        numbered = self.codec.numbered_error_event
        if numbered is None:
            return None

        def event(
            status: int, message: str, code: str | None, kind: str | None, sequence_number: int
        ) -> bytes:
            return numbered(status, message, code, kind, sequence_number=sequence_number)

        return event

    def _own_id(self, response: ChatResponse) -> str:
        """The answer's id when it has the caller format's shape, else a fresh one: an id from
        another format (`msg_…` for an OpenAI caller) would look foreign to the caller's SDK."""
        ident, prefix = response.id, self.codec.id_prefix
        return ident if ident and ident.startswith(prefix) else f"{prefix}{uuid.uuid4().hex}"


def _needed(part: _T | None) -> _T:
    """A part of the codec that every caller-facing format has."""
    if part is None:
        raise TypeError("the codec has no caller's side")
    return part


OPENAI = ClientFormat(openai_chat.CODEC, "chat")
"""OpenAI Chat Completions (`POST /v1/chat/completions`)."""

ANTHROPIC = ClientFormat(
    anthropic_messages.CODEC, "messages", forwarded_headers=("anthropic-version", "anthropic-beta")
)
"""Anthropic Messages (`POST /v1/messages`)."""

RESPONSES = ClientFormat(openai_responses.CODEC, "chat")
"""OpenAI Responses (`POST /v1/responses`): routed like chat, errors in OpenAI's envelope."""
