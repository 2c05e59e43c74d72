"""OpenAI Responses codec: a caller's requests here; the rest re-exported.

Neutral mapping of a request: `input` is one user message when it is a string; as a list of
items, `message` items (with or without `type`) keep their role, except `system` and `developer`
messages, which fold, in order, into `request.system` after `instructions`; `input_text` and
`output_text` parts are text, `refusal` parts text, `input_image` an image (a base64 data URL
becomes `data` and `media_type`), `input_file` with `file_data` a document; a `function_call`
item is a tool call of the assistant message before it (or of a new one), `call_id` its id; a
`function_call_output` item a tool result answering `call_id`; a `reasoning` item's summary a
thinking part of the assistant's turn. `max_output_tokens` is `max_tokens`, `reasoning.effort`
`reasoning_effort`, `text.format` (`json_schema`, `json_object`) `response_format` in Chat
Completions' shape (the rest of `text` stays in `extra`); `tool_choice` becomes `"auto"`,
`"none"`, `"required"` or `{"name": …}`. A `namespace` tool of functions becomes its functions,
each with its `namespace` (`turnout.wire.tool_kinds`), and a `function_call` item's
`namespace` is its call's.

What only OpenAI's own server can do is named in `request.server_features`, so that a target
speaking another format is ineligible for it: `previous_response_id`, `conversation`,
`store: true` (the answer kept for a later `GET`), `background`, a stored `prompt`, an
`item_reference` or another server-side item in `input`. A tool that is not a function
(`web_search`, `file_search`, `code_interpreter`, `mcp` …) stays verbatim as a native tool,
which only this format can carry.

Every other top-level field goes to `extra`, except `routing`, reserved for turnout's own
routing object and dropped, like `metadata.routing`. Numbers are checked as OpenAI checks them:
`max_output_tokens` from 1 to 2**31 - 1, `temperature` 0-2, `top_p` 0-1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnout.errors import MalformedRequest
from turnout.wire._body import (
    OBJECT,
    TOKEN_LIMIT,
    UnknownBlock,
    as_list,
    as_object,
    invalid,
    load_request,
    opt_bool,
    opt_int_in,
    opt_number_in,
    opt_object,
    opt_str,
    rewrite,
    split_data_url,
)
from turnout.wire._openai_response import error_body
from turnout.wire._responses_request import encode_request
from turnout.wire._responses_response import (
    FORMAT,
    decode_response,
    encode_response,
)
from turnout.wire._responses_stream import StreamDecoder, StreamEncoder, error_event
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
from turnout.wire.structured import check_schema_spec
from turnout.wire.tool_kinds import namespaced_names

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "CODEC",
    "FORMAT",
    "SERVER_ITEMS",
    "StreamDecoder",
    "StreamEncoder",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "error_body",
    "error_event",
    "forward_body",
    "namespaced_tools",
]

_MODELED = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "text",
        "temperature",
        "top_p",
        "max_output_tokens",
        "reasoning",
        "user",
        "metadata",
        "stream",
        "routing",
    }
)
_STATEFUL = ("previous_response_id", "conversation", "prompt")
"""Top-level fields that point at state kept on OpenAI's server."""
SERVER_ITEMS = frozenset(
    {
        "item_reference",
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "computer_call",
        "computer_call_output",
        "image_generation_call",
        "local_shell_call",
        "local_shell_call_output",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "custom_tool_call",
        "custom_tool_call_output",
    }
)
"""Input item types that only OpenAI's server can read (they refer to its state or its tools)."""
_KNOWN_PARTS = frozenset({"input_text", "input_image", "input_file", "input_audio"})
_ROLES = "one of user, assistant, system, developer"
_CONTENT = "a string or a list of content parts"


def decode_request(body: bytes | Mapping[str, Any]) -> ChatRequest:
    """A caller's Responses body -> neutral request (`origin` = `openai-responses`).

    Given bytes, the body is parsed and kept as `request.source` for same-format forwarding.
    A shape OpenAI would refuse raises `InvalidRequest` (status 400) naming the field.
    """
    obj = load_request(body)
    system: list[TextPart] = []
    instructions = opt_str(obj, "instructions", "")
    if instructions:
        system.append(TextPart(instructions))
    features: dict[str, None] = {name: None for name in _STATEFUL if obj.get(name)}
    if opt_bool(obj, "store", "") is True:
        features["store"] = None
    if opt_bool(obj, "background", "") is True:
        features["background"] = None
    messages = _decode_input(obj.get("input"), system, features)
    metadata = opt_object(obj, "metadata", "")
    if metadata is not None:
        metadata.pop("routing", None)
    reasoning = opt_object(obj, "reasoning", "")
    return ChatRequest(
        messages=messages,
        model=opt_str(obj, "model", ""),
        system=system,
        tools=_decode_tools(obj.get("tools")),
        tool_choice=_decode_tool_choice(obj.get("tool_choice")),
        response_format=_decode_text_format(obj.get("text")),
        temperature=opt_number_in(obj, "temperature", 0.0, 2.0),
        top_p=opt_number_in(obj, "top_p", 0.0, 1.0),
        max_tokens=opt_int_in(obj, "max_output_tokens", 1, TOKEN_LIMIT),
        reasoning_effort=opt_str(reasoning, "effort", "reasoning") if reasoning else None,
        user=opt_str(obj, "user", ""),
        metadata=metadata,
        stream=bool(opt_bool(obj, "stream", "")),
        extra=_extra(obj),
        source=RawBody(FORMAT, bytes(body)) if isinstance(body, bytes | bytearray) else None,
        origin=FORMAT,
        server_features=tuple(features),
    )


def _extra(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The fields no other format models; `text` options beside its `format` (`verbosity`)
    among them, so that a translation names what it drops."""
    extra = {k: v for k, v in obj.items() if k not in _MODELED}
    text = obj.get("text")
    if isinstance(text, OBJECT):
        rest = {k: v for k, v in text.items() if k != "format"}
        if rest:
            extra["text"] = rest
    return extra


def _decode_input(value: Any, system: list[TextPart], features: dict[str, None]) -> list[Message]:
    if isinstance(value, str):
        return [Message.user(value)]
    if value is None and features:
        return []  # the conversation lives on OpenAI's server
    items = as_list(value, "input")
    messages: list[Message] = []
    for i, item in enumerate(items):
        _decode_item(as_object(item, f"input[{i}]"), f"input[{i}]", system, messages, features)
    if not messages and not features:
        raise invalid("input", "a string or at least one message item")
    return messages


def _decode_item(
    item: Mapping[str, Any],
    path: str,
    system: list[TextPart],
    out: list[Message],
    features: dict[str, None],
) -> None:
    kind = item.get("type", "message")
    if kind == "message":
        _decode_message(item, path, system, out)
    elif kind == "function_call":
        name = opt_str(item, "name", path)
        call_id = opt_str(item, "call_id", path)
        if name is None or call_id is None:
            raise invalid(f"{path}.{'name' if name is None else 'call_id'}", "a string")
        arguments = opt_str(item, "arguments", path) or "{}"
        namespace = opt_str(item, "namespace", path)
        call = ToolCall(id=call_id, name=name, arguments=arguments, namespace=namespace)
        _assistant(out).tool_calls.append(call)
    elif kind == "function_call_output":
        call_id = opt_str(item, "call_id", path)
        if call_id is None:
            raise invalid(f"{path}.call_id", "a string")
        output = item.get("output")
        parts: list[Part] = (
            [TextPart(output)]
            if isinstance(output, str)
            else _decode_parts(output, f"{path}.output")
        )
        out.append(Message("tool", parts, tool_call_id=call_id))
    elif kind == "reasoning":
        summary = item.get("summary")
        texts = [
            s.get("text", "")
            for s in as_list(summary if summary is not None else [], f"{path}.summary")
            if isinstance(s, OBJECT) and isinstance(s.get("text"), str)
        ]
        if texts:
            _assistant(out).content.append(ThinkingPart("\n\n".join(texts)))
    elif isinstance(kind, str) and kind in SERVER_ITEMS:
        features[kind] = None
    elif isinstance(kind, str):
        raise invalid(f"{path}.type", "a known input item type")
    else:
        raise invalid(f"{path}.type", "a string")


def _assistant(out: list[Message]) -> Message:
    """The assistant message a function call or reasoning item belongs to: the last message
    when it is the assistant's, else a new one."""
    if out and out[-1].role == "assistant":
        return out[-1]
    message = Message("assistant", [])
    out.append(message)
    return message


def _decode_message(
    item: Mapping[str, Any], path: str, system: list[TextPart], out: list[Message]
) -> None:
    role = item.get("role")
    parts = _decode_parts(item.get("content"), f"{path}.content")
    if role in ("system", "developer"):
        for part in parts:
            if not isinstance(part, TextPart):
                raise invalid(f"{path}.content", "text parts only in a system message")
            system.append(part)
    elif role == "user":
        out.append(Message("user", parts))
    elif role == "assistant":
        last = out[-1] if out else None
        if last is not None and last.role == "assistant" and not last.tool_calls:
            last.content.extend(parts)  # after its reasoning item
        else:
            out.append(Message("assistant", parts))
    else:
        raise invalid(f"{path}.role", _ROLES)


def _decode_parts(content: Any, path: str) -> list[Part]:
    if isinstance(content, str):
        return [TextPart(content)]
    if not isinstance(content, list):
        raise invalid(path, _CONTENT)
    return [
        _decode_part(as_object(p, f"{path}[{j}]"), f"{path}[{j}]") for j, p in enumerate(content)
    ]


def _decode_part(part: Mapping[str, Any], path: str) -> Part:
    kind = part.get("type")
    if kind in ("input_text", "output_text"):
        text = opt_str(part, "text", path)
        if text is None:
            raise invalid(f"{path}.text", "a string")
        return TextPart(text)
    if kind == "refusal":
        return TextPart(opt_str(part, "refusal", path) or "")
    if kind == "input_image":
        url = opt_str(part, "image_url", path)
        detail = opt_str(part, "detail", path)
        if url is None:
            return NativeBlock(FORMAT, dict(part))  # a file id: OpenAI's own storage
        split = split_data_url(url)
        if split is not None:
            return ImagePart(data=split[1], media_type=split[0], detail=detail)
        return ImagePart(url=url, detail=detail)
    if kind == "input_file":
        file_data = opt_str(part, "file_data", path)
        if file_data is None:
            return NativeBlock(FORMAT, dict(part))
        split = split_data_url(file_data)
        media_type, data = split if split else ("application/pdf", file_data)
        return DocumentPart(data=data, media_type=media_type, title=opt_str(part, "filename", path))
    if not isinstance(kind, str):
        raise invalid(f"{path}.type", "a string")
    if kind not in _KNOWN_PARTS:
        return UnknownBlock(FORMAT, dict(part), path=path)
    return NativeBlock(FORMAT, dict(part))


def _decode_tools(value: Any) -> list[Tool]:
    if value is None:
        return []
    tools: list[Tool] = []
    for i, item in enumerate(as_list(value, "tools")):
        path = f"tools[{i}]"
        tool = as_object(item, path)
        kind = tool.get("type")
        if not isinstance(kind, str):
            raise invalid(f"{path}.type", "a string")
        if kind == "namespace" and _plain_namespace(tool, path):
            tools.extend(_namespace_functions(tool, path))
        elif kind != "function":
            name = tool.get("name") or tool.get("server_label")
            native = NativeBlock(FORMAT, dict(tool))
            tools.append(Tool(name if isinstance(name, str) else kind, native=native))
        else:
            tools.append(_decode_function(tool, path, None))
    return tools


def namespaced_tools(body: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """Flat name -> (namespace, name) of the functions a Responses body declares inside
    `namespace` tools (`turnout.wire.tool_kinds`); empty when its tools do not decode."""
    try:
        tools = _decode_tools(body.get("tools"))
    except MalformedRequest:
        return {}
    return namespaced_names(tools)


def _decode_function(tool: Mapping[str, Any], path: str, namespace: str | None) -> Tool:
    name = opt_str(tool, "name", path)
    if name is None:
        raise invalid(f"{path}.name", "a string")
    return Tool(
        name,
        description=opt_str(tool, "description", path),
        parameters=opt_object(tool, "parameters", path),
        namespace=namespace,
    )


def _plain_namespace(tool: Mapping[str, Any], path: str) -> bool:
    """True when a `namespace` tool groups only functions (it is then flattened); one with
    other tools inside stays a native tool, which only this format can carry."""
    if not isinstance(tool.get("name"), str) or not tool["name"]:
        raise invalid(f"{path}.name", "a non-empty string")
    inner = as_list(tool.get("tools"), f"{path}.tools")
    return all(isinstance(t, OBJECT) and t.get("type") == "function" for t in inner)


def _namespace_functions(tool: Mapping[str, Any], path: str) -> list[Tool]:
    namespace = str(tool["name"])
    return [
        _decode_function(as_object(t, f"{path}.tools[{j}]"), f"{path}.tools[{j}]", namespace)
        for j, t in enumerate(as_list(tool.get("tools"), f"{path}.tools"))
    ]


def _decode_tool_choice(value: Any) -> str | dict[str, Any] | None:
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, OBJECT):
        raise invalid("tool_choice", "a string or an object")
    name = value.get("name")
    if value.get("type") == "function" and isinstance(name, str):
        return {"name": name}
    return dict(value)


def _decode_text_format(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    text = as_object(value, "text")
    fmt = opt_object(text, "format", "text")
    if fmt is None:
        return None
    kind = fmt.get("type")
    if kind == "json_schema":
        checked = check_schema_spec(fmt, "text.format")
        schema = {k: checked[k] for k in ("name", "schema", "strict", "description") if k in fmt}
        return {"type": "json_schema", "json_schema": schema}
    if kind == "json_object":
        return {"type": "json_object"}
    if kind == "text":
        return None
    raise invalid("text.format.type", "one of text, json_schema, json_object")


def forward_body(
    source: bytes, *, model: str, stream: bool, parsed: Mapping[str, Any] | None = None
) -> bytes:
    """The caller's own body for an upstream of the same format: only `model` replaced.

    A top-level `routing` key and `metadata.routing` are dropped (reserved for turnout);
    `stream` follows `stream` (a Responses stream always ends with its usage, so nothing more is
    asked). Every other field is kept; when nothing needs changing the original bytes are
    returned as they are. Invalid JSON raises `InvalidRequest`. `parsed` is `source` already
    parsed, when the caller's side has it (it is not parsed again, nor changed).
    """

    def edit(body: dict[str, Any]) -> bool:
        changed = "routing" in body
        body.pop("routing", None)
        metadata = body.get("metadata")
        if isinstance(metadata, dict) and "routing" in metadata:
            del metadata["routing"]
            changed = True
        if body.get("model") != model:
            body["model"] = model
            changed = True
        if stream and body.get("stream") is not True:
            body["stream"] = True
            changed = True
        elif not stream and body.get("stream"):
            body["stream"] = False
            changed = True
        return changed

    return rewrite(source, edit, parsed)


def _stream_encoder(model: str, include_usage: bool) -> StreamEncoder:
    del include_usage  # a Responses stream always ends with its usage (`response.completed`)
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
        error_body=error_body,
        error_event=error_event,
        numbered_error_event=error_event,
        id_prefix="resp_",
    )
)
"""OpenAI Responses: errors in OpenAI's envelope; its stream ends with its last event."""
