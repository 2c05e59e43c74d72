"""Property tests: encode/decode round trips and what bad input may raise."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnout.errors import InvalidRequest, ProviderError
from turnout.wire import anthropic_messages as am
from turnout.wire import openai_chat as oc
from turnout.wire.model import (
    ChatChunk,
    ChatRequest,
    ChatResponse,
    ImagePart,
    Message,
    Part,
    TextPart,
    ThinkingPart,
    Tool,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from turnout.wire.sse import SSEDecoder, encode_event

PROPERTY = settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow])

texts = st.text(min_size=1, max_size=20)
ids = st.from_regex(r"[A-Za-z0-9_]{1,12}", fullmatch=True)
arguments = st.dictionaries(
    st.text(max_size=6),
    st.one_of(st.integers(-99, 99), st.text(max_size=6), st.booleans()),
    max_size=3,
).map(lambda d: orjson.dumps(d).decode())
images = st.one_of(
    st.builds(ImagePart, url=st.sampled_from(["https://example.com/a.png", "http://x.test/b.jpg"])),
    st.builds(
        ImagePart,
        data=st.from_regex(r"[A-Za-z0-9+/]{4,12}", fullmatch=True),
        media_type=st.sampled_from(["image/png", "image/jpeg", "image/gif", "image/webp"]),
    ),
)
tool_calls = st.lists(st.builds(ToolCall, id=ids, name=ids, arguments=arguments), max_size=2)


@st.composite
def user_messages(draw: st.DrawFn) -> Message:
    parts: list[Part] = draw(
        st.one_of(
            st.builds(lambda t: [TextPart(t)], texts),
            st.lists(st.one_of(st.builds(TextPart, texts), images), min_size=2, max_size=3),
        )
    )
    return Message("user", parts)


@st.composite
def assistant_messages(draw: st.DrawFn) -> Message:
    calls = draw(tool_calls)
    text = draw(st.one_of(st.none(), texts) if calls else texts)
    return Message("assistant", [TextPart(text)] if text else [], tool_calls=calls)


def tool_messages(with_errors: bool) -> st.SearchStrategy[Message]:
    flags = st.booleans() if with_errors else st.just(False)
    return st.builds(
        lambda call_id, text, is_error: Message.tool_result(call_id, text, is_error=is_error),
        ids,
        texts,
        flags,
    )


@st.composite
def requests(draw: st.DrawFn, *, anthropic: bool) -> ChatRequest:
    turns = st.one_of(user_messages(), assistant_messages(), tool_messages(anthropic))
    tools = draw(
        st.lists(
            st.builds(Tool, ids, texts, st.just({"type": "object", "properties": {}})),
            max_size=2,
            unique_by=lambda t: t.name,
        )
    )
    choices = ["auto", "none", "required"] + [{"name": t.name} for t in tools]
    return ChatRequest(
        messages=draw(st.lists(turns, min_size=1, max_size=6)),
        system=draw(st.lists(st.builds(TextPart, texts), max_size=2)),
        tools=tools,
        tool_choice=draw(st.sampled_from(choices)) if tools else None,
        temperature=draw(st.one_of(st.none(), st.floats(0, 1))),
        max_tokens=draw(
            st.integers(1, 8192) if anthropic else st.one_of(st.none(), st.integers(1, 8192))
        ),
        stop=draw(st.one_of(st.none(), st.lists(texts, min_size=1, max_size=2))),
    )


def as_sent(request: ChatRequest) -> ChatRequest:
    return replace(request, origin=None, source=None)


@PROPERTY
@given(requests(anthropic=False))
def test_openai_request_round_trip(request: ChatRequest) -> None:
    """decode(encode(x)) is x for OpenAI: text, images, tool calls and results, parameters."""
    body = orjson.loads(orjson.dumps(oc.encode_request(request, model="m")))
    assert as_sent(oc.decode_request(body)) == replace(request, model="m")


@PROPERTY
@given(requests(anthropic=True))
def test_anthropic_request_round_trip(request: ChatRequest) -> None:
    """decode(encode(x)) is x for Anthropic: text, images, tool calls and results, parameters."""
    body = orjson.loads(orjson.dumps(am.encode_request(request, model="m")))
    assert as_sent(am.decode_request(body)) == replace(request, model="m")


finishes = st.sampled_from(["stop", "length", "tool_calls", "content_filter"])


@st.composite
def responses(draw: st.DrawFn, *, anthropic: bool) -> ChatResponse:
    content: list[Part] = []
    if anthropic and draw(st.booleans()):
        content.append(ThinkingPart(draw(texts), signature=draw(ids)))
    calls = draw(tool_calls)
    text = draw(st.one_of(st.none(), texts) if calls else texts)
    if text:
        content.append(TextPart(text))
    cache_read = draw(st.integers(0, 500))
    cache_write = draw(st.integers(0, 500)) if anthropic else 0
    usage = Usage(
        input_tokens=cache_read + cache_write + draw(st.integers(0, 500)),
        output_tokens=draw(st.integers(0, 500)),
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )
    return ChatResponse(
        content=content,
        tool_calls=calls,
        finish_reason=draw(finishes),
        usage=usage,
        id=draw(ids),
    )


def same_answer(ours: ChatResponse, theirs: ChatResponse) -> None:
    assert (ours.content, ours.tool_calls, ours.finish_reason, ours.usage, ours.id) == (
        theirs.content,
        theirs.tool_calls,
        theirs.finish_reason,
        theirs.usage,
        theirs.id,
    )


@PROPERTY
@given(responses(anthropic=False))
def test_openai_response_round_trip(response: ChatResponse) -> None:
    """decode_response(encode_response(x)) keeps text, tool calls, finish reason and usage."""
    body = orjson.dumps(oc.encode_response(response, model="m"))
    same_answer(oc.decode_response(body), response)


@PROPERTY
@given(responses(anthropic=True))
def test_anthropic_response_round_trip(response: ChatResponse) -> None:
    """decode_response(encode_response(x)) keeps thinking, text, tool calls, stop and usage."""
    body = orjson.dumps(am.encode_response(response, model="m"))
    same_answer(am.decode_response(body), response)


chunk_steps = st.lists(
    st.one_of(
        st.builds(lambda t: ChatChunk(delta=t), texts),
        st.builds(lambda t: ChatChunk(thinking=t), texts),
        st.builds(
            lambda i, a: ChatChunk(tool_calls=[ToolCallDelta(i, arguments=a)]),
            st.integers(0, 2),
            st.text(max_size=5),
        ),
    ),
    max_size=12,
)


def stream_summary(chunks: list[ChatChunk], *, thinking: bool) -> tuple[str, str, list[str]]:
    """Text, thinking and each call's arguments, calls in order of their first delta."""
    calls: dict[int, str] = {}
    for chunk in chunks:
        for delta in chunk.tool_calls:
            calls[delta.index] = calls.get(delta.index, "") + delta.arguments
    text = "".join(c.delta for c in chunks)
    return text, "".join(c.thinking for c in chunks) if thinking else "", list(calls.values())


def reencode(
    chunks: list[ChatChunk],
    encoder: oc.StreamEncoder | am.StreamEncoder,
    decoder: oc.StreamDecoder | am.StreamDecoder,
) -> list[ChatChunk]:
    announced: set[int] = set()
    data = b""
    for chunk in chunks:
        for i, delta in enumerate(chunk.tool_calls):
            if delta.index not in announced:  # a call's first delta names it
                announced.add(delta.index)
                chunk.tool_calls[i] = replace(delta, id=f"c{delta.index}", name="f")
        data += encoder.encode(chunk)
    data += encoder.finish(finish_reason="stop", usage=Usage(3, 4))
    sse = SSEDecoder()
    out = [c for e in sse.feed(data) + sse.flush() for c in decoder.feed(e)]
    assert decoder.done
    assert (decoder.finish_reason, decoder.usage) == ("stop", Usage(3, 4))
    return out


@PROPERTY
@given(chunk_steps)
def test_anthropic_stream_encoder_round_trip(chunks: list[ChatChunk]) -> None:
    """Any chunk sequence re-encoded as Anthropic events decodes to the same content."""
    out = reencode(chunks, am.StreamEncoder(model="m"), am.StreamDecoder())
    assert stream_summary(out, thinking=True) == stream_summary(chunks, thinking=True)


@PROPERTY
@given(chunk_steps)
def test_openai_stream_encoder_round_trip(chunks: list[ChatChunk]) -> None:
    """Any chunk sequence re-encoded as OpenAI chunks decodes to the same text and calls."""
    out = reencode(chunks, oc.StreamEncoder(model="m", include_usage=True), oc.StreamDecoder())
    assert stream_summary(out, thinking=False) == stream_summary(chunks, thinking=False)


WORDS = [
    "messages",
    "role",
    "content",
    "type",
    "text",
    "image_url",
    "url",
    "tool_calls",
    "function",
    "name",
    "arguments",
    "tool_call_id",
    "tools",
    "tool_choice",
    "source",
    "data",
    "media_type",
    "tool_use_id",
    "input",
    "system",
    "stop",
    "stop_sequences",
    "metadata",
    "thinking",
    "signature",
    "user",
    "assistant",
    "tool",
    "developer",
    "image",
    "document",
    "tool_use",
    "tool_result",
    "base64",
    "file",
    "file_data",
    "choices",
    "message",
    "delta",
    "index",
    "usage",
    "finish_reason",
    "stop_reason",
    "error",
    "content_block",
    "message_start",
    "content_block_start",
    "content_block_delta",
    "input_json_delta",
    "partial_json",
    "text_delta",
    "model",
    "max_tokens",
    "is_error",
    "cache_control",
    "prompt_tokens",
    "input_tokens",
    "auto",
    "any",
    "required",
    "data:image/png;base64,AAAA",
    "[DONE]",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(WORDS),
    st.text(max_size=5),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(WORDS), st.text(max_size=4)), inner, max_size=5),
    ),
    max_leaves=30,
)
bodies = st.dictionaries(st.sampled_from(WORDS), json_values, max_size=6)


@PROPERTY
@given(st.one_of(bodies, st.builds(lambda b: {"messages": [b]}, bodies)))
def test_any_request_body_decodes_or_raises_invalid_request(body: dict[str, Any]) -> None:
    """decode_request only ever raises InvalidRequest; what decodes encodes in both formats,
    or is refused as InvalidRequest naming a message (an unknown block, an emptied message)."""
    for codec in (oc, am):
        try:
            request = codec.decode_request(orjson.dumps(body))
        except InvalidRequest:
            continue
        for encode in (oc.encode_request, am.encode_request):
            refused: list[str] = []
            try:
                orjson.dumps(encode(request, model="m"))
            except InvalidRequest as exc:
                refused.append(exc.message)
            assert all(message.startswith("messages[") for message in refused)


@PROPERTY
@given(st.one_of(st.binary(max_size=60), bodies.map(orjson.dumps)))
def test_any_upstream_body_decodes_or_raises_provider_error(raw: bytes) -> None:
    """decode_response only ever raises ProviderError, whatever the upstream sent."""
    for codec in (oc, am):
        try:
            response = codec.decode_response(raw)
        except ProviderError:
            continue
        orjson.dumps(oc.encode_response(response, model="m"))
        orjson.dumps(am.encode_response(response, model="m"))


@PROPERTY
@given(st.lists(st.one_of(st.binary(max_size=30), json_values.map(orjson.dumps)), max_size=6))
def test_any_stream_bytes_never_raise_but_provider_error(pieces: list[bytes]) -> None:
    """Garbage or odd JSON in a stream is skipped or counted; only error events raise."""
    data = b"".join(
        p if i % 2 else encode_event(p, event="content_block_delta") for i, p in enumerate(pieces)
    )
    for decoder in (oc.StreamDecoder(), am.StreamDecoder()):
        sse = SSEDecoder()
        try:
            for event in sse.feed(data) + sse.flush():
                decoder.feed(event)
        except ProviderError:
            continue
