"""Gemini `generateContent` codec (Google's native Generative Language API): requests here;
answers, streams and errors in `_gemini_response` / `_gemini_stream`, re-exported.

The model and the stream switch are not in the body: they are in the URL
(`models/{model}:generateContent`, `:streamGenerateContent?alt=sse`), so `encode_request`
ignores `request.stream` and `decode_request` takes the model from its caller.

Neutral mapping of a request:
- `systemInstruction.parts[].text` <-> `request.system`;
- `contents[]` with role `user` / `model` <-> user / assistant messages; `text` parts <-> text,
  `inlineData {mimeType, data}` <-> a base64 image (or a document, for a non-image type),
  `thought: true` parts <-> thinking (their `thoughtSignature` as its signature);
- `functionCall {id?, name, args}` <-> a tool call (arguments as JSON text; a call without an
  id is numbered `call_0`, `call_1` … in the order calls appear in the conversation);
- `functionResponse {id?, name, response}` <-> a `tool` message: the response object as JSON
  text; a tool result that is not a JSON object is wrapped as `{"result": text}` (an error
  result as `{"error": text}`); the name comes from the call it answers;
- `tools[].functionDeclarations[]` <-> function tools (`parameters`); other Gemini tools
  (`googleSearch`, `codeExecution` …) stay verbatim as native tools;
- `toolConfig.functionCallingConfig {mode, allowedFunctionNames}` <-> tool choice (`AUTO` auto,
  `NONE` none, `ANY` required, `ANY` with one allowed name that one function);
- `generationConfig`: `temperature`, `topP`, `maxOutputTokens`, `stopSequences`, `seed`;
  `responseMimeType: application/json` with `responseJsonSchema` (or `responseSchema`) <->
  `response_format` `json_schema` (`json_object` without a schema); `thinkingConfig`:
  `thinkingBudget` <-> Anthropic's `thinking.budget_tokens` (with `includeThoughts`), and
  reasoning effort as a budget (`none` 0, `minimal` 512, `low` 1024, `medium` 8192, `high`
  24576).

Thought signatures: a Gemini answer's thoughts keep theirs (as the thinking part's signature),
but a function call's does not survive a trip through another format's tool call. Gemini 3
models refuse a replayed function call without one, so for a `gemini-3…` model the first
function call of each model turn carries Google's documented stand-in
(`skip_thought_signature_validator`) instead; older models need none and get none.

The JSON schema goes in `responseJsonSchema`, which takes JSON Schema as written, rather than
`responseSchema`, which takes only Google's OpenAPI subset and refuses common keywords
(`additionalProperties`, `$ref`) that OpenAI callers send.

Dropped into Gemini (named by `turnout.wire.translate.untranslatable`): `cache_control`, images
and documents by URL, thinking from another format (only Gemini can read its own thought
signatures), `user`, `metadata`, OpenAI-only fields.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import orjson

from turnout.wire._body import (
    OBJECT,
    as_list,
    as_object,
    caller_path,
    dump_arguments,
    invalid,
    load_request,
    opt_object,
    opt_str,
    refuse_emptied,
    refuse_unknown,
    rewrite,
)
from turnout.wire._gemini_response import (
    FORMAT,
    decode_response,
    encode_call,
    encode_response,
    error_body,
    status_name,
)
from turnout.wire._gemini_stream import StreamDecoder, StreamEncoder, error_event
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
from turnout.wire.tool_kinds import flattened
from turnout.wire.translate import tool_choice_name

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "CODEC",
    "EFFORT_BUDGETS",
    "FORMAT",
    "SKIP_SIGNATURE",
    "StreamDecoder",
    "StreamEncoder",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "error_body",
    "error_event",
    "forward_body",
    "status_name",
]

SKIP_SIGNATURE = "skip_thought_signature_validator"
"""Google's documented stand-in for a thought signature the conversation no longer has."""

EFFORT_BUDGETS = {"none": 0, "minimal": 512, "low": 1024, "medium": 8192, "high": 24576}
"""The thinking budget (tokens) each reasoning effort asks Gemini for."""

_MODES_OUT = {"auto": "AUTO", "none": "NONE", "required": "ANY", "any": "ANY"}
_MODES_IN = {"AUTO": "auto", "NONE": "none", "ANY": "required", "VALIDATED": "auto"}
_CONFIG_MODELED = frozenset(
    {
        "temperature",
        "topP",
        "maxOutputTokens",
        "stopSequences",
        "seed",
        "responseMimeType",
        "responseSchema",
        "responseJsonSchema",
        "thinkingConfig",
    }
)
_MODELED = frozenset(
    {"contents", "systemInstruction", "tools", "toolConfig", "generationConfig", "routing"}
)


# ---- decoding (a caller's or a mock's view of a Gemini body) --------------------------------


def decode_request(body: bytes | Mapping[str, Any], *, model: str | None = None) -> ChatRequest:
    """A `generateContent` body -> neutral request (`origin` = `gemini-generate`).

    `model` is the one named in the URL. A shape Google would refuse raises `InvalidRequest`
    (400) naming the field. Fields the neutral model does not carry (`safetySettings`,
    `cachedContent`, other `generationConfig` fields) go to `extra`.
    """
    obj = load_request(body)
    contents = as_list(obj.get("contents"), "contents")
    if not contents:
        raise invalid("contents", "at least one content")
    calls: dict[str, list[str]] = {}
    messages: list[Message] = []
    for i, item in enumerate(contents):
        messages.extend(_decode_content(item, f"contents[{i}]", calls))
    config = opt_object(obj, "generationConfig", "") or {}
    request = ChatRequest(
        messages=messages,
        model=model,
        system=_decode_system(obj.get("systemInstruction")),
        tools=_decode_tools(obj.get("tools")),
        tool_choice=_decode_tool_choice(obj.get("toolConfig")),
        source=RawBody(FORMAT, bytes(body)) if isinstance(body, bytes | bytearray) else None,
        origin=FORMAT,
    )
    _decode_config(config, request)
    request.extra = {k: v for k, v in obj.items() if k not in _MODELED}
    rest = {k: v for k, v in config.items() if k not in _CONFIG_MODELED}
    if rest:
        request.extra["generationConfig"] = rest
    return request


def _decode_system(value: Any) -> list[TextPart]:
    if value is None:
        return []
    system = as_object(value, "systemInstruction")
    parts = as_list(system.get("parts"), "systemInstruction.parts")
    texts: list[TextPart] = []
    for j, part in enumerate(parts):
        text = opt_str(as_object(part, f"systemInstruction.parts[{j}]"), "text", "")
        if text is None:
            raise invalid(f"systemInstruction.parts[{j}].text", "a string")
        texts.append(TextPart(text))
    return texts


def _decode_content(item: Any, path: str, calls: dict[str, list[str]]) -> list[Message]:
    content = as_object(item, path)
    role = content.get("role", "user")
    if role not in ("user", "model"):
        raise invalid(f"{path}.role", "user or model")
    parts = as_list(content.get("parts"), f"{path}.parts")
    out: list[Part] = []
    tool_calls: list[ToolCall] = []
    results: list[Message] = []
    for j, raw in enumerate(parts):
        part_path = f"{path}.parts[{j}]"
        part = as_object(raw, part_path)
        if "functionCall" in part:
            tool_calls.append(_decode_call(part, part_path, calls))
        elif "functionResponse" in part:
            results.append(_decode_result(part, part_path, calls))
        else:
            out.append(_decode_part(part, part_path))
    if role == "model":
        return [Message("assistant", out, tool_calls=tool_calls)]
    messages = results
    if out or not results:
        messages.append(Message("user", out))
    return messages


def _decode_part(part: Mapping[str, Any], path: str) -> Part:
    if "text" in part:
        text = opt_str(part, "text", path)
        if text is None:
            raise invalid(f"{path}.text", "a string")
        if part.get("thought") is True:
            return ThinkingPart(text, signature=opt_str(part, "thoughtSignature", path))
        return TextPart(text)
    if "inlineData" in part:
        blob = as_object(part["inlineData"], f"{path}.inlineData")
        mime = opt_str(blob, "mimeType", f"{path}.inlineData")
        data = opt_str(blob, "data", f"{path}.inlineData")
        if data is None:
            raise invalid(f"{path}.inlineData.data", "a string")
        if mime is not None and not mime.startswith("image/"):
            return DocumentPart(data=data, media_type=mime)
        return ImagePart(data=data, media_type=mime)
    return NativeBlock(FORMAT, dict(part))


def _decode_call(part: Mapping[str, Any], path: str, calls: dict[str, list[str]]) -> ToolCall:
    call = as_object(part["functionCall"], f"{path}.functionCall")
    name = opt_str(call, "name", f"{path}.functionCall")
    if name is None:
        raise invalid(f"{path}.functionCall.name", "a string")
    ident = opt_str(call, "id", f"{path}.functionCall") or f"call_{sum(map(len, calls.values()))}"
    calls.setdefault(name, []).append(ident)
    args = call.get("args") or {}
    if not isinstance(args, OBJECT):
        raise invalid(f"{path}.functionCall.args", "an object")
    return ToolCall(ident, name, dump_arguments(args))


def _decode_result(part: Mapping[str, Any], path: str, calls: dict[str, list[str]]) -> Message:
    result = as_object(part["functionResponse"], f"{path}.functionResponse")
    name = opt_str(result, "name", f"{path}.functionResponse")
    if name is None:
        raise invalid(f"{path}.functionResponse.name", "a string")
    ident = opt_str(result, "id", f"{path}.functionResponse")
    pending = calls.get(name, [])
    if ident is None:
        ident = pending.pop(0) if pending else name
    elif ident in pending:
        pending.remove(ident)
    response = result.get("response")
    if isinstance(response, OBJECT) and set(response) == {"error"}:
        error = response["error"]
        text = error if isinstance(error, str) else dump_arguments(error)
        return Message("tool", [TextPart(text)], tool_call_id=ident, name=name, is_error=True)
    if (
        isinstance(response, OBJECT)
        and set(response) == {"result"}
        and isinstance(response["result"], str)
    ):
        text = response["result"]
    else:
        text = dump_arguments(response if response is not None else {})
    return Message("tool", [TextPart(text)], tool_call_id=ident, name=name)


def _decode_tools(value: Any) -> list[Tool]:
    if value is None:
        return []
    tools: list[Tool] = []
    for i, item in enumerate(as_list(value, "tools")):
        path = f"tools[{i}]"
        tool = as_object(item, path)
        declarations = tool.get("functionDeclarations")
        if declarations is None:
            kind = next(iter(tool), "tool")
            tools.append(Tool(kind, native=NativeBlock(FORMAT, dict(tool))))
            continue
        for j, declared in enumerate(as_list(declarations, f"{path}.functionDeclarations")):
            where = f"{path}.functionDeclarations[{j}]"
            function = as_object(declared, where)
            name = opt_str(function, "name", where)
            if name is None:
                raise invalid(f"{where}.name", "a string")
            parameters = opt_object(function, "parameters", where)
            if parameters is None:
                parameters = opt_object(function, "parametersJsonSchema", where)
            tools.append(
                Tool(
                    name, description=opt_str(function, "description", where), parameters=parameters
                )
            )
    return tools


def _decode_tool_choice(value: Any) -> str | dict[str, Any] | None:
    if value is None:
        return None
    config = as_object(value, "toolConfig").get("functionCallingConfig")
    if config is None:
        return None
    config = as_object(config, "toolConfig.functionCallingConfig")
    mode = opt_str(config, "mode", "toolConfig.functionCallingConfig")
    names = config.get("allowedFunctionNames")
    if mode == "ANY" and isinstance(names, list) and len(names) == 1 and isinstance(names[0], str):
        return {"name": names[0]}
    return _MODES_IN.get(mode or "AUTO", "auto")


def _decode_config(config: Mapping[str, Any], request: ChatRequest) -> None:
    path = "generationConfig"
    request.temperature = _number(config, "temperature", path)
    request.top_p = _number(config, "topP", path)
    tokens = config.get("maxOutputTokens")
    if tokens is not None and (
        not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1
    ):
        raise invalid(f"{path}.maxOutputTokens", "a whole number of at least 1")
    request.max_tokens = tokens
    stops = config.get("stopSequences")
    if stops is not None:
        if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
            raise invalid(f"{path}.stopSequences", "a list of strings")
        request.stop = list(stops)
    seed = config.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise invalid(f"{path}.seed", "an integer")
    request.seed = seed
    if config.get("responseMimeType") == "application/json":
        schema = config.get("responseJsonSchema", config.get("responseSchema"))
        if isinstance(schema, OBJECT):
            request.response_format = {
                "type": "json_schema",
                "json_schema": {"name": "response", "schema": dict(schema)},
            }
        else:
            request.response_format = {"type": "json_object"}
    thinking = opt_object(config, "thinkingConfig", path)
    if thinking is not None:
        budget = thinking.get("thinkingBudget")
        if isinstance(budget, int) and not isinstance(budget, bool) and budget > 0:
            request.thinking = {"type": "enabled", "budget_tokens": budget}
        elif budget == 0:
            request.thinking = {"type": "disabled"}


def _number(config: Mapping[str, Any], key: str, path: str) -> float | None:
    value = config.get(key)
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise invalid(f"{path}.{key}", "a number")
    return float(value)


# ---- encoding (what a Gemini target receives) ----------------------------------------------


def encode_request(request: ChatRequest, *, model: str | None = None) -> dict[str, Any]:
    """A neutral request -> a `generateContent` body (`model` goes in the URL, not here).

    `extra` is merged (without overriding modelled fields) only when the request came from
    this format or from code.
    """
    request = flattened(request)
    body: dict[str, Any] = {"contents": _encode_contents(request, _validates_signatures(model))}
    system = request.folded_system
    if system:
        body["systemInstruction"] = {"parts": [{"text": p.text} for p in system]}
    declarations = [_encode_declaration(tool) for tool in request.tools if tool.native is None]
    tools: list[dict[str, Any]] = []
    if declarations:
        tools.append({"functionDeclarations": declarations})
    tools.extend(
        tool.native.block
        for tool in request.tools
        if tool.native is not None and tool.native.format == FORMAT
    )
    if tools:
        body["tools"] = tools
    if declarations:
        choice = _encode_tool_choice(request.tool_choice)
        if choice is not None:
            body["toolConfig"] = {"functionCallingConfig": choice}
    config = _encode_config(request)
    if config:
        body["generationConfig"] = config
    if request.origin in (None, FORMAT):
        for key, value in request.extra.items():
            if key == "generationConfig" and isinstance(value, dict):
                body["generationConfig"] = {**value, **body.get("generationConfig", {})}
            else:
                body.setdefault(key, value)
    return body


def _validates_signatures(model: str | None) -> bool:
    """Gemini 3 models refuse a replayed function call without a thought signature."""
    return model is not None and model.removeprefix("models/").startswith("gemini-3")


def _encode_contents(request: ChatRequest, sign_calls: bool = False) -> list[dict[str, Any]]:
    names = {call.id: call.name for m in request.messages for call in m.tool_calls}
    # Thoughts go back only to the family that signed them: from Gemini's own format, or code.
    own = request.origin in (None, FORMAT)
    out: list[dict[str, Any]] = []
    for index, message in enumerate(request.messages):
        refuse_unknown(message.content, FORMAT)
        if message.role == "tool":
            part = _encode_result(message, names)
            if out and out[-1]["role"] == "user" and "functionResponse" in out[-1]["parts"][-1]:
                out[-1]["parts"].append(part)
            else:
                out.append({"role": "user", "parts": [part]})
            continue
        if message.role == "system":
            continue  # joined the system instruction
        role = "model" if message.role == "assistant" else "user"
        parts = [e for p in message.content if (e := _encode_part(p, role, own)) is not None]
        calls = [encode_call(call.id, call.name, call.arguments) for call in message.tool_calls]
        if calls and sign_calls:
            calls[0]["thoughtSignature"] = SKIP_SIGNATURE
        parts.extend(calls)
        if not parts:
            refuse_emptied(message.content, FORMAT, partial(caller_path, request, index))
            parts = [{"text": ""}]
        out.append({"role": role, "parts": parts})
    return out


def _encode_part(part: Part, role: str, own: bool) -> dict[str, Any] | None:
    if isinstance(part, TextPart):
        return {"text": part.text}
    if isinstance(part, ImagePart):
        if part.data is None:
            return None
        return {"inlineData": {"mimeType": part.media_type or "image/png", "data": part.data}}
    if isinstance(part, DocumentPart):
        if part.data is not None:
            mime = part.media_type or "application/pdf"
            return {"inlineData": {"mimeType": mime, "data": part.data}}
        return {"text": part.text} if part.text is not None else None
    if isinstance(part, ThinkingPart):
        if not own or role != "model" or part.redacted or not part.signature:
            return None
        return {"text": part.text, "thought": True, "thoughtSignature": part.signature}
    if isinstance(part, NativeBlock) and part.format == FORMAT:
        return part.block
    return None


def _encode_result(message: Message, names: Mapping[str, str]) -> dict[str, Any]:
    ident = message.tool_call_id or ""
    name = names.get(ident) or message.name or ident
    text = "".join(p.text for p in message.content if isinstance(p, TextPart))
    if message.is_error:
        response: dict[str, Any] = {"error": text}
    else:
        response = _json_object(text)
    return {"functionResponse": {"id": ident, "name": name, "response": response}}


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        value = None
    return value if isinstance(value, dict) else {"result": text}


def _encode_declaration(tool: Tool) -> dict[str, Any]:
    declared: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        declared["description"] = tool.description
    if tool.parameters is not None:
        declared["parametersJsonSchema"] = tool.parameters
    return declared


def _encode_tool_choice(choice: str | dict[str, Any] | None) -> dict[str, Any] | None:
    if choice is None:
        return None
    if isinstance(choice, str):
        mode = _MODES_OUT.get(choice)
        return {"mode": mode} if mode is not None else None
    name = tool_choice_name(choice)
    return {"mode": "ANY", "allowedFunctionNames": [name]} if name is not None else None


def _encode_config(request: ChatRequest) -> dict[str, Any]:
    config: dict[str, Any] = {}
    optional = {
        "temperature": request.temperature,
        "topP": request.top_p,
        "maxOutputTokens": request.max_tokens,
        "stopSequences": request.stop or None,
        "seed": request.seed,
    }
    config.update((k, v) for k, v in optional.items() if v is not None)
    response_format = request.response_format
    if response_format is not None and response_format.get("type") in (
        "json_object",
        "json_schema",
    ):
        config["responseMimeType"] = "application/json"
        spec = response_format.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, OBJECT) else None
        if isinstance(schema, OBJECT):
            config["responseJsonSchema"] = dict(schema)
    thinking = _thinking_config(request)
    if thinking is not None:
        config["thinkingConfig"] = thinking
    return config


def _thinking_config(request: ChatRequest) -> dict[str, Any] | None:
    thinking = request.thinking
    if isinstance(thinking, OBJECT):
        if thinking.get("type") == "disabled":
            return {"thinkingBudget": 0}
        budget = thinking.get("budget_tokens")
        if isinstance(budget, int) and not isinstance(budget, bool):
            return {"thinkingBudget": budget, "includeThoughts": True}
        return {"includeThoughts": True}
    if request.reasoning_effort in EFFORT_BUDGETS:
        return {"thinkingBudget": EFFORT_BUDGETS[request.reasoning_effort]}
    return None


def forward_body(
    source: bytes, *, model: str, stream: bool, parsed: Mapping[str, Any] | None = None
) -> bytes:
    """The caller's own Gemini body for a Gemini upstream: as sent, without a top-level
    `routing` key (reserved for turnout). The model and the stream switch live in the URL;
    `parsed` is not used (the gateway does not parse a Gemini caller's body for it)."""
    del model, stream, parsed

    def edit(body: dict[str, Any]) -> bool:
        changed = "routing" in body
        body.pop("routing", None)
        return changed

    return rewrite(source, edit)


CODEC = register(
    Codec(
        format=FORMAT,
        encode_request=encode_request,
        decode_response=decode_response,
        stream_decoder=StreamDecoder,
        decode_request=decode_request,
        encode_response=encode_response,
        forward_body=forward_body,
    )
)
"""Gemini `generateContent`: its errors carry no code or type, so they are written by its own
`error_body` and `error_event`."""
