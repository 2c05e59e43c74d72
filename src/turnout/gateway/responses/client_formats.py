"""The wire formats a caller may speak to the gateway for chat (OpenAI Chat Completions,
Anthropic Messages, OpenAI Responses), as the gateway uses them.

A `ClientFormat` bundles what the HTTP side needs of one codec: decoding the caller's body,
encoding an answer or a stream for the caller when the target spoke another format, the
stream's terminator and in-stream error event, and the error envelope.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from turnout.wire import anthropic_messages, openai_chat, openai_responses

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from turnout.wire.model import ChatChunk, ChatRequest, ChatResponse, Usage, WireFormat

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


class StreamEncoder(Protocol):
    """What the codecs' stream encoders offer (neutral chunks -> the caller's SSE bytes)."""

    def encode(self, chunk: ChatChunk) -> bytes: ...

    def finish(self, *, finish_reason: str | None = None, usage: Usage | None = None) -> bytes: ...


@runtime_checkable
class NumberedEncoder(Protocol):
    """A stream encoder whose events are numbered: `sequence_number` is the next event's."""

    @property
    def sequence_number(self) -> int: ...


class ErrorBody(Protocol):
    """A codec's `error_body(status, message, *, code, type, param, meta)`."""

    def __call__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        type: str | None = None,  # noqa: A002 - the envelope's own field name
        param: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class ClientFormat:
    """One caller-facing wire format.

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

    name: WireFormat
    endpoint: ChatEndpoint
    decode: Callable[[Mapping[str, Any]], ChatRequest]
    encode: Callable[[ChatResponse, str], dict[str, Any]]
    encoder: Callable[[str, bool], StreamEncoder]
    terminator: bytes
    error_event: Callable[[int, str, str | None, str | None], bytes]
    error_body: ErrorBody
    forwarded_headers: tuple[str, ...] = ()
    numbered_error_event: Callable[[int, str, str | None, str | None, int], bytes] | None = None


def _own_id(response: ChatResponse, prefix: str) -> str:
    """The answer's id when it has the caller format's shape, else a fresh one: an id from
    another format (`msg_…` for an OpenAI caller) would look foreign to the caller's SDK."""
    ident = response.id
    return ident if ident and ident.startswith(prefix) else f"{prefix}{uuid.uuid4().hex}"


def _openai_encode(response: ChatResponse, model: str) -> dict[str, Any]:
    return openai_chat.encode_response(
        response, model=model, request_id=_own_id(response, "chatcmpl-")
    )


def _openai_encoder(model: str, include_usage: bool) -> StreamEncoder:
    return openai_chat.StreamEncoder(model=model, include_usage=include_usage)


def _openai_error_event(status: int, message: str, code: str | None, kind: str | None) -> bytes:
    return openai_chat.error_event(status, message, code, kind)


def _anthropic_encode(response: ChatResponse, model: str) -> dict[str, Any]:
    return anthropic_messages.encode_response(
        response, model=model, request_id=_own_id(response, "msg_")
    )


def _anthropic_encoder(model: str, include_usage: bool) -> StreamEncoder:
    # Anthropic streams always report usage (message_start and message_delta).
    return anthropic_messages.StreamEncoder(model=model)


def _anthropic_error_event(status: int, message: str, code: str | None, kind: str | None) -> bytes:
    return anthropic_messages.error_event(status, message, code, kind)


OPENAI = ClientFormat(
    name="openai-chat",
    endpoint="chat",
    decode=openai_chat.decode_request,
    encode=_openai_encode,
    encoder=_openai_encoder,
    terminator=openai_chat.DONE,
    error_event=_openai_error_event,
    error_body=openai_chat.error_body,
)
"""OpenAI Chat Completions (`POST /v1/chat/completions`)."""

ANTHROPIC = ClientFormat(
    name="anthropic-messages",
    endpoint="messages",
    decode=anthropic_messages.decode_request,
    encode=_anthropic_encode,
    encoder=_anthropic_encoder,
    terminator=anthropic_messages.MESSAGE_STOP,
    error_event=_anthropic_error_event,
    error_body=anthropic_messages.error_body,
    forwarded_headers=("anthropic-version", "anthropic-beta"),
)
"""Anthropic Messages (`POST /v1/messages`)."""


def _responses_encode(response: ChatResponse, model: str) -> dict[str, Any]:
    return openai_responses.encode_response(
        response, model=model, request_id=_own_id(response, "resp_")
    )


def _responses_encoder(model: str, include_usage: bool) -> StreamEncoder:
    # A Responses stream always ends with its usage (in `response.completed`).
    return openai_responses.StreamEncoder(model=model)


def _responses_error_event(status: int, message: str, code: str | None, kind: str | None) -> bytes:
    return openai_responses.error_event(status, message, code, kind)


def _responses_numbered_error(
    status: int, message: str, code: str | None, kind: str | None, sequence_number: int
) -> bytes:
    return openai_responses.error_event(
        status, message, code, kind, sequence_number=sequence_number
    )


RESPONSES = ClientFormat(
    name="openai-responses",
    endpoint="chat",
    decode=openai_responses.decode_request,
    encode=_responses_encode,
    encoder=_responses_encoder,
    terminator=b"",
    error_event=_responses_error_event,
    error_body=openai_chat.error_body,
    numbered_error_event=_responses_numbered_error,
)
"""OpenAI Responses (`POST /v1/responses`): routed like chat, errors in OpenAI's envelope."""
