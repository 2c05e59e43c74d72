"""Property tests of the Gemini codec: round trips through the neutral model, and what bad
input may raise."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnout.errors import InvalidRequest, ProviderError
from turnout.wire import anthropic_messages as am
from turnout.wire import gemini as gm
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
    Usage,
)
from turnout.wire.sse import SSEDecoder

PROPERTY = settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow])

texts = st.text(min_size=1, max_size=20)
# A tool result that reads as a JSON object travels as that object, re-serialised: such
# texts are pinned by the golden tests, not here.
results = texts.filter(lambda t: not t.strip().startswith("{"))
ids = st.from_regex(r"[A-Za-z0-9_]{1,12}", fullmatch=True)
arguments = st.dictionaries(
    st.text(max_size=6),
    st.one_of(st.integers(-99, 99), st.text(max_size=6), st.booleans()),
    max_size=3,
).map(lambda d: orjson.dumps(d).decode())
images = st.builds(
    ImagePart,
    data=st.from_regex(r"[A-Za-z0-9+/]{4,12}", fullmatch=True),
    media_type=st.sampled_from(["image/png", "image/jpeg", "image/webp"]),
)
tool_calls = st.lists(st.builds(ToolCall, id=ids, name=ids, arguments=arguments), max_size=2)


@st.composite
def messages(draw: st.DrawFn) -> Message:
    kind = draw(st.sampled_from(["user", "assistant", "tool"]))
    if kind == "user":
        parts: list[Part] = draw(
            st.lists(st.one_of(st.builds(TextPart, texts), images), min_size=1, max_size=3)
        )
        return Message("user", parts)
    if kind == "assistant":
        calls = draw(tool_calls)
        text = draw(st.one_of(st.none(), texts) if calls else texts)
        return Message("assistant", [TextPart(text)] if text else [], tool_calls=calls)
    return Message.tool_result(draw(ids), draw(results), is_error=draw(st.booleans()))


@st.composite
def requests(draw: st.DrawFn) -> ChatRequest:
    tools = draw(
        st.lists(
            st.builds(Tool, ids, texts, st.just({"type": "object", "properties": {}})),
            max_size=2,
            unique_by=lambda t: t.name,
        )
    )
    choices = ["auto", "none", "required"] + [{"name": t.name} for t in tools]
    return ChatRequest(
        messages=draw(st.lists(messages(), min_size=1, max_size=6)),
        system=draw(st.lists(st.builds(TextPart, texts), max_size=2)),
        tools=tools,
        tool_choice=draw(st.sampled_from(choices)) if tools else None,
        temperature=draw(st.one_of(st.none(), st.floats(0, 2))),
        top_p=draw(st.one_of(st.none(), st.floats(0, 1))),
        max_tokens=draw(st.one_of(st.none(), st.integers(1, 8192))),
        stop=draw(st.one_of(st.none(), st.lists(texts, min_size=1, max_size=2))),
        seed=draw(st.one_of(st.none(), st.integers(0, 2**31))),
    )


def unnamed(request: ChatRequest) -> ChatRequest:
    """The request as the caller built it: Gemini names each tool result after its call."""
    kept = [replace(m, name=None) if m.role == "tool" else m for m in request.messages]
    return replace(request, messages=kept, origin=None, source=None)


@PROPERTY
@given(requests())
def test_gemini_request_round_trip(request: ChatRequest) -> None:
    """decode(encode(x)) is x for Gemini: text, images, tool calls and results (errors
    included), tools, tool choice and generation parameters."""
    body = orjson.loads(orjson.dumps(gm.encode_request(request, model="gemini-2.5-flash")))
    assert unnamed(gm.decode_request(body)) == request


@st.composite
def responses(draw: st.DrawFn) -> ChatResponse:
    content: list[Part] = []
    if draw(st.booleans()):
        content.append(ThinkingPart(draw(texts), signature=draw(ids)))
    calls = draw(tool_calls)
    text = draw(st.one_of(st.none(), texts) if calls else texts)
    if text:
        content.append(TextPart(text))
    cache_read = draw(st.integers(0, 500))
    usage = Usage(
        input_tokens=cache_read + draw(st.integers(0, 500)),
        output_tokens=draw(st.integers(0, 500)),
        cache_read_tokens=cache_read,
    )
    finish = draw(st.sampled_from(["stop", "length", "content_filter"]))
    if calls and finish == "stop":
        finish = "tool_calls"  # Gemini says STOP; its calls say tool_calls
    return ChatResponse(content, tool_calls=calls, finish_reason=finish, usage=usage, id=draw(ids))


@PROPERTY
@given(responses())
def test_gemini_response_round_trip(response: ChatResponse) -> None:
    """decode_response(encode_response(x)) keeps thoughts, text, calls, finish and usage."""
    back = gm.decode_response(orjson.dumps(gm.encode_response(response, model="m")))
    assert (back.content, back.tool_calls, back.finish_reason, back.usage, back.id) == (
        response.content,
        response.tool_calls,
        response.finish_reason,
        response.usage,
        response.id,
    )


@PROPERTY
@given(
    st.lists(
        st.one_of(
            st.builds(lambda t: ChatChunk(delta=t), texts),
            st.builds(lambda t: ChatChunk(thinking=t), texts),
        ),
        max_size=12,
    )
)
def test_gemini_stream_encoder_round_trip(chunks: list[ChatChunk]) -> None:
    """Any sequence of text and thinking chunks re-encoded as Gemini events decodes to the same
    text and thinking, with the finish reason and usage of the last event."""
    encoder = gm.StreamEncoder(model="m")
    data = b"".join(encoder.encode(chunk) for chunk in chunks)
    data += encoder.finish("stop", Usage(3, 4))
    decoder = gm.StreamDecoder()
    sse = SSEDecoder()
    out = [c for e in sse.feed(data) + sse.flush() for c in decoder.feed(e)]
    assert "".join(c.delta for c in out) == "".join(c.delta for c in chunks)
    assert "".join(c.thinking for c in out) == "".join(c.thinking for c in chunks)
    assert (decoder.finish_reason, decoder.usage) == ("stop", Usage(3, 4))


WORDS = ["contents", "parts", "text", "functionCall", "candidates", "promptFeedback", "error"]
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
@given(st.one_of(bodies, st.builds(lambda b: {"contents": [b]}, bodies)))
def test_any_gemini_body_decodes_or_raises_invalid_request(body: dict[str, Any]) -> None:
    """decode_request only ever raises InvalidRequest; what decodes encodes into every format,
    or is refused as InvalidRequest naming a message."""
    try:
        request = gm.decode_request(orjson.dumps(body))
    except InvalidRequest:
        return
    refused: list[str] = []
    for encode in (oc.encode_request, am.encode_request, gm.encode_request):
        try:
            orjson.dumps(encode(request, model="m"))
        except InvalidRequest as exc:
            refused.append(exc.message)
    assert all(message.startswith("messages[") for message in refused)


@PROPERTY
@given(st.one_of(st.binary(max_size=60), bodies.map(orjson.dumps)))
def test_any_upstream_body_decodes_or_raises_provider_error(raw: bytes) -> None:
    """decode_response only ever raises ProviderError, and what decodes encodes for callers."""
    try:
        response = gm.decode_response(raw)
    except ProviderError:
        return
    orjson.dumps(oc.encode_response(response, model="m"))
    orjson.dumps(am.encode_response(response, model="m"))


@PROPERTY
@given(st.lists(st.one_of(st.binary(max_size=30), json_values.map(orjson.dumps)), max_size=6))
def test_any_stream_bytes_never_raise_but_provider_error(pieces: list[bytes]) -> None:
    """Garbage or odd JSON in a Gemini stream is skipped or counted; only error events raise."""
    data = b"".join(b"data: " + p + b"\r\n\r\n" for p in pieces)
    decoder = gm.StreamDecoder()
    sse = SSEDecoder()
    try:
        for event in sse.feed(data) + sse.flush():
            decoder.feed(event)
    except ProviderError:
        return
