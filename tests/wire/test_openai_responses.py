"""The OpenAI Responses codec against golden fixtures: requests, responses, event streams."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from turnout.errors import InvalidRequest, ProviderUnavailable
from turnout.wire import anthropic_messages, openai_chat, openai_responses
from turnout.wire.model import (
    ChatChunk,
    ChatResponse,
    ImagePart,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from turnout.wire.sse import SSEDecoder, SSEEvent
from turnout.wire.translate import untranslatable

FIXTURES = Path(__file__).parent.parent / "fixtures" / "openai"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def events_of(data: bytes, cuts: list[int] | None = None) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    start = 0
    for cut in sorted(cuts or []):
        events += decoder.feed(data[start:cut])
        start = cut
    return events + decoder.feed(data[start:]) + decoder.flush()


def chunks_of(
    data: bytes, cuts: list[int] | None = None
) -> tuple[list[ChatChunk], openai_responses.StreamDecoder]:
    decoder = openai_responses.StreamDecoder()
    return [c for e in events_of(data, cuts) for c in decoder.feed(e)], decoder


def payloads(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(e.data) for e in events_of(data)]


# --- requests -------------------------------------------------------------------------------


def test_decode_request_fixture_gives_the_neutral_values() -> None:
    """Every modelled field of the request fixture lands in its neutral place."""
    request = openai_responses.decode_request(fixture("responses_request.json"))
    assert request.origin == "openai-responses"
    assert request.source is not None
    assert request.source.format == "openai-responses"
    assert [p.text for p in request.system] == [
        "You are a weather assistant.",
        "Answer in one sentence.",
    ]
    roles = [m.role for m in request.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
    user = request.messages[0]
    assert isinstance(user.content[1], ImagePart)
    assert (user.content[1].media_type, user.content[1].data) == ("image/png", "iVBORw0KGgo=")
    assert user.content[2] == ImagePart(url="https://example.com/boston.jpg", detail="auto")
    turn = request.messages[1]
    assert turn.content == [ThinkingPart("The user wants the weather; call the tool.")]
    assert turn.tool_calls == [ToolCall("call_7QmTb", "get_weather", '{"city":"Boston"}')]
    assert request.messages[2].tool_call_id == "call_7QmTb"
    assert request.tools[0].name == "get_weather"
    assert request.tools[0].parameters is not None
    assert request.tool_choice == "auto"
    assert request.response_format is not None
    assert request.response_format["json_schema"]["name"] == "forecast"
    assert (request.max_tokens, request.temperature, request.top_p) == (512, 0.2, 0.9)
    assert request.reasoning_effort == "low"
    assert request.metadata == {"ticket": "T-1"}
    assert request.extra == {"parallel_tool_calls": False, "store": False}
    assert request.server_features == ()


def test_a_string_input_is_one_user_message() -> None:
    """`input` as a string is one user message; `instructions` the system prompt."""
    request = openai_responses.decode_request({"model": "m", "input": "hi", "instructions": "be"})
    assert [(m.role, m.text) for m in request.messages] == [("user", "hi")]
    assert [p.text for p in request.system] == ["be"]


@pytest.mark.parametrize(
    ("extra", "feature"),
    [
        ({"previous_response_id": "resp_1"}, "previous_response_id"),
        ({"conversation": "conv_1"}, "conversation"),
        ({"store": True}, "store"),
        ({"background": True}, "background"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "item_reference"),
    ],
)
def test_server_state_is_named_as_a_server_feature(extra: dict[str, Any], feature: str) -> None:
    """Fields that need OpenAI's own server are named in `server_features`."""
    body = {"model": "m", "input": "hi", **extra}
    assert openai_responses.decode_request(body).server_features == (feature,)


def test_built_in_tools_stay_native() -> None:
    """A tool that is not a function is kept verbatim as a native Responses tool."""
    body = {"model": "m", "input": "hi", "tools": [{"type": "web_search"}]}
    tool = openai_responses.decode_request(body).tools[0]
    assert tool.native is not None
    assert tool.native.format == "openai-responses"
    assert tool.native.block == {"type": "web_search"}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"model": "m"}, "input: expected a list"),
        ({"model": "m", "input": []}, "input: expected a string or at least one message"),
        ({"model": "m", "input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
        ({"model": "m", "input": [{"type": "nonsense"}]}, "input[0].type"),
        ({"model": "m", "input": [{"type": "function_call", "name": "f"}]}, "input[0].call_id"),
        ({"model": "m", "input": "x", "max_output_tokens": 0}, "max_output_tokens: must be"),
        ({"model": "m", "input": "x", "temperature": 3}, "temperature: must be"),
        ({"model": "m", "input": "x", "text": {"format": {"type": "xml"}}}, "text.format.type"),
    ],
)
def test_invalid_shapes_raise_400_naming_the_field(body: dict[str, Any], message: str) -> None:
    """A body OpenAI would refuse is a 400 whose message names the field."""
    with pytest.raises(InvalidRequest) as caught:
        openai_responses.decode_request(body)
    assert caught.value.status == 400
    assert message in str(caught.value)


def test_request_round_trips_through_the_neutral_model() -> None:
    """Decoding the fixture, encoding it, and decoding that again gives the same request."""
    first = openai_responses.decode_request(fixture("responses_request.json"))
    encoded = openai_responses.encode_request(first, model="gpt-5-mini")
    second = openai_responses.decode_request(encoded)
    assert encoded["instructions"].startswith("You are a weather assistant.")
    assert encoded["text"]["format"]["name"] == "forecast"
    assert [m.role for m in second.messages] == [m.role for m in first.messages]
    assert second.messages[1].tool_calls == first.messages[1].tool_calls
    assert second.messages[0].content == first.messages[0].content
    assert second.tools == first.tools
    assert second.response_format == first.response_format
    assert (second.max_tokens, second.reasoning_effort) == (512, "low")


def test_translated_into_chat_and_messages() -> None:
    """The fixture translates into Chat Completions and Anthropic Messages bodies (its schema
    as `output_config.format`), each naming what it drops."""
    request = openai_responses.decode_request(fixture("responses_request.json"))
    chat = openai_chat.encode_request(request, model="gpt-4o-mini")
    assert chat["messages"][0]["role"] == "system"
    assert chat["messages"][2]["tool_calls"][0]["id"] == "call_7QmTb"
    assert chat["response_format"]["type"] == "json_schema"
    assert chat["max_completion_tokens"] == 512
    anthropic = anthropic_messages.encode_request(request, model="claude-sonnet-4-5")
    assert anthropic["system"][0]["text"] == "You are a weather assistant."
    assert anthropic["messages"][1]["content"][-1]["type"] == "tool_use"
    assert "parallel_tool_calls" in untranslatable(request, "openai-chat")
    assert anthropic["output_config"]["format"]["type"] == "json_schema"
    dropped = untranslatable(request, "anthropic-messages")
    assert "unsigned thinking blocks" in dropped
    assert "response_format" not in dropped


def test_forward_body_replaces_only_the_model() -> None:
    """Same format: the caller's bytes with `model` replaced and `routing` dropped."""
    source = orjson.dumps(
        {"model": "alias", "input": "hi", "routing": {"x": 1}, "metadata": {"routing": 1, "a": 2}}
    )
    forwarded = orjson.loads(openai_responses.forward_body(source, model="gpt-5", stream=True))
    assert forwarded == {"model": "gpt-5", "input": "hi", "metadata": {"a": 2}, "stream": True}
    same = orjson.dumps({"model": "gpt-5", "input": "hi"})
    assert openai_responses.forward_body(same, model="gpt-5", stream=False) is same


# --- whole responses ------------------------------------------------------------------------


def test_decode_response_fixture_with_reasoning_and_cached_tokens() -> None:
    """Output items, usage (cached and reasoning tokens) and status of the response fixture."""
    response = openai_responses.decode_response(fixture("responses_response.json"))
    assert response.content[0] == ThinkingPart("The user asks for a haiku; keep it short.")
    assert response.text.startswith("Quiet autumn rain")
    assert response.finish_reason == "stop"
    assert response.usage == Usage(
        input_tokens=328, output_tokens=52, cache_read_tokens=128, reasoning_tokens=18
    )
    assert response.raw_format == "openai-responses"
    assert response.model == "gpt-5-mini-2025-08-07"


def test_decode_response_tool_calls_fixture() -> None:
    """`function_call` items become tool calls named by their `call_id`; finish `tool_calls`."""
    response = openai_responses.decode_response(fixture("responses_response_tool_calls.json"))
    assert [c.id for c in response.tool_calls] == ["call_hY2kYpW7oJ1c", "call_Zq81mNc4T0aL"]
    assert response.tool_calls[1].arguments == '{"city":"Rome"}'
    assert response.finish_reason == "tool_calls"


@pytest.mark.parametrize(
    ("status", "details", "finish"),
    [
        ("incomplete", {"reason": "max_output_tokens"}, "length"),
        ("incomplete", {"reason": "content_filter"}, "content_filter"),
    ],
)
def test_incomplete_status_maps_to_finish_reasons(
    status: str, details: dict[str, str], finish: str
) -> None:
    """`incomplete_details.reason` gives the neutral finish reason, and back."""
    body = {"status": status, "incomplete_details": details, "output": []}
    response = openai_responses.decode_response(body)
    assert response.finish_reason == finish
    encoded = openai_responses.encode_response(response, model="m")
    assert (encoded["status"], encoded["incomplete_details"]) == (status, details)


def test_failed_or_unreadable_bodies_are_provider_errors() -> None:
    """A failed response or a body without `output` lets the route fail over."""
    for body in ({"status": "failed", "error": {"message": "boom"}}, {"status": "completed"}):
        with pytest.raises(ProviderUnavailable):
            openai_responses.decode_response(body)


def test_encode_response_round_trips_the_fixtures() -> None:
    """Decoding a fixture and encoding the answer again keeps items, usage and status."""
    for name in ("responses_response.json", "responses_response_tool_calls.json"):
        original = json.loads(fixture(name))
        answer = openai_responses.decode_response(fixture(name))
        encoded = openai_responses.encode_response(answer, model=original["model"])
        again = openai_responses.decode_response(encoded)
        assert (again.content, again.tool_calls) == (answer.content, answer.tool_calls)
        assert again.usage == answer.usage
        assert encoded["status"] == original["status"]
        assert encoded["object"] == "response"
        assert encoded["usage"]["input_tokens_details"] == original["usage"]["input_tokens_details"]


def test_an_answer_from_another_format_becomes_output_items() -> None:
    """Thinking, text and tool calls from a Chat Completions answer become a reasoning item,
    a message and function calls, in that order."""
    answer = ChatResponse(
        content=[ThinkingPart("plan"), TextPart("hi")],
        tool_calls=[ToolCall("call_1", "f", "{}")],
        finish_reason="tool_calls",
        usage=Usage(input_tokens=3, output_tokens=4),
    )
    body = openai_responses.encode_response(answer, model="claude", request_id="resp_x")
    assert [item["type"] for item in body["output"]] == ["reasoning", "message", "function_call"]
    assert body["output"][0]["summary"] == [{"type": "summary_text", "text": "plan"}]
    assert body["output"][2]["call_id"] == "call_1"
    assert body["usage"]["total_tokens"] == 7
    assert (body["id"], body["status"]) == ("resp_x", "completed")


# --- streams --------------------------------------------------------------------------------


@pytest.mark.parametrize("cuts", [[], [7], [100, 101, 2000], list(range(50, 4000, 97))])
def test_stream_fixture_decodes_the_same_at_any_split(cuts: list[int]) -> None:
    """The text stream gives its text, reasoning, usage and finish at any split of the bytes,
    one chunk per event with the event's own bytes."""
    data = fixture("responses_stream.sse")
    chunks, decoder = chunks_of(data, cuts)
    assert "".join(c.delta for c in chunks) == "Hello there!"
    assert "".join(c.thinking for c in chunks) == "Greet the user."
    assert b"".join(c.raw or b"" for c in chunks) == data
    assert decoder.done
    assert decoder.finish_reason == "stop"
    assert decoder.usage == Usage(input_tokens=37, output_tokens=22, reasoning_tokens=12)
    assert decoder.id == "resp_68af5a2c3e6481969d5cf0b6d1a7d8c1"
    first = next(i for i, c in enumerate(chunks) if c.has_content)
    assert json.loads(events_of(data)[first].data)["type"] == (
        "response.reasoning_summary_text.delta"
    )


def test_tool_call_stream_announces_the_call_with_its_first_arguments() -> None:
    """Opening a function call item carries no content; its first argument delta carries the
    call id and name."""
    chunks, decoder = chunks_of(fixture("responses_stream_tool_call.sse"))
    deltas = [d for c in chunks for d in c.tool_calls]
    assert deltas[0] == ToolCallDelta(0, "call_Kd93nA0xqZ", "get_weather", '{"city":')
    assert "".join(d.arguments for d in deltas) == '{"city":"Oslo"}'
    assert not any(c.has_content for c in chunks[:3])
    assert decoder.finish_reason == "tool_calls"
    assert decoder.usage == Usage(input_tokens=60, output_tokens=18, cache_read_tokens=32)


def test_error_event_and_malformed_events() -> None:
    """An `error` event raises a provider error; a malformed event is skipped and counted."""
    decoder = openai_responses.StreamDecoder()
    assert decoder.feed(SSEEvent("response.output_text.delta", "{not json", None, b"")) == []
    assert decoder.malformed == 1
    *before, error = events_of(fixture("responses_stream_error.sse"))
    assert [len(decoder.feed(event)) for event in before] == [1, 1]
    with pytest.raises(ProviderUnavailable, match="server had an error"):
        decoder.feed(error)


def _encoded(chunks: list[ChatChunk], **finish: Any) -> list[dict[str, Any]]:
    encoder = openai_responses.StreamEncoder(model="claude", request_id="resp_t", created=1)
    data = b"".join(encoder.encode(c) for c in chunks) + encoder.finish(**finish)
    return payloads(data)


def test_stream_encoder_writes_the_event_sequence() -> None:
    """Neutral chunks become the Responses event sequence, numbered from 0, that the
    fixture's stream has (reasoning, then a message), ending with `response.completed`."""
    events = _encoded(
        [
            ChatChunk(thinking="Greet "),
            ChatChunk(thinking="the user."),
            ChatChunk(delta="Hello"),
            ChatChunk(delta=" there!"),
            ChatChunk(finish_reason="stop", usage=Usage(input_tokens=37, output_tokens=22)),
        ],
        finish_reason="stop",
    )
    golden = payloads(fixture("responses_stream.sse"))
    assert [e["type"] for e in events] == [e["type"] for e in golden]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    completed = events[-1]["response"]
    assert completed["status"] == "completed"
    assert [item["type"] for item in completed["output"]] == ["reasoning", "message"]
    assert completed["output"][1]["content"][0]["text"] == "Hello there!"
    assert completed["usage"]["total_tokens"] == 59
    assert {e["response"]["id"] for e in events if "response" in e} == {"resp_t"}


def test_stream_encoder_tool_calls_match_the_fixture_sequence() -> None:
    """Tool call deltas become a function call item with argument deltas, as upstream."""
    events = _encoded(
        [
            ChatChunk(tool_calls=[ToolCallDelta(0, "call_K", "get_weather", '{"city":')]),
            ChatChunk(tool_calls=[ToolCallDelta(0, arguments='"Oslo"}')]),
        ],
        finish_reason="tool_calls",
    )
    golden = payloads(fixture("responses_stream_tool_call.sse"))
    assert [e["type"] for e in events] == [e["type"] for e in golden]
    done = events[-1]["response"]["output"][0]
    assert (done["call_id"], done["name"], done["arguments"]) == (
        "call_K",
        "get_weather",
        '{"city":"Oslo"}',
    )


def test_stream_encoder_round_trips_through_the_decoder() -> None:
    """What the encoder writes, the decoder reads back to the same text, calls and usage."""
    encoder = openai_responses.StreamEncoder(model="m")
    usage = Usage(input_tokens=5, output_tokens=6, cache_read_tokens=2)
    data = (
        encoder.encode(ChatChunk(delta="a"))
        + encoder.encode(ChatChunk(tool_calls=[ToolCallDelta(0, "c1", "f", "{}")]))
        + encoder.encode(ChatChunk(tool_calls=[ToolCallDelta(1, "c2", "g", "[]")]))
        + encoder.finish(finish_reason="tool_calls", usage=usage)
    )
    chunks, decoder = chunks_of(data)
    assert "".join(c.delta for c in chunks) == "a"
    calls = [(d.index, d.id, d.name) for c in chunks for d in c.tool_calls if d.id]
    assert calls == [(0, "c1", "f"), (1, "c2", "g")]
    assert (decoder.finish_reason, decoder.usage) == ("tool_calls", usage)


def test_a_length_finish_is_an_incomplete_response() -> None:
    """A stream cut by the token limit ends with `response.incomplete`."""
    events = _encoded([ChatChunk(delta="a")], finish_reason="length")
    assert events[-1]["type"] == "response.incomplete"
    assert events[-1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


def test_error_event_is_numbered_after_the_events_sent() -> None:
    """An in-stream error is an `error` event with code, message and the next number."""
    encoder = openai_responses.StreamEncoder(model="m")
    sent = encoder.encode(ChatChunk(delta="a"))
    error = payloads(encoder.error_event(502, "broken", "stream_broken", "route_exhausted"))[0]
    assert error["type"] == "error"
    assert (error["code"], error["message"]) == ("stream_broken", "broken")
    assert error["sequence_number"] == len(payloads(sent))
