"""The response cache: what the key covers, what may be stored, and round trips."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest
import redis.asyncio as aredis

from turnout.state.cache import AnswerCollector, CachedAnswer, ResponseCache, cache_key
from turnout.state.memory import MemoryState
from turnout.wire import anthropic_messages, openai_chat
from turnout.wire.model import (
    ChatChunk,
    ChatRequest,
    ChatResponse,
    ImagePart,
    Message,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolCallDelta,
    Usage,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from turnout.routing.clock import FakeClock
    from turnout.state.base import StateStore
    from turnout.state.redis import RedisState

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}
OPENAI_BODY: dict[str, Any] = {
    "model": "fast",
    "messages": [
        {"role": "system", "content": "Be concise."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18C and sunny"},
    ],
    "tools": [
        {
            "type": "function",
            "function": {"name": "weather", "description": "Weather now", "parameters": SCHEMA},
        }
    ],
    "tool_choice": "auto",
    "temperature": 0.2,
    "max_tokens": 100,
    "stop": ["END"],
    "stream": True,
    "stream_options": {"include_usage": True},
    "user": "someone",
}
ANTHROPIC_BODY: dict[str, Any] = {
    "model": "fast",
    "system": [{"type": "text", "text": "Be concise.", "cache_control": {"type": "ephemeral"}}],
    "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Paris"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "18C and sunny"}
            ],
        },
    ],
    "tools": [{"name": "weather", "description": "Weather now", "input_schema": SCHEMA}],
    "tool_choice": {"type": "auto"},
    "temperature": 0.2,
    "max_tokens": 100,
    "stop_sequences": ["END"],
    "metadata": {"user_id": "someone-else"},
}
WIRE_MODELS = ["gpt-4o-mini", "claude-3-5-haiku-latest"]


def key_of(request: ChatRequest, **overrides: Any) -> str:
    """The cache key of `request` with default project, route and models."""
    parts: dict[str, Any] = {
        "project": "default",
        "route": "route-1",
        "requested_model": "fast",
        "wire_models": WIRE_MODELS,
    }
    parts.update(overrides)
    return cache_key(request=request, **parts)


def openai_request(**changes: Any) -> ChatRequest:
    """OPENAI_BODY decoded, with top-level fields changed."""
    body = copy.deepcopy(OPENAI_BODY)
    body.update(changes)
    return openai_chat.decode_request(body)


# ---- the key ---------------------------------------------------------------------------------


def test_same_request_in_either_client_format_has_one_key() -> None:
    """The OpenAI and Anthropic spellings of one conversation (tool call and result included)
    share a key, despite stream, user, metadata and cache_control differences."""
    anthropic = anthropic_messages.decode_request(copy.deepcopy(ANTHROPIC_BODY))
    assert key_of(openai_request()) == key_of(anthropic)


def test_key_is_a_sha256_hex_digest() -> None:
    """The key is 64 lower-case hex characters."""
    key = key_of(openai_request())
    assert len(key) == 64
    assert set(key) <= set("0123456789abcdef")


def test_stream_flag_user_and_metadata_do_not_change_the_key() -> None:
    """Streaming or not, and who asks, is the same question."""
    base = key_of(openai_request())
    assert key_of(openai_request(stream=False)) == base
    assert key_of(openai_request(user="another", metadata={"trace": "t"})) == base
    assert key_of(openai_request(stream_options={"include_usage": False})) == base


def test_whole_number_parameters_match_their_float_spelling() -> None:
    """`temperature: 1` and `temperature: 1.0` are one parameter value."""
    assert key_of(openai_request(temperature=1)) == key_of(openai_request(temperature=1.0))


def test_tool_call_arguments_compare_as_json() -> None:
    """Whitespace and key order inside tool-call arguments do not change the key."""
    compact = openai_request()
    compact.messages[1].tool_calls[0] = ToolCall("call_1", "weather", '{"city":"Paris"}')
    assert key_of(compact) == key_of(openai_request())


CHANGES: dict[str, Callable[[ChatRequest], ChatRequest]] = {
    "temperature": lambda r: replace(r, temperature=0.3),
    "top_p": lambda r: replace(r, top_p=0.9),
    "max_tokens": lambda r: replace(r, max_tokens=101),
    "stop": lambda r: replace(r, stop=["STOP"]),
    "seed": lambda r: replace(r, seed=7),
    "response_format": lambda r: replace(r, response_format={"type": "json_object"}),
    "reasoning_effort": lambda r: replace(r, reasoning_effort="high"),
    "thinking": lambda r: replace(r, thinking={"type": "enabled", "budget_tokens": 1024}),
    "tool_choice": lambda r: replace(r, tool_choice="required"),
    "tools": lambda r: replace(r, tools=[]),
    "system": lambda r: replace(r, system=[TextPart("Be verbose.")]),
    "messages": lambda r: replace(r, messages=[*r.messages, Message.user("And Rome?")]),
    "vendor parameter": lambda r: replace(r, extra={"n": 2}),
    "image part": lambda r: replace(
        r, messages=[Message("user", [TextPart("this?"), ImagePart(url="http://x/a.png")])]
    ),
}


@pytest.mark.parametrize("change", CHANGES.values(), ids=CHANGES.keys())
def test_every_listed_part_changes_the_key(change: Callable[[ChatRequest], ChatRequest]) -> None:
    """Messages, system, tools, tool choice and each generation parameter are in the key."""
    assert key_of(change(openai_request())) != key_of(openai_request())


@pytest.mark.parametrize(
    "override",
    [
        {"project": "other"},
        {"route": "route-2"},
        {"requested_model": "smart"},
        {"wire_models": ["gpt-4o", "claude-3-5-haiku-latest"]},
        {"wire_models": list(reversed(WIRE_MODELS))},
    ],
)
def test_project_route_and_models_are_in_the_key(override: dict[str, Any]) -> None:
    """Another project, route, requested model or target wire model is another entry."""
    assert key_of(openai_request(), **override) != key_of(openai_request())


# ---- what is stored --------------------------------------------------------------------------


def answer(**changes: Any) -> ChatResponse:
    """A finished answer with thinking, text, a tool call and usage."""
    response = ChatResponse(
        content=[ThinkingPart("hm", signature="sig"), TextPart("Sunny, 18C.")],
        model="gpt-4o-mini-2024-07-18",
        tool_calls=[ToolCall("call_9", "weather", '{"city": "Rome"}')],
        finish_reason="stop",
        usage=Usage(120, 9, 100, 0),
    )
    for name, value in changes.items():
        setattr(response, name, value)
    return response


async def test_answer_round_trips_through_the_store(state: StateStore) -> None:
    """Text, thinking, tool calls, finish reason, usage and who served survive a round trip."""
    cache = ResponseCache(state)
    assert await cache.put("k1", CachedAnswer.from_response(answer(), provider="openai"), 60)
    hit = await cache.get("k1")
    assert hit is not None
    assert hit.text == "Sunny, 18C."
    assert hit.content == (ThinkingPart("hm", signature="sig"), TextPart("Sunny, 18C."))
    assert hit.tool_calls == (ToolCall("call_9", "weather", '{"city": "Rome"}'),)
    assert (hit.finish_reason, hit.usage) == ("stop", Usage(120, 9, 100, 0))
    assert (hit.provider, hit.model) == ("openai", "gpt-4o-mini-2024-07-18")
    assert hit.stored_at is not None


def test_reasoning_tokens_survive_and_older_entries_still_read() -> None:
    """An answer's reasoning tokens are stored with its usage; an entry stored without them
    (four counts) reads back with none."""
    usage = Usage(120, 90, 100, 0, reasoning_tokens=64)
    encoded = CachedAnswer.from_response(answer(usage=usage), provider="openai").encode()
    assert CachedAnswer.decode(encoded).usage == usage
    older = encoded.replace(b"[120,90,100,0,64]", b"[120,90,100,0]")
    assert older != encoded
    assert CachedAnswer.decode(older).usage == Usage(120, 90, 100, 0)


async def test_a_miss_is_none(state: StateStore) -> None:
    """A key never stored reads as a miss."""
    assert await ResponseCache(state).get("0" * 64) is None


@pytest.mark.parametrize("finish_reason", ["content_filter", "error", None])
async def test_endings_errors_and_unfinished_answers_are_not_stored(
    state: StateStore, finish_reason: str | None
) -> None:
    """Only finished answers are cached: put returns False and stores nothing."""
    cache = ResponseCache(state)
    assert await cache.put("k", answer(finish_reason=finish_reason), 60) is False
    assert await cache.get("k") is None


@pytest.mark.parametrize("finish_reason", ["length", "tool_calls"])
async def test_truncated_and_tool_call_answers_are_stored(
    state: StateStore, finish_reason: str
) -> None:
    """An answer cut at max_tokens or asking for tools is a finished answer."""
    cache = ResponseCache(state)
    assert await cache.put("k", answer(finish_reason=finish_reason), 60)
    hit = await cache.get("k")
    assert hit is not None
    assert hit.finish_reason == finish_reason


@pytest.mark.parametrize("ttl", [0, 0.5, 86_401, float("nan")])
async def test_ttl_outside_the_allowed_range_is_refused(ttl: float) -> None:
    """cache.ttl_seconds is 1 to 86400."""
    with pytest.raises(ValueError, match="1 to 86400"):
        await ResponseCache(MemoryState()).put("k", answer(), ttl)


async def test_entry_expires_after_its_ttl(fake_clock: FakeClock) -> None:
    """A hit until the TTL ends, a miss from then on."""
    cache = ResponseCache(MemoryState(fake_clock), clock=fake_clock)
    await cache.put("k", answer(), 300)
    fake_clock.advance(299)
    assert await cache.get("k") is not None
    fake_clock.advance(1)
    assert await cache.get("k") is None


async def test_redis_entry_carries_the_ttl(redis_state: RedisState, redis_url: str) -> None:
    """In Redis the entry expires on its own after the TTL."""
    await ResponseCache(redis_state).put("k", answer(), 300)
    raw = aredis.Redis.from_url(redis_url)
    try:
        assert 299_000 < await raw.pttl(redis_state.prefix + "cache:k") <= 300_000
    finally:
        await raw.aclose()


async def test_a_corrupt_entry_is_a_miss(state: StateStore) -> None:
    """Bytes that are not a cached answer (or another version's) read as a miss."""
    await state.set("cache:bad", b"{not json", 60)
    await state.set("cache:old", b'{"v": 0}', 60)
    cache = ResponseCache(state)
    assert await cache.get("bad") is None
    assert await cache.get("old") is None


def test_encoding_is_compact() -> None:
    """A short answer encodes to a couple of hundred bytes, no field names per part."""
    data = CachedAnswer.from_response(answer(), provider="openai").encode()
    assert len(data) < 220
    assert b'"text"' not in data


def test_other_parts_survive_encoding() -> None:
    """A rare non-text part in an answer (an image) decodes to the same part."""
    cached = CachedAnswer((ImagePart(data="QUJD", media_type="image/png"),))
    assert CachedAnswer.decode(cached.encode()).content == cached.content


# ---- serving a hit in any format -------------------------------------------------------------


def test_hit_reencodes_in_both_client_formats() -> None:
    """A cached answer becomes an OpenAI and an Anthropic body with its text and tool call."""
    hit = CachedAnswer.from_response(answer())
    openai_body = openai_chat.encode_response(hit.to_response(), model="fast")
    assert openai_body["choices"][0]["message"]["content"] == "Sunny, 18C."
    assert openai_body["choices"][0]["message"]["tool_calls"][0]["id"] == "call_9"
    anthropic_body = anthropic_messages.encode_response(hit.to_response(), model="fast")
    kinds = [block["type"] for block in anthropic_body["content"]]
    assert kinds == ["thinking", "text", "tool_use"]


def test_hit_streams_as_chunks() -> None:
    """to_chunks yields thinking, text and tool-call chunks, then finish reason and usage."""
    chunks = CachedAnswer.from_response(answer()).to_chunks()
    assert [c.thinking for c in chunks[:1]] == ["hm"]
    assert "".join(c.delta for c in chunks) == "Sunny, 18C."
    assert chunks[2].tool_calls[0].name == "weather"
    assert (chunks[-1].finish_reason, chunks[-1].usage) == ("stop", Usage(120, 9, 100, 0))
    assert {c.model for c in chunks} == {"gpt-4o-mini-2024-07-18"}
    encoder = openai_chat.StreamEncoder(model="fast", include_usage=True)
    sse = b"".join(encoder.encode(chunk) for chunk in chunks) + encoder.finish()
    assert b"Sunny, 18C." in sse
    assert b'"finish_reason":"stop"' in sse


# ---- collecting a streamed answer ------------------------------------------------------------


def test_collected_chunks_give_back_the_answer() -> None:
    """An answer streamed as chunks and collected again is the same answer (text, signed
    thinking, tool call, finish reason, usage, model)."""
    cached = CachedAnswer.from_response(answer(), provider="openai")
    collector = AnswerCollector()
    for chunk in cached.to_chunks():
        collector.add(chunk)
    assert collector.answer("openai") == cached


def test_collector_joins_deltas_by_kind_and_tool_calls_by_index() -> None:
    """Text pieces join into one part per run, thinking keeps its signature, tool-call
    arguments join by index (id and name from their first delta), in first-seen order."""
    collector = AnswerCollector()
    chunks = [
        ChatChunk(thinking="let me ", model="m-1"),
        ChatChunk(thinking="think"),
        ChatChunk(thinking_signature="sig-1"),
        ChatChunk(delta="It is "),
        ChatChunk(delta="sunny."),
        ChatChunk(tool_calls=[ToolCallDelta(3, "call_b", "clock", "")]),
        ChatChunk(tool_calls=[ToolCallDelta(1, "call_a", "weather", '{"city":')]),
        ChatChunk(tool_calls=[ToolCallDelta(1, arguments=' "Rome"}')]),
        ChatChunk(finish_reason="tool_calls"),
        ChatChunk(usage=Usage(10, 4)),
    ]
    for chunk in chunks:
        collector.add(chunk)
    collected = collector.answer("p")
    assert collected.content == (ThinkingPart("let me think", "sig-1"), TextPart("It is sunny."))
    assert collected.tool_calls == (
        ToolCall("call_b", "clock", "{}"),
        ToolCall("call_a", "weather", '{"city": "Rome"}'),
    )
    assert (collected.finish_reason, collected.usage, collected.model) == (
        "tool_calls",
        Usage(10, 4),
        "m-1",
    )
    assert collected.is_cacheable


def test_collector_without_a_finish_reason_is_not_cacheable() -> None:
    """A stream that never said how it finished collects into an answer that is not stored."""
    collector = AnswerCollector()
    collector.add(ChatChunk(delta="half an ans"))
    assert not collector.answer().is_cacheable
