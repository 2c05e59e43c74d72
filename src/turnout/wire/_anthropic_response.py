"""Anthropic Messages: whole responses, usage, stop reasons, assistant blocks, error envelope.

Usage: the neutral `input_tokens` counts every prompt token, so Anthropic's `input_tokens`,
`cache_read_input_tokens` and `cache_creation_input_tokens` are added up on decode (and
`input_tokens` is given back without the cache counts on encode).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from turnout.wire._body import (
    OBJECT,
    decode_blocks,
    dump_arguments,
    load_upstream,
    parse_arguments,
    upstream_invalid,
)
from turnout.wire.model import (
    ChatResponse,
    NativeBlock,
    Part,
    TextPart,
    ThinkingPart,
    ToolCall,
    Usage,
    WireFormat,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "FORMAT",
    "decode_response",
    "decode_stop",
    "decode_usage",
    "encode_assistant_blocks",
    "encode_response",
    "encode_stop",
    "encode_usage",
    "error_body",
    "error_type_for",
]

FORMAT: WireFormat = "anthropic-messages"

_STOP_IN = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}
_STOP_OUT = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "overloaded_error",
    504: "api_error",
    529: "overloaded_error",
}


def decode_stop(reason: object) -> str | None:
    """Anthropic `stop_reason` -> neutral: end_turn/stop_sequence/pause_turn -> stop,
    max_tokens -> length, tool_use -> tool_calls, refusal -> content_filter."""
    if not isinstance(reason, str):
        return None
    return _STOP_IN.get(reason, "stop")


def encode_stop(reason: str | None) -> str:
    """Neutral finish reason -> Anthropic `stop_reason` (`error` and None -> `end_turn`)."""
    return _STOP_OUT.get(reason or "stop", "end_turn")


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def decode_usage(usage: object, base: Usage | None = None) -> Usage | None:
    """Anthropic `usage` -> neutral, over `base` (counts absent from `usage` keep `base`'s).

    `base` lets a stream merge `message_delta.usage` into what `message_start` reported.
    """
    if not isinstance(usage, OBJECT):
        return base
    base = base or Usage()
    fresh = base.input_tokens - base.cache_read_tokens - base.cache_write_tokens
    cache_read = _pick(usage, "cache_read_input_tokens", base.cache_read_tokens)
    cache_write = _pick(usage, "cache_creation_input_tokens", base.cache_write_tokens)
    return Usage(
        input_tokens=_pick(usage, "input_tokens", fresh) + cache_read + cache_write,
        output_tokens=_pick(usage, "output_tokens", base.output_tokens),
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )


def _pick(usage: Mapping[str, Any], key: str, default: int) -> int:
    value = usage.get(key)
    return default if value is None else _count(value)


def encode_usage(usage: Usage | None) -> dict[str, int]:
    """Neutral usage -> Anthropic `usage` (`input_tokens` without the cache counts)."""
    usage = usage or Usage()
    fresh = usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens
    return {
        "input_tokens": max(fresh, 0),
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
    }


def decode_response(body: bytes | Mapping[str, Any]) -> ChatResponse:
    """An upstream Messages body -> neutral answer.

    Text, thinking (signature kept) and redacted thinking become parts, `tool_use` blocks tool
    calls, any other block a `NativeBlock`. `raw` is set to `body` when bytes are given. A body
    without a `content` list raises `ProviderUnavailable`.
    """
    obj = load_upstream(body)
    blocks = obj.get("content")
    if not isinstance(blocks, list):
        raise upstream_invalid("content is not a list")
    content, calls = decode_blocks(blocks, _decode_block)
    model, ident = obj.get("model"), obj.get("id")
    return ChatResponse(
        content=content,
        model=model if isinstance(model, str) else None,
        tool_calls=calls,
        finish_reason=decode_stop(obj.get("stop_reason")),
        usage=decode_usage(obj.get("usage")),
        id=ident if isinstance(ident, str) else None,
        raw=bytes(body) if isinstance(body, bytes | bytearray) else None,
        raw_format=FORMAT,
    )


def _decode_block(block: Mapping[str, Any], content: list[Part], calls: list[ToolCall]) -> None:
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        content.append(TextPart(text if isinstance(text, str) else ""))
    elif kind == "thinking":
        text, signature = block.get("thinking"), block.get("signature")
        content.append(
            ThinkingPart(
                text if isinstance(text, str) else "",
                signature=signature if isinstance(signature, str) and signature else None,
            )
        )
    elif kind == "redacted_thinking":
        data = block.get("data")
        content.append(ThinkingPart(redacted=True, data=data if isinstance(data, str) else ""))
    elif kind == "tool_use":
        ident, name = block.get("id"), block.get("name")
        calls.append(
            ToolCall(
                id=ident if isinstance(ident, str) else f"toolu_{len(calls)}",
                name=name if isinstance(name, str) else "",
                arguments=dump_arguments(block.get("input") or {}),
            )
        )
    else:
        content.append(NativeBlock(FORMAT, dict(block)))


def encode_assistant_blocks(
    parts: list[Part], calls: list[ToolCall], *, keep_native: bool = True
) -> list[dict[str, Any]]:
    """Assistant content in Anthropic blocks: thinking, text, then tool_use.

    Only signed or redacted thinking is kept (Anthropic refuses unsigned thinking), empty text
    is skipped (Anthropic refuses empty text blocks), and arguments that are not a JSON object
    become `{}`. `NativeBlock`s of this format are kept when `keep_native`.
    """
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, ThinkingPart):
            if part.redacted:
                blocks.append({"type": "redacted_thinking", "data": part.data or ""})
            elif part.signature:
                blocks.append(
                    {"type": "thinking", "thinking": part.text, "signature": part.signature}
                )
        elif isinstance(part, TextPart):
            if part.text:
                block: dict[str, Any] = {"type": "text", "text": part.text}
                if part.cache_control is not None:
                    block["cache_control"] = part.cache_control
                blocks.append(block)
        elif isinstance(part, NativeBlock) and keep_native and part.format == FORMAT:
            blocks.append(part.block)
    blocks.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": parse_arguments(c.arguments)}
        for c in calls
    )
    return blocks


def encode_response(
    response: ChatResponse, *, model: str, request_id: str | None = None
) -> dict[str, Any]:
    """A neutral answer -> a Messages body for an Anthropic caller.

    `id` is `request_id`, else the answer's own id, else a fresh `msg_…`. Unsigned thinking
    (e.g. from another family) is left out.
    """
    return {
        "id": request_id or response.id or f"msg_{uuid.uuid4().hex}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": encode_assistant_blocks(response.content, response.tool_calls),
        "stop_reason": encode_stop(response.finish_reason),
        "stop_sequence": None,
        "usage": encode_usage(response.usage),
    }


def error_type_for(status: int, fallback: str | None = None) -> str:
    """The Anthropic error `type` for an HTTP status (the table in `docs/gateway-api.md`,
    plus Anthropic's own 402 `billing_error` and 529 `overloaded_error`); other statuses take
    `fallback`, else `invalid_request_error` (4xx) or `api_error` (5xx)."""
    known = _ERROR_TYPES.get(status)
    if known is not None:
        return known
    if fallback:
        return fallback
    return "api_error" if status >= 500 else "invalid_request_error"


def error_body(
    status: int,
    message: str,
    *,
    code: str | None = None,
    type: str | None = None,  # noqa: A002 - the envelope's own field name
    param: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The Anthropic error envelope: `{"type": "error", "error": {type, message, code, meta}}`,
    `type` derived from `status` (see `error_type_for`; the `type` argument only names
    statuses outside the table). `code`, `param` and `meta` are included when given."""
    error: dict[str, Any] = {"type": error_type_for(status, type), "message": message}
    if code is not None:
        error["code"] = code
    if param is not None:
        error["param"] = param
    if meta is not None:
        error["meta"] = dict(meta)
    return {"type": "error", "error": error}
