"""Anthropic Messages through Bedrock's InvokeModel: the body Bedrock takes for Claude models,
and the events of its response stream.

Rule 1: a Claude model is recognised by its id in every form Bedrock accepts: `anthropic.…`,
an inference profile (`us.`, `eu.`, `apac.`, `global.` and other region prefixes before
`anthropic.`), or an ARN whose last path part is one of those.
Rule 2: the body is Anthropic Messages without `model` and `stream` (the model travels in the
URL, streaming in the endpoint), with `anthropic_version: bedrock-2023-05-31`, and the
caller's `anthropic-beta` header values as the `anthropic_beta` list. A caller's own Messages
body keeps every other byte's worth (`cache_control`, `thinking`, unknown fields).
Rule 3: a streamed answer arrives as `chunk` events whose `bytes` hold one base64 Anthropic
event each; it is returned as that event in SSE form (`event: <type>`, `data: <json>`), so the
Anthropic stream decoder reads it and a same-format caller gets it as Anthropic sends it.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import TYPE_CHECKING, Any

import orjson

from turnout.wire import anthropic_messages
from turnout.wire._body import rewrite
from turnout.wire.sse import SSEEvent

if TYPE_CHECKING:
    from collections.abc import Iterable

    from turnout.wire.model import ChatRequest

__all__ = [
    "ANTHROPIC_VERSION",
    "chunk_event",
    "encode_request",
    "forward_body",
    "is_claude",
]

ANTHROPIC_VERSION = "bedrock-2023-05-31"
_CLAUDE = re.compile(r"^(?:[a-z]{2,8}\.)?anthropic\.", re.IGNORECASE)


def is_claude(model_id: str) -> bool:
    """Rule 1: whether `model_id` names a Claude model on Bedrock."""
    tail = model_id.rsplit("/", 1)[-1] if model_id.startswith("arn:") else model_id
    return bool(_CLAUDE.match(tail))


def _betas(headers: Iterable[tuple[str, str]]) -> list[str]:
    out: list[str] = []
    for name, value in headers:
        if name.lower() == "anthropic-beta":
            out.extend(item.strip() for item in value.split(",") if item.strip())
    return out


def _bedrock_fields(body: dict[str, Any], betas: list[str]) -> bool:
    changed = False
    for key in ("model", "stream"):
        if key in body:
            del body[key]
            changed = True
    if body.get("anthropic_version") != ANTHROPIC_VERSION:
        body["anthropic_version"] = ANTHROPIC_VERSION
        changed = True
    if betas:
        body["anthropic_beta"] = betas
        changed = True
    return changed


def forward_body(source: bytes, *, headers: Iterable[tuple[str, str]] = ()) -> bytes:
    """Rule 2: a caller's own Messages body for InvokeModel (`headers`: the caller's)."""
    forwarded = anthropic_messages.forward_body(source, model="", stream=False)
    betas = _betas(headers)
    return rewrite(forwarded, lambda body: _bedrock_fields(body, betas))


def encode_request(request: ChatRequest, *, model: str) -> dict[str, Any]:
    """Rule 2: a neutral request as an InvokeModel Messages body."""
    body = anthropic_messages.encode_request(request, model=model)
    _bedrock_fields(body, [])
    return body


def chunk_event(payload: bytes) -> SSEEvent | None:
    """Rule 3: the Anthropic event in one `chunk` event's payload (None when it holds none)."""
    try:
        outer = orjson.loads(payload)
        inner = base64.b64decode(outer["bytes"], validate=True)
        event = orjson.loads(inner)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, binascii.Error):
        return None
    if not isinstance(event, dict):
        return None
    kind = event.get("type")
    name = kind if isinstance(kind, str) else None
    data = inner.decode("utf-8", errors="replace")
    raw = (f"event: {name}\n" if name else "").encode() + b"data: " + inner + b"\n\n"
    return SSEEvent(name, data, None, raw)
