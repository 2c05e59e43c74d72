"""Which upstream stream events a relayed same-format stream may forward undecoded (`plain`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson
import pytest

from turnout.wire import anthropic_messages, openai_chat
from turnout.wire.sse import SSEEvent

if TYPE_CHECKING:
    from collections.abc import Mapping


def openai_event(choice: object = None, **fields: object) -> SSEEvent:
    """A `chat.completion.chunk` event with `choice` (default: a text delta) and `fields`."""
    if choice is None:
        choice = {"index": 0, "delta": {"content": "Hi"}, "logprobs": None, "finish_reason": None}
    body = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m", **fields}
    body.setdefault("choices", [choice])
    data = orjson.dumps(body).decode()
    return SSEEvent(None, data, None, f"data: {data}\n\n".encode())


def opened(decoder: openai_chat.StreamDecoder) -> openai_chat.StreamDecoder:
    """`decoder` after the stream's opening chunk (which names the model)."""
    decoder.feed(openai_event({"index": 0, "delta": {"role": "assistant", "content": ""}}))
    return decoder


def test_openai_text_delta_is_plain() -> None:
    """A chunk whose one choice has only non-empty `content` is plain."""
    assert opened(openai_chat.StreamDecoder()).plain(openai_event())


def test_nothing_is_plain_before_an_event_named_the_model() -> None:
    """The first event is decoded, even a text delta: it tells the model and the id."""
    assert not openai_chat.StreamDecoder().plain(openai_event())
    assert not anthropic_messages.StreamDecoder().plain(
        anthropic_event(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "x"},
            }
        )
    )


@pytest.mark.parametrize(
    "event",
    [
        openai_event({"index": 0, "delta": {"role": "assistant", "content": ""}}),
        openai_event({"index": 0, "delta": {"content": ""}}),
        openai_event({"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}),
        openai_event({"index": 0, "delta": {}, "finish_reason": "length"}),
        openai_event({"index": 1, "delta": {"content": "x"}}),
        openai_event({"index": 0, "delta": {"tool_calls": [{"index": 0}]}}),
        openai_event({"index": 0, "delta": {"content": "x", "refusal": None}}),
        openai_event({"index": 0, "delta": {"reasoning_content": "x"}}),
        openai_event(choices=[], usage={"prompt_tokens": 1, "completion_tokens": 2}),
        openai_event(usage={"prompt_tokens": 1, "completion_tokens": 2}),
        openai_event(error={"message": "overloaded"}),
        SSEEvent(None, "[DONE]", None, b"data: [DONE]\n\n"),
        SSEEvent(None, '{"choices": [{"delta": ', None, b'data: {"choices": [{"delta": \n\n'),
        SSEEvent(None, "[1, 2]", None, b"data: [1, 2]\n\n"),
    ],
    ids=[
        "role",
        "empty",
        "finish",
        "finish-only",
        "second-choice",
        "tool-call",
        "refusal-key",
        "reasoning",
        "usage-only",
        "usage-beside",
        "error",
        "done",
        "malformed",
        "not-an-object",
    ],
)
def test_openai_events_that_are_not_plain(event: SSEEvent) -> None:
    """Anything besides a text-only delta (or anything that does not parse) is decoded."""
    assert not opened(openai_chat.StreamDecoder()).plain(event)


def anthropic_event(body: Mapping[str, object], name: str | None = None) -> SSEEvent:
    """A Messages stream event named `name` (default: the body's `type`)."""
    data = orjson.dumps(body).decode()
    name = name or str(body.get("type"))
    return SSEEvent(name, data, None, f"event: {name}\ndata: {data}\n\n".encode())


def started(decoder: anthropic_messages.StreamDecoder) -> anthropic_messages.StreamDecoder:
    """`decoder` after `message_start` (which names the model)."""
    start = {"type": "message_start", "message": {"id": "msg_1", "model": "m", "usage": {}}}
    decoder.feed(anthropic_event(start))
    return decoder


def test_anthropic_text_and_thinking_deltas_are_plain() -> None:
    """Non-empty text and thinking deltas are plain."""
    decoder = started(anthropic_messages.StreamDecoder())
    text = {"type": "text_delta", "text": "Hi"}
    thinking = {"type": "thinking_delta", "thinking": "hm"}
    for delta in (text, thinking):
        assert decoder.plain(
            anthropic_event({"type": "content_block_delta", "index": 0, "delta": delta})
        )


@pytest.mark.parametrize(
    "event",
    [
        anthropic_event(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": ""}}
        ),
        anthropic_event(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": "{"},
            }
        ),
        anthropic_event(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "signature_delta", "signature": "s"},
            }
        ),
        anthropic_event(
            {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "x"}}
        ),
        anthropic_event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 3},
            }
        ),
        anthropic_event(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        ),
        anthropic_event({"type": "error", "error": {"type": "overloaded_error"}}),
        anthropic_event({"type": "ping"}),
        SSEEvent("content_block_delta", '{"type": "content_block_delta", ', None, b"x"),
    ],
    ids=[
        "empty",
        "tool-input",
        "signature",
        "no-index",
        "message-delta",
        "block-start",
        "error",
        "ping",
        "malformed",
    ],
)
def test_anthropic_events_that_are_not_plain(event: SSEEvent) -> None:
    """Every other event (or one that does not parse) is decoded."""
    assert not started(anthropic_messages.StreamDecoder()).plain(event)
