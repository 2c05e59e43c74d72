"""Vertex AI's answers and errors as recorded in golden fixtures, served byte for byte on a real
socket: Gemini and Claude, whole and streamed, and how each error body is classified."""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest

from turnout.errors import ProviderError
from turnout.providers import Vertex
from turnout.vendors.vertex_errors import unwrap_vertex_error
from turnout.wire.model import ChatRequest, Message

from ._raw_http import RawServer, answering

FIXTURES = Path(__file__).parent.parent / "fixtures" / "vertex"
TOKEN = "ya29.golden-test-token"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def http(status: int, body: bytes, content_type: str = "application/json") -> bytes:
    """One HTTP/1.1 response carrying `body`."""
    reason = {200: "OK"}.get(status, "Error")
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\n"
        f"content-length: {len(body)}\r\nx-request-id: vtx-req-1\r\n\r\n"
    )
    return head.encode() + body


def vertex(server: RawServer) -> Vertex:
    return Vertex(
        "test-project", token=lambda: (TOKEN, time.time() + 3600), base_url=server.url("")
    )


async def test_gemini_whole_answer() -> None:
    """A Gemini answer on Vertex (createTime, trafficType …) decodes like Google's own."""
    async with RawServer(answering(http(200, fixture("gemini_response.json")))) as server:
        provider = vertex(server)
        try:
            response = await provider.complete(
                ChatRequest([Message.user("hi")], model="gemini-2.5-flash")
            )
        finally:
            await provider.aclose()
    assert response.content[0].text == "Hello from Vertex."  # type: ignore[union-attr]
    assert response.finish_reason == "stop"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (6, 4)
    assert response.raw_format == "gemini-generate"
    assert response.provider_request_id == "vtx-req-1"
    sent = server.requests[0]
    assert sent.startswith(
        b"POST /v1/projects/test-project/locations/us-central1/publishers/google/models/"
        b"gemini-2.5-flash:generateContent HTTP/1.1"
    )
    assert f"Bearer {TOKEN}\r\n".encode() in sent
    assert b"x-goog-api-key" not in sent.lower()


async def test_gemini_stream() -> None:
    """A Gemini stream on Vertex (CRLF-framed events, usage in the last) decodes whole."""
    body = fixture("gemini_stream.sse")
    async with RawServer(answering(http(200, body, "text/event-stream"))) as server:
        provider = vertex(server)
        try:
            request = ChatRequest([Message.user("hi")], model="gemini-2.5-flash")
            chunks = [chunk async for chunk in provider.stream(request)]
        finally:
            await provider.aclose()
    assert "".join(chunk.delta for chunk in chunks) == "Hello from Vertex."
    assert chunks[-1].finish_reason == "stop"
    assert b":streamGenerateContent?alt=sse HTTP/1.1" in server.requests[0]


async def test_claude_whole_answer_keeps_thinking_and_cache_usage() -> None:
    """A rawPredict answer is Anthropic's: thinking, text and cache-read usage come through."""
    async with RawServer(answering(http(200, fixture("claude_response.json")))) as server:
        provider = vertex(server)
        try:
            request = ChatRequest([Message.user("hi")], model="claude-sonnet-4-5")
            response = await provider.complete(request)
        finally:
            await provider.aclose()
    texts = [getattr(part, "text", None) for part in response.content]
    assert "Hello from Claude on Vertex." in texts
    assert response.usage is not None
    assert response.usage.cache_read_tokens == 1024
    assert response.raw == fixture("claude_response.json")
    assert (
        b"/publishers/anthropic/models/claude-sonnet-4-5:rawPredict HTTP/1.1" in server.requests[0]
    )


async def test_claude_stream() -> None:
    """A streamRawPredict stream is Anthropic's event stream, pings and all."""
    body = fixture("claude_stream.sse")
    async with RawServer(answering(http(200, body, "text/event-stream"))) as server:
        provider = vertex(server)
        try:
            request = ChatRequest([Message.user("hi")], model="claude-sonnet-4-5")
            chunks = [chunk async for chunk in provider.stream(request)]
        finally:
            await provider.aclose()
    assert "".join(chunk.delta for chunk in chunks) == "Hello from Claude."
    assert chunks[-1].finish_reason == "stop"
    assert b":streamRawPredict HTTP/1.1" in server.requests[0]


ERRORS = [
    ("error_rate.json", 429, "gemini-2.5-flash", "rate_limited"),
    ("error_claude_quota_minute.json", 429, "claude-sonnet-4-5", "rate_limited"),
    ("error_quota_daily.json", 429, "gemini-2.5-flash", "quota_exhausted"),
    ("error_unauthenticated.json", 401, "gemini-2.5-flash", "auth"),
    ("error_permission.json", 403, "gemini-2.5-flash", "auth"),
    ("error_not_found.json", 404, "gemini-9-ultra", "invalid_request"),
    ("error_claude_wrapped_context.json", 400, "claude-sonnet-4-5", "context_length"),
    ("error_claude_overloaded.json", 529, "claude-sonnet-4-5", "provider_error"),
    ("error_claude_invalid.json", 400, "claude-sonnet-4-5", "invalid_request"),
    ("error_unavailable.json", 503, "gemini-2.5-flash", "provider_error"),
]


@pytest.mark.parametrize(("name", "status", "model", "error_class"), ERRORS)
async def test_errors_are_classified(name: str, status: int, model: str, error_class: str) -> None:
    """Each recorded Vertex error reads as its error class, whole and streamed."""
    async with RawServer(answering(http(status, fixture(name)))) as server:
        provider = vertex(server)
        try:
            request = ChatRequest([Message.user("hi")], model=model)
            with pytest.raises(ProviderError) as whole:
                await provider.complete(request)
            with pytest.raises(ProviderError) as streamed:
                _ = [chunk async for chunk in provider.stream(request)]
        finally:
            await provider.aclose()
    for caught in (whole, streamed):
        assert caught.value.error_class == error_class
        assert caught.value.status == status
        assert caught.value.provider == "vertex"


async def test_the_daily_quota_waits_as_google_says() -> None:
    """A per-day quota parks the key with Google's retry delay."""
    async with RawServer(answering(http(429, fixture("error_quota_daily.json")))) as server:
        provider = vertex(server)
        try:
            with pytest.raises(ProviderError) as caught:
                await provider.complete(ChatRequest([Message.user("hi")], model="gemini-2.5-flash"))
        finally:
            await provider.aclose()
    assert caught.value.retry_after == 3600.0


def test_a_wrapped_claude_error_is_unwrapped() -> None:
    """Claude's error inside Google's envelope gives Claude's type and message."""
    unwrapped = orjson.loads(unwrap_vertex_error(fixture("error_claude_wrapped_context.json")))
    assert unwrapped == {
        "error": {
            "message": "prompt is too long: 214853 tokens > 200000 maximum",
            "status": "INVALID_ARGUMENT",
            "type": "invalid_request_error",
        }
    }
    plain = fixture("error_rate.json")
    assert unwrap_vertex_error(plain) is plain
    assert unwrap_vertex_error(b"<html>") == b"<html>"


async def test_the_token_is_scrubbed_from_errors() -> None:
    """An upstream that echoes the access token never gets it into the error."""
    body = orjson.dumps({"error": {"code": 400, "message": f"bad token {TOKEN}", "status": "X"}})
    async with RawServer(answering(http(400, body))) as server:
        provider = vertex(server)
        try:
            with pytest.raises(ProviderError) as caught:
                await provider.complete(ChatRequest([Message.user("hi")], model="gemini-2.5-flash"))
        finally:
            await provider.aclose()
    assert TOKEN not in str(caught.value)
