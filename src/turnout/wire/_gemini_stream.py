"""Gemini `streamGenerateContent?alt=sse`: upstream SSE -> neutral chunks, and chunks -> SSE.

Each event's data is a whole `GenerateContentResponse` holding the next piece of the answer;
there is no terminator event: the stream is over when its last event (the one with a
`finishReason`) has been read and the connection ends.

Invariants of `StreamDecoder`:
  Rule 1: every well-formed event yields exactly one chunk, whose `raw` is the event's bytes;
          an event with no text, thought or function call carries no content (it never commits).
  Rule 2: a malformed event (bad JSON, wrong shape) yields nothing, bumps `malformed` and never
          raises; an `{"error": …}` event raises `ProviderUnavailable` with the error's status
          name as its type.
  Rule 3: each `functionCall` part arrives whole: its chunk carries the call's id, name and
          arguments at once, numbered 0, 1, … across the stream.
  Rule 4: `finish_reason` and `usage` keep the last values seen (a blocked prompt finishes
          `content_filter`); `done` is set with the first finish reason, since no terminator
          follows.

Invariants of `StreamEncoder`:
  Rule 1: each chunk with content becomes one event; chunks without content write nothing.
  Rule 2: `finish()` writes one last event with the finish reason and usage metadata.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import orjson

from turnout.errors import ProviderUnavailable
from turnout.wire._body import OBJECT
from turnout.wire._events import JsonEventDecoder, Malformed
from turnout.wire._gemini_response import (
    FORMAT,
    candidate_finish,
    decode_candidate,
    decode_usage,
    encode_call,
    encode_finish,
    encode_usage,
    error_body,
    is_blocked_prompt,
)
from turnout.wire.model import ChatChunk, TextPart, ThinkingPart, ToolCallDelta
from turnout.wire.sse import encode_event

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.wire.model import Usage
    from turnout.wire.sse import SSEEvent

__all__ = ["StreamDecoder", "StreamEncoder", "error_event"]


class StreamDecoder(JsonEventDecoder):
    """Upstream stream events -> neutral chunks (see the module's rules).

    Attributes: `done`, `malformed` (events skipped), `finish_reason` and `usage` (last seen),
    `model` and `id` (first seen).
    """

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        super().__init__()
        self._calls = 0

    def _error(self, event: SSEEvent, obj: dict[str, Any]) -> ProviderUnavailable | None:
        if "error" in obj and "candidates" not in obj:
            return _stream_error(obj["error"])
        return None

    def _read(self, event: SSEEvent, obj: dict[str, Any]) -> list[ChatChunk]:
        chunk = self._chunk(obj)
        chunk.raw = event.raw
        return [chunk]

    def _chunk(self, obj: dict[str, Any]) -> ChatChunk:
        chunk = self._named(
            ChatChunk(raw_format=FORMAT), obj.get("modelVersion"), obj.get("responseId")
        )
        usage = decode_usage(obj.get("usageMetadata"))
        if usage is not None:
            chunk.usage = self.usage = usage
        candidates = obj.get("candidates")
        if candidates is None:
            if is_blocked_prompt(obj):
                self._finish(chunk, "content_filter")
            return chunk
        if not isinstance(candidates, list) or not candidates:
            raise Malformed
        candidate = candidates[0]
        if not isinstance(candidate, OBJECT):
            raise Malformed
        self._content(candidate, chunk)
        finish = candidate_finish(candidate, has_tool_calls=self._calls > 0)
        if finish is not None:
            self._finish(chunk, finish)
        return chunk

    def _content(self, candidate: Mapping[str, Any], chunk: ChatChunk) -> None:
        try:
            parts, calls = decode_candidate(candidate, self._calls)
        except ProviderUnavailable:
            raise Malformed from None
        for part in parts:
            if isinstance(part, ThinkingPart):
                chunk.thinking += part.text
                chunk.thinking_signature = part.signature or chunk.thinking_signature
            elif isinstance(part, TextPart):
                chunk.delta += part.text
        for call in calls:
            chunk.tool_calls.append(
                ToolCallDelta(self._calls, id=call.id, name=call.name, arguments=call.arguments)
            )
            self._calls += 1

    def _finish(self, chunk: ChatChunk, finish: str) -> None:
        chunk.finish_reason = self.finish_reason = finish
        self.done = True


def _stream_error(error: object) -> ProviderUnavailable:
    message, kind = "upstream stream error", None
    if isinstance(error, OBJECT):
        if isinstance(error.get("message"), str):
            message = error["message"]
        if isinstance(error.get("status"), str):
            kind = error["status"]
    return ProviderUnavailable(message, reason="stream error", error_type=kind)


class StreamEncoder:
    """Neutral chunks -> Gemini SSE events, for a caller or a mock of that format."""

    __slots__ = ("_calls", "_id", "_model", "_usage")

    def __init__(self, *, model: str, request_id: str | None = None) -> None:
        self._model = model
        self._id = request_id or uuid.uuid4().hex[:22]
        self._calls: dict[int, dict[str, Any]] = {}
        self._usage: Usage | None = None

    def _event(self, body: dict[str, Any]) -> bytes:
        body["modelVersion"] = self._model
        body["responseId"] = self._id
        return encode_event(orjson.dumps(body).decode())

    def encode(self, chunk: ChatChunk) -> bytes:
        """The event of one chunk (Rule 1); tool-call deltas are sent whole when complete."""
        if chunk.usage is not None:
            self._usage = chunk.usage
        parts: list[dict[str, Any]] = []
        if chunk.thinking:
            thought: dict[str, Any] = {"text": chunk.thinking, "thought": True}
            if chunk.thinking_signature:
                thought["thoughtSignature"] = chunk.thinking_signature
            parts.append(thought)
        if chunk.delta:
            parts.append({"text": chunk.delta})
        parts.extend(
            encode_call(delta.id or f"call_{delta.index}", delta.name or "", delta.arguments)
            for delta in chunk.tool_calls
        )
        if not parts:
            return b""
        return self._event(
            {"candidates": [{"content": {"role": "model", "parts": parts}, "index": 0}]}
        )

    def finish(self, finish_reason: str | None, usage: Usage | None = None) -> bytes:
        """The last event: the finish reason and usage metadata (Rule 2)."""
        usage = usage or self._usage
        if finish_reason == "content_filter":
            body: dict[str, Any] = {"promptFeedback": {"blockReason": "SAFETY"}}
        else:
            candidate = {
                "content": {"role": "model", "parts": [{"text": ""}]},
                "finishReason": encode_finish(finish_reason),
                "index": 0,
            }
            body = {"candidates": [candidate]}
        body["usageMetadata"] = encode_usage(usage)
        return self._event(body)


def error_event(status: int, message: str) -> bytes:
    """An in-stream error in Google's envelope (it ends the stream)."""
    return encode_event(orjson.dumps(error_body(status, message)).decode())
