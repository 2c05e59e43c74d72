"""Reading Vertex AI's error bodies: Google's envelope, with Claude's own errors inside it.

Vertex answers errors in Google's `google.rpc.Status` envelope (`turnout.vendors.google_errors`
reads it). On the Claude endpoints (`rawPredict`, `streamRawPredict`) an error may instead be
Anthropic's own body (`{"type": "error", "error": {"type", "message"}}`), which the common
reader understands as it is, or Anthropic's body as the *text* of the Google envelope's
`message`.

Rule 1: an envelope whose `message` is an Anthropic error body is unwrapped: the message becomes
Anthropic's message and the error type Anthropic's type (`overloaded_error`,
`invalid_request_error` …), the envelope's `status` (and `details`) kept, so both the quota
reading and the message signals (context length, content filter) apply.
Rule 2: anything else passes through unchanged (the same bytes); reading never raises.
"""

from __future__ import annotations

import orjson

__all__ = ["unwrap_vertex_error"]


def unwrap_vertex_error(body: bytes) -> bytes:
    """Rule 1: `body` with a wrapped Anthropic error unwrapped; else `body` (Rule 2)."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body
    if isinstance(data, list) and len(data) == 1:
        data = data[0]
    envelope = data.get("error") if isinstance(data, dict) else None
    if not isinstance(envelope, dict):
        return body
    inner = _anthropic_error(envelope.get("message"))
    if inner is None:
        return body
    kind, message = inner
    unwrapped = {**envelope, "message": message, "type": kind}
    unwrapped.pop("code", None)  # the error's type, not the HTTP echo, labels it
    return orjson.dumps({"error": unwrapped})


def _anthropic_error(text: object) -> tuple[str, str] | None:
    """The (type, message) of an Anthropic error body held as text, or None."""
    if not isinstance(text, str) or not text.lstrip().startswith("{"):
        return None
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return None
    kind, message = error.get("type"), error.get("message")
    if not isinstance(kind, str) or not isinstance(message, str):
        return None
    return kind, message
