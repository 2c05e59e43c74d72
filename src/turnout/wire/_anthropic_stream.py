"""Anthropic Messages streams: upstream SSE -> neutral chunks, and neutral chunks -> SSE.

Invariants of `StreamDecoder`:
  Rule 1: every well-formed event except `ping` and `message_stop` yields exactly one chunk
          whose `raw` is the event's bytes (so a same-format stream can be forwarded whole);
          `message_start`, `content_block_start`/`_stop` and unknown events carry no content.
  Rule 2: a tool call's `id` and `name` go out with its first `input_json_delta` (or, for a
          call without input deltas, at its `content_block_stop`), so `content_block_start`
          never commits a stream (only content does); tool calls are numbered 0, 1, … in the
          order their blocks start, whatever the block indexes.
  Rule 3: a malformed event yields nothing, bumps `malformed` and never raises; an `error`
          event raises `ProviderUnavailable` (error class `provider_error`).
  Rule 4: `usage` is `message_start`'s usage updated by each `message_delta.usage` (both
          chunks carry it); `done` is set by `message_stop` only.
  Rule 5: `plain(event)` is true only for a well-formed `content_block_delta` of non-empty
          text or thinking: an event that `feed` would turn into a chunk with only that delta,
          changing nothing it keeps. Such an event may be forwarded undecoded. Before
          `message_start` named the model, none is plain.

Invariants of `StreamEncoder`:
  Rule 1: `message_start` is written before anything else, once.
  Rule 2: at most one content block is open; a delta of another kind (or another tool call)
          stops it and starts the next block, numbered in order.
  Rule 3: `finish()` stops the open block, then writes `message_delta` (stop reason, usage)
          and `message_stop`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from turnout.wire._anthropic_response import (
    FORMAT,
    decode_stop,
    decode_usage,
    encode_stop,
    encode_usage,
    error_body,
)
from turnout.wire._body import OBJECT
from turnout.wire._events import JsonEventDecoder, Malformed, stream_error
from turnout.wire.model import ChatChunk, ToolCallDelta, Usage

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from turnout.errors import ProviderUnavailable
    from turnout.wire.sse import SSEEvent

__all__ = ["MESSAGE_STOP", "StreamDecoder", "StreamEncoder", "error_event"]

MESSAGE_STOP = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
"""The terminator of an Anthropic stream."""


@dataclass(slots=True)
class _Block:
    kind: str
    tool: int = -1
    id: str | None = None
    name: str | None = None
    announced: bool = False


def _index(obj: Mapping[str, Any]) -> int:
    index = obj.get("index")
    if not isinstance(index, int):
        raise Malformed
    return index


def _object(value: object) -> Mapping[str, Any]:
    if not isinstance(value, OBJECT):
        raise Malformed
    return value


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


class StreamDecoder(JsonEventDecoder):
    """Upstream Messages stream events -> neutral chunks (see the module's rules).

    Attributes: `done` (`message_stop` seen), `malformed` (events skipped), `finish_reason`
    and `usage` (so far), `model` and `id` (from `message_start`).
    """

    __slots__ = ("_blocks", "_tools")

    def __init__(self) -> None:
        super().__init__()
        self._blocks: dict[int, _Block] = {}
        self._tools = 0

    def _error(self, event: SSEEvent, obj: dict[str, Any]) -> ProviderUnavailable | None:
        if obj.get("type", event.event) == "error":
            return _stream_error(obj.get("error"))
        return None

    def _read(self, event: SSEEvent, obj: dict[str, Any]) -> list[ChatChunk]:
        kind = obj.get("type", event.event)
        if kind == "ping":
            return []
        if kind == "message_stop":
            self.done = True
            return []
        chunk = ChatChunk(raw=event.raw, raw_format=FORMAT)
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is not None:
            handler(self, obj, chunk)
        return [chunk]

    def plain(self, event: SSEEvent) -> bool:
        """Rule 5: whether `event` is a plain text or thinking delta (`feed` need not see it)."""
        if event.event not in (None, "content_block_delta") or self.model is None:
            return False
        try:
            obj = orjson.loads(event.data)
        except orjson.JSONDecodeError:
            return False
        if type(obj) is not dict or obj.get("type", event.event) != "content_block_delta":
            return False
        delta = obj.get("delta")
        if type(delta) is not dict or type(obj.get("index")) is not int:
            return False
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
        elif kind == "thinking_delta":
            text = delta.get("thinking")
        else:
            return False
        return type(text) is str and text != ""

    def _message_start(self, obj: Mapping[str, Any], chunk: ChatChunk) -> None:
        message = _object(obj.get("message"))
        model, ident = message.get("model"), message.get("id")
        chunk.model = self.model = model if isinstance(model, str) else None
        chunk.id = self.id = ident if isinstance(ident, str) else None
        chunk.usage = self.usage = decode_usage(message.get("usage"), self.usage)

    def _block_start(self, obj: Mapping[str, Any], chunk: ChatChunk) -> None:
        index = _index(obj)
        block = _object(obj.get("content_block"))
        kind = block.get("type")
        if kind == "tool_use":
            ident, name = block.get("id"), block.get("name")
            self._blocks[index] = _Block(
                "tool",
                tool=self._tools,
                id=ident if isinstance(ident, str) else None,
                name=name if isinstance(name, str) else None,
            )
            self._tools += 1
            return
        self._blocks[index] = _Block(kind if isinstance(kind, str) else "unknown")
        if kind == "text":
            chunk.delta = _text(block.get("text"))
        elif kind == "thinking":
            chunk.thinking = _text(block.get("thinking"))

    def _block_delta(self, obj: Mapping[str, Any], chunk: ChatChunk) -> None:
        index = _index(obj)
        delta = _object(obj.get("delta"))
        kind = delta.get("type")
        if kind == "text_delta":
            chunk.delta = _text(delta.get("text"))
        elif kind == "thinking_delta":
            chunk.thinking = _text(delta.get("thinking"))
        elif kind == "signature_delta":
            chunk.thinking_signature = _text(delta.get("signature")) or None
        elif kind == "input_json_delta":
            block = self._blocks.get(index)
            if block is None:
                raise Malformed
            if block.kind == "tool":
                chunk.tool_calls = [self._tool_delta(block, _text(delta.get("partial_json")))]

    def _block_stop(self, obj: Mapping[str, Any], chunk: ChatChunk) -> None:
        block = self._blocks.get(_index(obj))
        if block is not None and block.kind == "tool" and not block.announced:
            chunk.tool_calls = [self._tool_delta(block, "")]

    def _message_delta(self, obj: Mapping[str, Any], chunk: ChatChunk) -> None:
        delta = _object(obj.get("delta"))
        finish = decode_stop(delta.get("stop_reason"))
        if finish is not None:
            chunk.finish_reason = self.finish_reason = finish
        if obj.get("usage") is not None:
            chunk.usage = self.usage = decode_usage(_object(obj.get("usage")), self.usage)

    @staticmethod
    def _tool_delta(block: _Block, arguments: str) -> ToolCallDelta:
        if block.announced:
            return ToolCallDelta(index=block.tool, arguments=arguments)
        block.announced = True
        return ToolCallDelta(index=block.tool, id=block.id, name=block.name, arguments=arguments)


_HANDLERS: dict[str, Callable[[StreamDecoder, Mapping[str, Any], ChatChunk], None]] = {
    "message_start": StreamDecoder._message_start,
    "content_block_start": StreamDecoder._block_start,
    "content_block_delta": StreamDecoder._block_delta,
    "content_block_stop": StreamDecoder._block_stop,
    "message_delta": StreamDecoder._message_delta,
}


def _stream_error(error: object) -> ProviderUnavailable:
    return stream_error(error if isinstance(error, OBJECT) else {}, "type")


def _event(name: str, body: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(body) + b"\n\n"


class StreamEncoder:
    """Neutral chunks -> Messages stream events for an Anthropic caller (see the rules).

    `model` is named in `message_start`; `request_id` is the message id (default: a fresh
    `msg_…`). Unsigned thinking is sent as a thinking block all the same (it is the answer's
    reasoning; only requests must carry signatures).
    """

    __slots__ = (
        "_finish",
        "_id",
        "_model",
        "_next",
        "_open",
        "_open_key",
        "_started",
        "_tool_blocks",
        "_usage",
    )

    def __init__(self, *, model: str, request_id: str | None = None) -> None:
        self._model = model
        self._id = request_id or f"msg_{uuid.uuid4().hex}"
        self._started = False
        self._next = 0
        self._open: int | None = None
        self._open_key: object = None
        self._finish: str | None = None
        self._usage: Usage | None = None
        self._tool_blocks: dict[int, int] = {}

    def encode(self, chunk: ChatChunk) -> bytes:
        """The SSE bytes for one neutral chunk (may be empty)."""
        out = self._start(chunk)
        if chunk.finish_reason is not None:
            self._finish = chunk.finish_reason
        if chunk.usage is not None:
            self._usage = chunk.usage
        if chunk.thinking:
            out += self._delta(
                ("thinking",),
                {"type": "thinking", "thinking": "", "signature": ""},
                {"type": "thinking_delta", "thinking": chunk.thinking},
            )
        if chunk.thinking_signature:
            out += self._delta(
                ("thinking",),
                {"type": "thinking", "thinking": "", "signature": ""},
                {"type": "signature_delta", "signature": chunk.thinking_signature},
            )
        if chunk.delta:
            out += self._delta(
                ("text",), {"type": "text", "text": ""}, {"type": "text_delta", "text": chunk.delta}
            )
        for call in chunk.tool_calls:
            block = self._tool_blocks.get(call.index)
            if block is not None and self._open_key != ("tool", call.index):
                body = {
                    "type": "content_block_delta",
                    "index": block,
                    "delta": {"type": "input_json_delta", "partial_json": call.arguments},
                }
                out += _event("content_block_delta", body)
                continue
            start = {
                "type": "tool_use",
                "id": call.id or f"toolu_{uuid.uuid4().hex[:24]}",
                "name": call.name or "",
                "input": {},
            }
            delta = {"type": "input_json_delta", "partial_json": call.arguments}
            out += self._delta(("tool", call.index), start, delta)
            self._tool_blocks.setdefault(call.index, self._open or 0)
        return out

    def finish(self, *, finish_reason: str | None = None, usage: Usage | None = None) -> bytes:
        """The end of the stream: stop the open block, `message_delta`, `message_stop`.

        `finish_reason` and `usage` default to the last ones the chunks carried.
        """
        out = self._start(None) + self._stop()
        usage = usage or self._usage
        body = {
            "type": "message_delta",
            "delta": {
                "stop_reason": encode_stop(finish_reason or self._finish),
                "stop_sequence": None,
            },
            "usage": encode_usage(usage),
        }
        return out + _event("message_delta", body) + MESSAGE_STOP

    def _start(self, chunk: ChatChunk | None) -> bytes:
        if self._started:
            return b""
        self._started = True
        usage = encode_usage(chunk.usage if chunk is not None else None)
        message: dict[str, Any] = {
            "id": self._id,
            "type": "message",
            "role": "assistant",
            "model": self._model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        return _event("message_start", {"type": "message_start", "message": message})

    def _delta(self, key: object, start: dict[str, Any], delta: dict[str, Any]) -> bytes:
        out = b""
        if self._open_key != key or self._open is None:
            out += self._stop()
            self._open, self._open_key = self._next, key
            self._next += 1
            out += _event(
                "content_block_start",
                {"type": "content_block_start", "index": self._open, "content_block": start},
            )
        body = {"type": "content_block_delta", "index": self._open, "delta": delta}
        return out + _event("content_block_delta", body)

    def _stop(self) -> bytes:
        if self._open is None:
            return b""
        index, self._open, self._open_key = self._open, None, None
        return _event("content_block_stop", {"type": "content_block_stop", "index": index})


def error_event(
    status: int,
    message: str,
    code: str | None = None,
    type: str | None = None,  # noqa: A002 - the envelope's own field name
) -> bytes:
    """An in-stream error in Anthropic's shape: `event: error` with the error envelope
    (e.g. code `stream_broken`). It replaces `message_stop`."""
    return _event("error", error_body(status, message, code=code, type=type))
