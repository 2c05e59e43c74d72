"""The response cache key: what makes two requests the same question.

The key is the sha256 of a canonical orjson encoding of exactly: a format version, the project,
the route, the requested model, the wire model each target would receive, the messages, the
system prompt, the tools, the tool choice and the generation parameters (`temperature`, `top_p`,
`max_tokens`, `stop`, `seed`, `response_format`, `reasoning_effort`, `thinking`, and every
vendor parameter the neutral model keeps in `extra`, such as `n`, `logprobs`, penalties or
`top_k`). Left out on purpose, because they never change the answer: the `stream` flag, the
client's wire format, `user`, `metadata`, Anthropic `cache_control` markers, the caller's raw
body, and `extra` fields that only steer delivery or billing (`_DELIVERY_FIELDS`).

Canonical means: both codecs already decode to one neutral shape (tool choice, stop sequences,
tool results); numbers that are parameters are floats (`1` and `1.0` are one temperature); tool
call arguments are compared as JSON values, not as text; dict keys are sorted.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import orjson

from turnout.wire.model import (
    DocumentPart,
    ImagePart,
    Message,
    NativeBlock,
    TextPart,
    ThinkingPart,
    Tool,
    ToolCall,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from turnout.wire.model import ChatRequest, Part

__all__ = ["KEY_VERSION", "cache_key"]

KEY_VERSION = 1
"""Bumped whenever the canonical encoding changes, so old entries simply stop matching."""

_DELIVERY_FIELDS = frozenset(
    {
        "stream",
        "stream_options",
        "user",
        "metadata",
        "store",
        "service_tier",
        "prompt_cache_key",
        "prompt_cache_retention",
        "safety_identifier",
        "routing",
    }
)
_OPTIONS = orjson.OPT_SORT_KEYS


def cache_key(
    project: str,
    route: str,
    requested_model: str | None,
    wire_models: Sequence[str | None],
    request: ChatRequest,
) -> str:
    """The response cache key of `request` on `route` (64 hex characters).

    `requested_model` is the model the caller asked for; `wire_models` the model each target
    of the route would receive, in target order.
    """
    extra = request.extra
    canonical = (
        KEY_VERSION,
        project,
        route,
        requested_model,
        list(wire_models),
        [_message(message) for message in request.messages],
        [part.text for part in request.system],
        [_tool(tool) for tool in request.tools],
        request.tool_choice,
        _number(request.temperature),
        _number(request.top_p),
        request.max_tokens,
        request.stop,
        request.seed,
        request.response_format,
        request.reasoning_effort,
        request.thinking,
        {k: v for k, v in extra.items() if k not in _DELIVERY_FIELDS} if extra else None,
    )
    return hashlib.sha256(orjson.dumps(canonical, option=_OPTIONS)).hexdigest()


def _message(message: Message) -> tuple[Any, ...]:
    content = message.content
    if len(content) == 1 and type(content[0]) is TextPart:
        parts: Any = content[0].text
    else:
        parts = [_part(part) for part in content]
    calls = [_call(call) for call in message.tool_calls] if message.tool_calls else None
    if message.tool_call_id is None and message.name is None and not message.is_error:
        return (message.role, parts, calls)
    return (message.role, parts, calls, message.tool_call_id, message.name, message.is_error)


def _part(part: Part) -> Any:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ThinkingPart):
        return ("thinking", part.text, part.signature, part.redacted, part.data)
    if isinstance(part, ImagePart):
        return ("image", part.url, part.data, part.media_type, part.detail)
    if isinstance(part, DocumentPart):
        return ("document", part.data, part.url, part.text, part.media_type, part.title)
    if isinstance(part, NativeBlock):
        return ("native", part.format, part.block)
    raise TypeError(f"unknown content part {type(part).__name__}")


def _call(call: ToolCall) -> tuple[str, str, Any]:
    try:
        arguments: Any = ("json", orjson.loads(call.arguments))
    except orjson.JSONDecodeError:
        arguments = ("text", call.arguments)
    return (call.id, call.name, arguments)


def _tool(tool: Tool) -> tuple[Any, ...]:
    native = (tool.native.format, tool.native.block) if tool.native is not None else None
    return (tool.name, tool.description, tool.parameters, native)


def _number(value: float | None) -> float | None:
    return None if value is None else float(value)
