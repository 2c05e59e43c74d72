"""What every upstream stream decoder shares: JSON events in, neutral chunks out.

A stream of JSON events is read the same way in every format: an event that is not a JSON
object, or whose shape is not the one its type promises (`Malformed`), yields nothing and is
counted in `malformed`, never raised; an event that reports an error raises it
(`ProviderUnavailable`). A format's decoder says only how to tell its error event (`_error`)
and how to read a well-formed one (`_read`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from turnout.errors import ProviderUnavailable

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.wire.model import ChatChunk, Usage
    from turnout.wire.sse import SSEEvent

__all__ = ["JsonEventDecoder", "Malformed", "stream_error"]


class Malformed(Exception):
    """An upstream event that does not have the shape its type promises: skipped, counted."""


class JsonEventDecoder:
    """An upstream stream of JSON events -> neutral chunks.

    Attributes: `done` (the format's end seen), `malformed` (events skipped), `finish_reason`
    and `usage` (so far), `model` and `id` (as the format reports them).
    """

    __slots__ = ("done", "finish_reason", "id", "malformed", "model", "usage")

    def __init__(self) -> None:
        self.done = False
        self.malformed = 0
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.model: str | None = None
        self.id: str | None = None

    def feed(self, event: SSEEvent) -> list[ChatChunk]:
        """The neutral chunks of one upstream event (zero or one)."""
        try:
            obj = orjson.loads(event.data)
        except orjson.JSONDecodeError:
            obj = None
        if not isinstance(obj, dict):
            self.malformed += 1
            return []
        error = self._error(event, obj)
        if error is not None:
            raise error
        try:
            return self._read(event, obj)
        except Malformed:
            self.malformed += 1
            return []

    def _named(self, chunk: ChatChunk, model: object, ident: object) -> ChatChunk:
        """`chunk`, naming the model and id an event reports; the stream's are the first seen."""
        if isinstance(model, str):
            chunk.model = model
            self.model = self.model or model
        if isinstance(ident, str):
            chunk.id = ident
            self.id = self.id or ident
        return chunk

    def _error(self, event: SSEEvent, obj: dict[str, Any]) -> ProviderUnavailable | None:
        """The error `obj` reports, when it is the format's error event."""
        del event, obj
        return None

    def _read(self, event: SSEEvent, obj: dict[str, Any]) -> list[ChatChunk]:
        """The chunks of a well-formed event (raises `Malformed` for a wrong shape)."""
        raise NotImplementedError


def stream_error(error: Mapping[str, Any], *kinds: str) -> ProviderUnavailable:
    """The error for an upstream's in-stream error object: its `message`, and as its kind the
    first of the `kinds` fields that is set."""
    message = error.get("message")
    kind = None
    for key in kinds:
        kind = kind or error.get(key)
    return ProviderUnavailable(
        message if isinstance(message, str) else "upstream stream error",
        error_type=kind if isinstance(kind, str) else None,
        reason=kind if isinstance(kind, str) else "stream error",
        body=dict(error),
    )
