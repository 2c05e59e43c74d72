"""Structured output: a JSON schema (or plain JSON) the answer must follow, in every format.

The neutral `ChatRequest.response_format` has Chat Completions' shape: `{"type":
"json_schema", "json_schema": {"name", "schema", "strict", "description"}}` or `{"type":
"json_object"}` (`{"type": "text"}` is the default and decodes to None). Each format spells it
its own way:

- OpenAI Chat: `response_format` itself; OpenAI Responses: `text.format` (`{"type":
  "json_schema", "name", "schema", "strict"}`);
- Anthropic Messages: `output_config.format` (`{"type": "json_schema", "schema"}`), which
  has no plain-JSON mode;
- Gemini: `responseMimeType: application/json` with `responseJsonSchema`;
- Bedrock Converse: none.

A schema changes the answer's contract, so it is never dropped: a target whose format cannot
hold the request's kind is ineligible for it (`RESPONSE_FORMATS`, read by
`turnout.routing.target`). A malformed one is refused (400) naming the field.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from turnout.wire._body import OBJECT, as_object, invalid

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.wire.model import ChatRequest, WireFormat

__all__ = [
    "ANTHROPIC_SCHEMA_NAME",
    "RESPONSE_FORMATS",
    "check_response_format",
    "check_schema_spec",
    "from_output_config",
    "output_config_format",
    "response_format_kind",
]

RESPONSE_FORMATS: Final[Mapping[WireFormat, frozenset[str]]] = {
    "openai-chat": frozenset({"json_schema", "json_object"}),
    "openai-responses": frozenset({"json_schema", "json_object"}),
    "anthropic-messages": frozenset({"json_schema"}),
    "gemini-generate": frozenset({"json_schema", "json_object"}),
    "bedrock-converse": frozenset(),
}
"""Wire format -> the `response_format` kinds it can hold."""

ANTHROPIC_SCHEMA_NAME: Final = "response"
"""The schema's name when it came from Anthropic, whose format names none (OpenAI needs one)."""
_KINDS = "one of text, json_object, json_schema"


def response_format_kind(request: ChatRequest) -> str | None:
    """`json_schema` or `json_object` when the request asks for one, else None."""
    value = request.response_format
    kind = value.get("type") if value is not None else None
    return kind if kind in ("json_schema", "json_object") else None


def check_response_format(value: Any, path: str) -> dict[str, Any] | None:
    """A Chat Completions `response_format` at `path`, checked: None for absent or `text`."""
    if value is None:
        return None
    obj = as_object(value, path)
    kind = obj.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "json_object"}
    if kind != "json_schema":
        raise invalid(f"{path}.type", _KINDS)
    spec = check_schema_spec(obj.get("json_schema"), f"{path}.json_schema")
    return {**obj, "json_schema": spec}


def check_schema_spec(value: Any, path: str) -> dict[str, Any]:
    """A `{name, schema, strict, description}` object at `path`, checked field by field."""
    spec = as_object(value, path)
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise invalid(f"{path}.name", "a non-empty string")
    if "schema" in spec and not isinstance(spec["schema"], OBJECT):
        raise invalid(f"{path}.schema", "a JSON schema object")
    if "strict" in spec and not isinstance(spec["strict"], bool | None):
        raise invalid(f"{path}.strict", "a boolean")
    return dict(spec)


def output_config_format(response_format: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The Anthropic `output_config.format` for a neutral `response_format` (None: none)."""
    if response_format is None or response_format.get("type") != "json_schema":
        return None
    spec = response_format.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, OBJECT) else None
    return {"type": "json_schema", "schema": schema if isinstance(schema, OBJECT) else {}}


def from_output_config(value: Any, path: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """An Anthropic `output_config` -> (the neutral `response_format`, the rest of it)."""
    config = dict(as_object(value, path))
    fmt = config.pop("format", None)
    if fmt is None:
        return None, config
    obj = as_object(fmt, f"{path}.format")
    if obj.get("type") != "json_schema":
        raise invalid(f"{path}.format.type", "json_schema")
    schema = obj.get("schema")
    if not isinstance(schema, OBJECT):
        raise invalid(f"{path}.format.schema", "a JSON schema object")
    spec = {"name": ANTHROPIC_SCHEMA_NAME, "schema": dict(schema)}
    return {"type": "json_schema", "json_schema": spec}, config
