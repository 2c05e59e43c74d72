"""The requests the coding clients send decode and translate: mid-conversation system
messages, namespaced functions, droppable web search and JSON schemas, each field either
carried or refused by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from turnout.errors import InvalidRequest
from turnout.wire import anthropic_messages, gemini, openai_chat, openai_responses
from turnout.wire.model import ChatRequest, Message, NativeBlock, Tool
from turnout.wire.tool_kinds import carriage, flat_name
from turnout.wire.translate import untranslatable

CLIENTS = Path(__file__).parent.parent / "fixtures" / "clients"
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


def fixture(name: str) -> bytes:
    """The bytes of one client fixture."""
    return (CLIENTS / name).read_bytes()


def claude_code() -> ChatRequest:
    """The Claude Code fixture, decoded."""
    return anthropic_messages.decode_request(fixture("claude_code_messages.json"))


def codex() -> ChatRequest:
    """The Codex fixture, decoded."""
    return openai_responses.decode_request(fixture("codex_responses.json"))


# --- mid-conversation system messages ----------------------------------------------------------
def test_anthropic_system_message_decodes_in_place() -> None:
    """A `role: system` message inside `messages` decodes as a system message where it sits."""
    request = claude_code()
    assert [m.role for m in request.messages] == ["user", "system", "assistant", "tool", "user"]
    assert request.messages[1].text.startswith("<system-reminder>")


def test_anthropic_system_message_stays_in_place_for_anthropic() -> None:
    """Encoded for an Anthropic target, the system message keeps its place and role."""
    body = anthropic_messages.encode_request(claude_code(), model="claude-opus-4-8")
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["user", "system", "assistant", "user", "user"]
    assert len(body["system"]) == 2


def test_anthropic_system_message_in_place_for_openai_formats() -> None:
    """Into Chat it is a system message in place, into Responses a system input item."""
    request = claude_code()
    chat = openai_chat.encode_request(request, model="gpt-5")
    assert [m["role"] for m in chat["messages"][:3]] == ["system", "user", "system"]
    responses = openai_responses.encode_request(request, model="gpt-5")
    assert [item.get("role") for item in responses["input"][:2]] == ["user", "system"]


def test_system_message_folds_into_formats_without_one() -> None:
    """Gemini (and an Anthropic target of another format's request) fold it into the system
    prompt instead of dropping it."""
    request = claude_code()
    body = gemini.encode_request(request)
    texts = [p["text"] for p in body["systemInstruction"]["parts"]]
    assert texts[-1].startswith("<system-reminder>")
    assert all(c["role"] in ("user", "model") for c in body["contents"])
    coded = ChatRequest([Message.user("a"), Message.system("b")], system=[])
    folded = anthropic_messages.encode_request(coded, model="claude")
    assert folded["system"] == "b"
    assert [m["role"] for m in folded["messages"]] == ["user"]


@pytest.mark.parametrize(
    ("message", "named"),
    [
        (
            {"role": "developer", "content": "x"},
            "messages[1].role: expected one of user, assistant",
        ),
        (
            {"role": "system", "content": [{"type": "image", "source": {}}]},
            "messages[1].content[0]: expected a text block in a system message",
        ),
        ({"role": "system", "content": 3}, "messages[1].content: expected a list"),
    ],
)
def test_bad_system_message_is_refused_by_name(message: dict[str, Any], named: str) -> None:
    """An unknown role, or a system message that is not text, is a 400 naming the field."""
    body = {"max_tokens": 5, "messages": [{"role": "user", "content": "a"}, message]}
    with pytest.raises(InvalidRequest) as caught:
        anthropic_messages.decode_request(orjson.dumps(body))
    assert named in str(caught.value)


# --- JSON schemas -------------------------------------------------------------------------------
def test_chat_schema_becomes_anthropic_output_config() -> None:
    """A chat `json_schema` response format reaches Anthropic as `output_config.format`."""
    fmt = {"type": "json_schema", "json_schema": {"name": "a", "schema": SCHEMA, "strict": True}}
    body = {"model": "m", "messages": [{"role": "user", "content": "q"}], "response_format": fmt}
    request = openai_chat.decode_request(orjson.dumps(body))
    encoded = anthropic_messages.encode_request(request, model="claude")
    assert encoded["output_config"] == {"format": {"type": "json_schema", "schema": SCHEMA}}
    assert "response_format" not in untranslatable(request, "anthropic-messages")


def test_responses_text_format_becomes_anthropic_output_config() -> None:
    """A Responses `text.format` json_schema reaches Anthropic as `output_config.format`."""
    text = {"format": {"type": "json_schema", "name": "a", "schema": SCHEMA}}
    request = openai_responses.decode_request(orjson.dumps({"input": "q", "text": text}))
    encoded = anthropic_messages.encode_request(request, model="claude")
    assert encoded["output_config"]["format"]["schema"] == SCHEMA


def test_anthropic_output_config_becomes_openai_schemas() -> None:
    """Anthropic's `output_config.format` reaches Chat as `response_format` and Responses as
    `text.format`, and the rest of `output_config` stays with Anthropic."""
    config = {"format": {"type": "json_schema", "schema": SCHEMA}, "effort": "high"}
    body = {"max_tokens": 9, "messages": [{"role": "user", "content": "q"}]}
    request = anthropic_messages.decode_request(orjson.dumps({**body, "output_config": config}))
    chat = openai_chat.encode_request(request, model="gpt")
    assert chat["response_format"]["json_schema"]["schema"] == SCHEMA
    responses = openai_responses.encode_request(request, model="gpt")
    assert responses["text"]["format"]["schema"] == SCHEMA
    same = anthropic_messages.encode_request(request, model="claude")
    assert same["output_config"] == config


@pytest.mark.parametrize(
    ("decode", "body", "named"),
    [
        (
            openai_chat.decode_request,
            {"response_format": {"type": "json_schema", "json_schema": {"schema": SCHEMA}}},
            "response_format.json_schema.name",
        ),
        (
            openai_chat.decode_request,
            {"response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": 1}}},
            "response_format.json_schema.schema: expected a JSON schema object",
        ),
        (openai_chat.decode_request, {"response_format": {"type": "xml"}}, "response_format.type"),
        (
            openai_responses.decode_request,
            {"text": {"format": {"type": "json_schema", "name": "a", "schema": []}}},
            "text.format.schema: expected a JSON schema object",
        ),
        (
            anthropic_messages.decode_request,
            {"output_config": {"format": {"type": "json_schema", "schema": "x"}}},
            "output_config.format.schema: expected a JSON schema object",
        ),
        (
            anthropic_messages.decode_request,
            {"output_config": {"format": {"type": "json_object"}}},
            "output_config.format.type: expected json_schema",
        ),
    ],
)
def test_malformed_schema_is_refused_by_name(decode: Any, body: dict[str, Any], named: str) -> None:
    """A malformed schema in any format is a 400 naming the field."""
    base = {"model": "m", "max_tokens": 9, "input": "q"}
    base["messages"] = [{"role": "user", "content": "q"}]
    if decode is openai_responses.decode_request:
        del base["messages"]
    with pytest.raises(InvalidRequest) as caught:
        decode(orjson.dumps({**base, **body}))
    assert named in str(caught.value)


# --- Codex: namespaces and web search ----------------------------------------------------------
def test_namespace_functions_are_flattened_for_other_formats() -> None:
    """A namespace of client functions reaches Anthropic and Chat as plain functions under
    their flat names, and so does a replayed namespaced call."""
    request = codex()
    flat = flat_name("multi_agent_v1", "spawn_agent")
    anthropic = anthropic_messages.encode_request(request, model="claude")
    names = [t["name"] for t in anthropic["tools"]]
    assert names == ["shell_command", flat, flat_name("multi_agent_v1", "wait_agent")]
    uses = [b for m in anthropic["messages"] for b in m["content"] if isinstance(b, dict)]
    assert any(b.get("type") == "tool_use" and b["name"] == flat for b in uses)
    chat = openai_chat.encode_request(request, model="gpt")
    assert flat in [t["function"]["name"] for t in chat["tools"]]


def test_namespace_functions_regroup_into_responses() -> None:
    """Encoded back into Responses, namespaced functions sit in their namespace again, and a
    replayed call keeps its `namespace` field."""
    body = openai_responses.encode_request(codex(), model="gpt-5")
    group = next(t for t in body["tools"] if t["type"] == "namespace")
    assert group["name"] == "multi_agent_v1"
    assert [t["name"] for t in group["tools"]] == ["spawn_agent", "wait_agent"]
    call = next(i for i in body["input"] if i.get("type") == "function_call")
    assert (call["name"], call["namespace"]) == ("spawn_agent", "multi_agent_v1")


def test_cache_only_web_search_is_dropped_and_named() -> None:
    """Codex's `web_search` with `external_web_access: false` is left out of an Anthropic
    body and named among the dropped fields, rather than blocking the target."""
    request = codex()
    search = next(t for t in request.tools if t.native is not None)
    assert carriage(search, request) == "drop-if-allowed"
    body = anthropic_messages.encode_request(request, model="claude")
    assert all(t.get("type") is None for t in body["tools"])
    assert "tool web_search (web_search)" in untranslatable(request, "anthropic-messages")


@pytest.mark.parametrize(
    ("block", "choice"),
    [
        ({"type": "web_search"}, None),
        ({"type": "web_search", "external_web_access": True}, None),
        ({"type": "web_search", "external_web_access": False}, {"type": "web_search"}),
        ({"type": "file_search", "vector_store_ids": ["vs_1"]}, None),
    ],
)
def test_tools_that_may_not_be_dropped_are_ineligible(
    block: dict[str, Any], choice: dict[str, Any] | None
) -> None:
    """A live web search, a forced one, or a hosted tool is `ineligible` across formats."""
    tool = Tool("t", native=NativeBlock("openai-responses", block))
    request = ChatRequest([Message.user("q")], tools=[tool], tool_choice=choice)
    assert carriage(tool, request) == "ineligible"


def test_responses_text_options_beside_the_format_are_named_when_dropped() -> None:
    """`text.verbosity` is kept for a Responses target and named as dropped elsewhere."""
    text = {"format": {"type": "json_schema", "name": "a", "schema": SCHEMA}, "verbosity": "low"}
    request = openai_responses.decode_request(orjson.dumps({"input": "q", "text": text}))
    same = openai_responses.encode_request(request, model="gpt-5")
    assert same["text"]["verbosity"] == "low"
    assert same["text"]["format"]["schema"] == SCHEMA
    assert "text.verbosity" in untranslatable(request, "anthropic-messages")
