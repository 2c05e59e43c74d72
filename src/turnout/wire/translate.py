"""What crosses between the OpenAI, Anthropic and Gemini families, and what is dropped on purpose.

OpenAI's two formats (Chat Completions and Responses) cross to each other and to Anthropic the
same way; a Responses request's fields that no other format carries (`parallel_tool_calls`,
`include`, `truncation` …) are in its `extra` and named like any other.

Translation goes through the neutral model: the source format's `decode_request`, then the
target format's `encode_request`. Carried across: text, images (data URLs <-> base64 sources,
http URLs <-> url sources), documents (base64 and plain text), tool definitions
(`parameters` <-> `input_schema`), tool choice (`auto`/`none`/`required`/one function <->
`auto`/`none`/`any`/one tool), tool calls (argument JSON text <-> input object), tool results
(OpenAI `tool` messages <-> Anthropic `tool_result` blocks, consecutive results merged into one
user message), the system prompt, stop sequences, temperature, top_p, max_tokens, stop reasons
and usage (cached tokens included), system messages in place (Anthropic `role: "system"` in
`messages` <-> OpenAI system messages and Responses system items; folded into the system prompt
for a format without them, and for an Anthropic target of a request from another format), and
a JSON schema (`turnout.wire.structured`: `response_format` <-> Responses `text.format` <->
Anthropic `output_config.format` <-> Gemini `responseJsonSchema`).

Dropped across families, and named by `untranslatable()` so that the engine can put them in an
attempt's reason:
- signed and redacted thinking blocks (only the family that signed them can verify them), and
  any thinking block into OpenAI;
- `cache_control` into OpenAI, and Anthropic's `thinking` option;
- OpenAI `logprobs`, `n`, `logit_bias`, penalties and every other field the neutral model does
  not carry (`extra`), likewise Anthropic's `top_k` …; `seed` and `reasoning_effort` into
  Anthropic;
- `is_error` on tool results and non-text tool results into OpenAI; documents by URL into
  OpenAI;
- vendor blocks no codec models (`NativeBlock`: audio input, file ids, server tool results).
- into Gemini (`turnout.wire.gemini`): `cache_control`, `user`, `metadata`, images and
  documents by URL, thinking blocks from another format, and the fields above.
- into Bedrock Converse (`turnout.wire.bedrock_converse`): `seed`, `reasoning_effort`, `user`,
  `metadata`, unsigned thinking, images and documents by URL, and the fields above.
- a tool the caller allows to be absent (`turnout.wire.tool_kinds`: a cache-only OpenAI
  `web_search`).

Never dropped, because they change what the answer must be: a `response_format` a target's
format cannot hold makes that target ineligible (`turnout.wire.structured`), and so does a
tool which is not a plain function and may not be dropped (Anthropic server tools such as
`web_search_*` or `code_execution_*`, OpenAI custom tools or `web_search_options`;
`needs_server_tools()`). A Responses `namespace` of client functions is flattened into plain
functions and comes back under its namespace (`turnout.wire.tool_kinds`).

Everything in this module is a pure function of the request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnout.wire import bedrock_converse
from turnout.wire.model import DocumentPart, ImagePart, NativeBlock, TextPart, ThinkingPart
from turnout.wire.structured import RESPONSE_FORMATS, response_format_kind
from turnout.wire.tool_kinds import carriage

if TYPE_CHECKING:
    from turnout.wire.model import ChatRequest, Message, WireFormat

__all__ = [
    "SERVER_TOOL_FIELDS",
    "is_same_family",
    "needs_server_tools",
    "tool_choice_name",
    "untranslatable",
]

SERVER_TOOL_FIELDS = frozenset({"web_search_options"})
"""Top-level OpenAI fields that ask the vendor to run a tool itself."""


def is_same_family(request: ChatRequest, target_format: WireFormat) -> bool:
    """True when `extra` may go to `target_format`: the request came from it, or from code."""
    return request.origin is None or request.origin == target_format


def needs_server_tools(request: ChatRequest) -> bool:
    """True when the request uses a tool only its own vendor can run (no cross-format target)."""
    if any(carriage(tool, request) == "ineligible" for tool in request.tools):
        return True
    return request.origin is not None and not SERVER_TOOL_FIELDS.isdisjoint(request.extra)


def tool_choice_name(choice: object) -> str | None:
    """The one tool a tool choice forces, in any family's spelling, else None.

    Accepts the neutral `{"name": …}`, OpenAI `{"type": "function", "function": {"name": …}}`
    and Anthropic `{"type": "tool", "name": …}`.
    """
    if not isinstance(choice, dict):
        return None
    name = choice.get("name")
    if isinstance(name, str):
        return name
    function = choice.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):
        return str(function["name"])
    return None


def untranslatable(request: ChatRequest, target_format: WireFormat) -> list[str]:
    """Names of what `target_format`'s encoder will drop from `request` (empty: nothing).

    Nothing is dropped when the request came from `target_format` itself. Names are short and
    stable (`cache_control`, `thinking blocks`, `logprobs`, `tool web_search (web_search_…)`),
    in a fixed order, without duplicates.
    """
    if request.origin == target_format:
        return []
    found: dict[str, None] = {}
    if request.origin is not None:
        for key, value in request.extra.items():
            if key == "text" and isinstance(value, dict):
                found.update((f"text.{option}", None) for option in value)
            else:
                found[key] = None
    for tool in request.tools:
        if tool.native is not None and tool.native.format != target_format:
            found[f"tool {tool.name} ({tool.native.block.get('type', 'native')})"] = None
    if target_format == "openai-chat":
        _into_openai(request, found)
    elif target_format == "anthropic-messages":
        _into_anthropic(request, found)
    elif target_format == "gemini-generate":
        _into_gemini(request, found)
    elif target_format == "bedrock-converse":
        bedrock_converse.untranslatable_into(request, found)
    kind = response_format_kind(request)
    if kind is not None and kind not in RESPONSE_FORMATS.get(target_format, ()):
        found["response_format"] = None
    return list(found)


def _into_openai(request: ChatRequest, found: dict[str, None]) -> None:
    if request.thinking is not None:
        found["thinking"] = None
    if any(p.cache_control for p in request.system) or any(t.cache_control for t in request.tools):
        found["cache_control"] = None
    for message in request.messages:
        _message_into_openai(message, found)


def _message_into_openai(message: Message, found: dict[str, None]) -> None:
    for part in message.content:
        if isinstance(part, ThinkingPart):
            found["thinking blocks"] = None
        elif isinstance(part, NativeBlock):
            if part.format != "openai-chat":
                found[f"{part.block.get('type', 'native')} blocks"] = None
            continue
        elif isinstance(part, DocumentPart) and part.data is None and part.text is None:
            found["document urls"] = None
        elif message.role == "tool" and not isinstance(part, TextPart):
            found["non-text tool results"] = None
        if getattr(part, "cache_control", None):
            found["cache_control"] = None
    if message.role == "tool" and message.is_error:
        found["tool_result.is_error"] = None


def _into_anthropic(request: ChatRequest, found: dict[str, None]) -> None:
    checks: list[tuple[str, Any]] = [
        ("seed", request.seed),
        ("reasoning_effort", request.reasoning_effort),
    ]
    for name, value in checks:
        if value is not None:
            found[name] = None
    if request.temperature is not None and request.top_p is not None:
        found["top_p"] = None
    if request.temperature is not None and request.temperature > 1:
        found["temperature above 1 (clamped)"] = None
    if request.metadata and request.origin != "anthropic-messages":
        found["metadata"] = None
    for message in request.messages:
        for part in message.content:
            if isinstance(part, ThinkingPart) and not part.signature and not part.redacted:
                found["unsigned thinking blocks"] = None
            elif isinstance(part, NativeBlock) and part.format != "anthropic-messages":
                found[f"{part.block.get('type', 'native')} blocks"] = None


def _into_gemini(request: ChatRequest, found: dict[str, None]) -> None:
    if any(p.cache_control for p in request.system) or any(t.cache_control for t in request.tools):
        found["cache_control"] = None
    for name, value in (("user", request.user), ("metadata", request.metadata)):
        if value:
            found[name] = None
    for message in request.messages:
        for part in message.content:
            if isinstance(part, ThinkingPart):
                found["thinking blocks"] = None
            elif isinstance(part, ImagePart) and part.data is None:
                found["image urls"] = None
            elif isinstance(part, DocumentPart) and part.data is None and part.text is None:
                found["document urls"] = None
            elif isinstance(part, NativeBlock) and part.format != "gemini-generate":
                found[f"{part.block.get('type', 'native')} blocks"] = None
            if getattr(part, "cache_control", None):
                found["cache_control"] = None
