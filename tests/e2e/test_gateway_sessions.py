"""End to end: sessions on cross-provider routes through a real gateway socket, called with the
official OpenAI and Anthropic SDKs, in front of `turnout mock-upstream`.

The mock's request log shows which family each request reached first, and the bodies each
target received: the history a new family cannot read (signed thinking) is dropped on the way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anthropic
import openai
import orjson
import pytest
import pytest_asyncio

from tests.e2e._gateway import RunningGateway, running_gateway
from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.asyncio(loop_scope="module")

USER: Any = [{"role": "user", "content": "Why is checkout failing?"}]
SESSION = "x-turnout-session-id"


def _config(upstream: MockUpstream) -> dict[str, Any]:
    openai_url, anthropic_url = upstream.openai_base_url, upstream.url
    return {
        "server": {"auth": "open"},
        # Quota failures would park the keys for 15 minutes across tests; each test scripts
        # its own faults instead.
        "defaults": {"circuit_breaker": {"enabled": False}},
        "providers": [
            {"name": "ant-a", "kind": "anthropic", "api_key": "ak-a", "base_url": anthropic_url},
            {"name": "ant-b", "kind": "anthropic", "api_key": "ak-b", "base_url": anthropic_url},
            {"name": "oai", "kind": "openai", "api_key": "ok-o", "base_url": openai_url},
        ],
        "routes": [
            {
                "name": "coder",
                "models": ["claude-coder"],
                "allow_cross_provider": True,
                "targets": [
                    {"provider": "ant-a", "model": "claude-coder-a", "name": "team-a"},
                    {"provider": "oai", "model": "gpt-coder", "name": "gpt"},
                ],
            },
            {
                "name": "gpt-first",
                "models": ["claude-tools"],
                "allow_cross_provider": True,
                "targets": [
                    {"provider": "oai", "model": "gpt-tools", "name": "gpt"},
                    {"provider": "ant-a", "model": "claude-tools-a", "name": "team-a"},
                ],
            },
            {
                "name": "strict",
                "models": ["claude-strict"],
                "allow_cross_provider": True,
                "switch_family_on_quota": False,
                "retry_on": ["provider_error", "rate_limited", "timeout", "auth"],
                "targets": [
                    {"provider": "ant-a", "model": "strict-a/fault:status=429", "name": "team-a"},
                    {"provider": "ant-b", "model": "strict-b/fault:status=401", "name": "team-b"},
                    {"provider": "oai", "model": "gpt-strict", "name": "gpt"},
                ],
            },
        ],
    }


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def upstream() -> AsyncIterator[MockUpstream]:
    async with MockUpstream(hold_limit=10) as server:
        yield server


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def gateway(upstream: MockUpstream) -> AsyncIterator[RunningGateway]:
    async with running_gateway(_config(upstream)) as running:
        yield running


@pytest.fixture(autouse=True)
def _clean(upstream: MockUpstream) -> None:
    upstream.app.log.clear()
    upstream.app.faults.clear()


def _openai(gateway: RunningGateway, session: str | None = None) -> openai.AsyncOpenAI:
    headers = {SESSION: session} if session is not None else {}
    return openai.AsyncOpenAI(
        base_url=gateway.openai_base_url, api_key="any", default_headers=headers, max_retries=0
    )


def _anthropic(gateway: RunningGateway) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=gateway.url, api_key="any", max_retries=0)


def _models(upstream: MockUpstream) -> list[str | None]:
    """The model of each upstream request, in order."""
    return [entry.model for entry in upstream.app.log.entries()]


def _bodies(upstream: MockUpstream) -> dict[str | None, Any]:
    """Each upstream request's parsed body, by model."""
    return {entry.model: entry.as_dict()["body"] for entry in upstream.app.log.entries()}


def _claude_code_user_id(session: str) -> str:
    """`metadata.user_id` as Claude Code 2.1.78+ sends it (a JSON string)."""
    return orjson.dumps({"device_id": "d0", "account_uuid": "", "session_id": session}).decode()


async def _ask(client: openai.AsyncOpenAI, model: str = "claude-coder") -> str:
    """One chat completion; the target that served (`x-turnout-target`)."""
    reply = await client.chat.completions.with_raw_response.create(model=model, messages=USER)
    return reply.headers["x-turnout-target"]


async def test_a_quota_fault_moves_the_session_and_re_pins_it(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """The first success pins the session to anthropic; a quota failure moves it to openai,
    which then serves it first; a request without a session starts on anthropic again."""
    async with _openai(gateway, "e2e-move") as client:
        assert await _ask(client) == "team-a"
        upstream.app.faults.script("claude-coder-a", ["quota"])
        reply = await client.chat.completions.with_raw_response.create(
            model="claude-coder", messages=USER
        )
        routing = reply.http_response.json()["routing"]
        assert [(a["target"], a["outcome"], a["error_class"]) for a in routing["attempts"]] == [
            ("team-a", "failed", "quota_exhausted"),
            ("gpt", "answered", None),
        ]
        upstream.app.log.clear()
        assert await _ask(client) == "gpt"
        assert _models(upstream) == ["gpt-coder"]
    async with _openai(gateway) as anonymous:
        assert await _ask(anonymous) == "team-a"


async def test_a_session_stays_on_the_family_of_its_first_success(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """A session (Anthropic `metadata.user_id`) first served by openai keeps starting there,
    even though the anthropic target is healthy again."""
    upstream.app.faults.script("claude-coder-a", ["quota"])
    metadata: Any = {"user_id": _claude_code_user_id("e2e-metadata-session")}
    async with _anthropic(gateway) as client:
        first = await client.messages.with_raw_response.create(
            model="claude-coder", max_tokens=64, messages=USER, metadata=metadata
        )
        assert first.headers["x-turnout-target"] == "gpt"
        for _ in range(2):
            upstream.app.log.clear()
            again = await client.messages.with_raw_response.create(
                model="claude-coder", max_tokens=64, messages=USER, metadata=metadata
            )
            assert again.headers["x-turnout-target"] == "gpt"
            assert _models(upstream) == ["gpt-coder"]
        message = await again.parse()
        assert message.content[0].type == "text"


async def test_a_rate_limit_crosses_once_and_the_session_returns(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """Pinned to anthropic, a 429 on its only target is an outage: openai answers that one
    request, the pin stays, and the next request is anthropic's again."""
    async with _openai(gateway, "e2e-429") as client:
        assert await _ask(client) == "team-a"
        upstream.app.faults.script("claude-coder-a", ["status=429"])
        upstream.app.log.clear()
        reply = await client.chat.completions.with_raw_response.create(
            model="claude-coder", messages=USER
        )
        assert reply.headers["x-turnout-target"] == "gpt"
        assert _models(upstream) == ["claude-coder-a", "gpt-coder"]
        assert await _ask(client) == "team-a"


async def test_a_stream_pins_its_session(gateway: RunningGateway, upstream: MockUpstream) -> None:
    """A streamed answer from openai after a quota failure pins the session to openai."""
    upstream.app.faults.script("claude-coder-a", ["quota"])
    async with _openai(gateway, "e2e-stream") as client:
        stream = await client.chat.completions.create(
            model="claude-coder", messages=USER, stream=True
        )
        text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        assert "gpt-coder" in text
        upstream.app.log.clear()
        assert await _ask(client) == "gpt"
        assert _models(upstream) == ["gpt-coder"]


async def test_a_used_up_pinned_family_ends_with_one_named_error(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """Every anthropic member failed, one with a rejected key (no outage, so the other family
    stays closed): one 503 UPSTREAM_POOL_EXHAUSTED in Anthropic's format naming the family and
    each member."""
    metadata: Any = {"user_id": _claude_code_user_id("e2e-strict")}
    async with _anthropic(gateway) as client:
        with pytest.raises(anthropic.APIStatusError) as caught:
            await client.messages.create(
                model="claude-strict", max_tokens=64, messages=USER, metadata=metadata
            )
    error = caught.value
    assert error.status_code == 503
    body: Any = error.body
    assert body["error"]["type"] == "overloaded_error"
    assert body["error"]["code"] == "UPSTREAM_POOL_EXHAUSTED"
    assert body["error"]["message"] == (
        'every member of the "anthropic" provider family this session is pinned to failed'
        " (team-a: rate_limited, team-b: auth)"
    )
    assert "gpt;outcome=not_tried" in error.response.headers["x-turnout-attempts"]
    assert "gpt-strict" not in _models(upstream)


HISTORY: Any = [
    {"role": "user", "content": "Look up the order."},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "The order id is in the prompt.", "signature": "s1g"},
            {"type": "redacted_thinking", "data": "opaque-redacted"},
            {"type": "text", "text": "Looking it up."},
            {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"order": 42}},
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "shipped"}],
    },
]
TOOLS: Any = [
    {
        "name": "lookup",
        "description": "Look up an order.",
        "input_schema": {"type": "object", "properties": {"order": {"type": "integer"}}},
    }
]


async def test_crossing_families_drops_signed_thinking_and_keeps_the_rest(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """The anthropic target gets the thinking blocks verbatim; after its quota failure the
    openai target gets the text, the tool call and its result, without any thinking."""
    upstream.app.faults.script("claude-coder-a", ["quota"])
    async with _anthropic(gateway) as client:
        reply = await client.messages.with_raw_response.create(
            model="claude-coder", max_tokens=64, messages=HISTORY, tools=TOOLS
        )
    assert reply.headers["x-turnout-target"] == "gpt"
    bodies = _bodies(upstream)
    same_family = bodies["claude-coder-a"]["messages"][1]["content"]
    assert [block["type"] for block in same_family] == [
        "thinking",
        "redacted_thinking",
        "text",
        "tool_use",
    ]
    assert same_family[0]["signature"] == "s1g"
    crossed = bodies["gpt-coder"]
    text = orjson.dumps(crossed).decode()
    assert "s1g" not in text
    assert "opaque-redacted" not in text
    assert "The order id is in the prompt." not in text
    assistant = crossed["messages"][1]
    assert assistant["role"] == "assistant"
    assert "Looking it up." in orjson.dumps(assistant["content"]).decode()
    assert assistant["tool_calls"][0]["function"]["name"] == "lookup"
    assert orjson.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"order": 42}
    tool_result = crossed["messages"][2]
    assert (tool_result["role"], tool_result["tool_call_id"]) == ("tool", "toolu_1")
    assert "shipped" in orjson.dumps(tool_result["content"]).decode()


async def test_a_first_request_with_a_server_tool_starts_on_the_tools_family(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """A new session's first request carrying an Anthropic server tool, on a route whose first
    target is OpenAI, is served by the Anthropic target (the OpenAI one is never called: it
    cannot run the tool), and the session is pinned there."""
    async with anthropic.AsyncAnthropic(
        base_url=gateway.url, api_key="unused", max_retries=0
    ) as client:
        reply = await client.messages.with_raw_response.create(
            model="claude-tools",
            max_tokens=64,
            messages=USER,
            tools=[{"type": "web_search_20250305", "name": "web_search", "max_uses": 2}],
            extra_headers={SESSION: "tools-session"},
        )
    assert reply.headers["x-turnout-target"] == "team-a"
    logged = upstream.app.log.entries()
    assert [entry.model for entry in logged] == ["claude-tools-a"]
    sent = orjson.loads(logged[0].body)
    assert sent["tools"][0]["type"] == "web_search_20250305"
    runtime = gateway.runtime
    assert await runtime.pins.pins.get("gpt-first", "tools-session") == "anthropic"
