"""OpenAI Responses: whole `response` objects, their output items, usage and status.

Neutral mapping of an answer: a `message` output item's `output_text` (and `refusal`) parts
become text parts; a `function_call` item a tool call (`call_id` is the call's id, the one a
`function_call_output` answers); a `reasoning` item's summary texts one thinking part. `status`
and `incomplete_details.reason` give the finish reason: `completed` is `stop` (`tool_calls` when
the output has a function call), `incomplete` with `max_output_tokens` is `length`, with
`content_filter` is `content_filter`. A `failed` response is the provider's failure
(`ProviderUnavailable`, so the route may fail over).

Usage: `input_tokens` counts every prompt token, cached ones included
(`input_tokens_details.cached_tokens`), as the neutral model does; `output_tokens` includes the
reasoning tokens (`output_tokens_details.reasoning_tokens`), which the neutral model does not
count apart, so an answer re-encoded into this format reports 0 of them.

Encoding an answer from another format writes the output items in the order text, thinking and
tool calls came: thinking first (a `reasoning` item with one `summary_text`), then the message,
then one `function_call` item per call. Ids are fresh (`resp_…`, `msg_…`, `rs_…`, `fc_…`).
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from turnout.wire._body import OBJECT, load_upstream, upstream_invalid
from turnout.wire._openai_response import usage_of
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
    from collections.abc import Mapping

__all__ = [
    "FORMAT",
    "decode_response",
    "decode_status",
    "decode_usage",
    "encode_output",
    "encode_response",
    "encode_status",
    "encode_usage",
    "new_id",
    "response_object",
]

FORMAT: WireFormat = "openai-responses"

_INCOMPLETE_IN = {"max_output_tokens": "length", "content_filter": "content_filter"}
_INCOMPLETE_OUT = {"length": "max_output_tokens", "content_filter": "content_filter"}


def new_id(prefix: str) -> str:
    """A fresh id in OpenAI's style (`resp_…`, `msg_…`, `fc_…`, `rs_…`)."""
    return f"{prefix}{uuid.uuid4().hex}"


def decode_usage(usage: object) -> Usage | None:
    """Responses `usage` -> neutral (cached tokens from `input_tokens_details`, reasoning
    tokens, part of `output_tokens`, from `output_tokens_details`)."""
    return usage_of(usage, "input", "output") if isinstance(usage, OBJECT) else None


def encode_usage(usage: Usage | None) -> dict[str, Any]:
    """Neutral usage -> Responses `usage` (zeros when unknown)."""
    usage = usage or Usage()
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def decode_status(status: object, details: object, *, has_calls: bool) -> str | None:
    """A response's `status` and `incomplete_details` -> the neutral finish reason (None while
    it is not finished)."""
    if status == "completed":
        return "tool_calls" if has_calls else "stop"
    if status == "incomplete":
        reason = details.get("reason") if isinstance(details, OBJECT) else None
        return _INCOMPLETE_IN.get(reason if isinstance(reason, str) else "", "length")
    if status in ("failed", "cancelled"):
        return "error"
    return None


def encode_status(finish_reason: str | None) -> tuple[str, dict[str, Any] | None]:
    """The neutral finish reason -> `status` and `incomplete_details`."""
    reason = _INCOMPLETE_OUT.get(finish_reason or "")
    if reason is not None:
        return "incomplete", {"reason": reason}
    return "completed", None


def decode_response(body: bytes | Mapping[str, Any]) -> ChatResponse:
    """An upstream `response` object -> neutral answer (`raw` = `body` when bytes are given).

    A `failed` response, or a body without an `output` list, raises `ProviderUnavailable`.
    """
    obj = load_upstream(body)
    status = obj.get("status")
    if status == "failed":
        error = obj.get("error")
        message = error.get("message") if isinstance(error, OBJECT) else None
        raise upstream_invalid(f"the response failed: {message or 'no message'}")
    output = obj.get("output")
    if not isinstance(output, list):
        raise upstream_invalid("no output list")
    content: list[Part] = []
    calls: list[ToolCall] = []
    for item in output:
        if isinstance(item, OBJECT):
            _decode_item(item, content, calls)
    model, ident = obj.get("model"), obj.get("id")
    return ChatResponse(
        content=content,
        model=model if isinstance(model, str) else None,
        tool_calls=calls,
        finish_reason=decode_status(status, obj.get("incomplete_details"), has_calls=bool(calls)),
        usage=decode_usage(obj.get("usage")),
        id=ident if isinstance(ident, str) else None,
        raw=bytes(body) if isinstance(body, bytes | bytearray) else None,
        raw_format=FORMAT,
    )


def _decode_item(item: Mapping[str, Any], content: list[Part], calls: list[ToolCall]) -> None:
    kind = item.get("type")
    if kind == "message":
        parts = item.get("content")
        for part in parts if isinstance(parts, list) else ():
            if not isinstance(part, OBJECT):
                continue
            text = part.get("text") if part.get("type") == "output_text" else part.get("refusal")
            if isinstance(text, str) and text:
                content.append(TextPart(text))
    elif kind == "function_call":
        name, arguments = item.get("name"), item.get("arguments")
        namespace = item.get("namespace")
        call_id = item.get("call_id") or item.get("id")
        calls.append(
            ToolCall(
                id=str(call_id or f"call_{len(calls)}"),
                name=name if isinstance(name, str) else "",
                arguments=arguments if isinstance(arguments, str) else "{}",
                namespace=namespace if isinstance(namespace, str) else None,
            )
        )
    elif kind == "reasoning":
        summary = item.get("summary")
        texts = [
            s["text"]
            for s in (summary if isinstance(summary, list) else ())
            if isinstance(s, OBJECT) and isinstance(s.get("text"), str)
        ]
        if texts:
            content.append(ThinkingPart("\n\n".join(texts)))


def encode_output(response: ChatResponse) -> list[dict[str, Any]]:
    """A neutral answer's output items (reasoning, message, function calls), all completed."""
    items: list[dict[str, Any]] = []
    thinking = [p.text for p in response.content if isinstance(p, ThinkingPart) and p.text]
    if thinking:
        items.append(reasoning_item(new_id("rs_"), "".join(thinking)))
    text = "".join(p.text for p in response.content if isinstance(p, TextPart))
    if text or not response.tool_calls:
        items.append(message_item(new_id("msg_"), text, status="completed"))
    items.extend(
        function_call_item(new_id("fc_"), call, status="completed") for call in response.tool_calls
    )
    return items


def message_item(ident: str, text: str | None, *, status: str) -> dict[str, Any]:
    """An assistant `message` output item (no content while `text` is None)."""
    content = [] if text is None else [output_text_part(text)]
    return {
        "id": ident,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": content,
    }


def output_text_part(text: str) -> dict[str, Any]:
    """An `output_text` content part."""
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def reasoning_item(ident: str, summary: str | None) -> dict[str, Any]:
    """A `reasoning` output item with one `summary_text` (none while `summary` is None)."""
    parts = [] if summary is None else [{"type": "summary_text", "text": summary}]
    return {"id": ident, "type": "reasoning", "summary": parts}


def function_call_item(ident: str, call: ToolCall, *, status: str) -> dict[str, Any]:
    """A `function_call` output item (with its `namespace` when the call has one)."""
    item = {
        "id": ident,
        "type": "function_call",
        "status": status,
        "arguments": call.arguments,
        "call_id": call.id,
        "name": call.name,
    }
    if call.namespace is not None:
        item["namespace"] = call.namespace
    return item


def response_object(
    ident: str,
    *,
    model: str,
    created: int,
    status: str,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None,
    incomplete: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A `response` object with the fields OpenAI's SDKs read; the request's own settings are
    not echoed (null, or the API's defaults), since an answer from another format has none."""
    return {
        "id": ident,
        "object": "response",
        "created_at": created,
        "status": status,
        "background": False,
        "error": error,
        "incomplete_details": incomplete,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": None,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
    }


def encode_response(
    response: ChatResponse,
    *,
    model: str,
    request_id: str | None = None,
    created: int | None = None,
) -> dict[str, Any]:
    """A neutral answer -> a `response` object for a Responses caller.

    `id` is `request_id`, else the answer's own id, else a fresh `resp_…`; `created` (Unix
    seconds) defaults to now.
    """
    status, incomplete = encode_status(response.finish_reason)
    return response_object(
        request_id or response.id or new_id("resp_"),
        model=model,
        created=int(time.time()) if created is None else created,
        status=status,
        output=encode_output(response),
        usage=encode_usage(response.usage),
        incomplete=incomplete,
    )
