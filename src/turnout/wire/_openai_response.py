"""OpenAI Chat Completions: whole responses, usage, finish reasons and the error envelope."""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from turnout.wire._body import OBJECT, load_upstream, upstream_invalid
from turnout.wire.model import (
    ChatResponse,
    Part,
    TextPart,
    ThinkingPart,
    ToolCall,
    Usage,
    WireFormat,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "FORMAT",
    "decode_finish",
    "decode_response",
    "decode_usage",
    "encode_finish",
    "encode_response",
    "encode_tool_call",
    "encode_usage",
    "error_body",
    "joined_text",
    "usage_of",
]

FORMAT: WireFormat = "openai-chat"

_FINISH_IN = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
    "error": "error",
}
_FINISH_OUT = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
}


def decode_finish(reason: object) -> str | None:
    """OpenAI `finish_reason` -> neutral (`function_call` -> `tool_calls`; unknown -> `stop`)."""
    if not isinstance(reason, str):
        return None
    return _FINISH_IN.get(reason, "stop")


def encode_finish(reason: str | None) -> str:
    """Neutral finish reason -> OpenAI (`error` and None become `stop`)."""
    return _FINISH_OUT.get(reason or "stop", "stop")


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def decode_usage(usage: object) -> Usage | None:
    """OpenAI `usage` -> neutral; `input_tokens` includes cached tokens (as `prompt_tokens` does).

    Cached tokens come from `prompt_tokens_details.cached_tokens`, or DeepSeek's
    `prompt_cache_hit_tokens` when that is what the server sends; reasoning tokens (part of
    `completion_tokens`) from `completion_tokens_details.reasoning_tokens`.
    """
    if not isinstance(usage, OBJECT):
        return None
    read = usage_of(usage, "prompt", "completion")
    if read.cache_read_tokens or "prompt_cache_hit_tokens" not in usage:
        return read
    return Usage(
        read.input_tokens,
        read.output_tokens,
        _count(usage["prompt_cache_hit_tokens"]),
        read.cache_write_tokens,
        read.reasoning_tokens,
    )


def usage_of(usage: Mapping[str, Any], sent: str, received: str) -> Usage:
    """Usage in OpenAI's shape, which its two APIs name differently: `{sent}_tokens` with the
    cached ones in `{sent}_tokens_details`, `{received}_tokens` with the reasoning ones in
    `{received}_tokens_details` (`prompt`/`completion` for Chat, `input`/`output` for
    Responses)."""
    details = usage.get(f"{sent}_tokens_details")
    output = usage.get(f"{received}_tokens_details")
    return Usage(
        input_tokens=_count(usage.get(f"{sent}_tokens")),
        output_tokens=_count(usage.get(f"{received}_tokens")),
        cache_read_tokens=_count(details.get("cached_tokens"))
        if isinstance(details, OBJECT)
        else 0,
        reasoning_tokens=_count(output.get("reasoning_tokens"))
        if isinstance(output, OBJECT)
        else 0,
    )


def encode_usage(usage: Usage | None) -> dict[str, Any]:
    """Neutral usage -> OpenAI `usage` (zeros when unknown)."""
    usage = usage or Usage()
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }


def decode_response(body: bytes | Mapping[str, Any]) -> ChatResponse:
    """An upstream `chat.completion` body -> neutral answer (the first choice).

    `raw` is set to `body` when bytes are given, for same-format forwarding. A body without a
    usable first choice raises `ProviderUnavailable` (error class `provider_error`). A
    `reasoning_content` string (DeepSeek, vLLM) becomes a thinking part.
    """
    obj = load_upstream(body)
    choices = obj.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], OBJECT):
        raise upstream_invalid("no choices")
    message = choices[0].get("message")
    if not isinstance(message, OBJECT):
        raise upstream_invalid("choices[0].message is not an object")
    content: list[Part] = []
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        content.append(ThinkingPart(reasoning))
    content.extend(_text_parts(message.get("content")))
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        content.append(TextPart(refusal))
    model = obj.get("model")
    ident = obj.get("id")
    return ChatResponse(
        content=content,
        model=model if isinstance(model, str) else None,
        tool_calls=_tool_calls(message.get("tool_calls")),
        finish_reason=decode_finish(choices[0].get("finish_reason")),
        usage=decode_usage(obj.get("usage")),
        id=ident if isinstance(ident, str) else None,
        raw=bytes(body) if isinstance(body, bytes | bytearray) else None,
        raw_format=FORMAT,
    )


def _text_parts(content: object) -> list[Part]:
    if isinstance(content, str):
        return [TextPart(content)] if content else []
    if not isinstance(content, list):
        return []
    return [
        TextPart(item["text"])
        for item in content
        if isinstance(item, OBJECT) and isinstance(item.get("text"), str)
    ]


def _tool_calls(value: object) -> list[ToolCall]:
    if not isinstance(value, list):
        return []
    calls: list[ToolCall] = []
    for item in value:
        function = item.get("function") if isinstance(item, OBJECT) else None
        if not isinstance(function, OBJECT):
            raise upstream_invalid("a tool call without a function")
        arguments = function.get("arguments")
        calls.append(
            ToolCall(
                id=str(item.get("id") or f"call_{len(calls)}"),
                name=str(function.get("name") or ""),
                arguments=arguments if isinstance(arguments, str) else "{}",
            )
        )
    return calls


def encode_response(
    response: ChatResponse,
    *,
    model: str,
    request_id: str | None = None,
    created: int | None = None,
) -> dict[str, Any]:
    """A neutral answer -> a `chat.completion` body for an OpenAI caller.

    `id` is `request_id`, else the answer's own id, else a fresh `chatcmpl-…`; `created`
    defaults to now (Unix seconds). Thinking parts are not part of the OpenAI format and are
    left out; text parts are joined into one string (`null` when there is none).
    """
    text = joined_text(response.content)
    message: dict[str, Any] = {
        "role": "assistant",
        "content": text if text or not response.tool_calls else None,
        "refusal": None,
    }
    if response.tool_calls:
        message["tool_calls"] = [encode_tool_call(call) for call in response.tool_calls]
    return {
        "id": request_id or response.id or f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()) if created is None else created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": encode_finish(response.finish_reason),
            }
        ],
        "usage": encode_usage(response.usage),
    }


def encode_tool_call(call: ToolCall) -> dict[str, Any]:
    """A neutral tool call in OpenAI's shape."""
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def error_body(
    status: int,
    message: str,
    *,
    code: str | None = None,
    type: str | None = None,  # noqa: A002 - the envelope's own field name
    param: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The OpenAI error envelope: `{"error": {message, type, code, param, meta}}`.

    `type` is the one given (`route_exhausted`, `route_ineligible`, a provider's own type),
    else `invalid_request_error` whatever the status: `server_error` or `rate_limit_error`
    would claim the upstream's words for a refusal of turnout's own. `meta` is included only
    when given. `status` is not read; it stays for the shape every envelope function shares.
    """
    del status
    error: dict[str, Any] = {
        "message": message,
        "type": type or "invalid_request_error",
        "code": code,
        "param": param,
    }
    if meta is not None:
        error["meta"] = dict(meta)
    return {"error": error}


def joined_text(parts: Iterable[Part]) -> str:
    """The text parts of `parts`, concatenated."""
    return "".join(p.text for p in parts if isinstance(p, TextPart))
