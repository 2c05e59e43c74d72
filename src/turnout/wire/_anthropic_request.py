"""Anthropic Messages requests for an upstream: a neutral request -> a Messages body.

`max_tokens` is required by Anthropic, so a request without one asks for `DEFAULT_MAX_TOKENS`;
consecutive tool results merge into one user message; a temperature above 1 is clamped to 1,
and when a request that did not come from this format sets both temperature and top_p only the
temperature is sent. What Anthropic cannot carry is dropped (`translate.untranslatable` names
it); an OpenAI block the codec does not know, or a message left empty, is refused (400).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from turnout.wire._anthropic_response import FORMAT, encode_assistant_blocks
from turnout.wire._body import caller_path, refuse_emptied, refuse_unknown, split_data_url
from turnout.wire.model import DocumentPart, ImagePart, NativeBlock, TextPart
from turnout.wire.structured import output_config_format
from turnout.wire.tool_kinds import flattened
from turnout.wire.translate import is_same_family, tool_choice_name

if TYPE_CHECKING:
    from turnout.wire.model import ChatRequest, Message, Part, Tool

__all__ = ["DEFAULT_MAX_TOKENS", "encode_request"]

DEFAULT_MAX_TOKENS = 4096
"""`max_tokens` sent to Anthropic when the request sets none (Anthropic requires one)."""


def encode_request(
    request: ChatRequest, *, model: str, default_max_tokens: int = DEFAULT_MAX_TOKENS
) -> dict[str, Any]:
    """A neutral request -> a Messages body for an upstream asking for `model`.

    `max_tokens` is the request's, else `default_max_tokens` (4096). System messages found
    among `messages` stay in place when the request came from this format, else join the
    system prompt. A JSON schema goes as `output_config.format`. `stream` follows
    `request.stream`. `extra` is merged (without overriding modelled fields) only when the
    request came from this format or from code.
    """
    request = flattened(request)
    same = is_same_family(request, FORMAT)
    system = request.system if request.origin == FORMAT else request.folded_system
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens or default_max_tokens,
        "messages": _encode_messages(request),
    }
    if system:
        body["system"] = _encode_system(system)
    tools = [encoded for tool in request.tools if (encoded := _encode_tool(tool)) is not None]
    if tools:
        body["tools"] = tools
        choice = _encode_tool_choice(request.tool_choice)
        if choice is not None:
            body["tool_choice"] = choice
    _encode_sampling(request, body)
    if request.stop:
        body["stop_sequences"] = list(request.stop)
    if request.thinking is not None and request.origin in (None, FORMAT):
        body["thinking"] = request.thinking
    if request.user is not None:
        body["metadata"] = {"user_id": request.user}
    _encode_output_config(request, body, same)
    if request.stream:
        body["stream"] = True
    if same:
        for key, value in request.extra.items():
            body.setdefault(key, value)
    return body


def _encode_output_config(request: ChatRequest, body: dict[str, Any], same: bool) -> None:
    """The schema as `output_config.format`, beside the rest of the caller's own
    `output_config` when it came from this format."""
    config = dict(request.extra.get("output_config") or {}) if same else {}
    fmt = output_config_format(request.response_format)
    if fmt is not None:
        config["format"] = fmt
    if config:
        body["output_config"] = config


def _encode_sampling(request: ChatRequest, body: dict[str, Any]) -> None:
    temperature = request.temperature
    if temperature is not None:
        body["temperature"] = min(temperature, 1.0)
    # Recent Claude models refuse temperature and top_p together; a caller of this very
    # format chose to send both, anyone else gets the temperature alone.
    if request.top_p is not None and (temperature is None or request.origin == FORMAT):
        body["top_p"] = request.top_p


def _encode_system(parts: list[TextPart]) -> str | list[dict[str, Any]]:
    if len(parts) == 1 and parts[0].cache_control is None:
        return parts[0].text
    return [_text_block(p) for p in parts]


def _text_block(part: TextPart) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": part.text}
    if part.cache_control is not None:
        block["cache_control"] = part.cache_control
    return block


def _encode_messages(request: ChatRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    merging = False
    for index, message in enumerate(request.messages):
        refuse_unknown(message.content, FORMAT)
        if message.role == "tool":
            block = _tool_result_block(message)
            if "content" not in block:
                refuse_emptied(message.content, FORMAT, partial(caller_path, request, index))
            if merging:
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
                merging = True
            continue
        merging = False
        if message.role == "assistant":
            content: Any = encode_assistant_blocks(message.content, message.tool_calls)
        elif message.role == "user":
            content = _encode_user_content(message.content)
        elif request.origin == FORMAT:
            content = _encode_user_content(message.content)  # a system message, in place
        else:
            continue  # system messages joined the system prompt
        if content:
            out.append({"role": message.role, "content": content})
        else:
            refuse_emptied(message.content, FORMAT, partial(caller_path, request, index))
    return out


def _encode_user_content(parts: list[Part]) -> str | list[dict[str, Any]]:
    if len(parts) == 1 and isinstance(parts[0], TextPart) and parts[0].cache_control is None:
        return parts[0].text
    return [b for p in parts if (b := _encode_part(p)) is not None]


def _encode_part(part: Part) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        return _text_block(part) if part.text else None
    if isinstance(part, NativeBlock):
        return part.block if part.format == FORMAT else None
    if isinstance(part, ImagePart):
        block: dict[str, Any] | None = {"type": "image", "source": _image_source(part)}
    elif isinstance(part, DocumentPart):
        block = _document_block(part)
    else:
        return None
    if block is not None and part.cache_control is not None:
        block["cache_control"] = part.cache_control
    return block


def _image_source(part: ImagePart) -> dict[str, Any]:
    if part.data is not None:
        return {"type": "base64", "media_type": part.media_type or "image/png", "data": part.data}
    url = part.url or ""
    split = split_data_url(url)
    if split is not None:
        return {"type": "base64", "media_type": split[0], "data": split[1]}
    return {"type": "url", "url": url}


def _document_block(part: DocumentPart) -> dict[str, Any] | None:
    if part.data is not None:
        source = {
            "type": "base64",
            "media_type": part.media_type or "application/pdf",
            "data": part.data,
        }
    elif part.text is not None:
        source = {"type": "text", "media_type": part.media_type or "text/plain", "data": part.text}
    elif part.url is not None:
        source = {"type": "url", "url": part.url}
    else:
        return None
    block: dict[str, Any] = {"type": "document", "source": source}
    if part.title is not None:
        block["title"] = part.title
    return block


def _tool_result_block(message: Message) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id or ""}
    content = _encode_user_content(message.content)
    if content:
        block["content"] = content
    if message.is_error:
        block["is_error"] = True
    return block


def _encode_tool(tool: Tool) -> dict[str, Any] | None:
    if tool.native is not None:
        return tool.native.block if tool.native.format == FORMAT else None
    out: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        out["description"] = tool.description
    out["input_schema"] = tool.parameters or {"type": "object", "properties": {}}
    if tool.cache_control is not None:
        out["cache_control"] = tool.cache_control
    return out


def _encode_tool_choice(choice: str | dict[str, Any] | None) -> dict[str, Any] | None:
    if choice is None:
        return None
    if isinstance(choice, str):
        kind = {"required": "any", "any": "any", "auto": "auto", "none": "none"}.get(choice)
        return {"type": kind} if kind else None
    name = tool_choice_name(choice)
    return {"type": "tool", "name": name} if name is not None else None
