"""The `gemini` provider kind against the mock upstream's Gemini face, over real sockets: its
paths, where its key goes, embeddings, tool calls and Google's quota signals."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

import orjson
import pytest

from turnout.errors import ProviderError
from turnout.providers import Gemini, HttpTimeouts, MockProvider
from turnout.routing.health import Health
from turnout.routing.plan import CallerCredential
from turnout.routing.route import Route
from turnout.routing.target import Target
from turnout.wire.model import ChatRequest, EmbeddingRequest, Message, Tool

from .conftest import GEMINI_KEY

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from turnout.mock_upstream import ThreadedMockUpstream


def ask(model: str, **fields: object) -> ChatRequest:
    """A one-message request for `model`."""
    return ChatRequest([Message.user("hello there")], model=model, **fields)  # type: ignore[arg-type]


@pytest.fixture
async def gemini(upstream: ThreadedMockUpstream) -> AsyncIterator[Gemini]:
    """A Gemini provider with the test key, on a clean upstream log."""
    upstream.reset()
    provider = Gemini(GEMINI_KEY, base_url=upstream.url, timeouts=HttpTimeouts(read=5.0))
    yield provider
    await provider.aclose()


async def test_paths_and_the_key_header(gemini: Gemini, upstream: ThreadedMockUpstream) -> None:
    """Whole calls go to :generateContent, streams to :streamGenerateContent?alt=sse, the key
    only in x-goog-api-key (never in the query), and a `models/` prefix is not doubled."""
    await gemini.complete(ask("gemini-2.5-flash"))
    _ = [chunk async for chunk in gemini.stream(ask("models/gemini-2.5-pro"))]
    whole, streamed = upstream.requests()
    assert (whole["path"], whole["query"]) == (
        "/v1beta/models/gemini-2.5-flash:generateContent",
        "",
    )
    assert streamed["path"] == "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
    assert streamed["query"] == "alt=sse"
    assert streamed["stream"] is True
    for entry in (whole, streamed):
        assert entry["credentials"] == {"x-goog-api-key": GEMINI_KEY}
        assert GEMINI_KEY not in entry["query"]


def test_a_model_name_cannot_change_the_path() -> None:
    """Slashes, colons and query marks in a model name are escaped inside one path segment."""
    provider = Gemini("k", base_url="https://example.test/")
    assert provider.chat_url("a/b:c?d") == (
        "https://example.test/v1beta/models/a%2Fb%3Ac%3Fd:generateContent"
    )


async def test_a_wrong_key_is_an_auth_failure_of_its_configured_key(
    upstream: ThreadedMockUpstream,
) -> None:
    """Google answers a bad key with 400 API_KEY_INVALID: it is `auth`, naming the provider."""
    provider = Gemini("not-the-key", base_url=upstream.url)
    try:
        with pytest.raises(ProviderError) as caught:
            await provider.complete(ask("gemini-2.5-flash"))
    finally:
        await provider.aclose()
    assert caught.value.error_class == "auth"
    assert caught.value.status == 400
    assert caught.value.message.startswith('provider "gemini" rejected its configured key: ')
    assert "not-the-key" not in caught.value.message


def test_the_mock_refuses_a_key_in_the_query(upstream: ThreadedMockUpstream) -> None:
    """A request with `?key=` is refused by the mock even with the right header."""
    body = orjson.dumps({"contents": [{"parts": [{"text": "x"}]}]})
    path = f"/v1beta/models/gemini-2.5-flash:generateContent?key={GEMINI_KEY}"
    host, port = upstream.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"x-goog-api-key: {GEMINI_KEY}\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        )
        sock.sendall(head.encode() + body)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 400")
    assert b"API_KEY_INVALID" in reply


async def test_passthrough_sends_the_callers_key_in_the_google_header(
    upstream: ThreadedMockUpstream,
) -> None:
    """A passthrough Gemini provider sends the caller's credential as x-goog-api-key."""
    upstream.reset()
    provider = Gemini(base_url=upstream.url, credential_mode="passthrough")
    try:
        view = provider.with_credential(CallerCredential(GEMINI_KEY, bearer=True))
        response = await view.complete(ask("gemini-2.5-flash"))
    finally:
        await provider.aclose()
    assert response.text == "mock answer from gemini-2.5-flash"
    assert upstream.requests()[-1]["credentials"] == {"x-goog-api-key": GEMINI_KEY}


def test_the_key_defaults_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an api_key the library reads GEMINI_API_KEY."""
    monkeypatch.setenv("GEMINI_API_KEY", "from-env")
    provider = Gemini()
    assert provider.sent_headers()["x-goog-api-key"] == "from-env"
    assert provider.family == "gemini"
    assert provider.wire_format == "gemini-generate"


async def test_embeddings_go_to_batch_embed_contents(
    gemini: Gemini, upstream: ThreadedMockUpstream
) -> None:
    """One vector per input, in order, through :batchEmbedContents with the asked dimensions."""
    response = await gemini.embed(
        EmbeddingRequest(["a", "b", "c"], model="gemini-embedding-001", dimensions=4)
    )
    assert [len(vector) for vector in response.data] == [4, 4, 4]
    assert response.data[0] != response.data[1]
    sent = upstream.requests()[-1]
    assert sent["path"] == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    assert [r["model"] for r in sent["body"]["requests"]] == ["models/gemini-embedding-001"] * 3


async def test_a_forced_tool_is_called_whole_and_streamed(gemini: Gemini) -> None:
    """A forced function call comes back as a tool call, whole and streamed alike."""
    tool = Tool("lookup", parameters={"type": "object", "properties": {"q": {"type": "string"}}})
    request = ask("gemini-2.5-flash", tools=[tool], tool_choice={"name": "lookup"})
    response = await gemini.complete(request)
    assert response.finish_reason == "tool_calls"
    assert [(c.name, orjson.loads(c.arguments)) for c in response.tool_calls] == [
        ("lookup", {"q": "mock"})
    ]
    chunks = [chunk async for chunk in gemini.stream(request)]
    calls = [delta for chunk in chunks for delta in chunk.tool_calls]
    assert [(d.name, orjson.loads(d.arguments)) for d in calls] == [("lookup", {"q": "mock"})]
    assert [c.finish_reason for c in chunks if c.finish_reason] == ["tool_calls"]


async def test_per_minute_quota_is_a_rate_limit_with_googles_retry_delay(gemini: Gemini) -> None:
    """A plain 429 carries a per-minute QuotaFailure: rate_limited, retry-after from RetryInfo."""
    with pytest.raises(ProviderError) as caught:
        await gemini.complete(ask("m/fault:status=429"))
    assert caught.value.error_class == "rate_limited"
    assert caught.value.retry_after == 20.0
    assert caught.value.error_type == "RESOURCE_EXHAUSTED"


async def test_daily_quota_parks_the_key_until_the_retry_delay(gemini: Gemini) -> None:
    """A per-day quota failure is quota_exhausted: the route fails over and parks the key for
    RetryInfo's delay, so the next request skips it as parked."""
    health = Health()
    backup = MockProvider("backup")
    route = Route(
        "daily",
        [
            Target("gemini", gemini, "m/fault:quota;reset_in=900"),
            Target("backup", backup, "gpt-4o-mini"),
        ],
        health=health,
    )
    first = await route.complete([Message.user("hi")])
    second = await route.complete([Message.user("hi")])
    assert first.routing is not None
    assert second.routing is not None
    failed = first.routing.attempts[0]
    assert (failed.outcome, failed.error_class, failed.retry_after) == (
        "failed",
        "quota_exhausted",
        900.0,
    )
    skipped = second.routing.attempts[0]
    assert skipped.outcome == "parked"
    assert second.text == "mock answer from gpt-4o-mini"
