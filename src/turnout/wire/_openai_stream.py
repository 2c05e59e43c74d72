"""OpenAI Chat Completions streams: upstream SSE -> neutral chunks, and neutral chunks -> SSE.

Invariants of `StreamDecoder`:
  Rule 1: every well-formed event except `[DONE]` yields exactly one chunk, whose `raw` is the
          event's bytes; role-only and usage-only events yield chunks without content.
  Rule 2: a malformed event (bad JSON, wrong shape) yields nothing, bumps `malformed`, and
          never raises; an `{"error": …}` event raises `ProviderUnavailable`.
  Rule 3: `finish_reason` and `usage` keep the last values seen; `done` is set by `[DONE]`
          only, so a stream cut after its finish reason shows `finish_reason` without `done`.
  Rule 4: `plain(event)` is true only for a well-formed event whose one choice (index 0) has a
          delta of non-empty `content` and nothing else, no finish reason, and no usage or
          error beside it: an event that `feed` would turn into a text-only chunk. Such an
          event may be forwarded undecoded; nothing the decoder keeps is lost by skipping it.
          Until an event named the model, none is plain.

Invariants of `StreamEncoder`:
  Rule 1: the first event it writes carries `role: assistant`; every event shares one `id`,
          `created` and `model`.
  Rule 2: a finish reason is written once; `finish()` writes it if no chunk carried one, then
          the usage event (only with `include_usage`) and `data: [DONE]`.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

import orjson

from turnout.wire._body import OBJECT
from turnout.wire._events import JsonEventDecoder, Malformed, stream_error
from turnout.wire._openai_response import (
    FORMAT,
    decode_finish,
    decode_usage,
    encode_finish,
    encode_usage,
    error_body,
)
from turnout.wire.model import ChatChunk, ToolCallDelta
from turnout.wire.sse import encode_event

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.errors import ProviderUnavailable
    from turnout.wire.model import Usage
    from turnout.wire.sse import SSEEvent

__all__ = ["DONE", "StreamDecoder", "StreamEncoder", "error_event"]

DONE = b"data: [DONE]\n\n"
"""The terminator of an OpenAI stream."""


class StreamDecoder(JsonEventDecoder):
    """Upstream `chat.completion.chunk` events -> neutral chunks (see the module's rules).

    Attributes: `done` (`[DONE]` seen), `malformed` (events skipped), `finish_reason` and
    `usage` (last seen), `model` and `id` (first seen).
    """

    __slots__ = ()

    def feed(self, event: SSEEvent) -> list[ChatChunk]:
        """The neutral chunks of one upstream event (zero or one)."""
        data = event.data
        if data[:1] == "[" and data.strip() == "[DONE]":
            self.done = True
            return []
        return super().feed(event)

    def _error(self, event: SSEEvent, obj: dict[str, Any]) -> ProviderUnavailable | None:
        if "error" in obj and "choices" not in obj:
            return _stream_error(obj["error"])
        return None

    def _read(self, event: SSEEvent, obj: dict[str, Any]) -> list[ChatChunk]:
        chunk = self._chunk(obj)
        chunk.raw = event.raw
        return [chunk]

    def plain(self, event: SSEEvent) -> bool:
        """Rule 4: whether `event` is a plain text delta (then `feed` need not see it)."""
        data = event.data
        if data[:1] != "{" or self.model is None:  # the first chunk names the model: decode it
            return False
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            return False
        if type(obj) is not dict or obj.get("usage") is not None or "error" in obj:
            return False
        choices = obj.get("choices")
        if type(choices) is not list or len(choices) != 1:
            return False
        choice = choices[0]
        if type(choice) is not dict or choice.get("finish_reason") is not None:
            return False
        delta = choice.get("delta")
        if type(delta) is not dict or len(delta) != 1 or choice.get("index", 0) != 0:
            return False
        content = delta.get("content")
        return type(content) is str and content != ""

    def _chunk(self, obj: dict[str, Any]) -> ChatChunk:
        chunk = self._named(ChatChunk(raw_format=FORMAT), obj.get("model"), obj.get("id"))
        usage = decode_usage(obj.get("usage"))
        if usage is not None:
            chunk.usage = self.usage = usage
        choices = obj.get("choices")
        if choices is None:
            return chunk
        if not isinstance(choices, list):
            raise Malformed
        for choice in choices:
            if not isinstance(choice, OBJECT):
                raise Malformed
            if choice.get("index", 0) == 0:
                self._choice(choice, chunk)
        return chunk

    def _choice(self, choice: Mapping[str, Any], chunk: ChatChunk) -> None:
        delta = choice.get("delta")
        if delta is None:
            delta = {}
        elif not isinstance(delta, OBJECT):
            raise Malformed
        content = delta.get("content")
        if isinstance(content, str):
            chunk.delta = content
        refusal = delta.get("refusal")
        if isinstance(refusal, str):
            chunk.delta += refusal
        reasoning = delta.get("reasoning_content")
        if reasoning is None:
            reasoning = delta.get("reasoning")
        if isinstance(reasoning, str):
            chunk.thinking = reasoning
        calls = delta.get("tool_calls")
        if calls is not None:
            chunk.tool_calls = _tool_deltas(calls)
        finish = decode_finish(choice.get("finish_reason"))
        if finish is not None:
            chunk.finish_reason = self.finish_reason = finish


def _tool_deltas(calls: object) -> list[ToolCallDelta]:
    if not isinstance(calls, list):
        raise Malformed
    deltas: list[ToolCallDelta] = []
    for call in calls:
        if not isinstance(call, OBJECT):
            raise Malformed
        index = call.get("index", len(deltas))
        function = call.get("function") or {}
        if not isinstance(index, int) or not isinstance(function, OBJECT):
            raise Malformed
        ident, name = call.get("id"), function.get("name")
        arguments = function.get("arguments")
        deltas.append(
            ToolCallDelta(
                index=index,
                id=ident if isinstance(ident, str) else None,
                name=name if isinstance(name, str) else None,
                arguments=arguments if isinstance(arguments, str) else "",
            )
        )
    return deltas


def _stream_error(error: object) -> ProviderUnavailable:
    return stream_error(
        error if isinstance(error, OBJECT) else {"message": str(error)}, "type", "code"
    )


class StreamEncoder:
    """Neutral chunks -> `chat.completion.chunk` SSE bytes for an OpenAI caller.

    `model` is the model named in every event; `request_id` the stream's `id` (default: a fresh
    `chatcmpl-…`); `include_usage` whether `finish()` writes the usage event (the caller asked
    with `stream_options.include_usage`); `created` the Unix time (default: now). Thinking
    deltas are not part of the format and are left out.
    """

    __slots__ = ("_created", "_finished", "_id", "_include_usage", "_model", "_started", "_usage")

    def __init__(
        self,
        *,
        model: str,
        request_id: str | None = None,
        include_usage: bool = False,
        created: int | None = None,
    ) -> None:
        self._model = model
        self._id = request_id or f"chatcmpl-{uuid.uuid4().hex}"
        self._created = int(time.time()) if created is None else created
        self._include_usage = include_usage
        self._started = False
        self._finished = False
        self._usage: Usage | None = None

    def encode(self, chunk: ChatChunk) -> bytes:
        """The SSE bytes for one neutral chunk (empty when it has nothing to say)."""
        if chunk.usage is not None:
            self._usage = chunk.usage
        delta: dict[str, Any] = {}
        if chunk.delta:
            delta["content"] = chunk.delta
        if chunk.tool_calls:
            delta["tool_calls"] = [_encode_tool_delta(d) for d in chunk.tool_calls]
        finish = None
        if chunk.finish_reason is not None and not self._finished:
            finish = encode_finish(chunk.finish_reason)
            self._finished = True
        if not delta and finish is None and self._started:
            return b""
        return self._event(delta, finish)

    def finish(self, *, finish_reason: str | None = None, usage: Usage | None = None) -> bytes:
        """The end of the stream: the finish event (if not yet written), usage, `[DONE]`.

        `finish_reason` defaults to `stop`; `usage` to the last usage a chunk carried.
        """
        out = b""
        if not self._finished:
            out += self._event({}, encode_finish(finish_reason))
            self._finished = True
        if self._include_usage:
            body = self._envelope([])
            body["usage"] = encode_usage(usage or self._usage)
            out += b"data: " + orjson.dumps(body) + b"\n\n"
        return out + DONE

    def _event(self, delta: dict[str, Any], finish: str | None) -> bytes:
        if not self._started:
            delta = {"role": "assistant", **delta}
            if "content" not in delta and "tool_calls" not in delta:
                delta["content"] = ""
            self._started = True
        body = self._envelope(
            [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        )
        return b"data: " + orjson.dumps(body) + b"\n\n"

    def _envelope(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            "choices": choices,
        }


def _encode_tool_delta(delta: ToolCallDelta) -> dict[str, Any]:
    out: dict[str, Any] = {"index": delta.index}
    if delta.id is not None:
        out["id"] = delta.id
        out["type"] = "function"
    function: dict[str, Any] = {}
    if delta.name is not None:
        function["name"] = delta.name
    function["arguments"] = delta.arguments
    out["function"] = function
    return out


def error_event(
    status: int,
    message: str,
    code: str | None = None,
    type: str | None = None,  # noqa: A002 - the envelope's own field name
) -> bytes:
    """An in-stream error in OpenAI's shape: a `data:` event holding the error envelope
    (e.g. code `stream_broken`). It replaces `[DONE]`: write nothing after it."""
    return encode_event(orjson.dumps(error_body(status, message, code=code, type=type)))
