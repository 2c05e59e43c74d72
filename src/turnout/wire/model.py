"""The neutral request/response model: the one shape the engine, codecs and providers share.

Every wire format (OpenAI Chat Completions, Anthropic Messages, OpenAI Embeddings, Gemini
`generateContent`) decodes into these types and encodes from them. There is no second request
model anywhere in turnout.

`ChatRequest.source` carries the caller's original body and format, so that a provider speaking
the same format forwards those bytes with only `model` replaced; `ChatResponse.raw` /
`ChatChunk.raw` do the same on the way back.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from turnout.record import Usage

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.record import RoutingRecord

__all__ = [
    "ChatChunk",
    "ChatRequest",
    "ChatResponse",
    "DocumentPart",
    "EmbeddingRequest",
    "EmbeddingResponse",
    "ImagePart",
    "Message",
    "NativeBlock",
    "Part",
    "RawBody",
    "TextPart",
    "ThinkingPart",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "Usage",
    "WireFormat",
]

Role = Literal["system", "user", "assistant", "tool"]
WireFormat = Literal[
    "openai-chat",
    "anthropic-messages",
    "openai-embeddings",
    "openai-responses",
    "gemini-generate",
    "bedrock-converse",
]
FinishReason = Literal["stop", "length", "tool_calls", "content_filter", "error"]


@dataclass(slots=True, frozen=True)
class TextPart:
    """Text content. `cache_control` is Anthropic's prompt-cache marker, kept verbatim."""

    text: str
    cache_control: dict[str, Any] | None = None
    type: Literal["text"] = "text"

    def __init__(
        self,
        text: str,
        cache_control: dict[str, Any] | None = None,
        type: Literal["text"] = "text",  # noqa: A002 - the field's name, as the dataclass has it
    ) -> None:
        # Made several times per request: the slots are set directly, at half the cost of the
        # frozen dataclass's own __init__ (object.__setattr__ per field). Same fields, same order.
        _set_text(self, text)
        _set_text_cache_control(self, cache_control)
        _set_text_type(self, type)


_set_text, _set_text_cache_control, _set_text_type = (
    vars(TextPart)[name].__set__ for name in ("text", "cache_control", "type")
)


@dataclass(slots=True, frozen=True)
class ImagePart:
    """An image, by `url` (http(s) or a data: URL) or by base64 `data` with its `media_type`."""

    url: str | None = None
    data: str | None = None
    media_type: str | None = None
    detail: str | None = None
    cache_control: dict[str, Any] | None = None
    type: Literal["image"] = "image"


@dataclass(slots=True, frozen=True)
class DocumentPart:
    """A document (e.g. a PDF) by base64 `data`, `url`, or plain `text`."""

    data: str | None = None
    url: str | None = None
    text: str | None = None
    media_type: str | None = None
    title: str | None = None
    cache_control: dict[str, Any] | None = None
    type: Literal["document"] = "document"


@dataclass(slots=True, frozen=True)
class ThinkingPart:
    """A reasoning block. `signature` is the vendor's; `redacted` blocks carry opaque `data`.

    Signed thinking is only meaningful to the family that signed it: cross-family translation
    drops it on purpose.
    """

    text: str = ""
    signature: str | None = None
    redacted: bool = False
    data: str | None = None
    type: Literal["thinking"] = "thinking"


@dataclass(slots=True, frozen=True)
class NativeBlock:
    """A vendor block no codec models (audio input, a vendor file id, a server tool), verbatim.

    It travels only to its own `format` (same-family trips keep it) and is dropped, by name,
    when a request is translated to another family. Used as a content part and as
    `Tool.native`.
    """

    format: WireFormat
    block: dict[str, Any]
    type: Literal["native"] = "native"


Part = TextPart | ImagePart | DocumentPart | ThinkingPart | NativeBlock


@dataclass(slots=True, frozen=True)
class ToolCall:
    """A tool call made by the assistant. `arguments` is the JSON text of the arguments.

    `namespace` names the group of the called function when the caller declared it inside a
    namespace tool (OpenAI Responses); `name` is then the function's name within it.
    """

    id: str
    name: str
    arguments: str = "{}"
    namespace: str | None = None


@dataclass(slots=True, frozen=True)
class Tool:
    """A function tool the model may call. `parameters` is a JSON schema.

    `native` is set for a tool that is not a plain function (Anthropic server tools such as
    `web_search_*`, OpenAI custom tools): its vendor definition, which no other family can run.
    `namespace` is set for a function the caller grouped under a namespace tool (OpenAI
    Responses): formats without namespaces see it as one function named
    `turnout.wire.tool_kinds.flat_name(namespace, name)`.
    """

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    cache_control: dict[str, Any] | None = None
    native: NativeBlock | None = None
    namespace: str | None = None


@dataclass(slots=True)
class Message:
    """One conversation message.

    `role="tool"` messages are tool results: `tool_call_id` names the call they answer and
    `is_error` marks a failed tool. Assistant messages may carry `tool_calls`.
    """

    role: Role
    content: list[Part] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False

    @classmethod
    def user(cls, text: str) -> Message:
        """A user message with one text part."""
        return cls("user", [TextPart(text)])

    @classmethod
    def system(cls, text: str) -> Message:
        """A system message with one text part."""
        return cls("system", [TextPart(text)])

    @classmethod
    def assistant(cls, text: str) -> Message:
        """An assistant message with one text part."""
        return cls("assistant", [TextPart(text)])

    @classmethod
    def tool_result(cls, tool_call_id: str, text: str, *, is_error: bool = False) -> Message:
        """A tool result answering the call `tool_call_id`."""
        return cls("tool", [TextPart(text)], tool_call_id=tool_call_id, is_error=is_error)

    @property
    def text(self) -> str:
        """The concatenated text parts (thinking excluded)."""
        return "".join(p.text for p in self.content if isinstance(p, TextPart))


@dataclass(slots=True, frozen=True)
class RawBody:
    """The caller's original request body and its wire format, for same-format forwarding.

    `parsed` is the body already read as a JSON object, when the caller's side read it (a
    provider then edits a copy rather than parsing the bytes again; nothing may change it).
    `relay` says that whoever asked forwards a same-format stream's own bytes and reads nothing
    of its content: a provider of that format may then hand a run of plain content events over
    as one undecoded chunk (`ChatChunk.opaque`).
    """

    format: WireFormat
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()
    parsed: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    relay: bool = False

    def __init__(
        self,
        format: WireFormat,  # noqa: A002 - the field's name, as the dataclass has it
        body: bytes,
        headers: tuple[tuple[str, str], ...] = (),
        parsed: Mapping[str, Any] | None = None,
        relay: bool = False,
    ) -> None:
        # Made on every request: set as `TextPart` sets its slots. Same fields, same order.
        _set_raw_format(self, format)
        _set_raw_body(self, body)
        _set_raw_headers(self, headers)
        _set_raw_parsed(self, parsed)
        _set_raw_relay(self, relay)


_set_raw_format, _set_raw_body, _set_raw_headers, _set_raw_parsed, _set_raw_relay = (
    vars(RawBody)[name].__set__ for name in ("format", "body", "headers", "parsed", "relay")
)


@dataclass(slots=True)
class ChatRequest:
    """A chat request in the neutral model.

    `system` is the system prompt (OpenAI system messages are folded into it on decode, so
    `messages` hold user/assistant/tool turns). `extra` keeps fields a codec does not model, so
    they survive a same-format trip. `source` is the caller's own body (see module docstring).
    `origin` is the wire format a codec decoded the request from (None when built in code):
    `extra` is sent only to that format (or to every format when None). `server_features`
    names what only a server of the `origin` format itself can do (state it keeps, such as
    OpenAI's `previous_response_id`): a target that does not speak that format is ineligible.
    """

    messages: list[Message]
    model: str | None = None
    system: list[TextPart] = field(default_factory=list)
    tools: list[Tool] = field(default_factory=list)
    tool_choice: str | dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None
    seed: int | None = None
    reasoning_effort: str | None = None
    thinking: dict[str, Any] | None = None
    user: str | None = None
    metadata: dict[str, Any] | None = None
    stream: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    source: RawBody | None = None
    origin: WireFormat | None = None
    server_features: tuple[str, ...] = ()

    def with_model(self, model: str | None) -> ChatRequest:
        """A copy asking for `model` (the original when it already does).

        Made once per call, so it copies the fields one by one (`dataclasses.replace` costs
        ten times as much); a field added above must be added here too (a copy missing one
        fails as soon as that field is read).
        """
        if model is None or model == self.model:
            return self
        new = object.__new__(ChatRequest)
        new.messages = self.messages
        new.model = model
        new.system = self.system
        new.tools = self.tools
        new.tool_choice = self.tool_choice
        new.response_format = self.response_format
        new.temperature = self.temperature
        new.top_p = self.top_p
        new.max_tokens = self.max_tokens
        new.stop = self.stop
        new.seed = self.seed
        new.reasoning_effort = self.reasoning_effort
        new.thinking = self.thinking
        new.user = self.user
        new.metadata = self.metadata
        new.stream = self.stream
        new.extra = self.extra
        new.source = self.source
        new.origin = self.origin
        new.server_features = self.server_features
        return new

    @property
    def folded_system(self) -> list[TextPart]:
        """The system prompt with the text of every system message among `messages` after it,
        in order: what a format without system messages in place sends as its system prompt."""
        folded = list(self.system)
        for message in self.messages:
            if message.role == "system":
                folded.extend(p for p in message.content if isinstance(p, TextPart))
        return folded

    @property
    def prompt_chars(self) -> int:
        """Characters of text in the system prompt and messages (for cost and size estimates)."""
        total = sum(len(p.text) for p in self.system)
        for message in self.messages:
            for part in message.content:
                if isinstance(part, TextPart):
                    total += len(part.text)
            for call in message.tool_calls:
                total += len(call.arguments)
        return total


@dataclass(slots=True)
class ChatResponse:
    """A whole answer.

    `content` holds the assistant's parts (text and thinking); `finish_reason` is neutral
    (`stop`, `length`, `tool_calls`, `content_filter`, `error`) or None. `raw` is the provider's
    own body when the caller speaks the same format (the gateway forwards it). `routing` is set
    by the route that produced the answer.
    """

    content: list[Part] = field(default_factory=list)
    model: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = "stop"
    usage: Usage | None = None
    id: str | None = None
    provider_request_id: str | None = None
    raw: bytes | None = None
    raw_format: WireFormat | None = None
    routing: RoutingRecord | None = None

    @property
    def text(self) -> str:
        """The concatenated text parts (thinking excluded)."""
        return "".join(p.text for p in self.content if isinstance(p, TextPart))

    @property
    def message(self) -> Message:
        """The answer as an assistant message (for appending to a conversation)."""
        return Message("assistant", list(self.content), tool_calls=list(self.tool_calls))


@dataclass(slots=True, frozen=True)
class ToolCallDelta:
    """A piece of a streamed tool call: `index` identifies the call within the answer."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""
    namespace: str | None = None


@dataclass(slots=True)
class ChatChunk:
    """One streamed event in the neutral model.

    A chunk *carries content* when it has a non-empty text, thinking or tool-call delta; the
    first such chunk commits a stream (no failover after it). The last chunk of a stream has
    `finish_reason`, `usage` and, when it comes out of a route, `routing`. `raw` is the upstream
    event's bytes for same-format forwarding.

    An `opaque` chunk (only when the request's source asked to `relay`) stands for one or more
    upstream content events that were checked but not decoded: `raw` holds their bytes, in
    order, and it carries content though its deltas are empty.
    """

    delta: str = ""
    thinking: str = ""
    thinking_signature: str | None = None
    tool_calls: list[ToolCallDelta] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str | None = None
    id: str | None = None
    provider_request_id: str | None = None
    raw: bytes | None = None
    raw_format: WireFormat | None = None
    routing: RoutingRecord | None = None
    opaque: bool = False

    @property
    def has_content(self) -> bool:
        """True when this chunk carries answer content (a first token commits a stream)."""
        return bool(self.delta or self.thinking or self.tool_calls or self.opaque)


@dataclass(slots=True)
class EmbeddingRequest:
    """An embeddings request: `input` is one string or a list of strings (or token lists)."""

    input: str | list[str] | list[int] | list[list[int]]
    model: str | None = None
    dimensions: int | None = None
    encoding_format: str | None = None
    user: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    source: RawBody | None = None

    def with_model(self, model: str | None) -> EmbeddingRequest:
        """A copy asking for `model` (the original when it already does)."""
        if model is None or model == self.model:
            return self
        return replace(self, model=model)


@dataclass(slots=True)
class EmbeddingResponse:
    """Embedding vectors in input order (`data[i]` for input i), with usage."""

    data: list[list[float]] | list[str]
    model: str | None = None
    usage: Usage | None = None
    provider_request_id: str | None = None
    raw: bytes | None = None
    routing: RoutingRecord | None = None
