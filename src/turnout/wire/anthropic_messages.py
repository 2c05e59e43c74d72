"""Anthropic Messages codec: a caller's requests here; the rest re-exported.

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

from typing import TYPE_CHECKING, Any

from turnout.wire._anthropic_request import DEFAULT_MAX_TOKENS, encode_request
from turnout.wire._anthropic_response import (
    FORMAT,
    decode_response,
    encode_response,
    error_body,
)
from turnout.wire._anthropic_stream import MESSAGE_STOP, StreamDecoder, StreamEncoder, error_event
from turnout.wire._body import (
    TOKEN_LIMIT,
    UnknownBlock,
    as_list,
    as_object,
    dump_arguments,
    invalid,
    load_request,
    opt_bool,
    opt_int_in,
    opt_number_in,
    opt_object,
    opt_str,
    rewrite,
)
from turnout.wire.codec import Codec, register
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
from turnout.wire.structured import from_output_config

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "CODEC",
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


def _stream_encoder(model: str, include_usage: bool) -> StreamEncoder:
    del include_usage  # an Anthropic stream always reports usage (message_start, message_delta)
    return StreamEncoder(model=model)


CODEC = register(
    Codec(
        format=FORMAT,
        encode_request=encode_request,
        decode_response=decode_response,
        stream_decoder=StreamDecoder,
        decode_request=decode_request,
        encode_response=encode_response,
        forward_body=forward_body,
        stream_encoder=_stream_encoder,
        terminator=MESSAGE_STOP,
        error_body=error_body,
        error_event=error_event,
        message_paths=message_paths,
        id_prefix="msg_",
    )
)
"""Anthropic Messages."""
