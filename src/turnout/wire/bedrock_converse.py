"""AWS Bedrock Converse codec: neutral requests to Converse bodies, Converse answers and
ConverseStream events back to neutral.

Rule 1: messages alternate roles as Converse requires: consecutive messages of one role (tool
results are user turns) merge into one message, tool results first.
Rule 2: content blocks: text (`cache_control` becomes a `cachePoint` block after it), images
by base64 bytes (a `data:` URL or `data`; an image by http(s) URL cannot travel and is
dropped), documents by base64 bytes or text, `toolUse` with its input as an object,
`toolResult` (with `status: error` for a failed tool). Signed thinking is sent back as
`reasoningContent` only with its signature; unsigned thinking, native blocks and server tools
are dropped. An image of a format Converse does not take is refused (400).
Rule 7: what the encoder drops is named by `untranslatable_into` (for
`turnout.wire.translate.untranslatable`).
Rule 3: `inferenceConfig` carries `maxTokens`, `temperature` (clamped to 1), `topP` and
`stopSequences`; `toolConfig` carries the function tools and `toolChoice` (`auto`, `any`,
`tool`; `none` sends no choice); Anthropic-style `thinking` travels in
`additionalModelRequestFields`.
Rule 4: stop reasons: `end_turn` and `stop_sequence` are `stop`, `max_tokens` and
`model_context_window_exceeded` `length`, `tool_use` `tool_calls`, `guardrail_intervened`
and `content_filtered` `content_filter` (a refusal).
Rule 5: usage: `inputTokens` plus the cache counts is the neutral `input_tokens`;
`cacheReadInputTokens` and `cacheWriteInputTokens` are the cache counts.
Rule 6: a stream event is an `SSEEvent` whose `event` is the frame's `:event-type` and whose
`data` is its JSON payload; an undecodable event is skipped and counted (`malformed`);
`messageStart` gives an empty opening chunk, the finish reason arrives with `messageStop`,
usage with `metadata`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from turnout.errors import MalformedRequest
from turnout.record import Usage
from turnout.wire._body import (
    OBJECT,
    decode_blocks,
    load_upstream,
    parse_arguments,
    split_data_url,
    upstream_invalid,
)
from turnout.wire._events import JsonEventDecoder, Malformed
from turnout.wire.codec import Codec, register
from turnout.wire.model import (
    ChatChunk,
    ChatResponse,
    DocumentPart,
    ImagePart,
    Message,
    NativeBlock,
    Part,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolCallDelta,
)
from turnout.wire.tool_kinds import flattened

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.wire.model import ChatRequest, Tool, WireFormat
    from turnout.wire.sse import SSEEvent

__all__ = [
    "CODEC",
    "FORMAT",
    "StreamDecoder",
    "decode_response",
    "decode_stop",
    "decode_usage",
    "encode_request",
]

FORMAT: WireFormat = "bedrock-converse"
DEFAULT_MAX_TOKENS = 4096
_STOPS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}
_IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}
_CACHE_POINT = {"cachePoint": {"type": "default"}}


# --- requests ---------------------------------------------------------------------------------
def encode_request(request: ChatRequest, *, model: str) -> dict[str, Any]:
    """The Converse body of `request` (the model travels in the URL, not the body)."""
    del model
    request = flattened(request)
    body: dict[str, Any] = {"messages": _encode_messages(request.messages)}
    system = _encode_text_parts(request.folded_system)
    if system:
        body["system"] = system
    config: dict[str, Any] = {"maxTokens": request.max_tokens or DEFAULT_MAX_TOKENS}
    if request.temperature is not None:
        config["temperature"] = min(request.temperature, 1.0)
    if request.top_p is not None:
        config["topP"] = request.top_p
    if request.stop:
        config["stopSequences"] = list(request.stop)
    body["inferenceConfig"] = config
    tools = _encode_tools(request.tools, request.tool_choice)
    if tools is not None:
        body["toolConfig"] = tools
    if request.thinking is not None:
        body["additionalModelRequestFields"] = {"thinking": dict(request.thinking)}
    return body


def _encode_text_parts(parts: list[TextPart]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in parts:
        out.append({"text": part.text})
        if part.cache_control is not None:
            out.append(dict(_CACHE_POINT))
    return out


def _encode_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Rule 1: alternating turns, tool results as user turns."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _encode_message(message)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            previous = out[-1]["content"]
            results = [b for b in blocks if "toolResult" in b]
            rest = [b for b in blocks if "toolResult" not in b]
            out[-1]["content"] = (
                [b for b in previous if "toolResult" in b]
                + results
                + [b for b in previous if "toolResult" not in b]
                + rest
            )
        else:
            out.append({"role": role, "content": blocks})
    return out


def _encode_message(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [_tool_result(message)]
    blocks: list[dict[str, Any]] = []
    for part in message.content:
        blocks.extend(_encode_part(part))
    for call in message.tool_calls:
        use = {"toolUseId": call.id, "name": call.name, "input": parse_arguments(call.arguments)}
        blocks.append({"toolUse": use})
    return blocks


def _encode_part(part: Part) -> list[dict[str, Any]]:
    """Rule 2: one neutral part as Converse blocks (none when it cannot travel)."""
    if isinstance(part, TextPart):
        return _encode_text_parts([part]) if part.text else []
    if isinstance(part, ImagePart):
        image = _image(part)
        return [{"image": image}] if image is not None else []
    if isinstance(part, DocumentPart):
        document = _document(part)
        return [{"document": document}] if document is not None else []
    if isinstance(part, ThinkingPart) and part.signature and not part.redacted:
        text = {"text": part.text, "signature": part.signature}
        return [{"reasoningContent": {"reasoningText": text}}]
    return []


def _image(part: ImagePart) -> dict[str, Any] | None:
    media_type, data = part.media_type, part.data
    if data is None and part.url is not None:
        split = split_data_url(part.url)
        if split is None:
            return None  # Rule 2: Converse takes no image URLs
        media_type, data = split
    fmt = _IMAGE_FORMATS.get((media_type or "").lower())
    if fmt is None or data is None:
        raise MalformedRequest(
            f"image: Bedrock Converse takes png, jpeg, gif or webp images (got {media_type!r})",
            reason="image format",
        )
    return {"format": fmt, "source": {"bytes": data}}


def _document(part: DocumentPart) -> dict[str, Any] | None:
    name = part.title or "document"
    if part.data is not None:
        fmt = (part.media_type or "application/pdf").rsplit("/", 1)[-1]
        return {"format": fmt, "name": name, "source": {"bytes": part.data}}
    if part.text is not None:
        return {"format": "txt", "name": name, "source": {"text": part.text}}
    return None


def _tool_result(message: Message) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, TextPart):
            content.append({"text": part.text})
        elif isinstance(part, ImagePart):
            image = _image(part)
            if image is not None:
                content.append({"image": image})
    result: dict[str, Any] = {"toolUseId": message.tool_call_id or "", "content": content}
    if message.is_error:
        result["status"] = "error"
    return {"toolResult": result}


def _encode_tools(tools: list[Tool], choice: str | dict[str, Any] | None) -> dict[str, Any] | None:
    specs: list[dict[str, Any]] = []
    for tool in tools:
        if tool.native is not None:
            continue
        spec: dict[str, Any] = {"name": tool.name}
        if tool.description:
            spec["description"] = tool.description
        schema = tool.parameters or {"type": "object", "properties": {}}
        spec["inputSchema"] = {"json": schema}
        specs.append({"toolSpec": spec})
        if tool.cache_control is not None:
            specs.append(dict(_CACHE_POINT))
    if not specs:
        return None
    config: dict[str, Any] = {"tools": specs}
    picked = _encode_choice(choice)
    if picked is not None:
        config["toolChoice"] = picked
    return config


def _encode_choice(choice: str | dict[str, Any] | None) -> dict[str, Any] | None:
    if isinstance(choice, str):
        return {"auto": {}} if choice == "auto" else {"any": {}} if choice == "required" else None
    if isinstance(choice, dict):
        function = choice.get("function")
        name = function.get("name") if isinstance(function, dict) else choice.get("name")
        if isinstance(name, str):
            return {"tool": {"name": name}}
    return None


def untranslatable_into(request: ChatRequest, found: dict[str, None]) -> None:
    """Rule 7: add to `found` the names of what `encode_request` drops from `request`."""
    checks = (
        ("seed", request.seed),
        ("response_format", request.response_format),
        ("reasoning_effort", request.reasoning_effort),
        ("user", request.user),
        ("metadata", request.metadata),
    )
    for name, value in checks:
        if value:
            found[name] = None
    if request.temperature is not None and request.temperature > 1:
        found["temperature above 1 (clamped)"] = None
    for message in request.messages:
        for part in message.content:
            if isinstance(part, ThinkingPart) and (part.redacted or not part.signature):
                found["unsigned thinking blocks"] = None
            elif isinstance(part, ImagePart) and part.data is None and _image(part) is None:
                found["image urls"] = None
            elif isinstance(part, DocumentPart) and part.data is None and part.text is None:
                found["document urls"] = None
            elif isinstance(part, NativeBlock):
                found[f"{part.block.get('type', 'native')} blocks"] = None


# --- answers ----------------------------------------------------------------------------------
def decode_stop(reason: object) -> str | None:
    """Rule 4: a Converse `stopReason` -> the neutral finish reason (None when absent)."""
    if not isinstance(reason, str):
        return None
    return _STOPS.get(reason, "stop")


def _count(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return value if ok else 0  # type: ignore[return-value]


def decode_usage(usage: object) -> Usage | None:
    """Rule 5: a Converse `usage` -> neutral (None when absent)."""
    if not isinstance(usage, OBJECT):
        return None
    read = _count(usage, "cacheReadInputTokens")
    write = _count(usage, "cacheWriteInputTokens")
    return Usage(
        input_tokens=_count(usage, "inputTokens") + read + write,
        output_tokens=_count(usage, "outputTokens"),
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


def decode_response(body: bytes | Mapping[str, Any]) -> ChatResponse:
    """A Converse answer -> neutral. A body without `output.message.content` raises
    `ProviderUnavailable`."""
    obj = load_upstream(body)
    output = obj.get("output")
    message = output.get("message") if isinstance(output, OBJECT) else None
    blocks = message.get("content") if isinstance(message, OBJECT) else None
    if not isinstance(blocks, list):
        raise upstream_invalid("output.message.content is not a list")
    content, calls = decode_blocks(blocks, _decode_block)
    return ChatResponse(
        content=content,
        tool_calls=calls,
        finish_reason=decode_stop(obj.get("stopReason")),
        usage=decode_usage(obj.get("usage")),
    )


def _decode_block(block: Mapping[str, Any], content: list[Part], calls: list[ToolCall]) -> None:
    if isinstance(block.get("text"), str):
        content.append(TextPart(block["text"]))
        return
    use = block.get("toolUse")
    if isinstance(use, OBJECT):
        ident, name = use.get("toolUseId"), use.get("name")
        if not isinstance(ident, str) or not isinstance(name, str):
            raise upstream_invalid("a toolUse block lacks its toolUseId or name")
        arguments = orjson.dumps(use.get("input") or {}).decode()
        calls.append(ToolCall(ident, name, arguments))
        return
    reasoning = block.get("reasoningContent")
    if isinstance(reasoning, OBJECT):
        text = reasoning.get("reasoningText")
        if isinstance(text, OBJECT):
            signature = text.get("signature")
            content.append(
                ThinkingPart(
                    str(text.get("text") or ""),
                    signature=signature if isinstance(signature, str) else None,
                )
            )
        elif isinstance(reasoning.get("redactedContent"), str):
            content.append(ThinkingPart(redacted=True, data=reasoning["redactedContent"]))
        return
    content.append(NativeBlock(FORMAT, dict(block)))


# --- streams ----------------------------------------------------------------------------------
class StreamDecoder(JsonEventDecoder):
    """ConverseStream events -> neutral chunks (Rule 6).

    Attributes: `done` (`metadata` seen), `malformed` (events skipped), `finish_reason` and
    `usage` (so far).
    """

    __slots__ = ("_tools",)

    def __init__(self) -> None:
        super().__init__()
        self._tools: dict[int, int] = {}

    def _read(self, event: SSEEvent, obj: dict[str, Any]) -> list[ChatChunk]:
        kind = event.event
        if kind == "messageStart":
            return [ChatChunk()]
        if kind == "contentBlockStart":
            return self._start(obj)
        if kind == "contentBlockDelta":
            return self._delta(obj)
        if kind == "messageStop":
            finish = decode_stop(obj.get("stopReason")) or "stop"
            self.finish_reason = finish
            return [ChatChunk(finish_reason=finish)]
        if kind == "metadata":
            self.done = True
            usage = decode_usage(obj.get("usage"))
            if usage is None:
                return []
            self.usage = usage
            return [ChatChunk(usage=usage)]
        return []

    @staticmethod
    def _index(obj: Mapping[str, Any]) -> int:
        index = obj.get("contentBlockIndex")
        if isinstance(index, int) and not isinstance(index, bool):
            return index
        raise Malformed

    def _start(self, obj: Mapping[str, Any]) -> list[ChatChunk]:
        index = self._index(obj)
        start = obj.get("start")
        use = start.get("toolUse") if isinstance(start, OBJECT) else None
        if not isinstance(use, OBJECT):
            return []
        ident, name = use.get("toolUseId"), use.get("name")
        if not isinstance(ident, str) or not isinstance(name, str):
            raise Malformed
        tool = self._tools[index] = len(self._tools)
        return [ChatChunk(tool_calls=[ToolCallDelta(tool, id=ident, name=name)])]

    def _delta(self, obj: Mapping[str, Any]) -> list[ChatChunk]:
        index = self._index(obj)
        delta = obj.get("delta")
        if not isinstance(delta, OBJECT):
            return []
        if isinstance(delta.get("text"), str):
            return [ChatChunk(delta=delta["text"])]
        use = delta.get("toolUse")
        if isinstance(use, OBJECT):
            tool = self._tools.get(index)
            if tool is None:
                raise Malformed
            arguments = use.get("input")
            text = arguments if isinstance(arguments, str) else ""
            return [ChatChunk(tool_calls=[ToolCallDelta(tool, arguments=text)])]
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, OBJECT):
            thought, signature = reasoning.get("text"), reasoning.get("signature")
            return [
                ChatChunk(
                    thinking=thought if isinstance(thought, str) else "",
                    thinking_signature=signature if isinstance(signature, str) else None,
                )
            ]
        return []


CODEC = register(Codec(FORMAT, encode_request, decode_response, StreamDecoder))
"""Bedrock Converse: spoken to upstreams only, so only the upstream side."""
