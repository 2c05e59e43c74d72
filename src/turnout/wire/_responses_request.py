"""OpenAI Responses requests for an upstream: a neutral request -> a Responses body.

Messages become `input` items (a tool call a `function_call` item, a tool result a
`function_call_output`), the system prompt `instructions`, `max_tokens` `max_output_tokens`,
`response_format` `text.format`; tools of a namespace go back into their `namespace` tool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnout.wire._body import OBJECT, data_url
from turnout.wire._responses_response import FORMAT
from turnout.wire.model import DocumentPart, ImagePart, NativeBlock, TextPart
from turnout.wire.translate import is_same_family, tool_choice_name

if TYPE_CHECKING:
    from turnout.wire.model import ChatRequest, Message, Part, Tool, ToolCall

__all__ = ["encode_request"]


def encode_request(request: ChatRequest, *, model: str) -> dict[str, Any]:
    """A neutral request -> a Responses body for an upstream asking for `model`.

    The system prompt is `instructions`; messages are input items (tool calls as
    `function_call` items after their message, tool results as `function_call_output`);
    `extra` is merged (without overriding modelled fields) only when the request came from this
    format or from code. Thinking parts are not sent (a reasoning item needs OpenAI's own id).
    """
    body: dict[str, Any] = {"model": model, "input": _encode_input(request.messages)}
    if request.system:
        body["instructions"] = "\n\n".join(p.text for p in request.system)
    tools = _encode_tools(request.tools)
    if tools:
        body["tools"] = tools
        choice = _encode_tool_choice(request.tool_choice)
        if choice is not None:
            body["tool_choice"] = choice
    text = _encode_text_format(request.response_format)
    optional: dict[str, Any] = {
        "text": text,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "max_output_tokens": request.max_tokens,
        "reasoning": {"effort": request.reasoning_effort} if request.reasoning_effort else None,
        "user": request.user,
        "metadata": request.metadata or None,
    }
    body.update((k, v) for k, v in optional.items() if v is not None)
    if request.stream:
        body["stream"] = True
    if is_same_family(request, FORMAT):
        for key, value in request.extra.items():
            body.setdefault(key, value)
        if "text" in request.extra and text is not None:
            body["text"] = {**request.extra["text"], **text}
    return body


def _encode_input(messages: list[Message]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            text = "".join(p.text for p in message.content if isinstance(p, TextPart))
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id or "",
                    "output": text,
                }
            )
            continue
        parts = [e for p in message.content if (e := _encode_part(p, message.role)) is not None]
        if parts or not message.tool_calls:
            items.append({"type": "message", "role": message.role, "content": parts})
        items.extend(_call_item(c) for c in message.tool_calls)
    return items


def _call_item(call: ToolCall) -> dict[str, Any]:
    item = {"type": "function_call", "call_id": call.id, "name": call.name}
    item["arguments"] = call.arguments
    if call.namespace is not None:
        item["namespace"] = call.namespace
    return item


def _encode_part(part: Part, role: str) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        kind = "output_text" if role == "assistant" else "input_text"
        return {"type": kind, "text": part.text}
    if isinstance(part, ImagePart):
        url = part.url if part.url is not None else data_url(part.media_type, part.data or "")
        return {"type": "input_image", "image_url": url, "detail": part.detail or "auto"}
    if isinstance(part, DocumentPart):
        if part.data is not None:
            return {
                "type": "input_file",
                "filename": part.title or "document.pdf",
                "file_data": data_url(part.media_type, part.data),
            }
        if part.text is not None:
            return {"type": "input_text", "text": part.text}
        return None
    if isinstance(part, NativeBlock) and part.format == FORMAT:
        return part.block
    return None


def _encode_tools(tools: list[Tool]) -> list[dict[str, Any]]:
    """Each tool, namespaced functions regrouped under their namespace (in first-seen order)."""
    out: list[dict[str, Any]] = []
    groups: dict[str, dict[str, Any]] = {}
    for tool in tools:
        encoded = _encode_tool(tool)
        if encoded is None:
            continue
        if tool.namespace is None:
            out.append(encoded)
            continue
        group = groups.get(tool.namespace)
        if group is None:
            group = {"type": "namespace", "name": tool.namespace, "description": tool.namespace}
            group["tools"] = []
            groups[tool.namespace] = group
            out.append(group)
        group["tools"].append(encoded)
    return out


def _encode_tool(tool: Tool) -> dict[str, Any] | None:
    if tool.native is not None:
        return tool.native.block if tool.native.format == FORMAT else None
    out: dict[str, Any] = {"type": "function", "name": tool.name}
    if tool.description is not None:
        out["description"] = tool.description
    out["parameters"] = tool.parameters if tool.parameters is not None else {"type": "object"}
    return out


def _encode_tool_choice(choice: str | dict[str, Any] | None) -> str | dict[str, Any] | None:
    if choice is None:
        return None
    if isinstance(choice, str):
        return "required" if choice == "any" else choice
    name = tool_choice_name(choice)
    return {"type": "function", "name": name} if name is not None else None


def _encode_text_format(response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    if not response_format:
        return None
    kind = response_format.get("type")
    if kind == "json_schema":
        schema = response_format.get("json_schema")
        spec = dict(schema) if isinstance(schema, OBJECT) else {}
        return {"format": {"type": "json_schema", **spec}}
    if kind == "json_object":
        return {"format": {"type": "json_object"}}
    return None
