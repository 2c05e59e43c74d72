"""The gateway app in process: streamed answers and the commit point."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import pytest

from tests.gateway._app_support import (
    anthropic_text,
    chat,
    client_of,
    messages,
    mock_provider,
    openai_text,
    sse_events,
)
from turnout.config.load import parse_config
from turnout.gateway.resolution.lookups import build_runtime
from turnout.gateway.server.app import GatewayApp
from turnout.routing.clock import FakeClock

if TYPE_CHECKING:
    import httpx

    from turnout.gateway.runtime.live import Runtime


def _route(name: str, *models: str, **options: Any) -> dict[str, Any]:
    targets = [
        {"provider": provider, "model": model, "name": f"t{i}"}
        for i, (provider, model) in enumerate(m.split(" ", 1) for m in models)
    ]
    return {"name": name, "models": [name], "targets": targets, **options}


CONFIG: dict[str, Any] = {
    "server": {"auth": "open"},
    "providers": [mock_provider("oa"), mock_provider("an", wire="anthropic-messages")],
    "routes": [
        _route("plain", "oa gpt-4o-mini"),
        _route("failover", "oa fo-a/fault:status=503", "oa fo-b"),
        _route(
            "early-error",
            "oa ee-a/fault:error_event",
            "oa ee-b",
            allow_cross_provider=True,
        ),
        _route("early-error-ant", "an ea-a/fault:error_event", "an ea-b"),
        _route("cut", "oa cut-a/fault:cut=2", "oa cut-b"),
        _route("cut-ant", "an cutx-a/fault:cut=2", "an cutx-b"),
        _route("all-429", "oa al-a/fault:status=429", "oa al-b/fault:status=429"),
        _route("to-anthropic", "an claude-x"),
        _route("to-openai", "oa gpt-x", allow_cross_provider=True),
        _route("slow-start", "oa slow/fault:first_token=40", commit_on_headers=True),
        _route("early-fail", "oa ef/fault:status=500", commit_on_headers=True),
    ],
}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def runtime(clock: FakeClock) -> Runtime:
    return build_runtime(parse_config(CONFIG, env={}), clock=clock)


async def _stream(
    runtime: Runtime, clock: FakeClock, path: str, body: dict[str, Any]
) -> httpx.Response:
    async with client_of(GatewayApp(runtime)) as client:
        return await clock.run(client.post(path, json={**body, "stream": True}))


async def test_stream_fails_over_before_commit(runtime: Runtime, clock: FakeClock) -> None:
    """The first target fails before any token: the caller sees only the second's stream,
    with the routing headers complete at commit."""
    reply = await _stream(runtime, clock, "/v1/chat/completions", chat("failover"))
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/event-stream")
    assert openai_text(reply.text) == "mock answer from fo-b"
    assert reply.headers["x-turnout-target"] == "t1"
    assert reply.headers["x-turnout-model"] == "fo-b"
    attempts = reply.headers["x-turnout-attempts"].split(",")
    assert attempts[0].startswith("t0;outcome=failed;class=provider_error;status=503")
    assert attempts[1].startswith("t1;outcome=answered")
    assert reply.text.endswith("data: [DONE]\n\n")


async def test_held_events_come_from_the_winning_call_only(
    runtime: Runtime, clock: FakeClock
) -> None:
    """A call that sent its role chunk then failed before a token leaves no trace."""
    reply = await _stream(runtime, clock, "/v1/chat/completions", chat("early-error"))
    chunks = [orjson.loads(d) for _, d in sse_events(reply.text) if d != "[DONE]"]
    roles = [c for c in chunks if c["choices"] and "role" in c["choices"][0]["delta"]]
    assert len(roles) == 1
    assert {c["model"] for c in chunks} == {"ee-b"}
    assert openai_text(reply.text) == "mock answer from ee-b"


async def test_anthropic_message_start_comes_from_the_winning_call_only(
    runtime: Runtime, clock: FakeClock
) -> None:
    """An Anthropic caller gets one `message_start`, the winner's, before its deltas."""
    reply = await _stream(runtime, clock, "/v1/messages", messages("early-error-ant"))
    names = [name for name, _ in sse_events(reply.text)]
    assert names.count("message_start") == 1
    assert names[0] == "message_start"
    assert names[-1] == "message_stop"
    start = orjson.loads(sse_events(reply.text)[0][1])
    assert start["message"]["model"] == "ea-b"


async def test_cut_after_commit_ends_with_stream_broken(runtime: Runtime, clock: FakeClock) -> None:
    """A stream cut after its first tokens ends with an error event, never `[DONE]`."""
    reply = await _stream(runtime, clock, "/v1/chat/completions", chat("cut"))
    assert reply.status_code == 200
    last = sse_events(reply.text)[-1][1]
    assert orjson.loads(last)["error"]["code"] == "stream_broken"
    assert "[DONE]" not in reply.text
    assert openai_text(reply.text.rsplit("\n\n", 2)[0]) == "mock answer"
    assert reply.headers["x-turnout-target"] == "t0"


async def test_anthropic_cut_after_commit_is_an_error_event(
    runtime: Runtime, clock: FakeClock
) -> None:
    """Anthropic callers get `event: error` with `stream_broken` instead of `message_stop`."""
    reply = await _stream(runtime, clock, "/v1/messages", messages("cut-ant"))
    name, data = sse_events(reply.text)[-1]
    assert name == "error"
    error = orjson.loads(data)["error"]
    assert error["code"] == "stream_broken"
    assert error["type"] == "api_error"
    assert "message_stop" not in reply.text


async def test_failure_before_commit_is_a_json_error(runtime: Runtime, clock: FakeClock) -> None:
    """Nothing was sent yet: the caller gets an ordinary JSON error with the table's status."""
    reply = await _stream(runtime, clock, "/v1/chat/completions", chat("all-429"))
    assert reply.status_code == 429
    assert reply.headers["content-type"] == "application/json"
    assert reply.json()["error"]["code"] == "UPSTREAM_POOL_EXHAUSTED"


async def test_usage_chunk_only_when_the_caller_asked(runtime: Runtime, clock: FakeClock) -> None:
    """The upstream is always asked for usage; the caller gets the usage chunk only on request."""
    plain = await _stream(runtime, clock, "/v1/chat/completions", chat("plain"))
    asked = await _stream(
        runtime,
        clock,
        "/v1/chat/completions",
        chat("plain", stream_options={"include_usage": True}),
    )

    def usage_chunks(text: str) -> list[dict[str, Any]]:
        chunks = [orjson.loads(d) for _, d in sse_events(text) if d != "[DONE]"]
        return [c for c in chunks if c.get("usage") and not c["choices"]]

    assert usage_chunks(plain.text) == []
    assert len(usage_chunks(asked.text)) == 1
    sent = orjson.loads(runtime.providers["oa"].requests[-2].body)
    assert sent["stream_options"] == {"include_usage": True}


async def test_openai_caller_streams_from_an_anthropic_target(
    runtime: Runtime, clock: FakeClock
) -> None:
    """Across formats the caller's codec re-encodes: OpenAI chunks, role first, `[DONE]`."""
    reply = await _stream(runtime, clock, "/v1/chat/completions", chat("to-anthropic"))
    chunks = [orjson.loads(d) for _, d in sse_events(reply.text) if d != "[DONE]"]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert openai_text(reply.text) == "mock answer from claude-x"
    assert reply.text.endswith("data: [DONE]\n\n")


async def test_anthropic_caller_streams_from_an_openai_target(
    runtime: Runtime, clock: FakeClock
) -> None:
    """An Anthropic caller of an OpenAI-format target gets a proper Messages event sequence."""
    reply = await _stream(runtime, clock, "/v1/messages", messages("to-openai"))
    names = [name for name, _ in sse_events(reply.text)]
    assert names[0] == "message_start"
    assert names[-2:] == ["message_delta", "message_stop"]
    assert anthropic_text(reply.text) == "mock answer from gpt-x"


async def test_commit_on_headers_sends_keepalives_until_the_first_token(
    runtime: Runtime, clock: FakeClock
) -> None:
    """`commit_on_headers`: 200 at once, a keep-alive every 15 s, then the answer."""
    reply = await _stream(runtime, clock, "/v1/chat/completions", chat("slow-start"))
    assert reply.status_code == 200
    head, _, rest = reply.text.partition("data: ")
    assert head == ": keep-alive\n\n" * 2
    assert openai_text("data: " + rest) == "mock answer from slow"
    assert reply.headers["x-turnout-route"] == "slow-start"


async def test_commit_on_headers_failure_is_an_in_stream_error(
    runtime: Runtime, clock: FakeClock
) -> None:
    """With headers already sent, a failure before the first token is an error event."""
    reply = await _stream(runtime, clock, "/v1/chat/completions", chat("early-fail"))
    assert reply.status_code == 200
    error = orjson.loads(sse_events(reply.text)[-1][1])["error"]
    assert error["message"]
    assert "[DONE]" not in reply.text


async def test_rejected_stream_ends_with_stream_rejected(
    runtime: Runtime, clock: FakeClock
) -> None:
    """`accept` refusing a committed stream ends it with `stream_rejected`, not `[DONE]`."""
    runtime.routes["plain"].route.accept = lambda response: "it gives no reason"
    reply = await _stream(runtime, clock, "/v1/chat/completions", chat("plain"))
    error = orjson.loads(sse_events(reply.text)[-1][1])["error"]
    assert error["code"] == "stream_rejected"
    assert "[DONE]" not in reply.text
