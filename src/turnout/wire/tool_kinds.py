"""What becomes of each kind of tool when a request is translated to another wire format.

One table, `TOOL_KINDS`, decides it per tool kind (the wire format the tool was written for,
and its `type`); the codecs, the record's dropped fields and target eligibility all read it,
and `docs/gateway-api.md` shows it to users:

- `carry`: a plain function; every format has one.
- `flatten`: an OpenAI Responses `namespace` of client functions. Its functions travel as
  plain functions named `flat_name(namespace, name)`; a call of one in the answer comes back
  to the caller under its namespace again.
- `drop-if-allowed`: a tool the caller lets the model do without (an OpenAI `web_search` with
  `external_web_access: false`, a cache-only search the answer's contract does not rest on,
  and that `tool_choice` does not force). It is left out of the translated request and named
  among the dropped fields of the attempt; otherwise it is `ineligible`.
- `ineligible`: a tool only its own vendor can run (server tools, hosted search, code
  execution, MCP, custom grammar tools …). A target speaking another format cannot take the
  request at all.

A kind the table does not list is `ineligible`: nothing a caller asked to run is dropped
unless it is known to be safe to drop. Everything here is a pure function of the request.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Final, Literal

from turnout.wire.model import ToolCall

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from turnout.wire.model import ChatRequest, Message, Tool, ToolCallDelta, WireFormat

__all__ = [
    "NAMESPACE_SEPARATOR",
    "TOOL_KINDS",
    "Carriage",
    "carriage",
    "droppable_tools",
    "flat_name",
    "flattened",
    "namespaced_names",
    "required_foreign_tools",
    "restored_call",
    "restored_delta",
    "tool_kind",
]

Carriage = Literal["carry", "flatten", "drop-if-allowed", "ineligible"]

TOOL_KINDS: Final[Mapping[tuple[WireFormat, str], Carriage]] = {
    ("openai-chat", "function"): "carry",
    ("openai-responses", "function"): "carry",
    ("openai-responses", "namespace"): "flatten",
    ("openai-responses", "web_search"): "drop-if-allowed",
    ("openai-responses", "web_search_2025_08_26"): "drop-if-allowed",
    ("anthropic-messages", "custom"): "carry",
    ("gemini-generate", "functionDeclarations"): "carry",
    ("bedrock-converse", "toolSpec"): "carry",
}
"""Tool kind (the format it was written for, its type) -> what translation does with it."""

NAMESPACE_SEPARATOR: Final = "__"
"""Joins a namespace and a function's name into one plain function name."""


def flat_name(namespace: str | None, name: str) -> str:
    """The one plain function name of `name` inside `namespace` (`name` itself without one)."""
    return name if namespace is None else f"{namespace}{NAMESPACE_SEPARATOR}{name}"


def tool_kind(tool: Tool) -> tuple[str, str]:
    """`(format, type)` of a native tool as `TOOL_KINDS` keys it (a plain tool: `function`)."""
    if tool.native is None:
        return ("", "function")
    kind = tool.native.block.get("type")
    return (tool.native.format, kind if isinstance(kind, str) else "native")


def carriage(tool: Tool, request: ChatRequest) -> Carriage:
    """What translation to another format does with `tool` of `request` (see the module)."""
    if tool.native is None:
        return "flatten" if tool.namespace is not None else "carry"
    found: Carriage = TOOL_KINDS.get((tool.native.format, tool_kind(tool)[1]), "ineligible")
    if found == "drop-if-allowed" and not _allowed_absent(tool, request):
        return "ineligible"
    return found


def _allowed_absent(tool: Tool, request: ChatRequest) -> bool:
    """True when the caller lets the model answer without `tool`: a search kept off the live
    web, which `tool_choice` does not force."""
    block = tool.native.block if tool.native is not None else {}
    if block.get("external_web_access") is not False:
        return False
    choice = request.tool_choice
    return not (isinstance(choice, dict) and choice.get("type") == block.get("type"))


def required_foreign_tools(request: ChatRequest, formats: frozenset[WireFormat]) -> list[Tool]:
    """The native tools of `request` that no format of `formats` can run and that may not be
    dropped: any of them makes a target speaking only `formats` ineligible."""
    return [
        tool
        for tool in request.tools
        if tool.native is not None
        and tool.native.format not in formats
        and carriage(tool, request) == "ineligible"
    ]


def droppable_tools(request: ChatRequest, target_format: WireFormat) -> list[Tool]:
    """The native tools of `request` that translation into `target_format` leaves out (their
    own format is another, and the caller allows them to be absent)."""
    return [
        tool
        for tool in request.tools
        if tool.native is not None
        and tool.native.format != target_format
        and carriage(tool, request) == "drop-if-allowed"
    ]


def flattened(request: ChatRequest) -> ChatRequest:
    """`request` with each namespaced function and call under its flat name (`flat_name`),
    for a format without namespaces; `request` itself when nothing is namespaced."""
    namespaced = any(t.namespace is not None for t in request.tools) or any(
        c.namespace is not None for m in request.messages for c in m.tool_calls
    )
    if not namespaced:
        return request
    tools = [_flat_tool(t) for t in request.tools]
    messages = [_flat_message(m) for m in request.messages]
    return dataclasses.replace(request, tools=tools, messages=messages)


def _flat_tool(tool: Tool) -> Tool:
    if tool.namespace is None:
        return tool
    return dataclasses.replace(tool, name=flat_name(tool.namespace, tool.name), namespace=None)


def _flat_message(message: Message) -> Message:
    if not any(c.namespace is not None for c in message.tool_calls):
        return message
    calls = [
        ToolCall(c.id, flat_name(c.namespace, c.name), c.arguments) for c in message.tool_calls
    ]
    return dataclasses.replace(message, tool_calls=calls)


def namespaced_names(tools: Iterable[Tool]) -> dict[str, tuple[str, str]]:
    """Flat name -> (namespace, name) of each namespaced function among `tools`."""
    return {
        flat_name(t.namespace, t.name): (t.namespace, t.name)
        for t in tools
        if t.namespace is not None
    }


def restored_call(call: ToolCall, names: Mapping[str, tuple[str, str]]) -> ToolCall:
    """`call` under its namespace again when its name is one of `names`' flat names."""
    found = names.get(call.name)
    if found is None:
        return call
    return ToolCall(call.id, found[1], call.arguments, namespace=found[0])


def restored_delta(delta: ToolCallDelta, names: Mapping[str, tuple[str, str]]) -> ToolCallDelta:
    """A streamed call's first piece under its namespace again (see `restored_call`)."""
    found = names.get(delta.name) if delta.name is not None else None
    if found is None:
        return delta
    return dataclasses.replace(delta, name=found[1], namespace=found[0])
