"""The Bedrock codecs against golden fixtures: Converse requests, answers and stream events,
the InvokeModel Anthropic body and its `chunk` events, and the AWS event-stream framing."""

from __future__ import annotations

import base64
import zlib
from pathlib import Path

import orjson
import pytest

from turnout.errors import MalformedRequest, ProviderUnavailable
from turnout.record import Usage
from turnout.wire import anthropic_messages, bedrock_anthropic, bedrock_converse
from turnout.wire.aws_eventstream import EventStreamDecoder, EventStreamError, Frame, encode_frame
from turnout.wire.model import (
    ChatChunk,
    ChatRequest,
    ImagePart,
    Message,
    TextPart,
    ThinkingPart,
    Tool,
    ToolCall,
)
from turnout.wire.sse import SSEEvent
from turnout.wire.translate import untranslatable

FIXTURES = Path(__file__).parent.parent / "fixtures" / "bedrock"


def fixture(name: str) -> bytes:
    """The bytes of a Bedrock golden fixture."""
    return (FIXTURES / name).read_bytes()


def frames_of(data: bytes) -> list[Frame]:
    """Every frame of a whole event stream."""
    decoder = EventStreamDecoder()
    frames = decoder.feed(data)
    assert not decoder.pending
    return frames


def converse_chunks(data: bytes) -> tuple[list[ChatChunk], bedrock_converse.StreamDecoder]:
    """The neutral chunks of a ConverseStream answer, and the decoder that read it."""
    decoder = bedrock_converse.StreamDecoder()
    chunks: list[ChatChunk] = []
    for frame in frames_of(data):
        event = SSEEvent(frame.event_type, frame.payload.decode(), None, b"")
        chunks.extend(decoder.feed(event))
    return chunks, decoder


# ---- event-stream framing ----------------------------------------------------------------------
def test_frames_decode_at_every_split() -> None:
    """A stream split at any one byte boundary decodes to the same frames, none twice."""
    data = fixture("converse_stream.bin")
    whole = frames_of(data)
    assert len(whole) == 10
    for cut in range(1, len(data)):
        decoder = EventStreamDecoder()
        frames = decoder.feed(data[:cut]) + decoder.feed(data[cut:])
        assert frames == whole, cut
        assert not decoder.pending


def test_frames_decode_byte_by_byte() -> None:
    """Fed one byte at a time, every frame comes out once its last byte is read."""
    data = fixture("invoke_stream.bin")
    decoder = EventStreamDecoder()
    frames: list[Frame] = []
    for index in range(len(data)):
        frames += decoder.feed(data[index : index + 1])
    assert frames == frames_of(data)
    assert [f.event_type for f in frames] == ["chunk"] * 11


def test_headers_and_types_are_read() -> None:
    """String headers name the event and message type; other header value types decode."""
    frame = frames_of(fixture("converse_stream_throttled.bin"))[1]
    assert frame.message_type == "exception"
    assert frame.event_type == "throttlingException"
    assert orjson.loads(frame.payload)["message"].startswith("Too many requests")
    # A hand-made header block: bool true, int32, byte array, then a string.
    headers = (
        b"\x04flag\x00"
        b"\x03num\x04\x00\x00\x01\x00"
        b"\x03raw\x06\x00\x02\xab\xcd"
        b"\x0b:event-type\x07\x00\x04ping"
    )
    total = 12 + len(headers) + 2 + 4
    prelude = total.to_bytes(4, "big") + len(headers).to_bytes(4, "big")
    head = prelude + zlib.crc32(prelude).to_bytes(4, "big") + headers + b"{}"
    (decoded,) = EventStreamDecoder().feed(head + zlib.crc32(head).to_bytes(4, "big"))
    assert decoded.headers == {"flag": True, "num": 256, "raw": b"\xab\xcd", ":event-type": "ping"}


def test_botocore_reads_our_frames() -> None:
    """botocore's own event-stream parser reads what `encode_frame` writes (the mock's frames)."""
    from botocore.eventstream import EventStreamBuffer

    data = fixture("converse_stream.bin")
    buffer = EventStreamBuffer()
    buffer.add_data(data)
    theirs = [(m.headers, m.payload) for m in buffer]
    assert theirs == [(f.headers, f.payload) for f in frames_of(data)]


@pytest.mark.parametrize("where", ["prelude", "message"])
def test_bad_crc_is_an_error_and_stays_one(where: str) -> None:
    """A prelude or message CRC that does not match raises, and so does every later feed."""
    frame = bytearray(encode_frame({":event-type": "messageStart"}, b'{"role":"assistant"}'))
    frame[8 if where == "prelude" else -1] ^= 0xFF
    decoder = EventStreamDecoder()
    with pytest.raises(EventStreamError, match=f"{where} CRC"):
        decoder.feed(bytes(frame))
    with pytest.raises(EventStreamError):
        decoder.feed(encode_frame({":event-type": "messageStart"}, b"{}"))


def test_a_frame_over_the_limit_is_refused_from_its_prelude() -> None:
    """A prelude announcing more than `max_frame_bytes` raises before the frame is buffered."""
    frame = encode_frame({":event-type": "chunk"}, b"x" * 2000)
    with pytest.raises(EventStreamError, match="larger than 1024"):
        EventStreamDecoder(max_frame_bytes=1024).feed(frame[:12])


def test_an_unfinished_frame_is_pending() -> None:
    """A stream cut inside a frame leaves it pending (the provider reads that as a cut)."""
    decoder = EventStreamDecoder()
    assert decoder.feed(fixture("converse_stream.bin")[:40]) == []
    assert decoder.pending


# ---- Converse requests ---------------------------------------------------------------------------
def test_converse_request_carries_every_part() -> None:
    """System (with a cache point), merged turns, image bytes, tool use and results, signed
    thinking, inference config, tools and a forced tool."""
    request = ChatRequest(
        [
            Message("user", [TextPart("Weather?"), ImagePart(url="data:image/png;base64,iVBO")]),
            Message(
                "assistant",
                [ThinkingPart("need the tool", signature="sig"), ThinkingPart("unsigned")],
                tool_calls=[ToolCall("t1", "get_weather", '{"city":"Paris"}')],
            ),
            Message.tool_result("t1", "18C", is_error=False),
            Message.user("And tomorrow?"),
        ],
        system=[TextPart("Be brief.", cache_control={"type": "ephemeral"})],
        tools=[Tool("get_weather", "Weather by city", {"type": "object"})],
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        temperature=1.5,
        top_p=0.9,
        max_tokens=300,
        stop=["END"],
        thinking={"type": "enabled", "budget_tokens": 1024},
    )
    body = bedrock_converse.encode_request(request, model="amazon.nova-pro-v1:0")
    assert body == {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"text": "Weather?"},
                    {"image": {"format": "png", "source": {"bytes": "iVBO"}}},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {
                        "reasoningContent": {
                            "reasoningText": {"text": "need the tool", "signature": "sig"}
                        }
                    },
                    {
                        "toolUse": {
                            "toolUseId": "t1",
                            "name": "get_weather",
                            "input": {"city": "Paris"},
                        }
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"toolResult": {"toolUseId": "t1", "content": [{"text": "18C"}]}},
                    {"text": "And tomorrow?"},
                ],
            },
        ],
        "system": [{"text": "Be brief."}, {"cachePoint": {"type": "default"}}],
        "inferenceConfig": {
            "maxTokens": 300,
            "temperature": 1.0,
            "topP": 0.9,
            "stopSequences": ["END"],
        },
        "toolConfig": {
            "tools": [
                {
                    "toolSpec": {
                        "name": "get_weather",
                        "description": "Weather by city",
                        "inputSchema": {"json": {"type": "object"}},
                    }
                }
            ],
            "toolChoice": {"tool": {"name": "get_weather"}},
        },
        "additionalModelRequestFields": {"thinking": {"type": "enabled", "budget_tokens": 1024}},
    }


def test_converse_request_tool_choices_and_failed_tools() -> None:
    """`required` is `any`, `auto` is `auto`, `none` sends no choice; a failed tool is marked."""
    tools = [Tool("f", parameters={"type": "object"})]
    for choice, expected in (("required", {"any": {}}), ("auto", {"auto": {}}), ("none", None)):
        body = bedrock_converse.encode_request(
            ChatRequest([Message.user("x")], tools=tools, tool_choice=choice), model="m"
        )
        assert body["toolConfig"].get("toolChoice") == expected
    failed = Message.tool_result("t9", "boom", is_error=True)
    body = bedrock_converse.encode_request(ChatRequest([failed]), model="m")
    assert body["messages"][0]["content"][0]["toolResult"]["status"] == "error"
    assert body["inferenceConfig"] == {"maxTokens": bedrock_converse.DEFAULT_MAX_TOKENS}


def test_what_converse_cannot_carry_is_dropped_and_named() -> None:
    """An image by URL, unsigned thinking, seed and response_format are left out of the
    Converse body, and `untranslatable` names each; an image format Converse lacks is a 400."""
    request = ChatRequest(
        [
            Message("user", [TextPart("look"), ImagePart(url="https://example.com/a.png")]),
            Message("assistant", [ThinkingPart("hmm"), TextPart("ok")]),
        ],
        seed=7,
        response_format={"type": "json_object"},
        origin="openai-chat",
    )
    body = bedrock_converse.encode_request(request, model="m")
    assert body["messages"] == [
        {"role": "user", "content": [{"text": "look"}]},
        {"role": "assistant", "content": [{"text": "ok"}]},
    ]
    assert untranslatable(request, "bedrock-converse") == [
        "seed",
        "response_format",
        "image urls",
        "unsigned thinking blocks",
    ]
    tiff = ChatRequest([Message("user", [ImagePart(data="AAAA", media_type="image/tiff")])])
    with pytest.raises(MalformedRequest, match="png, jpeg, gif or webp"):
        bedrock_converse.encode_request(tiff, model="m")


# ---- Converse answers ----------------------------------------------------------------------------
def test_converse_response_text_thinking_and_cache_usage() -> None:
    """Text and signed reasoning become parts; usage counts the cache within the input."""
    response = bedrock_converse.decode_response(fixture("converse_response.json"))
    assert response.text == "Hello! How can I help?"
    assert response.content[0] == ThinkingPart("The user greets me.", signature="c2lnbmF0dXJl")
    assert response.finish_reason == "stop"
    assert response.usage == Usage(32, 9, cache_read_tokens=15, cache_write_tokens=5)


def test_converse_response_tool_use() -> None:
    """A toolUse block is a tool call with its input as JSON text; `tool_use` is tool_calls."""
    response = bedrock_converse.decode_response(fixture("converse_response_tool.json"))
    assert response.tool_calls == [
        ToolCall(
            "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "get_weather", '{"city":"Paris","unit":"celsius"}'
        )
    ]
    assert response.finish_reason == "tool_calls"


@pytest.mark.parametrize(
    ("reason", "finish"),
    [
        ("guardrail_intervened", "content_filter"),
        ("content_filtered", "content_filter"),
        ("max_tokens", "length"),
        ("stop_sequence", "stop"),
    ],
)
def test_converse_stop_reasons(reason: str, finish: str) -> None:
    """Each Converse stop reason has its neutral finish reason (guardrails are refusals)."""
    body = orjson.loads(fixture("converse_response_guardrail.json"))
    body["stopReason"] = reason
    assert bedrock_converse.decode_response(orjson.dumps(body)).finish_reason == finish


def test_converse_response_without_content_is_provider_error() -> None:
    """An answer without `output.message.content` is the upstream's fault."""
    with pytest.raises(ProviderUnavailable, match=r"output\.message\.content"):
        bedrock_converse.decode_response(b'{"output": {}}')


# ---- Converse streams ----------------------------------------------------------------------------
def test_converse_stream_text_tool_finish_and_usage() -> None:
    """Text deltas, a tool call opened then filled, the finish, then usage from metadata."""
    chunks, decoder = converse_chunks(fixture("converse_stream.bin"))
    assert not chunks[0].has_content
    assert "".join(c.delta for c in chunks) == "Checking the weather."
    calls = [d for c in chunks for d in c.tool_calls]
    assert (calls[0].id, calls[0].name) == ("tooluse_1", "get_weather")
    assert "".join(d.arguments for d in calls) == '{"city": "Paris"}'
    assert {d.index for d in calls} == {0}
    assert [c.finish_reason for c in chunks if c.finish_reason] == ["tool_calls"]
    assert chunks[-1].usage == Usage(48, 17, cache_read_tokens=8)
    assert decoder.done
    assert decoder.malformed == 0


def test_converse_stream_skips_undecodable_events() -> None:
    """An event whose payload is not JSON, or a delta without its block index, is counted."""
    decoder = bedrock_converse.StreamDecoder()
    assert decoder.feed(SSEEvent("contentBlockDelta", '{"delta": {"te', None, b"")) == []
    assert decoder.feed(SSEEvent("contentBlockDelta", '{"delta": {"text": "x"}}', None, b"")) == []
    assert decoder.malformed == 2


# ---- InvokeModel (Anthropic Messages on Bedrock) -------------------------------------------------
@pytest.mark.parametrize(
    ("model", "claude"),
    [
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", True),
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", True),
        ("global.anthropic.claude-sonnet-4-5-20250929-v1:0", True),
        ("apac.anthropic.claude-3-haiku-20240307-v1:0", True),
        (
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0",
            True,
        ),
        ("amazon.nova-pro-v1:0", False),
        ("meta.llama3-70b-instruct-v1:0", False),
        ("us.meta.llama3-2-90b-instruct-v1:0", False),
    ],
)
def test_claude_models_are_recognised(model: str, claude: bool) -> None:
    """Claude on Bedrock is recognised in every id form: plain, inference profile, ARN."""
    assert bedrock_anthropic.is_claude(model) is claude


def test_forwarded_body_keeps_cache_control_thinking_and_betas() -> None:
    """A caller's Messages body loses only `model` and `stream`, gains the Bedrock version and
    the caller's betas; cache_control, thinking and unknown fields are untouched."""
    source = {
        "model": "claude-sonnet-4",
        "stream": True,
        "max_tokens": 2048,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "system": [{"type": "text", "text": "Long rules", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "hi"}],
        "x_future": 1,
    }
    headers = (("anthropic-beta", "interleaved-thinking-2025-05-14, context-1m-2025-08-07"),)
    body = orjson.loads(bedrock_anthropic.forward_body(orjson.dumps(source), headers=headers))
    expected = {k: v for k, v in source.items() if k not in ("model", "stream")}
    assert body == {
        **expected,
        "anthropic_version": "bedrock-2023-05-31",
        "anthropic_beta": ["interleaved-thinking-2025-05-14", "context-1m-2025-08-07"],
    }


def test_encoded_invoke_body_has_no_model() -> None:
    """A neutral request encodes as Messages with the Bedrock version and no model."""
    body = bedrock_anthropic.encode_request(ChatRequest([Message.user("hi")]), model="m")
    assert body["anthropic_version"] == "bedrock-2023-05-31"
    assert "model" not in body
    assert "stream" not in body
    assert body["messages"] == [{"role": "user", "content": "hi"}]


def test_invoke_stream_chunks_are_anthropic_events() -> None:
    """Each `chunk` frame holds one Anthropic event: decoded, it streams thinking (signed),
    text, the finish and cache usage, with raw SSE bytes for a same-format caller."""
    decoder = anthropic_messages.StreamDecoder()
    chunks: list[ChatChunk] = []
    for frame in frames_of(fixture("invoke_stream.bin")):
        event = bedrock_anthropic.chunk_event(frame.payload)
        assert event is not None
        assert event.raw == f"event: {event.event}\ndata: {event.data}\n\n".encode()
        chunks.extend(decoder.feed(event))
    assert "".join(c.thinking for c in chunks) == "Short greeting."
    assert [c.thinking_signature for c in chunks if c.thinking_signature] == ["RXVn"]
    assert "".join(c.delta for c in chunks) == "Hello there"
    assert decoder.finish_reason == "stop"
    assert decoder.done
    assert decoder.usage == Usage(111, 12, cache_read_tokens=100)


def test_a_chunk_without_an_event_is_none() -> None:
    """A chunk whose `bytes` is not base64 JSON holds no event."""
    assert bedrock_anthropic.chunk_event(b'{"bytes": "not base64!"}') is None
    assert bedrock_anthropic.chunk_event(b"{}") is None
    wrapped = base64.b64encode(b"[1]").decode()
    assert bedrock_anthropic.chunk_event(orjson.dumps({"bytes": wrapped})) is None
