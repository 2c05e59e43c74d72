"""The OpenAI Chat Completions codec against golden fixtures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnout.errors import InvalidRequest, ProviderError, ProviderUnavailable
from turnout.wire import _openai_response, openai_chat
from turnout.wire.model import ChatChunk, ImagePart, ThinkingPart, ToolCallDelta, Usage
from turnout.wire.sse import SSEDecoder, SSEEvent

FIXTURES = Path(__file__).parent.parent / "fixtures" / "openai"
UPSTREAM_ONLY = {
    "system_fingerprint",
    "service_tier",
    "annotations",
    "audio_tokens",
    "completion_tokens_details",
}


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def normalise(value: Any) -> Any:
    """Drop fields only an upstream sends and null-valued keys, recursively."""
    if isinstance(value, dict):
        return {
            k: normalise(v) for k, v in value.items() if v is not None and k not in UPSTREAM_ONLY
        }
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
) -> tuple[list[ChatChunk], openai_chat.StreamDecoder]:
    decoder = openai_chat.StreamDecoder()
    chunks = [c for e in events_of(data, cuts) for c in decoder.feed(e)]
    return chunks, decoder


def assembled_calls(chunks: list[ChatChunk]) -> dict[int, list[str]]:
    calls: dict[int, list[str]] = {}
    for chunk in chunks:
        for delta in chunk.tool_calls:
            entry = calls.setdefault(delta.index, ["", "", ""])
            entry[0] = delta.id or entry[0]
            entry[1] = delta.name or entry[1]
            entry[2] += delta.arguments
    return calls


# --- requests -------------------------------------------------------------------------------


def test_decode_request_fixture_gives_the_neutral_values() -> None:
    """Every modelled field of the documented request shape lands in the neutral request."""
    request = openai_chat.decode_request(fixture("chat_request.json"))
    assert request.model == "gpt-4o"
    assert [p.text for p in request.system] == ["You are a helpful assistant."]
    assert [m.role for m in request.messages] == ["user", "assistant", "tool"]
    user = request.messages[0]
    assert user.content[1] == ImagePart(
        data="iVBORw0KGgoAAAANSUhEUg==", media_type="image/png", detail="low"
    )
    assert isinstance(user.content[2], ImagePart)
    assert user.content[2].url is not None
    assert user.content[2].url.startswith("https://")
    call = request.messages[1].tool_calls[0]
    assert (call.id, call.name, json.loads(call.arguments)) == (
        "call_abc123",
        "get_current_weather",
        {"location": "Boston, MA"},
    )
    assert request.messages[2].tool_call_id == "call_abc123"
    assert request.tools[0].name == "get_current_weather"
    assert request.tools[0].parameters is not None
    assert request.tool_choice == "auto"
    assert (request.temperature, request.top_p, request.max_tokens) == (0.7, 0.9, 512)
    assert (request.stop, request.seed, request.user) == (["\n\nUser:"], 42, "user-1234")
    assert request.extra == {"logprobs": True, "top_logprobs": 2, "n": 1}
    assert request.origin == "openai-chat"
    assert request.source is not None
    assert request.source.body == fixture("chat_request.json")


def test_encode_request_reproduces_the_fixture() -> None:
    """decode then encode gives the caller's body back (minus the reserved `routing`)."""
    body = json.loads(fixture("chat_request.json"))
    encoded = openai_chat.encode_request(openai_chat.decode_request(body), model="gpt-4o")
    del body["routing"]
    assert encoded == body


def test_system_and_developer_messages_fold_into_the_system_prompt() -> None:
    """System and developer messages anywhere become `request.system`, in order."""
    request = openai_chat.decode_request(
        {
            "messages": [
                {"role": "developer", "content": "one"},
                {"role": "user", "content": "hi"},
                {"role": "system", "content": [{"type": "text", "text": "two"}]},
            ]
        }
    )
    assert [p.text for p in request.system] == ["one", "two"]
    assert [m.role for m in request.messages] == ["user"]


def test_stream_request_asks_upstream_for_usage() -> None:
    """A streaming request is encoded with `stream_options.include_usage` true."""
    request = openai_chat.decode_request(
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    )
    body = openai_chat.encode_request(request, model="gpt-4o-mini")
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_max_tokens_field_is_chosen_by_the_caller() -> None:
    """`max_tokens` goes to `max_completion_tokens` unless another field is asked for."""
    request = openai_chat.decode_request(
        {"max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}
    )
    assert openai_chat.encode_request(request, model="m")["max_completion_tokens"] == 20
    legacy = openai_chat.encode_request(request, model="m", max_tokens_field="max_tokens")
    assert legacy["max_tokens"] == 20
    assert "max_completion_tokens" not in legacy


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({}, "messages: expected a list"),
        ({"messages": []}, "messages: expected at least one message"),
        ({"messages": ["hi"]}, "messages[0]: expected an object"),
        (
            {"messages": [{"role": "user", "content": "a"}] * 2 + [{"role": "user", "content": 3}]},
            "messages[2].content: expected a string or a list of parts",
        ),
        ({"messages": [{"role": "bot", "content": "a"}]}, "messages[0].role: expected one of"),
        (
            {"messages": [{"role": "tool", "content": "a"}]},
            "messages[0].tool_call_id: expected a string",
        ),
        (
            {"messages": [{"role": "user", "content": [{"text": "a"}]}]},
            "messages[0].content[0].type: expected a string",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]},
            "messages[0].content[0].image_url.url: expected a string",
        ),
        ({"messages": [{"role": "user", "content": "a"}], "stop": 3}, "stop: expected"),
        ({"messages": [{"role": "user", "content": "a"}], "temperature": "hot"}, "temperature:"),
        ({"messages": [{"role": "user", "content": "a"}], "tools": [{}]}, "tools[0].function:"),
    ],
)
def test_invalid_shapes_raise_400_naming_the_field(body: dict[str, Any], message: str) -> None:
    """A body OpenAI would refuse raises InvalidRequest (400) whose message names the field."""
    with pytest.raises(InvalidRequest) as caught:
        openai_chat.decode_request(body)
    assert caught.value.status == 400
    assert caught.value.message.startswith(message)


def test_invalid_json_bytes_raise_400() -> None:
    """Bytes that are not a JSON object raise InvalidRequest, not a JSON error."""
    for raw in (b"{not json", b"[1, 2]", b""):
        with pytest.raises(InvalidRequest):
            openai_chat.decode_request(raw)


def test_unknown_part_types_are_kept_verbatim_for_openai() -> None:
    """An audio part survives an OpenAI -> OpenAI trip unchanged."""
    audio = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
    body = {"model": "m", "messages": [{"role": "user", "content": [audio]}]}
    encoded = openai_chat.encode_request(openai_chat.decode_request(body), model="m")
    assert encoded["messages"][0]["content"] == [audio]


# --- responses ------------------------------------------------------------------------------


def test_usage_keeps_reasoning_tokens_within_the_completion_tokens() -> None:
    """`completion_tokens_details.reasoning_tokens` is decoded as a part of the output tokens,
    never added to them, and encoded back in the same place."""
    body = {
        "prompt_tokens": 20,
        "completion_tokens": 100,
        "total_tokens": 120,
        "completion_tokens_details": {"reasoning_tokens": 64, "audio_tokens": 0},
    }
    usage = _openai_response.decode_usage(body)
    assert usage == Usage(input_tokens=20, output_tokens=100, reasoning_tokens=64)
    encoded = _openai_response.encode_usage(usage)
    assert encoded["completion_tokens"] == 100
    assert encoded["total_tokens"] == 120
    assert encoded["completion_tokens_details"] == {"reasoning_tokens": 64}


def test_usage_reads_deepseek_cache_hits_when_the_details_say_nothing() -> None:
    """DeepSeek's `prompt_cache_hit_tokens` counts as cached input when the OpenAI details
    carry no cached count; the details win when both are there."""
    body = {
        "prompt_tokens": 50,
        "completion_tokens": 5,
        "prompt_cache_hit_tokens": 32,
        "completion_tokens_details": {"reasoning_tokens": 2},
    }
    assert _openai_response.decode_usage(body) == Usage(50, 5, 32, 0, 2)
    both = {**body, "prompt_tokens_details": {"cached_tokens": 16}}
    assert _openai_response.decode_usage(both) == Usage(50, 5, 16, 0, 2)
    assert _openai_response.decode_usage({"prompt_tokens": 3}) == Usage(3, 0)


def test_decode_response_fixture_with_cached_tokens() -> None:
    """Text, finish reason, id, model and usage (cached tokens included) are decoded."""
    raw = fixture("chat_response.json")
    response = openai_chat.decode_response(raw)
    assert response.text.startswith("The image shows a wooden boardwalk")
    assert response.finish_reason == "stop"
    assert response.usage == Usage(input_tokens=1117, output_tokens=46, cache_read_tokens=1024)
    assert (response.id, response.model) == (
        "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "gpt-4o-2024-08-06",
    )
    assert (response.raw, response.raw_format) == (raw, "openai-chat")


def test_decode_response_tool_calls_fixture() -> None:
    """Tool calls and the `tool_calls` finish reason are decoded."""
    response = openai_chat.decode_response(fixture("chat_response_tool_calls.json"))
    assert response.finish_reason == "tool_calls"
    assert [(c.id, c.name) for c in response.tool_calls] == [("call_abc123", "get_current_weather")]
    assert json.loads(response.tool_calls[0].arguments) == {"location": "Boston, MA"}


@pytest.mark.parametrize("name", ["chat_response.json", "chat_response_tool_calls.json"])
def test_encode_response_reproduces_the_fixture(name: str) -> None:
    """decode then encode gives the documented response back (minus upstream-only fields)."""
    body = json.loads(fixture(name))
    response = openai_chat.decode_response(body)
    encoded = openai_chat.encode_response(
        response, model=body["model"], request_id=body["id"], created=body["created"]
    )
    assert normalise(encoded) == normalise(body)


@pytest.mark.parametrize(
    ("reason", "neutral"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("tool_calls", "tool_calls"),
        ("function_call", "tool_calls"),
        ("content_filter", "content_filter"),
    ],
)
def test_finish_reasons_map_to_neutral(reason: str, neutral: str) -> None:
    """OpenAI finish reasons map onto the neutral ones."""
    body = {"choices": [{"message": {"content": "x"}, "finish_reason": reason}]}
    assert openai_chat.decode_response(body).finish_reason == neutral


@pytest.mark.parametrize(
    "raw", [b"<html>502</html>", b"{}", b'{"choices": []}', b'{"choices": [1]}']
)
def test_unreadable_upstream_bodies_are_provider_errors(raw: bytes) -> None:
    """A body that is not a usable completion raises ProviderUnavailable (provider_error)."""
    with pytest.raises(ProviderUnavailable) as caught:
        openai_chat.decode_response(raw)
    assert caught.value.error_class == "provider_error"


def test_error_body_matches_the_documented_envelope() -> None:
    """error_body reproduces OpenAI's error envelope; `meta` appears only when given."""
    expected = json.loads(fixture("error.json"))
    message = expected["error"]["message"]
    assert openai_chat.error_body(401, message, code="invalid_api_key") == expected
    body = openai_chat.error_body(
        503, "no target left", code="UPSTREAM_POOL_EXHAUSTED", type="route_exhausted", meta={"n": 2}
    )
    assert body["error"]["type"] == "route_exhausted"
    assert body["error"]["meta"] == {"n": 2}
    # Without a type of its own an error is `invalid_request_error` whatever its status:
    # `rate_limit_error` / `server_error` would pass turnout's own refusal off as the upstream's.
    assert openai_chat.error_body(429, "slow down")["error"]["type"] == "invalid_request_error"
    assert openai_chat.error_body(503, "no route")["error"]["type"] == "invalid_request_error"
    assert openai_chat.error_body(502, "bad", type="overloaded_error")["error"]["type"] == (
        "overloaded_error"
    )


# --- streams --------------------------------------------------------------------------------

STREAM = fixture("chat_stream.sse")
TOOL_STREAM = fixture("chat_stream_tool_calls.sse")


@settings(max_examples=60)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=10))
def test_stream_fixture_decodes_the_same_at_any_split(cuts: list[int]) -> None:
    """Split anywhere, the stream gives the text, finish reason, usage and `[DONE]`."""
    chunks, decoder = chunks_of(STREAM, cuts)
    assert "".join(c.delta for c in chunks) == "Hello! How can I help you today?"
    assert decoder.finish_reason == "stop"
    assert decoder.usage == Usage(input_tokens=9, output_tokens=9)
    assert decoder.done
    assert decoder.malformed == 0
    assert [c.raw for c in chunks] == [e.raw for e in events_of(STREAM)[:-1]]


def test_role_only_and_usage_only_chunks_carry_no_content() -> None:
    """The role chunk, finish chunk and usage chunk do not commit a stream."""
    chunks, _ = chunks_of(STREAM)
    assert [c.has_content for c in chunks] == [False, True, True, True, False, False]
    assert chunks[-1].usage == Usage(input_tokens=9, output_tokens=9)
    assert all(c.raw_format == "openai-chat" for c in chunks)


@settings(max_examples=40)
@given(st.lists(st.integers(min_value=0, max_value=len(TOOL_STREAM)), max_size=10))
def test_tool_call_stream_assembles_by_index(cuts: list[int]) -> None:
    """Two streamed tool calls assemble by index with their ids, names and arguments."""
    chunks, decoder = chunks_of(TOOL_STREAM, cuts)
    calls = assembled_calls(chunks)
    assert calls[0] == [
        "call_DdmO9pD3xa9XTPNJ32zg2hcA",
        "get_current_weather",
        '{"location": "Boston, MA"}',
    ]
    assert calls[1][2] == '{"location": "Tokyo"}'
    assert chunks[0].has_content  # a tool-call delta commits
    assert decoder.finish_reason == "tool_calls"
    assert decoder.usage == Usage(input_tokens=120, output_tokens=48, cache_read_tokens=64)


def test_malformed_events_are_skipped_and_counted() -> None:
    """Bad JSON and wrong shapes are skipped, counted, and never raise."""
    bad = b'data: {not json\n\ndata: [1]\n\ndata: {"choices": 3}\n\n'
    bad += b'data: {"choices": [{"delta": {"tool_calls": [{"index": "x"}]}}]}\n\n'
    chunks, decoder = chunks_of(STREAM.replace(b"data: [DONE]", bad + b"data: [DONE]"))
    assert decoder.malformed == 4
    assert "".join(c.delta for c in chunks) == "Hello! How can I help you today?"
    assert decoder.done


def test_stream_without_done_reports_finish_but_not_done() -> None:
    """A stream cut after its finish reason shows `finish_reason` without `done`."""
    _, decoder = chunks_of(STREAM.replace(b"data: [DONE]\n\n", b""))
    assert (decoder.finish_reason, decoder.done) == ("stop", False)
    _, cut = chunks_of(STREAM.split(b'{},"logprobs"')[0])
    assert (cut.finish_reason, cut.done) == (None, False)


def test_error_event_in_stream_raises_provider_error() -> None:
    """An `{"error": …}` event mid-stream raises ProviderUnavailable with the vendor type."""
    decoder = openai_chat.StreamDecoder()
    event = SSEEvent(None, '{"error": {"message": "boom", "type": "server_error"}}', None, b"")
    with pytest.raises(ProviderError) as caught:
        decoder.feed(event)
    assert (caught.value.error_class, caught.value.error_type) == ("provider_error", "server_error")


def test_stream_encoder_reproduces_the_fixture() -> None:
    """Re-encoding the decoded chunks gives the documented chunk stream back."""
    chunks, _ = chunks_of(STREAM)
    encoder = openai_chat.StreamEncoder(
        model="gpt-4o-mini", request_id="chatcmpl-123", include_usage=True, created=1694268190
    )
    out = b"".join(encoder.encode(c) for c in chunks) + encoder.finish()
    ours = events_of(out)
    theirs = events_of(STREAM)
    assert [normalise(json.loads(e.data)) for e in ours[:-1]] == [
        normalise(json.loads(e.data)) for e in theirs[:-1]
    ]
    assert ours[-1].data == "[DONE]"


def test_stream_encoder_tool_calls_and_no_usage_event_unless_asked() -> None:
    """Tool deltas carry id/type/name first; without include_usage there is no usage event."""
    encoder = openai_chat.StreamEncoder(model="m", request_id="r", created=1)
    out = encoder.encode(
        ChatChunk(tool_calls=[ToolCallDelta(0, id="call_1", name="f", arguments="")])
    )
    out += encoder.encode(ChatChunk(tool_calls=[ToolCallDelta(0, arguments='{"a":1}')]))
    out += encoder.finish(finish_reason="tool_calls", usage=Usage(1, 2))
    bodies = [e.data for e in events_of(out)]
    assert bodies[-1] == "[DONE]"
    first = json.loads(bodies[0])["choices"][0]["delta"]
    assert first["role"] == "assistant"
    assert first["tool_calls"] == [
        {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": ""}}
    ]
    assert json.loads(bodies[2])["choices"][0]["finish_reason"] == "tool_calls"
    assert len(bodies) == 4


def test_stream_error_event_shape() -> None:
    """An in-stream error is a data event holding the OpenAI error envelope."""
    event = events_of(openai_chat.error_event(502, "cut", "stream_broken"))[0]
    assert orjson.loads(event.data) == {
        "error": {
            "message": "cut",
            "type": "invalid_request_error",
            "code": "stream_broken",
            "param": None,
        }
    }


def test_decode_response_reasoning_content_becomes_thinking() -> None:
    """A `reasoning_content` string (DeepSeek-style) is kept as a thinking part."""
    body = {"choices": [{"message": {"content": "4", "reasoning_content": "2+2"}}]}
    response = openai_chat.decode_response(body)
    assert response.text == "4"
    assert response.content[0] == ThinkingPart("2+2")
