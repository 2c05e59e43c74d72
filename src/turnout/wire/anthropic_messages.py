"""Anthropic Messages codec: requests here; answers, streams and errors re-exported.

Neutral mapping of a request: `system` (a string or text blocks, `cache_control` kept) is
`request.system`; a `role: "system"` message inside `messages` (newer Claude models take one
after a user turn) is a system message in place, text only; `output_config.format` (a JSON
schema) is `response_format`, the rest of `output_config` stays in `extra`; `stop_sequences`
is `stop`; `metadata.user_id` is `user` (the rest of `metadata` is kept in `metadata`, minus
the reserved `routing`); `tool_choice` `auto`, `any`,
`none`, `{"type": "tool", "name": …}` becomes `"auto"`, `"required"`, `"none"`,
`{"name": …}`; a user message's `tool_result` blocks become `tool` messages (before the rest of
that message); tools that are not plain functions (server tools) and blocks no codec models
stay verbatim as `NativeBlock`s, and a block of a type Anthropic does not define (yet) as an
`UnknownBlock` (sent as is to Anthropic, refused by name when translated). Every other top-level
field (`top_k`, `service_tier` …) goes to `extra`; a top-level `routing` is dropped (reserved for
turnout's own routing object). Numbers are checked against what the vendors accept:
`max_tokens` from 1 to 2**31 - 1, `temperature` 0-2 (the widest any target family takes),
`top_p` 0-1, `top_k` at least 0.

Encoding into this format: `max_tokens` is required by Anthropic, so a request without one asks
for `DEFAULT_MAX_TOKENS` (4096); consecutive tool results merge into one user message; a
temperature above 1 (OpenAI allows up to 2) is clamped to 1, and when a request that did not
come from this format sets both temperature and top_p only the temperature is sent (recent Claude
models refuse both).
What Anthropic cannot carry is dropped and named by `turnout.wire.translate.untranslatable`;
an OpenAI block the codec does not know, or a message that would be left empty, is refused (400).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from turnout.wire._anthropic_response import (
    FORMAT,
    decode_response,
    encode_assistant_blocks,
    encode_response,
    error_body,
)
from turnout.wire._anthropic_stream import MESSAGE_STOP, StreamDecoder, StreamEncoder, error_event
from turnout.wire._body import (
    TOKEN_LIMIT,
    UnknownBlock,
    as_list,
    as_object,
    caller_path,
    dump_arguments,
    invalid,
    load_request,
    opt_bool,
    opt_int_in,
    opt_number_in,
    opt_object,
    opt_str,
    refuse_emptied,
    refuse_unknown,
    rewrite,
    split_data_url,
)
from turnout.wire.model import (
    ChatRequest,
    DocumentPart,
    ImagePart,
    Message,
    NativeBlock,
    Part,
    RawBody,
    TextPart,
    ThinkingPart,
    Tool,
    ToolCall,
)
from turnout.wire.structured import from_output_config, output_config_format
from turnout.wire.tool_kinds import flattened
from turnout.wire.translate import is_same_family, tool_choice_name

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "FORMAT",
    "MESSAGE_STOP",
    "StreamDecoder",
    "StreamEncoder",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "error_body",
    "error_event",
    "forward_body",
    "message_paths",
]

DEFAULT_MAX_TOKENS = 4096
"""`max_tokens` sent to Anthropic when the request sets none (Anthropic requires one)."""

_MODELED = frozenset(
    {
        "model",
        "messages",
        "system",
        "max_tokens",
        "metadata",
        "stop_sequences",
        "stream",
        "temperature",
        "top_p",
        "tools",
        "tool_choice",
        "thinking",
        "output_config",
        "routing",
    }
)
_ROLES = "one of user, assistant, system"
_BLOCKS = "a string or a list of content blocks"
_KNOWN_BLOCKS = frozenset(
    {
        # What Anthropic's own SDK defines for request content, beta blocks included: other
        # types are kept as `UnknownBlock`s.
        "advisor_tool_result",
        "bash_code_execution_tool_result",
        "browser_state",
        "code_execution_tool_result",
        "compaction",
        "container_upload",
        "document",
        "fallback",
        "image",
        "mcp_tool_listing",
        "mcp_tool_result",
        "mcp_tool_use",
        "redacted_thinking",
        "search_result",
        "server_tool_use",
        "text",
        "text_editor_code_execution_tool_result",
        "thinking",
        "tool_addition",
        "tool_reference",
        "tool_removal",
        "tool_result",
        "tool_search_tool_result",
        "tool_use",
        "web_fetch_tool_result",
        "web_search_tool_result",
    }
)
_CHOICES = {"auto": "auto", "any": "required", "none": "none"}


def decode_request(body: bytes | Mapping[str, Any]) -> ChatRequest:
    """A caller's Messages body -> neutral request (`origin` = `anthropic-messages`).

    Given bytes, the body is parsed and kept as `request.source` for same-format forwarding.
    A shape Anthropic would refuse raises `InvalidRequest` (status 400) naming the field.
    """
    obj = load_request(body)
    items = as_list(obj.get("messages"), "messages")
    if not items:
        raise invalid("messages", "at least one message")
    messages: list[Message] = []
    for i, item in enumerate(items):
        _decode_message(item, f"messages[{i}]", messages)
    opt_int_in(obj, "top_k", 0, None)
    metadata = opt_object(obj, "metadata", "")
    user = None
    if metadata is not None:
        metadata.pop("routing", None)
        user = opt_str(metadata, "user_id", "metadata")
    stop = obj.get("stop_sequences")
    if stop is not None and not (isinstance(stop, list) and all(isinstance(s, str) for s in stop)):
        raise invalid("stop_sequences", "a list of strings")
    extra = {k: v for k, v in obj.items() if k not in _MODELED}
    response_format = None
    if obj.get("output_config") is not None:
        response_format, rest = from_output_config(obj["output_config"], "output_config")
        if rest:
            extra["output_config"] = rest
    return ChatRequest(
        messages=messages,
        model=opt_str(obj, "model", ""),
        system=_decode_system(obj.get("system")),
        tools=_decode_tools(obj.get("tools")),
        tool_choice=_decode_tool_choice(obj.get("tool_choice")),
        response_format=response_format,
        temperature=opt_number_in(obj, "temperature", 0.0, 2.0),
        top_p=opt_number_in(obj, "top_p", 0.0, 1.0),
        max_tokens=opt_int_in(obj, "max_tokens", 1, TOKEN_LIMIT),
        stop=list(stop) if stop is not None else None,
        thinking=opt_object(obj, "thinking", ""),
        user=user,
        metadata=metadata,
        stream=bool(opt_bool(obj, "stream", "")),
        extra=extra,
        source=RawBody(FORMAT, bytes(body)) if isinstance(body, bytes | bytearray) else None,
        origin=FORMAT,
    )


def message_paths(body: bytes | Mapping[str, Any]) -> list[str]:
    """Where each neutral message of `decode_request(body)` comes from in the caller's body
    (`messages[i]`; a message's tool results and the rest of it share its path), for error
    messages. `body` must decode."""
    items = as_list(load_request(body).get("messages"), "messages")
    messages: list[Message] = []
    paths: list[str] = []
    for i, item in enumerate(items):
        _decode_message(item, f"messages[{i}]", messages)
        paths += [f"messages[{i}]"] * (len(messages) - len(paths))
    return paths


def _decode_system(value: Any) -> list[TextPart]:
    if value is None:
        return []
    if isinstance(value, str):
        return [TextPart(value)]
    parts: list[TextPart] = []
    for i, item in enumerate(as_list(value, "system")):
        block = as_object(item, f"system[{i}]")
        text = opt_str(block, "text", f"system[{i}]")
        if block.get("type") != "text" or text is None:
            raise invalid(f"system[{i}]", "a text block")
        parts.append(TextPart(text, cache_control=opt_object(block, "cache_control", "")))
    return parts


def _decode_message(item: Any, path: str, out: list[Message]) -> None:
    obj = as_object(item, path)
    role = obj.get("role")
    if role == "system":
        out.append(Message("system", _decode_system_content(obj.get("content"), path)))
        return
    if role not in ("user", "assistant"):
        raise invalid(f"{path}.role", _ROLES)
    content = obj.get("content")
    if isinstance(content, str):
        out.append(Message(role, [TextPart(content)]))
        return
    if not isinstance(content, list):
        raise invalid(f"{path}.content", _BLOCKS)
    parts: list[Part] = []
    calls: list[ToolCall] = []
    results: list[Message] = []
    for j, value in enumerate(content):
        block_path = f"{path}.content[{j}]"
        block = as_object(value, block_path)
        kind = block.get("type")
        if kind == "tool_result" and role == "user":
            results.append(_decode_tool_result(block, block_path))
        elif kind == "tool_use" and role == "assistant":
            calls.append(_decode_tool_use(block, block_path))
        else:
            parts.append(_decode_block(block, block_path))
    out.extend(results)
    if parts or calls or not results:
        out.append(Message(role, parts, tool_calls=calls))


def _decode_system_content(content: Any, path: str) -> list[Part]:
    """A system message in `messages` (sent in place to models that take one): a string or
    text blocks."""
    if isinstance(content, str):
        return [TextPart(content)]
    parts: list[Part] = []
    for j, value in enumerate(as_list(content, f"{path}.content")):
        block = as_object(value, f"{path}.content[{j}]")
        part = _decode_block(block, f"{path}.content[{j}]") if block.get("type") == "text" else None
        if not isinstance(part, TextPart):
            raise invalid(f"{path}.content[{j}]", "a text block in a system message")
        parts.append(part)
    return parts


def _decode_block(block: Mapping[str, Any], path: str) -> Part:
    kind = block.get("type")
    cache_control = opt_object(block, "cache_control", path)
    if kind == "text":
        text = opt_str(block, "text", path)
        if text is None:
            raise invalid(f"{path}.text", "a string")
        return TextPart(text, cache_control=cache_control)
    if kind == "image":
        source = as_object(block.get("source"), f"{path}.source")
        if source.get("type") == "base64":
            data = opt_str(source, "data", f"{path}.source") or ""
            media_type = opt_str(source, "media_type", f"{path}.source")
            return ImagePart(data=data, media_type=media_type, cache_control=cache_control)
        url = opt_str(source, "url", f"{path}.source")
        if source.get("type") == "url" and url is not None:
            return ImagePart(url=url, cache_control=cache_control)
    elif kind == "document":
        document = _decode_document(block, path, cache_control)
        if document is not None:
            return document
    elif kind == "thinking":
        return ThinkingPart(
            opt_str(block, "thinking", path) or "", signature=opt_str(block, "signature", path)
        )
    elif kind == "redacted_thinking":
        return ThinkingPart(redacted=True, data=opt_str(block, "data", path) or "")
    elif not isinstance(kind, str):
        raise invalid(f"{path}.type", "a string")
    elif kind not in _KNOWN_BLOCKS:
        return UnknownBlock(FORMAT, dict(block), path=path)
    return NativeBlock(FORMAT, dict(block))


def _decode_document(
    block: Mapping[str, Any], path: str, cache_control: dict[str, Any] | None
) -> DocumentPart | None:
    source = as_object(block.get("source"), f"{path}.source")
    kind = source.get("type")
    title = opt_str(block, "title", path)
    media_type = opt_str(source, "media_type", f"{path}.source")
    if kind == "base64":
        data = opt_str(source, "data", f"{path}.source") or ""
        return DocumentPart(
            data=data, media_type=media_type, title=title, cache_control=cache_control
        )
    if kind == "url":
        url = opt_str(source, "url", f"{path}.source")
        return DocumentPart(url=url, title=title, cache_control=cache_control)
    if kind == "text":
        text = opt_str(source, "data", f"{path}.source") or ""
        return DocumentPart(
            text=text, media_type=media_type, title=title, cache_control=cache_control
        )
    return None


def _decode_tool_result(block: Mapping[str, Any], path: str) -> Message:
    call_id = opt_str(block, "tool_use_id", path)
    if call_id is None:
        raise invalid(f"{path}.tool_use_id", "a string")
    content = block.get("content")
    if content is None:
        parts: list[Part] = []
    elif isinstance(content, str):
        parts = [TextPart(content)]
    else:
        parts = [
            _decode_block(as_object(c, f"{path}.content[{k}]"), f"{path}.content[{k}]")
            for k, c in enumerate(as_list(content, f"{path}.content"))
        ]
    is_error = bool(opt_bool(block, "is_error", path))
    return Message("tool", parts, tool_call_id=call_id, is_error=is_error)


def _decode_tool_use(block: Mapping[str, Any], path: str) -> ToolCall:
    name = opt_str(block, "name", path)
    if name is None:
        raise invalid(f"{path}.name", "a string")
    arguments = block.get("input", {})
    if not isinstance(arguments, dict):
        raise invalid(f"{path}.input", "an object")
    return ToolCall(
        id=opt_str(block, "id", path) or "", name=name, arguments=dump_arguments(arguments)
    )


def _decode_tools(value: Any) -> list[Tool]:
    if value is None:
        return []
    tools: list[Tool] = []
    for i, item in enumerate(as_list(value, "tools")):
        path = f"tools[{i}]"
        tool = as_object(item, path)
        name = opt_str(tool, "name", path)
        kind = tool.get("type")
        if kind not in (None, "custom"):
            tools.append(Tool(name or str(kind), native=NativeBlock(FORMAT, dict(tool))))
            continue
        if name is None:
            raise invalid(f"{path}.name", "a string")
        tools.append(
            Tool(
                name,
                description=opt_str(tool, "description", path),
                parameters=opt_object(tool, "input_schema", path),
                cache_control=opt_object(tool, "cache_control", path),
            )
        )
    return tools


def _decode_tool_choice(value: Any) -> str | dict[str, Any] | None:
    if value is None:
        return None
    choice = as_object(value, "tool_choice")
    kind = choice.get("type")
    if isinstance(kind, str) and kind in _CHOICES:
        return _CHOICES[kind]
    name = opt_str(choice, "name", "tool_choice")
    if kind == "tool" and name is not None:
        return {"name": name}
    raise invalid("tool_choice.type", "one of auto, any, none, tool")


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


def forward_body(
    source: bytes, *, model: str, stream: bool, parsed: Mapping[str, Any] | None = None
) -> bytes:
    """The caller's own body for an upstream of the same format: only `model` replaced.

    A top-level `routing` key and `metadata.routing` are dropped (reserved for turnout);
    `stream` is set to the mode asked for. Every other field (`cache_control`, beta fields,
    unknown fields) is kept; when nothing needs changing the original bytes are returned as
    they are. Invalid JSON raises `InvalidRequest`. `parsed` is `source` already parsed,
    when the caller's side has it (it is not parsed again, nor changed).
    """

    def edit(body: dict[str, Any]) -> bool:
        changed = "routing" in body
        body.pop("routing", None)
        metadata = body.get("metadata")
        if isinstance(metadata, dict) and "routing" in metadata:
            del metadata["routing"]
            if not metadata:
                del body["metadata"]
            changed = True
        if body.get("model") != model:
            body["model"] = model
            changed = True
        if bool(body.get("stream")) != stream:
            body["stream"] = stream
            changed = True
        return changed

    return rewrite(source, edit, parsed)
