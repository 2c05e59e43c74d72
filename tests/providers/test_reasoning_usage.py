"""Reasoning tokens, as OpenAI reports them apart, reach the routing record's usage as a part of
the output tokens: counted once, billed as output."""

from __future__ import annotations

import orjson

from turnout import Message, Route, Target
from turnout.providers import OpenAI

from ._raw_http import RawServer, answering

_USAGE = {
    "prompt_tokens": 20,
    "completion_tokens": 100,
    "total_tokens": 120,
    "prompt_tokens_details": {"cached_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 64},
}


def _http(body: bytes, content_type: str) -> bytes:
    head = f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {len(body)}\r\n\r\n"
    return head.encode() + body


def _answer() -> bytes:
    body = {
        "id": "chatcmpl-r1",
        "object": "chat.completion",
        "created": 1,
        "model": "o4-mini",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "42"}, "finish_reason": "stop"}
        ],
        "usage": _USAGE,
    }
    return _http(orjson.dumps(body), "application/json")


def _stream() -> bytes:
    base = {
        "id": "chatcmpl-r2",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "o4-mini",
    }
    events = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "42"}}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {**base, "choices": [], "usage": _USAGE},
    ]
    body = b"".join(b"data: " + orjson.dumps(event) + b"\n\n" for event in events)
    return _http(body + b"data: [DONE]\n\n", "text/event-stream")


def _route(server: RawServer) -> tuple[Route, OpenAI]:
    provider = OpenAI("sk-test", base_url=server.url("/v1"))
    return Route("think", targets=[Target("o4", provider, model="o4-mini")]), provider


async def test_whole_answer_records_reasoning_tokens_within_output() -> None:
    """A whole answer's record, and its answering entry, count the 64 reasoning tokens as
    a part of the 100 output tokens."""
    async with RawServer(answering(_answer())) as server:
        route, provider = _route(server)
        try:
            response = await route.complete([Message.user("meaning of life?")])
        finally:
            await provider.aclose()
    assert response.routing is not None
    record = response.routing.as_dict()
    usage = record["usage"]
    assert usage == {
        "input_tokens": 20,
        "output_tokens": 100,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
        "reasoning_tokens": 64,
    }
    assert record["attempts"][0]["usage"] == usage


async def test_streamed_answer_records_reasoning_tokens_within_output() -> None:
    """The usage chunk that ends a stream brings the reasoning tokens to the record too."""
    async with RawServer(answering(_stream())) as server:
        route, provider = _route(server)
        try:
            chunks = [chunk async for chunk in route.stream([Message.user("meaning of life?")])]
        finally:
            await provider.aclose()
    record = chunks[-1].routing
    assert record is not None
    usage = record.as_dict()["usage"]
    assert (usage["output_tokens"], usage["reasoning_tokens"]) == (100, 64)
