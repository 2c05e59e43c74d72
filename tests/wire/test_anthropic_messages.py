"""The Anthropic Messages codec against golden fixtures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnout.errors import InvalidRequest, ProviderError, ProviderUnavailable
from turnout.wire import anthropic_messages as am
from turnout.wire.model import (
    ChatChunk,
    ChatRequest,
    ImagePart,
    Message,
    TextPart,
    ThinkingPart,
    ToolCallDelta,
    Usage,
)
from turnout.wire.sse import SSEDecoder, SSEEvent

FIXTURES = Path(__file__).parent.parent / "fixtures" / "anthropic"
UPSTREAM_ONLY = {"cache_creation", "service_tier"}


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def normalise(value: Any) -> Any:
    """Drop fields only an upstream sends, recursively."""
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items() if k not in UPSTREAM_ONLY}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    return value


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
) -> tuple[list[ChatChunk], am.StreamDecoder]:
    decoder = am.StreamDecoder()
    chunks = [c for e in events_of(data, cuts) for c in decoder.feed(e)]
    return chunks, decoder


# --- requests -------------------------------------------------------------------------------


def test_decode_request_fixture_gives_the_neutral_values() -> None:
    """Every modelled field of the documented request shape lands in the neutral request."""
    request = am.decode_request(fixture("messages_request.json"))
    assert request.model == "claude-sonnet-4-5"
    assert request.system == [
        TextPart("You are a weather assistant.", cache_control={"type": "ephemeral"})
    ]
    assert [m.role for m in request.messages] == ["user", "assistant", "tool"]
    assert request.messages[0].content[0] == ImagePart(
        data="/9j/4AAQSkZJRgABAQ==", media_type="image/jpeg"
    )
    assistant = request.messages[1]
    assert isinstance(assistant.content[0], ThinkingPart)
    assert assistant.content[0].signature == "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
    assert assistant.text == "I will check the current weather in San Francisco."
    call = assistant.tool_calls[0]
    assert (call.id, call.name) == ("toolu_01A09q90qw90lq917835lq9", "get_weather")
    assert json.loads(call.arguments) == {"location": "San Francisco, CA"}
    result = request.messages[2]
    assert (result.tool_call_id, result.text, result.is_error) == (call.id, "15 degrees", False)
    assert request.tools[0].parameters is not None
    assert request.tool_choice == "auto"
    assert request.thinking == {"type": "enabled", "budget_tokens": 2048}
    assert (request.max_tokens, request.stop) == (1024, ["\n\nHuman:"])
    assert (request.user, request.metadata) == ("user-1234", {"user_id": "user-1234"})
    assert request.extra == {"top_k": 40}
    assert request.origin == "anthropic-messages"


def test_encode_request_reproduces_the_fixture() -> None:
    """decode then encode gives the caller's body back (minus the reserved `routing` keys)."""
    body = json.loads(fixture("messages_request.json"))
    encoded = am.encode_request(am.decode_request(body), model="claude-sonnet-4-5")
    del body["routing"], body["metadata"]["routing"]
    assert encoded == body


def test_max_tokens_defaults_to_4096() -> None:
    """Anthropic requires max_tokens: a request without one asks for DEFAULT_MAX_TOKENS."""
    body = am.encode_request(ChatRequest([Message.user("hi")]), model="claude")
    assert body["max_tokens"] == am.DEFAULT_MAX_TOKENS == 4096
    assert body["messages"] == [{"role": "user", "content": "hi"}]


def test_tool_results_with_text_after_them_split_into_messages() -> None:
    """A user message with tool results and text gives tool messages, then the user text."""
    request = am.decode_request(
        {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "a", "content": "1"},
                        {"type": "tool_result", "tool_use_id": "b", "is_error": True},
                        {"type": "text", "text": "go on"},
                    ],
                }
            ]
        }
    )
    assert [(m.role, m.tool_call_id, m.is_error) for m in request.messages] == [
        ("tool", "a", False),
        ("tool", "b", True),
        ("user", None, False),
    ]
    encoded = am.encode_request(request, model="m")["messages"]
    assert [m["role"] for m in encoded] == ["user", "user"]
    assert encoded[0]["content"] == [
        {"type": "tool_result", "tool_use_id": "a", "content": "1"},
        {"type": "tool_result", "tool_use_id": "b", "is_error": True},
    ]


@pytest.mark.parametrize(
    ("choice", "neutral"),
    [
        ({"type": "auto"}, "auto"),
        ({"type": "any"}, "required"),
        ({"type": "none"}, "none"),
        ({"type": "tool", "name": "get_weather"}, {"name": "get_weather"}),
    ],
)
def test_tool_choice_round_trips(choice: dict[str, Any], neutral: object) -> None:
    """Tool choices map to the neutral spelling and back."""
    body = {
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
        "tool_choice": choice,
    }
    request = am.decode_request(body)
    assert request.tool_choice == neutral
    assert am.encode_request(request, model="m")["tool_choice"] == choice


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"messages": "hi"}, "messages: expected a list"),
        ({"messages": [{"role": "developer", "content": "x"}]}, "messages[0].role: expected"),
        (
            {"messages": [{"role": "user", "content": 5}]},
            "messages[0].content: expected a string or a list of content blocks",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "text"}]}]},
            "messages[0].content[0].text: expected a string",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "tool_result"}]}]},
            "messages[0].content[0].tool_use_id: expected a string",
        ),
        (
            {
                "messages": [
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "name": "f", "input": []}],
                    }
                ]
            },
            "messages[0].content[0].input: expected an object",
        ),
        (
            {"messages": [{"role": "user", "content": "a"}], "system": [{"type": "image"}]},
            "system[0]",
        ),
        ({"messages": [{"role": "user", "content": "a"}], "stop_sequences": "x"}, "stop_sequences"),
        (
            {"messages": [{"role": "user", "content": "a"}], "tool_choice": {"type": "x"}},
            "tool_choice",
        ),
        ({"messages": [{"role": "user", "content": "a"}], "max_tokens": "9"}, "max_tokens"),
    ],
)
def test_invalid_shapes_raise_400_naming_the_field(body: dict[str, Any], message: str) -> None:
    """A body Anthropic would refuse raises InvalidRequest (400) whose message names the field."""
    with pytest.raises(InvalidRequest) as caught:
        am.decode_request(body)
    assert caught.value.status == 400
    assert caught.value.message.startswith(message)


def test_server_tools_and_unknown_blocks_stay_verbatim() -> None:
    """Server tools and unmodelled blocks survive an Anthropic -> Anthropic trip unchanged."""
    search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
    block = {"type": "search_result", "source": "s", "title": "t", "content": []}
    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": [block, {"type": "text", "text": "x"}]}],
        "tools": [search],
    }
    request = am.decode_request(body)
    assert request.tools[0].native is not None
    assert am.encode_request(request, model="m") == body


# --- responses ------------------------------------------------------------------------------


def test_decode_response_fixture_counts_cache_tokens_in_input() -> None:
    """Usage adds cache reads and writes into input_tokens; end_turn is `stop`."""
    raw = fixture("messages_response.json")
    response = am.decode_response(raw)
    assert response.text == "Hi! My name is Claude."
    assert response.finish_reason == "stop"
    assert response.usage == Usage(
        input_tokens=2095 + 2051, output_tokens=503, cache_read_tokens=0, cache_write_tokens=2051
    )
    assert (response.raw, response.raw_format) == (raw, "anthropic-messages")


def test_decode_response_tool_use_fixture() -> None:
    """Thinking (signed and redacted), text and tool_use blocks are all decoded."""
    response = am.decode_response(fixture("messages_response_tool_use.json"))
    thinking, redacted = response.content[0], response.content[1]
    assert isinstance(thinking, ThinkingPart)
    assert thinking.signature is not None
    assert isinstance(redacted, ThinkingPart)
    assert redacted.redacted
    assert response.text == "I'll check the current weather in San Francisco for you."
    assert response.finish_reason == "tool_calls"
    assert json.loads(response.tool_calls[0].arguments) == {
        "location": "San Francisco, CA",
        "unit": "celsius",
    }
    assert response.usage == Usage(1972, 89, cache_read_tokens=1500)


@pytest.mark.parametrize("name", ["messages_response.json", "messages_response_tool_use.json"])
def test_encode_response_reproduces_the_fixture(name: str) -> None:
    """decode then encode gives the documented response back (minus upstream-only fields)."""
    body = json.loads(fixture(name))
    encoded = am.encode_response(
        am.decode_response(body), model=body["model"], request_id=body["id"]
    )
    assert normalise(encoded) == normalise(body)


@pytest.mark.parametrize(
    ("reason", "neutral"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
        ("pause_turn", "stop"),
    ],
)
def test_stop_reasons_map_to_neutral(reason: str, neutral: str) -> None:
    """Anthropic stop reasons map onto the neutral finish reasons."""
    assert am.decode_response({"content": [], "stop_reason": reason}).finish_reason == neutral


@pytest.mark.parametrize("raw", [b"not json", b"{}", b'{"content": [1]}'])
def test_unreadable_upstream_bodies_are_provider_errors(raw: bytes) -> None:
    """A body that is not a usable message raises ProviderUnavailable (provider_error)."""
    with pytest.raises(ProviderUnavailable):
        am.decode_response(raw)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (403, "permission_error"),
        (404, "not_found_error"),
        (413, "request_too_large"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (502, "api_error"),
        (503, "overloaded_error"),
        (504, "api_error"),
    ],
)
def test_error_type_follows_the_status(status: int, kind: str) -> None:
    """The Anthropic envelope's `type` is derived from the status (e.g. 429 rate_limit_error)."""
    body = am.error_body(status, "m", code="NO_ROUTE")
    assert body == {"type": "error", "error": {"type": kind, "message": "m", "code": "NO_ROUTE"}}


def test_error_body_matches_the_documented_envelope() -> None:
    """error_body reproduces Anthropic's error shape; meta appears when given."""
    expected = json.loads(fixture("error.json"))
    assert am.error_body(404, expected["error"]["message"]) == expected
    assert am.error_body(400, "x", meta={"count": 1})["error"]["meta"] == {"count": 1}


# --- streams --------------------------------------------------------------------------------

STREAM = fixture("messages_stream.sse")
TOOL_STREAM = fixture("messages_stream_tool_use.sse")


@settings(max_examples=60)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=10))
def test_stream_fixture_decodes_the_same_at_any_split(cuts: list[int]) -> None:
    """Split anywhere, the stream gives its text, stop reason, usage and `message_stop`."""
    chunks, decoder = chunks_of(STREAM, cuts)
    assert "".join(c.delta for c in chunks) == "Hello!"
    assert decoder.finish_reason == "stop"
    assert decoder.usage == Usage(input_tokens=25, output_tokens=15)
    assert decoder.done
    assert (decoder.id, decoder.model) == (
        "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY",
        "claude-sonnet-4-5-20250929",
    )


def test_start_events_and_pings_do_not_commit() -> None:
    """message_start and content_block_start carry no content; ping and message_stop no chunk."""
    chunks, _ = chunks_of(STREAM)
    kinds = [json.loads(e.data)["type"] for e in events_of(STREAM)]
    assert kinds.count("ping") == 1
    assert len(chunks) == len(kinds) - 2
    assert [c.has_content for c in chunks] == [False, False, True, True, False, False]
    assert [c.raw for c in chunks] == [
        e.raw
        for e in events_of(STREAM)
        if json.loads(e.data)["type"] not in ("ping", "message_stop")
    ]


@settings(max_examples=40)
@given(st.lists(st.integers(min_value=0, max_value=len(TOOL_STREAM)), max_size=10))
def test_tool_use_stream_numbers_tool_calls_and_announces_them_late(cuts: list[int]) -> None:
    """Thinking, signature, text and a tool call; the call is index 0 and named in its first
    input delta, not in content_block_start."""
    chunks, decoder = chunks_of(TOOL_STREAM, cuts)
    assert "".join(c.thinking for c in chunks) == "The user wants the weather; call get_weather."
    assert [c.thinking_signature for c in chunks if c.thinking_signature] == [
        "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
    ]
    deltas = [d for c in chunks for d in c.tool_calls]
    assert deltas[0] == ToolCallDelta(0, id="toolu_01T1x1fJ34qAmk2tNTrN7Up6", name="get_weather")
    assert all(d.index == 0 and d.id is None for d in deltas[1:])
    assert json.loads("".join(d.arguments for d in deltas)) == {"location": "San Francisco, CA"}
    events = events_of(TOOL_STREAM)
    starts = [
        c
        for c, e in zip(
            chunks, [e for e in events if e.event not in ("ping", "message_stop")], strict=True
        )
        if e.event == "content_block_start"
    ]
    assert not any(c.has_content for c in starts)
    assert decoder.finish_reason == "tool_calls"
    assert decoder.usage == Usage(472 + 1024, 89, cache_read_tokens=1024)


def test_tool_call_without_input_deltas_is_announced_at_block_stop() -> None:
    """A tool_use block with no input deltas still yields its id and name."""
    events = (
        b'data: {"type":"content_block_start","index":0,"content_block":'
        b'{"type":"tool_use","id":"t1","name":"now","input":{}}}\n\n'
        b'data: {"type":"content_block_stop","index":0}\n\n'
    )
    chunks, _ = chunks_of(events)
    assert [d for c in chunks for d in c.tool_calls] == [ToolCallDelta(0, id="t1", name="now")]


def test_error_event_raises_provider_error() -> None:
    """An `error` event raises ProviderError (provider_error) naming the vendor's type."""
    with pytest.raises(ProviderError) as caught:
        chunks_of(fixture("messages_stream_error.sse"))
    error = caught.value
    assert (error.error_class, error.error_type, error.message) == (
        "provider_error",
        "overloaded_error",
        "Overloaded",
    )


def test_malformed_events_are_skipped_and_counted() -> None:
    """Bad JSON and events of the wrong shape are skipped and counted, never raised."""
    bad = (
        b"event: content_block_delta\ndata: {oops\n\n"
        b'data: {"type":"content_block_delta","index":"x","delta":{}}\n\n'
        b'data: {"type":"content_block_delta","index":9,"delta":{"type":"input_json_delta"}}\n\n'
        b'data: {"type":"message_delta","delta":5}\n\n'
        b"data: 17\n\n"
    )
    chunks, decoder = chunks_of(
        STREAM.replace(b"event: message_delta", bad + b"event: message_delta")
    )
    assert decoder.malformed == 5
    assert "".join(c.delta for c in chunks) == "Hello!"
    assert decoder.done


def test_stream_without_message_stop_reports_finish_but_not_done() -> None:
    """A stream cut after message_delta has a finish reason and usage but is not `done`."""
    _, decoder = chunks_of(STREAM.split(b"event: message_stop")[0])
    assert (decoder.finish_reason, decoder.done) == ("stop", False)
    assert decoder.usage == Usage(25, 15)


def test_stream_encoder_event_sequence_matches_the_fixture() -> None:
    """Re-encoding decoded chunks gives the fixture's event sequence and the same content."""
    for raw in (STREAM, TOOL_STREAM):
        chunks, decoder = chunks_of(raw)
        encoder = am.StreamEncoder(model="claude", request_id="msg_1")
        out = b"".join(encoder.encode(c) for c in chunks) + encoder.finish()
        theirs = [e.event for e in events_of(raw) if e.event != "ping"]
        assert [e.event for e in events_of(out)] == theirs
        again, redecoded = chunks_of(out)
        assert "".join(c.delta for c in again) == "".join(c.delta for c in chunks)
        assert "".join(c.thinking for c in again) == "".join(c.thinking for c in chunks)
        assert [d for c in again for d in c.tool_calls] == [d for c in chunks for d in c.tool_calls]
        assert (redecoded.finish_reason, redecoded.usage) == (decoder.finish_reason, decoder.usage)


def test_stream_encoder_opens_a_block_per_kind_and_tool() -> None:
    """Text, then two tool calls, give three numbered blocks, each started and stopped."""
    encoder = am.StreamEncoder(model="m", request_id="msg_x")
    out = encoder.encode(ChatChunk(delta="Hi"))
    out += encoder.encode(ChatChunk(tool_calls=[ToolCallDelta(0, id="a", name="f", arguments="{")]))
    out += encoder.encode(ChatChunk(tool_calls=[ToolCallDelta(0, arguments="}")]))
    out += encoder.encode(
        ChatChunk(tool_calls=[ToolCallDelta(1, id="b", name="g", arguments="{}")])
    )
    out += encoder.finish(finish_reason="tool_calls", usage=Usage(10, 5))
    bodies = [json.loads(e.data) for e in events_of(out)]
    starts = [b for b in bodies if b["type"] == "content_block_start"]
    assert [(b["index"], b["content_block"]["type"]) for b in starts] == [
        (0, "text"),
        (1, "tool_use"),
        (2, "tool_use"),
    ]
    assert [b["index"] for b in bodies if b["type"] == "content_block_stop"] == [0, 1, 2]
    delta = next(b for b in bodies if b["type"] == "message_delta")
    assert delta["delta"]["stop_reason"] == "tool_use"
    assert delta["usage"]["output_tokens"] == 5
    assert bodies[-1] == {"type": "message_stop"}


def test_stream_error_event_shape() -> None:
    """An in-stream error is `event: error` with the Anthropic error envelope."""
    event = events_of(am.error_event(503, "cut", "stream_broken"))[0]
    assert event.event == "error"
    assert json.loads(event.data) == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "cut", "code": "stream_broken"},
    }
