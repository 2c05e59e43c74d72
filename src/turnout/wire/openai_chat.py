"""OpenAI Chat Completions codec: requests here; answers, streams and errors re-exported.

Neutral mapping of a request: `system` and `developer` messages fold, in order, into
`request.system` (text only); `max_completion_tokens` (else `max_tokens`) is `max_tokens`; a
single `stop` string becomes a one-item list; `tool_choice` becomes `"auto"`, `"none"`,
`"required"` or `{"name": …}`; a base64 data URL in `image_url` becomes an image's `data` and
`media_type`; a `file` part with `file_data` becomes a document; parts no codec models
(`input_audio`, `file_id` files) and non-function tools stay verbatim as `NativeBlock`s, and a
part of a type OpenAI does not define as an `UnknownBlock` (sent as is to an OpenAI-format
target, refused by name when translated). Every other top-level field goes to `extra`, except
`routing`, which is reserved for turnout's own routing object and dropped, like
`metadata.routing`. Numbers are checked against what the vendors accept:
`max_completion_tokens` and `max_tokens` from 1 to 2**31 - 1, `n` 1-128, `temperature` 0-2,
`top_p` 0-1. `stop` may hold more than OpenAI's 4 strings: other servers of this format take
more.

Encoding into this format drops what OpenAI cannot carry (thinking, `cache_control`, documents
by URL, non-text tool results, `is_error`): `turnout.wire.translate.untranslatable` names it.
An Anthropic block the codec does not know, or a message that would be left empty, is refused
(400).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from turnout.wire._body import (
    TOKEN_LIMIT,
    UnknownBlock,
    as_list,
    as_object,
    caller_path,
    data_url,
    invalid,
    load_request,
    opt_bool,
    opt_int,
    opt_int_in,
    opt_number_in,
    opt_object,
    opt_str,
    refuse_emptied,
    refuse_unknown,
    rewrite,
    split_data_url,
)
from turnout.wire._openai_response import (
    FORMAT,
    decode_response,
    encode_response,
    encode_tool_call,
    error_body,
    joined_text,
)
from turnout.wire._openai_stream import DONE, StreamDecoder, StreamEncoder, error_event
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
    Tool,
    ToolCall,
)
from turnout.wire.structured import check_response_format
from turnout.wire.tool_kinds import flattened
from turnout.wire.translate import is_same_family, tool_choice_name

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "CODEC",
    "DONE",
    "FORMAT",
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
        "tools",
        "tool_choice",
        "response_format",
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "stop",
        "seed",
        "reasoning_effort",
        "user",
        "metadata",
        "stream",
        "stream_options",
        "routing",
    }
)
_PARTS = "a string or a list of parts"
_KNOWN_PARTS = frozenset({"text", "refusal", "image_url", "input_audio", "file"})
"""Content part types OpenAI's own SDK defines: other types are kept as `UnknownBlock`s."""
_MAX_CHOICES = 128
_ROLES = "one of system, developer, user, assistant, tool"


def decode_request(body: bytes | Mapping[str, Any]) -> ChatRequest:
    """A caller's Chat Completions body -> neutral request (`origin` = `openai-chat`).

    Given bytes, the body is parsed and kept as `request.source` for same-format forwarding.
    A shape OpenAI would refuse raises `InvalidRequest` (status 400) naming the field.
    """
    obj = load_request(body)
    items = as_list(obj.get("messages"), "messages")
    if not items:
        raise invalid("messages", "at least one message")
    system: list[TextPart] = []
    messages: list[Message] = []
    for i, item in enumerate(items):
        _decode_message(item, f"messages[{i}]", system, messages)
    max_tokens = opt_int_in(obj, "max_completion_tokens", 1, TOKEN_LIMIT)
    if max_tokens is None:
        max_tokens = opt_int_in(obj, "max_tokens", 1, TOKEN_LIMIT)
    elif "max_tokens" in obj:
        opt_int_in(obj, "max_tokens", 1, TOKEN_LIMIT)
    opt_int_in(obj, "n", 1, _MAX_CHOICES)
    metadata = opt_object(obj, "metadata", "")
    if metadata is not None:
        metadata.pop("routing", None)
    return ChatRequest(
        messages=messages,
        model=opt_str(obj, "model", ""),
        system=system,
        tools=_decode_tools(obj.get("tools")),
        tool_choice=_decode_tool_choice(obj.get("tool_choice")),
        response_format=check_response_format(obj.get("response_format"), "response_format"),
        temperature=opt_number_in(obj, "temperature", 0.0, 2.0),
        top_p=opt_number_in(obj, "top_p", 0.0, 1.0),
        max_tokens=max_tokens,
        stop=_decode_stop(obj.get("stop")),
        seed=opt_int(obj, "seed", ""),
        reasoning_effort=opt_str(obj, "reasoning_effort", ""),
        user=opt_str(obj, "user", ""),
        metadata=metadata,
        stream=bool(opt_bool(obj, "stream", "")),
        extra={k: v for k, v in obj.items() if k not in _MODELED},
        source=RawBody(FORMAT, bytes(body)) if isinstance(body, bytes | bytearray) else None,
        origin=FORMAT,
    )


def message_paths(body: bytes | Mapping[str, Any]) -> list[str]:
    """Where each neutral message of `decode_request(body)` comes from in the caller's body
    (`messages[i]`; system messages have none), for error messages. `body` must decode."""
    items = as_list(load_request(body).get("messages"), "messages")
    messages: list[Message] = []
    paths: list[str] = []
    for i, item in enumerate(items):
        _decode_message(item, f"messages[{i}]", [], messages)
        paths += [f"messages[{i}]"] * (len(messages) - len(paths))
    return paths


def _decode_message(item: Any, path: str, system: list[TextPart], out: list[Message]) -> None:
    obj = as_object(item, path)
    role = obj.get("role")
    content = obj.get("content")
    if role in ("system", "developer"):
        for part in _decode_parts(content, path):
            if not isinstance(part, TextPart):
                raise invalid(f"{path}.content", "text parts only in a system message")
            system.append(part)
    elif role == "user":
        out.append(Message("user", _decode_parts(content, path), name=opt_str(obj, "name", path)))
    elif role == "assistant":
        parts = _decode_parts(content, path, allow_null=True)
        refusal = opt_str(obj, "refusal", path)
        if refusal:
            parts.append(TextPart(refusal))
        calls = obj.get("tool_calls")
        tool_calls = (
            [
                _decode_tool_call(c, f"{path}.tool_calls[{j}]")
                for j, c in enumerate(as_list(calls, f"{path}.tool_calls"))
            ]
            if calls is not None
            else []
        )
        out.append(
            Message("assistant", parts, tool_calls=tool_calls, name=opt_str(obj, "name", path))
        )
    elif role == "tool":
        call_id = opt_str(obj, "tool_call_id", path)
        if call_id is None:
            raise invalid(f"{path}.tool_call_id", "a string")
        out.append(Message("tool", _decode_parts(content, path), tool_call_id=call_id))
    else:
        raise invalid(f"{path}.role", _ROLES)


def _decode_parts(content: Any, path: str, *, allow_null: bool = False) -> list[Part]:
    if isinstance(content, str):
        return [TextPart(content)]
    if content is None and allow_null:
        return []
    if not isinstance(content, list):
        raise invalid(f"{path}.content", _PARTS)
    return [_decode_part(p, f"{path}.content[{j}]") for j, p in enumerate(content)]


def _decode_part(item: Any, path: str) -> Part:
    part = as_object(item, path)
    kind = part.get("type")
    if kind in ("text", "refusal"):
        text = opt_str(part, kind, path)
        if text is None:
            raise invalid(f"{path}.{kind}", "a string")
        return TextPart(text)
    if kind == "image_url":
        return _decode_image(part.get("image_url"), f"{path}.image_url")
    if kind == "file":
        file = as_object(part.get("file"), f"{path}.file")
        file_data = opt_str(file, "file_data", f"{path}.file")
        if file_data is not None:
            split = split_data_url(file_data)
            media_type, data = split if split else ("application/pdf", file_data)
            title = opt_str(file, "filename", f"{path}.file")
            return DocumentPart(data=data, media_type=media_type, title=title)
        return NativeBlock(FORMAT, dict(part))
    if not isinstance(kind, str):
        raise invalid(f"{path}.type", "a string")
    if kind not in _KNOWN_PARTS:
        return UnknownBlock(FORMAT, dict(part), path=path)
    return NativeBlock(FORMAT, dict(part))


def _decode_image(value: Any, path: str) -> ImagePart:
    image = {"url": value} if isinstance(value, str) else as_object(value, path)
    url = opt_str(image, "url", path)
    if url is None:
        raise invalid(f"{path}.url", "a string")
    detail = opt_str(image, "detail", path)
    split = split_data_url(url)
    if split is not None:
        return ImagePart(data=split[1], media_type=split[0], detail=detail)
    return ImagePart(url=url, detail=detail)


def _decode_tool_call(item: Any, path: str) -> ToolCall:
    call = as_object(item, path)
    function = as_object(call.get("function"), f"{path}.function")
    name = opt_str(function, "name", f"{path}.function")
    if name is None:
        raise invalid(f"{path}.function.name", "a string")
    arguments = function.get("arguments", "{}")
    if not isinstance(arguments, str):
        raise invalid(f"{path}.function.arguments", "a string")
    return ToolCall(id=opt_str(call, "id", path) or "", name=name, arguments=arguments)


def _decode_tools(value: Any) -> list[Tool]:
    if value is None:
        return []
    tools: list[Tool] = []
    for i, item in enumerate(as_list(value, "tools")):
        path = f"tools[{i}]"
        tool = as_object(item, path)
        kind = tool.get("type", "function")
        if kind != "function":
            if not isinstance(kind, str):
                raise invalid(f"{path}.type", "a string")
            spec = tool.get(kind)
            name = spec.get("name") if isinstance(spec, dict) else None
            native = NativeBlock(FORMAT, dict(tool))
            tools.append(Tool(name if isinstance(name, str) else kind, native=native))
            continue
        function = as_object(tool.get("function"), f"{path}.function")
        name = opt_str(function, "name", f"{path}.function")
        if name is None:
            raise invalid(f"{path}.function.name", "a string")
        tools.append(
            Tool(
                name,
                description=opt_str(function, "description", f"{path}.function"),
                parameters=opt_object(function, "parameters", f"{path}.function"),
            )
        )
    return tools


def _decode_tool_choice(value: Any) -> str | dict[str, Any] | None:
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, dict):
        raise invalid("tool_choice", "a string or an object")
    name = tool_choice_name(value)
    return {"name": name} if name is not None and value.get("type") == "function" else dict(value)


def _decode_stop(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return list(value)
    raise invalid("stop", "a string or a list of strings")


def encode_request(
    request: ChatRequest,
    *,
    model: str,
    max_tokens_field: str = "max_completion_tokens",
) -> dict[str, Any]:
    """A neutral request -> a Chat Completions body for an upstream asking for `model`.

    `max_tokens_field` is where `max_tokens` goes (default `max_completion_tokens`, which
    OpenAI's reasoning models require; pass `max_tokens` for servers that only know that).
    `stream` and `stream_options.include_usage` follow `request.stream`. `extra` is merged
    (without overriding modelled fields) only when the request came from this format or from
    code. Namespaced functions go by their flat names (`turnout.wire.tool_kinds`).
    """
    request = flattened(request)
    body: dict[str, Any] = {"model": model, "messages": _encode_messages(request)}
    tools = [encoded for tool in request.tools if (encoded := _encode_tool(tool)) is not None]
    if tools:
        body["tools"] = tools
        choice = _encode_tool_choice(request)
        if choice is not None:
            body["tool_choice"] = choice
    optional: dict[str, Any] = {
        "response_format": request.response_format,
        "temperature": request.temperature,
        "top_p": request.top_p,
        max_tokens_field: request.max_tokens,
        "stop": request.stop or None,
        "seed": request.seed,
        "reasoning_effort": request.reasoning_effort,
        "user": request.user,
    }
    body.update((k, v) for k, v in optional.items() if v is not None)
    same = is_same_family(request, FORMAT)
    if request.metadata and request.origin != "anthropic-messages":
        body["metadata"] = request.metadata
    if request.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    if same:
        for key, value in request.extra.items():
            body.setdefault(key, value)
    return body


def _encode_messages(request: ChatRequest) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": _encode_text(request.system)})
    for index, message in enumerate(request.messages):
        refuse_unknown(message.content, FORMAT)
        encoded = _encode_message(message)
        if not encoded["content"] and not message.tool_calls:
            refuse_emptied(message.content, FORMAT, partial(caller_path, request, index))
        out.append(encoded)
    return out


def _encode_text(parts: list[TextPart]) -> str | list[dict[str, Any]]:
    if len(parts) == 1:
        return parts[0].text
    return [{"type": "text", "text": p.text} for p in parts]


def _encode_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        texts = [p for p in message.content if isinstance(p, TextPart)]
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": _encode_text(texts) if texts else "",
        }
    if message.role == "assistant":
        text = joined_text(message.content)
        out: dict[str, Any] = {
            "role": "assistant",
            "content": text if text or not message.tool_calls else None,
        }
        if message.tool_calls:
            out["tool_calls"] = [encode_tool_call(call) for call in message.tool_calls]
    else:
        out = {"role": message.role, "content": _encode_parts(message.content)}
    if message.name is not None:
        out["name"] = message.name
    return out


def _encode_parts(parts: list[Part]) -> str | list[dict[str, Any]]:
    if len(parts) == 1 and isinstance(parts[0], TextPart):
        return parts[0].text
    encoded = [e for p in parts if (e := _encode_part(p)) is not None]
    return encoded if encoded else ""


def _encode_part(part: Part) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        url = part.url if part.url is not None else data_url(part.media_type, part.data or "")
        image: dict[str, Any] = {"url": url}
        if part.detail is not None:
            image["detail"] = part.detail
        return {"type": "image_url", "image_url": image}
    if isinstance(part, DocumentPart):
        if part.data is not None:
            file = {"filename": part.title or _filename(part.media_type)}
            file["file_data"] = data_url(part.media_type, part.data)
            return {"type": "file", "file": file}
        if part.text is not None:
            return {"type": "text", "text": part.text}
        return None
    if isinstance(part, NativeBlock) and part.format == FORMAT:
        return part.block
    return None


def _filename(media_type: str | None) -> str:
    return "document.pdf" if media_type in (None, "application/pdf") else "document"


def _encode_tool(tool: Tool) -> dict[str, Any] | None:
    if tool.native is not None:
        return tool.native.block if tool.native.format == FORMAT else None
    function: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        function["description"] = tool.description
    if tool.parameters is not None:
        function["parameters"] = tool.parameters
    return {"type": "function", "function": function}


def _encode_tool_choice(request: ChatRequest) -> str | dict[str, Any] | None:
    choice = request.tool_choice
    if choice is None:
        return None
    if isinstance(choice, str):
        return "required" if choice == "any" else choice
    name = tool_choice_name(choice)
    if name is not None:
        return {"type": "function", "function": {"name": name}}
    return choice if request.origin == FORMAT else None


def forward_body(
    source: bytes, *, model: str, stream: bool, parsed: Mapping[str, Any] | None = None
) -> bytes:
    """The caller's own body for an upstream of the same format: only `model` replaced.

    A top-level `routing` key and `metadata.routing` are dropped (reserved for turnout); for a
    stream, `stream` is true and `stream_options.include_usage` forced true (other stream
    options kept). Every other field is kept; when nothing needs changing the original bytes
    are returned as they are. Invalid JSON raises `InvalidRequest`. `parsed` is `source` already
    parsed, when the caller's side has it (it is not parsed again, nor changed).
    """

    def edit(body: dict[str, Any]) -> bool:
        changed = _drop_routing(body)
        if body.get("model") != model:
            body["model"] = model
            changed = True
        if stream:
            options = body.get("stream_options")
            if body.get("stream") is not True:
                body["stream"] = True
                changed = True
            if not isinstance(options, dict) or options.get("include_usage") is not True:
                base = options if isinstance(options, dict) else {}
                body["stream_options"] = {**base, "include_usage": True}
                changed = True
        elif body.get("stream"):
            body["stream"] = False
            body.pop("stream_options", None)
            changed = True
        return changed

    return rewrite(source, edit, parsed)


def _drop_routing(body: dict[str, Any]) -> bool:
    changed = "routing" in body
    body.pop("routing", None)
    metadata = body.get("metadata")
    if isinstance(metadata, dict) and "routing" in metadata:
        del metadata["routing"]
        changed = True
    return changed


def _stream_encoder(model: str, include_usage: bool) -> StreamEncoder:
    return StreamEncoder(model=model, include_usage=include_usage)


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
        terminator=DONE,
        error_body=error_body,
        error_event=error_event,
        message_paths=message_paths,
        id_prefix="chatcmpl-",
    )
)
"""OpenAI Chat Completions."""
