"""The Gemini `generateContent` codec against golden fixtures, and round trips through the
neutral model."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from turnout.errors import InvalidRequest, ProviderUnavailable
from turnout.record import Usage
from turnout.wire import anthropic_messages, gemini, gemini_embeddings, openai_chat
from turnout.wire.model import (
    ChatChunk,
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    ImagePart,
    Message,
    TextPart,
    ThinkingPart,
    Tool,
    ToolCall,
    ToolCallDelta,
)
from turnout.wire.sse import SSEDecoder
from turnout.wire.translate import untranslatable

FIXTURES = Path(__file__).parent.parent / "fixtures" / "gemini"


def fixture(name: str) -> bytes:
    """The bytes of a Gemini golden fixture."""
    return (FIXTURES / name).read_bytes()


def stream_chunks(name: str) -> tuple[list[ChatChunk], gemini.StreamDecoder]:
    """Every neutral chunk of a golden stream, and the decoder that read it."""
    decoder = gemini.StreamDecoder()
    events = SSEDecoder()
    chunks: list[ChatChunk] = []
    for event in [*events.feed(fixture(name)), *events.flush()]:
        chunks.extend(decoder.feed(event))
    return chunks, decoder


# ---- requests ------------------------------------------------------------------------------


def test_golden_request_decodes_into_the_neutral_model() -> None:
    """Contents, parts, tools, tool config and generation config land in their neutral fields."""
    request = gemini.decode_request(fixture("generate_request.json"), model="gemini-2.5-flash")
    assert request.origin == "gemini-generate"
    assert request.model == "gemini-2.5-flash"
    assert [p.text for p in request.system] == ["You are a concise assistant."]
    user, assistant, result = request.messages
    assert user.role == "user"
    assert isinstance(user.content[1], ImagePart)
    assert (user.content[1].media_type, user.content[1].data) == ("image/png", "iVBORw0KGgo=")
    assert assistant.tool_calls == [ToolCall("call-weather-1", "get_weather", '{"city":"Paris"}')]
    assert (result.role, result.tool_call_id, result.name) == (
        "tool",
        "call-weather-1",
        "get_weather",
    )
    assert orjson.loads(result.text) == {"temp_c": 18, "sky": "clear"}
    assert request.tools[0].name == "get_weather"
    assert request.tools[0].parameters is not None
    assert request.tool_choice == "auto"
    assert (request.temperature, request.top_p, request.max_tokens) == (0.2, 0.9, 256)
    assert request.stop == ["END"]
    assert request.response_format is not None
    assert request.response_format["type"] == "json_schema"
    assert request.thinking == {"type": "enabled", "budget_tokens": 1024}
    assert "safetySettings" in request.extra


def test_golden_request_round_trips_through_the_neutral_model() -> None:
    """Decoding then encoding a Gemini body gives the same body back (function-call ids kept)."""
    body = orjson.loads(fixture("generate_request.json"))
    request = gemini.decode_request(fixture("generate_request.json"))
    assert gemini.encode_request(request) == body


def test_openai_request_encodes_into_gemini() -> None:
    """An OpenAI caller's request becomes contents, systemInstruction, declarations and config."""
    body = {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {"name": "get_weather", "parameters": {"type": "object"}},
            }
        ],
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": "w",
                "schema": {"type": "object", "additionalProperties": False},
            },
        },
        "max_completion_tokens": 99,
        "stop": "END",
        "seed": 7,
        "reasoning_effort": "low",
        "logprobs": True,
    }
    request = openai_chat.decode_request(orjson.dumps(body))
    encoded = gemini.encode_request(request, model="gemini-2.5-flash")
    assert encoded["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert encoded["contents"] == [
        {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
        {
            "role": "model",
            "parts": [
                {"functionCall": {"id": "call_1", "name": "get_weather", "args": {"city": "Paris"}}}
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "call_1",
                        "name": "get_weather",
                        "response": {"result": "sunny"},
                    }
                }
            ],
        },
    ]
    assert encoded["tools"] == [
        {
            "functionDeclarations": [
                {"name": "get_weather", "parametersJsonSchema": {"type": "object"}}
            ]
        }
    ]
    assert encoded["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}
    }
    assert encoded["generationConfig"] == {
        "maxOutputTokens": 99,
        "stopSequences": ["END"],
        "seed": 7,
        "responseMimeType": "application/json",
        "responseJsonSchema": {"type": "object", "additionalProperties": False},
        "thinkingConfig": {"thinkingBudget": 1024},
    }
    assert "logprobs" not in encoded
    assert "model" not in encoded
    assert untranslatable(request, "gemini-generate") == ["logprobs"]


def test_anthropic_request_with_thinking_and_errors_encodes_into_gemini() -> None:
    """Anthropic thinking becomes a thinking budget with thoughts included; an error tool
    result is `{"error": …}`; consecutive results share one user turn; signed Anthropic
    thinking is dropped and named."""
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 512,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "messages": [
            {"role": "user", "content": "Go"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm", "signature": "anthropic-sig"},
                    {"type": "tool_use", "id": "t1", "name": "a", "input": {}},
                    {"type": "tool_use", "id": "t2", "name": "b", "input": {"x": 1}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": "boom",
                        "is_error": True,
                    },
                    {"type": "tool_result", "tool_use_id": "t2", "content": '{"ok": true}'},
                ],
            },
        ],
    }
    request = anthropic_messages.decode_request(orjson.dumps(body))
    encoded = gemini.encode_request(request, model="gemini-2.5-pro")
    assert encoded["generationConfig"]["thinkingConfig"] == {
        "thinkingBudget": 2048,
        "includeThoughts": True,
    }
    model_turn = encoded["contents"][1]
    assert [list(p) for p in model_turn["parts"]] == [["functionCall"], ["functionCall"]]
    results = encoded["contents"][2]["parts"]
    assert [r["functionResponse"]["name"] for r in results] == ["a", "b"]
    assert results[0]["functionResponse"]["response"] == {"error": "boom"}
    assert results[1]["functionResponse"]["response"] == {"ok": True}
    assert "thinking blocks" in untranslatable(request, "gemini-generate")


def test_image_urls_are_dropped_and_an_emptied_message_is_refused() -> None:
    """An image by URL cannot go to Gemini: named as dropped, and a message of nothing else
    is a 400 rather than an empty turn."""
    request = ChatRequest(
        [Message("user", [TextPart("look"), ImagePart(url="https://example.com/a.png")])]
    )
    assert untranslatable(request, "gemini-generate") == ["image urls"]
    assert gemini.encode_request(request)["contents"][0]["parts"] == [{"text": "look"}]
    alone = ChatRequest([Message("user", [ImagePart(url="https://example.com/a.png")])])
    with pytest.raises(InvalidRequest, match="would be sent empty to gemini-generate"):
        gemini.encode_request(alone)


@pytest.mark.parametrize(
    ("choice", "config"),
    [
        ("auto", {"mode": "AUTO"}),
        ("none", {"mode": "NONE"}),
        ("required", {"mode": "ANY"}),
        ("any", {"mode": "ANY"}),
        ({"type": "tool", "name": "f"}, {"mode": "ANY", "allowedFunctionNames": ["f"]}),
    ],
)
def test_tool_choice_modes(choice: Any, config: dict[str, Any]) -> None:
    """Each neutral tool choice maps to Gemini's function-calling mode and back."""
    request = ChatRequest([Message.user("hi")], tools=[Tool("f")], tool_choice=choice)
    encoded = gemini.encode_request(request)
    assert encoded["toolConfig"]["functionCallingConfig"] == config
    decoded = gemini.decode_request(orjson.dumps(encoded))
    back = gemini.encode_request(decoded)
    assert back["toolConfig"] == encoded["toolConfig"]


@pytest.mark.parametrize(
    ("effort", "budget"), [("none", 0), ("minimal", 512), ("medium", 8192), ("high", 24576)]
)
def test_reasoning_effort_becomes_a_thinking_budget(effort: str, budget: int) -> None:
    """Reasoning effort is sent as Gemini's thinking budget."""
    request = ChatRequest([Message.user("hi")], reasoning_effort=effort)
    config = gemini.encode_request(request)["generationConfig"]
    assert config["thinkingConfig"] == {"thinkingBudget": budget}


def test_bad_caller_shapes_name_the_field() -> None:
    """A Gemini body Google would refuse is a 400 naming the field."""
    for body, field in [
        ({"contents": []}, "contents"),
        ({"contents": [{"role": "system", "parts": []}]}, "contents[0].role"),
        ({"contents": [{"parts": [{"functionCall": {"args": {}}}]}]}, "functionCall.name"),
        ({"contents": [{"parts": [{"text": "x"}]}], "generationConfig": {"maxOutputTokens": 0}},
         "generationConfig.maxOutputTokens"),
    ]:  # fmt: skip
        with pytest.raises(InvalidRequest, match=re.escape(field)):
            gemini.decode_request(orjson.dumps(body))


def test_forward_body_keeps_the_callers_bytes() -> None:
    """Same format: the body goes as sent, `routing` dropped, unchanged bytes untouched."""
    source = orjson.dumps({"contents": [{"parts": [{"text": "x"}]}], "x_new": 1})
    assert gemini.forward_body(source, model="m", stream=True) is source
    with_routing = orjson.dumps({"contents": [], "routing": {"a": 1}})
    assert orjson.loads(gemini.forward_body(with_routing, model="m", stream=False)) == {
        "contents": []
    }


# ---- whole answers -------------------------------------------------------------------------


def test_golden_response_decodes() -> None:
    """Text, thoughts with their signature, usage (thoughts billed as output) and ids."""
    response = gemini.decode_response(fixture("generate_response.json"))
    assert response.text == '{"summary": "18 C and clear in Paris."}'
    thought = response.content[0]
    assert isinstance(thought, ThinkingPart)
    assert (thought.text, thought.signature) == (
        "Thinking about Paris weather.",
        "c2lnbmF0dXJlLTE=",
    )
    assert response.finish_reason == "stop"
    assert response.usage == Usage(120, 54, 64, 0, reasoning_tokens=40)
    assert (response.model, response.id) == ("gemini-2.5-flash", "mK9Xab2dLs-Hz7IPkqvD4Aw")
    assert response.raw == fixture("generate_response.json")
    assert response.raw_format == "gemini-generate"


def test_function_calls_finish_as_tool_calls() -> None:
    """Function calls without ids are numbered; Gemini's STOP becomes tool_calls."""
    response = gemini.decode_response(fixture("generate_response_function_call.json"))
    assert response.finish_reason == "tool_calls"
    assert [(c.id, c.name, orjson.loads(c.arguments)) for c in response.tool_calls] == [
        ("call_0", "get_weather", {"city": "Paris"}),
        ("call_1", "get_weather", {"city": "Lyon"}),
    ]


@pytest.mark.parametrize(
    "name", ["generate_response_blocked.json", "generate_response_safety.json"]
)
def test_blocked_answers_are_content_filtered(name: str) -> None:
    """A prompt blocked by promptFeedback and a candidate stopped for SAFETY both finish
    content_filter (a refusal), with no content."""
    response = gemini.decode_response(fixture(name))
    assert response.finish_reason == "content_filter"
    assert response.content == []
    assert response.usage is not None


@pytest.mark.parametrize(
    ("reason", "neutral"),
    [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "content_filter"),
        ("RECITATION", "content_filter"),
        ("PROHIBITED_CONTENT", "content_filter"),
        ("BLOCKLIST", "content_filter"),
        ("SPII", "content_filter"),
        ("MALFORMED_FUNCTION_CALL", "error"),
        ("OTHER", "stop"),
    ],
)
def test_finish_reasons(reason: str, neutral: str) -> None:
    """Each Gemini finishReason maps to its neutral finish reason."""
    body = {"candidates": [{"content": {"parts": [{"text": "x"}]}, "finishReason": reason}]}
    assert gemini.decode_response(orjson.dumps(body)).finish_reason == neutral


def test_a_candidate_rated_blocked_is_content_filtered() -> None:
    """A candidate whose safety ratings say `blocked` is a refusal, whatever its finishReason,
    whole and streamed."""
    candidate = {
        "content": {"parts": [{"text": "partial"}]},
        "finishReason": "OTHER",
        "safetyRatings": [{"category": "HARM_CATEGORY_HATE_SPEECH", "blocked": True}],
    }
    body = orjson.dumps({"candidates": [candidate]})
    assert gemini.decode_response(body).finish_reason == "content_filter"
    decoder = gemini.StreamDecoder()
    [chunk] = decoder.feed(next(iter(SSEDecoder().feed(b"data: " + body + b"\r\n\r\n"))))
    assert chunk.finish_reason == decoder.finish_reason == "content_filter"


def test_unreadable_bodies_are_provider_errors() -> None:
    """No candidate and no block reason, or not JSON, is provider_error (the route moves on)."""
    for body in (b"{}", b"not json", b'{"candidates": ["x"]}'):
        with pytest.raises(ProviderUnavailable):
            gemini.decode_response(body)


def test_response_round_trips_through_the_neutral_model() -> None:
    """A neutral answer encoded as Gemini decodes back to the same content, calls and usage."""
    answer = ChatResponse(
        content=[ThinkingPart("plan", signature="sig"), TextPart("done")],
        tool_calls=[ToolCall("c1", "f", '{"a":1}')],
        finish_reason="tool_calls",
        usage=Usage(10, 5, 2),
    )
    body = gemini.encode_response(answer, model="gemini-2.5-flash", request_id="r1")
    back = gemini.decode_response(orjson.dumps(body))
    assert back.content == answer.content
    assert back.tool_calls == answer.tool_calls
    assert back.finish_reason == "tool_calls"
    assert back.usage == Usage(10, 5, 2)
    refused = gemini.encode_response(ChatResponse(finish_reason="content_filter"), model="m")
    assert refused["promptFeedback"] == {"blockReason": "SAFETY"}


def test_openai_caller_sees_a_gemini_answer_in_its_own_shape() -> None:
    """A Gemini answer re-encoded for an OpenAI caller keeps text, finish and usage."""
    response = gemini.decode_response(fixture("generate_response.json"))
    body = openai_chat.encode_response(response, model="gemini-2.5-flash")
    assert body["choices"][0]["message"]["content"] == response.text
    assert body["usage"]["prompt_tokens"] == 120
    assert body["usage"]["completion_tokens"] == 54
    assert body["usage"]["prompt_tokens_details"] == {"cached_tokens": 64}


# ---- streams -------------------------------------------------------------------------------


def test_golden_stream_decodes() -> None:
    """One chunk per event, the text in order, the finish and usage on the last one."""
    chunks, decoder = stream_chunks("stream.sse")
    assert [c.delta for c in chunks] == ["Hello", " from", " Gemini."]
    assert all(c.has_content for c in chunks)
    assert [c.finish_reason for c in chunks] == [None, None, "stop"]
    assert decoder.usage == Usage(7, 8, 0, 0, reasoning_tokens=5)
    assert decoder.done
    assert chunks[0].raw is not None
    assert chunks[0].raw.startswith(b"data: ")
    assert chunks[0].raw.endswith(b"\r\n\r\n")


def test_stream_function_call_arrives_whole() -> None:
    """A streamed function call is one delta with id, name and arguments; finish tool_calls."""
    chunks, decoder = stream_chunks("stream_function_call.sse")
    assert chunks[0].tool_calls == [
        ToolCallDelta(0, id="call_0", name="get_weather", arguments='{"city":"Paris"}')
    ]
    assert decoder.finish_reason == "tool_calls"


def test_stream_error_event_raises() -> None:
    """An error event mid-stream raises provider_error with Google's status name."""
    with pytest.raises(ProviderUnavailable) as caught:
        stream_chunks("stream_error.sse")
    assert caught.value.error_type == "UNAVAILABLE"
    assert "overloaded" in caught.value.message


def test_malformed_stream_events_are_skipped_and_counted() -> None:
    """A malformed event yields nothing and is counted; the stream goes on."""
    decoder = gemini.StreamDecoder()
    events = SSEDecoder().feed(b'data: {"candidates": [\r\n\r\ndata: {"candidates": 3}\r\n\r\n')
    assert [decoder.feed(e) for e in events] == [[], []]
    assert decoder.malformed == 2


def test_stream_encoder_round_trips() -> None:
    """Neutral chunks encoded as Gemini events decode back to the same deltas and finish."""
    encoder = gemini.StreamEncoder(model="gemini-2.5-flash", request_id="s1")
    out = b"".join(
        [
            encoder.encode(ChatChunk(delta="Hi")),
            encoder.encode(ChatChunk(thinking="hm", thinking_signature="sig")),
            encoder.encode(ChatChunk(tool_calls=[ToolCallDelta(0, "c", "f", '{"a":1}')])),
            encoder.encode(ChatChunk()),
            encoder.finish("tool_calls", Usage(3, 4)),
        ]
    )
    decoder = gemini.StreamDecoder()
    chunks = [c for e in SSEDecoder().feed(out) for c in decoder.feed(e)]
    assert [c.delta for c in chunks if c.delta] == ["Hi"]
    assert [c.thinking for c in chunks if c.thinking] == ["hm"]
    assert chunks[2].tool_calls == [ToolCallDelta(0, "c", "f", '{"a":1}')]
    assert decoder.finish_reason == "tool_calls"
    assert decoder.usage == Usage(3, 4)
    assert b"error" in gemini.error_event(503, "down")


# ---- embeddings ----------------------------------------------------------------------------


def test_embeddings_request_and_response() -> None:
    """One embed request per input, model as `models/…`; vectors back in order."""
    request = EmbeddingRequest(["a", "b"], dimensions=3)
    body = gemini_embeddings.encode_request(request, model="gemini-embedding-001")
    assert body["requests"][1] == {
        "model": "models/gemini-embedding-001",
        "content": {"parts": [{"text": "b"}]},
        "outputDimensionality": 3,
    }
    response = gemini_embeddings.decode_response(fixture("embed_response.json"))
    assert response.data == [[0.013, -0.008, 0.021], [0.004, 0.019, -0.011]]
    assert response.raw is None
    with pytest.raises(InvalidRequest, match="input"):
        gemini_embeddings.encode_request(EmbeddingRequest([1, 2, 3]), model="m")


def test_gemini_3_function_calls_carry_the_signature_stand_in() -> None:
    """For a gemini-3 model, the first replayed function call of each model turn carries
    Google's stand-in signature (the real one cannot survive another format); older models
    get none."""
    calls = [ToolCall("a", "f", "{}"), ToolCall("b", "g", "{}")]
    request = ChatRequest(
        [Message.user("go"), Message("assistant", tool_calls=calls), Message.tool_result("a", "1")]
    )
    turn = gemini.encode_request(request, model="models/gemini-3-pro-preview")["contents"][1]
    assert [p.get("thoughtSignature") for p in turn["parts"]] == [gemini.SKIP_SIGNATURE, None]
    older = gemini.encode_request(request, model="gemini-2.5-flash")["contents"][1]
    assert all("thoughtSignature" not in p for p in older["parts"])
