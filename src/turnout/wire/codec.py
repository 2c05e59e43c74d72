"""The contract every wire format's codec meets, and the codecs by format.

A `Codec` is what turnout can do with one wire format: read a caller's request and write one
for an upstream, read an upstream's answer and write one for a caller, forward a caller's own
body to an upstream of the same format, decode an upstream's stream and encode one for a
caller, and write an error as the format's envelope and as an in-stream event. A format that
turnout only ever speaks to upstreams (Bedrock Converse) leaves the caller's side empty.

Each format module registers its codec when imported (`register`); `CODECS` holds them by
format (`turnout.wire.CODECS` once every format is imported). A rule that needs the codec of a
request's own format (`codec_for`) looks it up here rather than importing the format module,
which imports the rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from turnout.wire.model import ChatChunk, ChatRequest, ChatResponse, Usage, WireFormat
    from turnout.wire.sse import SSEEvent

__all__ = [
    "CODECS",
    "Codec",
    "ErrorBody",
    "NumberedEncoder",
    "RelayDecoder",
    "StreamDecoder",
    "StreamEncoder",
    "codec_for",
    "register",
]


class StreamDecoder(Protocol):
    """An upstream stream's events -> neutral chunks; `done` once the format's end is seen,
    `malformed` the events skipped, `finish_reason` the last one seen."""

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


class StreamEncoder(Protocol):
    """Neutral chunks -> the caller's stream bytes."""

    def encode(self, chunk: ChatChunk) -> bytes: ...

    def finish(self, *, finish_reason: str | None = None, usage: Usage | None = None) -> bytes: ...


@runtime_checkable
class NumberedEncoder(Protocol):
    """A stream encoder whose events are numbered: `sequence_number` is the next event's."""

    @property
    def sequence_number(self) -> int: ...


class ErrorBody(Protocol):
    """A format's error envelope: `error_body(status, message, *, code, type, param, meta)`."""

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


class NumberedErrorEvent(Protocol):
    """An in-stream error event of a format whose events are numbered."""

    def __call__(
        self,
        status: int,
        message: str,
        code: str | None = None,
        type: str | None = None,  # noqa: A002 - the envelope's own field name
        *,
        sequence_number: int = 0,
    ) -> bytes: ...


class RequestEncoder(Protocol):
    def __call__(self, request: ChatRequest, *, model: str) -> dict[str, Any]: ...


class ResponseEncoder(Protocol):
    def __call__(
        self, response: ChatResponse, *, model: str, request_id: str | None = None
    ) -> dict[str, Any]: ...


class BodyForwarder(Protocol):
    def __call__(
        self, source: bytes, *, model: str, stream: bool, parsed: Mapping[str, Any] | None = None
    ) -> bytes: ...


@dataclass(frozen=True, slots=True)
class Codec:
    """One wire format's codec.

    - `encode_request(request, model=)`, `decode_response(body)`, `stream_decoder()`: the
      upstream side, which every format has.
    - `decode_request(body)`: a caller's body (bytes or parsed) -> a neutral request, raising
      `InvalidRequest` naming the field.
    - `encode_response(response, model=, request_id=)`: an answer -> the caller's body.
    - `forward_body(source, model=, stream=, parsed=)`: a caller's own body for an upstream of
      the same format.
    - `stream_encoder(model, include_usage)`: an encoder of chunks into the caller's stream
      (a format whose streams always carry usage ignores `include_usage`); `terminator`: the
      bytes that end a successful stream.
    - `error_body`, `error_event(status, message, code, type)`: the error envelope, and the
      in-stream event that replaces the terminator; `numbered_error_event`, for a format
      whose events are numbered.
    - `message_paths(body)`: where each neutral message is in the caller's body, for errors.
    - `id_prefix`: how the format's own response ids begin.
    """

    format: WireFormat
    encode_request: RequestEncoder
    decode_response: Callable[[bytes | Mapping[str, Any]], ChatResponse]
    stream_decoder: Callable[[], StreamDecoder]
    decode_request: Callable[[bytes | Mapping[str, Any]], ChatRequest] | None = None
    encode_response: ResponseEncoder | None = None
    forward_body: BodyForwarder | None = None
    stream_encoder: Callable[[str, bool], StreamEncoder] | None = None
    terminator: bytes = b""
    error_body: ErrorBody | None = None
    error_event: Callable[[int, str, str | None, str | None], bytes] | None = None
    numbered_error_event: NumberedErrorEvent | None = None
    message_paths: Callable[[bytes | Mapping[str, Any]], list[str]] | None = None
    id_prefix: str = ""


_CODECS: dict[WireFormat, Codec] = {}
CODECS: Mapping[WireFormat, Codec] = MappingProxyType(_CODECS)
"""The registered codecs by wire format."""


def register(codec: Codec) -> Codec:
    """Add `codec` to `CODECS` (a format module does, once, as it is imported)."""
    _CODECS[codec.format] = codec
    return codec


def codec_for(format: WireFormat) -> Codec | None:  # noqa: A002 - the wire format it names
    """The codec of `format`, None when no module of that format has been imported."""
    return _CODECS.get(format)
