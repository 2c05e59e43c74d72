"""OpenAI Responses streams: upstream SSE -> neutral chunks, and neutral chunks -> SSE.

A Responses stream is a sequence of named events, each numbered by `sequence_number` from 0:
`response.created`, `response.in_progress`, then per output item `response.output_item.added`,
its content (`response.content_part.added`, `response.output_text.delta` … `….done`;
`response.function_call_arguments.delta` … `….done`; `response.reasoning_summary_part.added`,
`response.reasoning_summary_text.delta` … `….done`) and `response.output_item.done`, and last
`response.completed` (or `response.incomplete`). A failure is `response.failed` or `error`. There
is no terminator after the last event.

Invariants of `StreamDecoder`:
  Rule 1: every well-formed event yields exactly one chunk, whose `raw` is the event's bytes (so
          a same-format stream is forwarded whole); only text, reasoning and argument deltas
          carry content.
  Rule 2: a function call's `call_id` and `name` go out with its first argument delta (or, for a
          call without one, at its `response.output_item.done`), so opening an item never
          commits a stream; calls are numbered 0, 1, … in the order their items are added.
  Rule 3: a malformed event yields nothing, bumps `malformed` and never raises; `error` and
          `response.failed` raise `ProviderUnavailable`.
  Rule 4: `response.completed` and `response.incomplete` set `finish_reason`, `usage` and
          `done`.

Invariants of `StreamEncoder`:
  Rule 1: `response.created` and `response.in_progress` come first, once; `sequence_number`
          counts every event written, from 0, error events included.
  Rule 2: at most one output item is open; a delta of another kind (or another tool call)
          closes it (its `….done` events and `response.output_item.done`) and adds the next.
  Rule 3: `finish()` closes the open item and writes `response.completed` (or
          `response.incomplete`) with the whole response: its output items and usage.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from turnout.wire._body import OBJECT
from turnout.wire._events import JsonEventDecoder, Malformed, stream_error
from turnout.wire._openai_response import error_body
from turnout.wire._responses_response import (
    FORMAT,
    decode_status,
    decode_usage,
    encode_status,
    encode_usage,
    function_call_item,
    message_item,
    new_id,
    output_text_part,
    reasoning_item,
    response_object,
)
from turnout.wire.model import ChatChunk, ToolCall, ToolCallDelta
from turnout.wire.sse import encode_event

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.errors import ProviderUnavailable
    from turnout.wire.model import Usage
    from turnout.wire.sse import SSEEvent

__all__ = ["StreamDecoder", "StreamEncoder", "error_event"]


@dataclass(slots=True)
class _Call:
    index: int
    call_id: str | None
    name: str | None
    announced: bool = False


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _object(value: object) -> Mapping[str, Any]:
    if not isinstance(value, OBJECT):
        raise Malformed
    return value


class StreamDecoder(JsonEventDecoder):
    """Upstream Responses stream events -> neutral chunks (see the module's rules).

    Attributes: `done` (`response.completed` or `response.incomplete` seen), `malformed`
    (events skipped), `finish_reason` and `usage`, `model` and `id` (from `response.created`).
    """

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        super().__init__()
        self._calls: dict[str, _Call] = {}

    def _error(self, event: SSEEvent, obj: dict[str, Any]) -> ProviderUnavailable | None:
        return _stream_error(obj) if obj.get("type", event.event) == "error" else None

    def _read(self, event: SSEEvent, obj: dict[str, Any]) -> list[ChatChunk]:
        chunk = ChatChunk(raw=event.raw, raw_format=FORMAT)
        self._item(obj.get("type", event.event), obj, chunk)
        return [chunk]

    def _item(self, kind: object, obj: Mapping[str, Any], chunk: ChatChunk) -> None:
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            chunk.delta = _str(obj.get("delta"))
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            chunk.thinking = _str(obj.get("delta"))
        elif kind == "response.function_call_arguments.delta":
            call = self._calls.get(_str(obj.get("item_id")))
            if call is None:
                raise Malformed
            chunk.tool_calls = [self._delta(call, _str(obj.get("delta")))]
        elif kind == "response.output_item.added":
            self._added(_object(obj.get("item")))
        elif kind == "response.output_item.done":
            item = _object(obj.get("item"))
            call = self._calls.get(_str(item.get("id")))
            if call is not None and not call.announced:
                chunk.tool_calls = [self._delta(call, _str(item.get("arguments")))]
        elif kind in ("response.created", "response.in_progress"):
            response = _object(obj.get("response"))
            model, ident = response.get("model"), response.get("id")
            chunk.model = self.model = model if isinstance(model, str) else self.model
            chunk.id = self.id = ident if isinstance(ident, str) else self.id
        elif kind in ("response.completed", "response.incomplete"):
            self._finished(_object(obj.get("response")), chunk)
        elif kind == "response.failed":
            response = _object(obj.get("response"))
            raise _stream_error(response.get("error"))

    def _added(self, item: Mapping[str, Any]) -> None:
        if item.get("type") != "function_call":
            return
        ident = item.get("id") or item.get("call_id")
        if not isinstance(ident, str):
            raise Malformed
        call_id, name = item.get("call_id"), item.get("name")
        self._calls[ident] = _Call(
            len(self._calls),
            call_id if isinstance(call_id, str) else None,
            name if isinstance(name, str) else None,
        )

    def _finished(self, response: Mapping[str, Any], chunk: ChatChunk) -> None:
        status = response.get("status")
        finish = decode_status(status, response.get("incomplete_details"), has_calls=False)
        if finish == "stop" and self._calls:
            finish = "tool_calls"
        chunk.finish_reason = self.finish_reason = finish or "stop"
        usage = decode_usage(response.get("usage"))
        if usage is not None:
            chunk.usage = self.usage = usage
        self.done = True

    @staticmethod
    def _delta(call: _Call, arguments: str) -> ToolCallDelta:
        if call.announced:
            return ToolCallDelta(index=call.index, arguments=arguments)
        call.announced = True
        return ToolCallDelta(call.index, id=call.call_id, name=call.name, arguments=arguments)


def _stream_error(error: object) -> ProviderUnavailable:
    return stream_error(
        error if isinstance(error, OBJECT) else {"message": str(error)}, "code", "type"
    )


@dataclass(slots=True)
class _Item:
    """The open output item: `kind` is `message`, `reasoning` or `function_call`."""

    kind: str
    id: str
    index: int
    text: list[str] = field(default_factory=list)
    call: ToolCall | None = None
    tool: int = -1


class StreamEncoder:
    """Neutral chunks -> Responses SSE bytes for a Responses caller (see the module's rules).

    `model` is the model named in the response; `request_id` the response's `id` (default: a
    fresh `resp_…`); `created` the Unix time (default: now).
    """

    __slots__ = ("_created", "_id", "_item", "_model", "_output", "_seq", "_started", "_usage")

    def __init__(self, *, model: str, request_id: str | None = None, created: int | None = None):
        self._model = model
        self._id = request_id or new_id("resp_")
        self._created = int(time.time()) if created is None else created
        self._seq = 0
        self._started = False
        self._item: _Item | None = None
        self._output: list[dict[str, Any]] = []
        self._usage: Usage | None = None

    @property
    def sequence_number(self) -> int:
        """The number the next event gets."""
        return self._seq

    def encode(self, chunk: ChatChunk) -> bytes:
        """The SSE bytes for one neutral chunk (empty when it has nothing to say)."""
        if chunk.usage is not None:
            self._usage = chunk.usage
        out = self._start()
        if chunk.thinking:
            out += self._open("reasoning") + self._reasoning_delta(chunk.thinking)
        if chunk.delta:
            out += self._open("message") + self._text_delta(chunk.delta)
        for delta in chunk.tool_calls:
            out += self._tool_delta(delta)
        return out

    def finish(self, *, finish_reason: str | None = None, usage: Usage | None = None) -> bytes:
        """Rule 3: close the open item, then `response.completed` (or `.incomplete`)."""
        out = self._start() + self._close()
        status, incomplete = encode_status(finish_reason)
        body = self._response(status, usage=encode_usage(usage or self._usage))
        body["incomplete_details"] = incomplete
        kind = "response.completed" if status == "completed" else "response.incomplete"
        return out + self._event(kind, {"response": body})

    def error_event(
        self,
        status: int,
        message: str,
        code: str | None = None,
        type: str | None = None,  # noqa: A002 - the envelope's own field name
    ) -> bytes:
        """An in-stream `error` event, numbered after the events written so far."""
        return error_event(status, message, code, type, sequence_number=self._next())

    def _next(self) -> int:
        seq = self._seq
        self._seq += 1
        return seq

    def _event(self, kind: str, payload: dict[str, Any]) -> bytes:
        body = {"type": kind, "sequence_number": self._next(), **payload}
        return encode_event(orjson.dumps(body), event=kind)

    def _response(self, status: str, *, usage: dict[str, Any] | None = None) -> dict[str, Any]:
        return response_object(
            self._id,
            model=self._model,
            created=self._created,
            status=status,
            output=list(self._output),
            usage=usage,
        )

    def _start(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        created = self._event("response.created", {"response": self._response("in_progress")})
        return created + self._event(
            "response.in_progress", {"response": self._response("in_progress")}
        )

    def _open(self, kind: str, *, call: ToolCall | None = None, tool: int = -1) -> bytes:
        item = self._item
        if (
            item is not None
            and item.kind == kind
            and (kind != "function_call" or item.tool == tool)
        ):
            return b""
        out = self._close()
        prefix = {"message": "msg_", "reasoning": "rs_", "function_call": "fc_"}[kind]
        item = self._item = _Item(kind, new_id(prefix), len(self._output), call=call, tool=tool)
        out += self._event(
            "response.output_item.added",
            {"output_index": item.index, "item": self._item_body(item, "in_progress")},
        )
        where = {"item_id": item.id, "output_index": item.index}
        if kind == "message":
            part = output_text_part("")
            out += self._event(
                "response.content_part.added", {**where, "content_index": 0, "part": part}
            )
        elif kind == "reasoning":
            part = {"type": "summary_text", "text": ""}
            out += self._event(
                "response.reasoning_summary_part.added", {**where, "summary_index": 0, "part": part}
            )
        return out

    def _item_body(self, item: _Item, status: str) -> dict[str, Any]:
        done = status == "completed"
        text = "".join(item.text)
        if item.kind == "message":
            return message_item(item.id, text if done else None, status=status)
        if item.kind == "reasoning":
            return reasoning_item(item.id, text if done else None)
        assert item.call is not None
        call = ToolCall(
            item.call.id, item.call.name, text if done else "", namespace=item.call.namespace
        )
        return function_call_item(item.id, call, status=status)

    def _text_delta(self, text: str) -> bytes:
        item = self._item
        assert item is not None
        item.text.append(text)
        where = {"item_id": item.id, "output_index": item.index, "content_index": 0}
        return self._event("response.output_text.delta", {**where, "delta": text, "logprobs": []})

    def _reasoning_delta(self, text: str) -> bytes:
        item = self._item
        assert item is not None
        item.text.append(text)
        where = {"item_id": item.id, "output_index": item.index, "summary_index": 0}
        return self._event("response.reasoning_summary_text.delta", {**where, "delta": text})

    def _tool_delta(self, delta: ToolCallDelta) -> bytes:
        item = self._item
        out = b""
        if item is None or item.kind != "function_call" or item.tool != delta.index:
            call = ToolCall(
                delta.id or new_id("call_"), delta.name or "", "", namespace=delta.namespace
            )
            out = self._open("function_call", call=call, tool=delta.index)
            item = self._item
            assert item is not None
        if not delta.arguments:
            return out
        item.text.append(delta.arguments)
        where = {"item_id": item.id, "output_index": item.index}
        return out + self._event(
            "response.function_call_arguments.delta", {**where, "delta": delta.arguments}
        )

    def _close(self) -> bytes:
        """Rule 2: the open item's `….done` events and `response.output_item.done`."""
        item = self._item
        if item is None:
            return b""
        self._item = None
        text = "".join(item.text)
        where = {"item_id": item.id, "output_index": item.index}
        out = b""
        if item.kind == "message":
            at = {**where, "content_index": 0}
            out += self._event("response.output_text.done", {**at, "text": text, "logprobs": []})
            out += self._event("response.content_part.done", {**at, "part": output_text_part(text)})
        elif item.kind == "reasoning":
            at = {**where, "summary_index": 0}
            part = {"type": "summary_text", "text": text}
            out += self._event("response.reasoning_summary_text.done", {**at, "text": text})
            out += self._event("response.reasoning_summary_part.done", {**at, "part": part})
        else:
            out += self._event(
                "response.function_call_arguments.done", {**where, "arguments": text}
            )
        body = self._item_body(item, "completed")
        self._output.append(body)
        return out + self._event(
            "response.output_item.done", {"output_index": item.index, "item": body}
        )


def error_event(
    status: int,
    message: str,
    code: str | None = None,
    type: str | None = None,  # noqa: A002 - the envelope's own field name
    *,
    sequence_number: int = 0,
) -> bytes:
    """An in-stream `error` event in the Responses shape (`code`, `message`, `param`,
    `sequence_number`), e.g. code `stream_broken`; nothing is written after it. `type` (turnout's
    error type, such as `route_exhausted`) is kept beside them."""
    envelope = error_body(status, message, code=code, type=type)["error"]
    body = {
        "type": "error",
        "code": envelope["code"],
        "message": message,
        "param": None,
        "error_type": envelope["type"],
        "sequence_number": sequence_number,
    }
    return encode_event(orjson.dumps(body), event="error")
