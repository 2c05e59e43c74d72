"""Tool calls of the mock upstream: which tool a request gets called, and with what arguments.

A request gets one tool call when its `tool_choice` forces one (OpenAI `"required"`, a named
function, or allowed tools in `required` mode; Anthropic `{"type": "any"}` or `{"type": "tool",
"name": …}`), or when its fault asks for one (`tool_call[=NAME]`, which wins over `tool_choice`,
`"none"` included). The tool is the one named, else the forced one, else the first tool offered;
with no tool to call, the answer stays text. A named tool the request does not offer is still
called, with `{}`: a model calling a tool it was not given.

Arguments are an example of the tool's JSON schema, the same for the same schema, so a client
can parse and validate them: `required` properties first, then the others in their order;
`enum` → its first value, `const` → itself, `anyOf`/`oneOf`/`allOf` → the first option, local
`$ref`s followed; strings → "mock", numbers → 1, booleans → true, arrays → [], null → null,
objects → built the same way from their own properties ({} when they have none).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from turnout.mock_upstream.faults import ANY_TOOL

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["ToolCall", "example_arguments", "pick_tool_call"]

_SCALARS: dict[str, Any] = {"string": "mock", "integer": 1, "number": 1, "boolean": True}
_MAX_DEPTH = 8  # schemas may refer to themselves; an example stops growing here
_FRAGMENT = re.compile(r"\w+|\W+")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call of a tool: its `name` and its `arguments` as compact JSON text."""

    name: str
    arguments: str

    @property
    def input(self) -> dict[str, Any]:
        """The arguments as an object (Anthropic's `input`)."""
        value = orjson.loads(self.arguments)
        return value if isinstance(value, dict) else {}

    def pieces(self, chunks: int | None = None) -> tuple[str, ...]:
        """The arguments as stream fragments that join back to them: one per run of word or
        non-word characters (`{"`, `city`, `":"`, …), or `chunks` near-equal pieces when given
        (empty ones when there are more chunks than characters)."""
        if chunks is None:
            return tuple(_FRAGMENT.findall(self.arguments))
        count = max(chunks, 0)
        if count == 0:
            return ()
        size, extra = divmod(len(self.arguments), count)
        bounds = [i * size + min(i, extra) for i in range(count + 1)]
        return tuple(self.arguments[bounds[i] : bounds[i + 1]] for i in range(count))


def pick_tool_call(body: Mapping[str, Any], directive: str | None) -> ToolCall | None:
    """The tool call a chat or messages request gets (None: a text answer).

    `directive` is the fault's `tool_call` value (`*`: the forced or first tool), or None.
    """
    tools = _offered_tools(body.get("tools"))
    forced = _forced_tool(body.get("tool_choice"))
    if directive is not None and directive != ANY_TOOL:
        name: str | None = directive
    elif directive is None and forced is None:
        return None
    elif forced is not None and forced != ANY_TOOL:
        name = forced
    else:
        name = next(iter(tools), None)
    if name is None:
        return None
    arguments = example_arguments(tools.get(name))
    return ToolCall(name, orjson.dumps(arguments).decode())


def _offered_tools(raw: Any) -> dict[str, Any]:
    """Name → parameter schema of each function tool, in order (OpenAI or Anthropic shape)."""
    tools: dict[str, Any] = {}
    for tool in raw if isinstance(raw, list) else ():
        if not isinstance(tool, dict):
            continue
        function = tool.get("function")
        if tool.get("type") == "function" and isinstance(function, dict):
            name, schema = function.get("name"), function.get("parameters")
        else:  # Anthropic's shape, or a Responses function tool (`name`, `parameters`)
            name = tool.get("name")
            schema = tool.get("input_schema", tool.get("parameters"))
        if isinstance(name, str) and name not in tools:
            tools[name] = schema
    return tools


def _forced_tool(choice: Any) -> str | None:
    """The tool a `tool_choice` forces: a name, `*` (any tool), or None (no call forced)."""
    if choice == "required":
        return ANY_TOOL
    if not isinstance(choice, dict):
        return None
    kind = choice.get("type")
    if kind == "any":
        return ANY_TOOL
    if kind == "tool" and isinstance(choice.get("name"), str):
        return str(choice["name"])
    if kind == "function":
        return _function_name(choice)
    allowed = choice.get("allowed_tools")
    if kind == "allowed_tools" and isinstance(allowed, dict) and allowed.get("mode") == "required":
        names = [_function_name(t) for t in allowed.get("tools") or () if isinstance(t, dict)]
        return next((n for n in names if n is not None), ANY_TOOL)
    return None


def _function_name(entry: Mapping[str, Any]) -> str | None:
    function = entry.get("function")
    name = function.get("name") if isinstance(function, dict) else entry.get("name")
    return name if isinstance(name, str) else None


def example_arguments(schema: Any) -> dict[str, Any]:
    """An example object of the JSON schema `schema` (see the module docstring); `{}` when the
    schema is missing or does not describe an object."""
    if not isinstance(schema, dict):
        return {}
    value = _example(schema, schema, 0)
    return value if isinstance(value, dict) else {}


def _example(schema: Any, root: dict[str, Any], depth: int) -> Any:
    if depth > _MAX_DEPTH or not isinstance(schema, dict):
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _example(_resolve(ref, root), root, depth + 1)
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    if "const" in schema:
        return schema["const"]
    for combinator in ("anyOf", "oneOf", "allOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            return _example(options[0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or (kind is None and isinstance(schema.get("properties"), dict)):
        return _example_object(schema, root, depth)
    if kind == "array":
        return []
    if kind == "null":
        return None
    return _SCALARS.get(kind, "mock") if isinstance(kind, str) else "mock"


def _example_object(schema: dict[str, Any], root: dict[str, Any], depth: int) -> dict[str, Any]:
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    first = [n for n in required if isinstance(n, str)] if isinstance(required, list) else []
    names = dict.fromkeys([*first, *properties])
    return {name: _example(properties.get(name, {}), root, depth + 1) for name in names}


def _resolve(ref: str, root: dict[str, Any]) -> Any:
    """A local `#/…` reference inside `root` (None when it is not one or leads nowhere)."""
    if not ref.startswith("#"):
        return None
    node: Any = root
    for part in ref[1:].split("/"):
        if not part:
            continue
        if not isinstance(node, dict):
            return None
        node = node.get(part.replace("~1", "/").replace("~0", "~"))
    return node
