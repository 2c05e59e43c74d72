"""End to end: the official OpenAI and Anthropic SDKs against a real gateway socket whose
`vertex` providers get real tokens through google-auth from `turnout mock-upstream` (a
service-account JSON made for the run, its `token_uri` on the mock): an Anthropic API provider
failing over to Claude on Vertex, and Gemini on Vertex failing over to OpenAI, whole and
streamed, before commit; a caller's cache_control, thinking and betas reaching rawPredict."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import pytest
import pytest_asyncio

from tests.e2e._gateway import RunningGateway, running_gateway
from tests.providers._service_account import PROJECT, service_account_json
from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import anthropic
    import openai

pytestmark = pytest.mark.asyncio(loop_scope="module")

USER: Any = [{"role": "user", "content": "Why is checkout failing?"}]


def _route(name: str, *targets: tuple[str, str], cross: bool = False) -> dict[str, Any]:
    return {
        "name": name,
        "models": [name],
        "allow_cross_provider": cross,
        "targets": [
            {"provider": provider, "model": model, "name": f"{provider}-{i}"}
            for i, (provider, model) in enumerate(targets)
        ],
    }


def _config(upstream: MockUpstream) -> dict[str, Any]:
    credentials = service_account_json(f"{upstream.url}/token")
    vertex = {"kind": "vertex", "project": PROJECT, "base_url": upstream.url}
    return {
        "server": {"auth": "open"},
        "providers": [
            {
                "name": "anthropic-api",
                "kind": "anthropic",
                "api_key": "sk-ant-test",
                "base_url": upstream.url,
            },
            {
                "name": "vertex-claude",
                "publisher": "anthropic",
                "location": "us-east5",
                "credentials_json": credentials,
                **vertex,
            },
            {"name": "vertex-gemini", "credentials_json": credentials, **vertex},
            {
                "name": "openai",
                "kind": "openai",
                "api_key": "sk-test-openai",
                "base_url": upstream.openai_base_url,
            },
        ],
        "routes": [
            _route(
                "claude",
                ("anthropic-api", "ca/fault:status=529"),
                ("vertex-claude", "claude-sonnet-4-5"),
            ),
            _route(
                "gemini-down",
                ("vertex-gemini", "gemini-2.5-flash/fault:status=503"),
                ("openai", "gpt-4o-mini"),
                cross=True,
            ),
            _route("gemini", ("vertex-gemini", "gemini-2.5-flash"), ("openai", "gpt-4o-mini")),
        ],
    }


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def upstream() -> AsyncIterator[MockUpstream]:
    async with MockUpstream(hold_limit=30) as server:
        yield server


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def gateway(upstream: MockUpstream) -> AsyncIterator[RunningGateway]:
    async with running_gateway(_config(upstream)) as running:
        yield running


def _vertex_calls(upstream: MockUpstream, method: str) -> list[Any]:
    return [e for e in upstream.app.log.entries() if e.path.endswith(method)]


async def test_anthropic_sdk_fails_over_to_claude_on_vertex(
    ant: anthropic.AsyncAnthropic, upstream: MockUpstream
) -> None:
    """Whole and streamed, the overloaded Anthropic API is passed over before commit and
    Claude on Vertex answers with a bearer token the mock issued."""
    message = await ant.messages.create(model="claude", max_tokens=64, messages=USER)
    assert message.content[0].type == "text"
    assert message.content[0].text == "mock answer from claude-sonnet-4-5"
    async with ant.messages.stream(model="claude", max_tokens=64, messages=USER) as stream:
        text = "".join([piece async for piece in stream.text_stream])
        final = await stream.get_final_message()
    assert text == "mock answer from claude-sonnet-4-5"
    assert final.usage.output_tokens > 0
    whole = _vertex_calls(upstream, ":rawPredict")[-1]
    streamed = _vertex_calls(upstream, ":streamRawPredict")[-1]
    assert whole.path == (
        f"/v1/projects/{PROJECT}/locations/us-east5/publishers/anthropic/models/"
        "claude-sonnet-4-5:rawPredict"
    )
    for entry in (whole, streamed):
        scheme, _, token = entry.request_headers["authorization"].partition(" ")
        assert scheme == "Bearer"
        assert upstream.app.tokens.accepts(token)
    assert upstream.app.tokens.issued >= 1


async def test_cache_control_thinking_and_betas_reach_raw_predict(
    ant: anthropic.AsyncAnthropic, upstream: MockUpstream
) -> None:
    """The Anthropic SDK's own body reaches Vertex as sent, less `model`, with Vertex's
    anthropic_version and the beta header as anthropic_beta."""
    system: Any = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    thinking: Any = {"type": "enabled", "budget_tokens": 1024}
    await ant.beta.messages.create(
        model="claude",
        max_tokens=2048,
        system=system,
        thinking=thinking,
        messages=USER,
        betas=["context-1m-2025-08-07"],
    )
    body = orjson.loads(_vertex_calls(upstream, ":rawPredict")[-1].body)
    assert "model" not in body
    assert body["anthropic_version"] == "vertex-2023-10-16"
    assert body["anthropic_beta"] == ["context-1m-2025-08-07"]
    assert body["system"] == system
    assert body["thinking"] == thinking


@pytest.mark.parametrize(
    ("route", "answer", "outcomes"),
    [
        ("gemini-down", "mock answer from gpt-4o-mini", ["failed", "answered"]),
        ("gemini", "mock answer from gemini-2.5-flash", ["answered", "not_tried"]),
    ],
)
async def test_openai_sdk_on_gemini_on_vertex_then_openai(
    oai: openai.AsyncOpenAI, route: str, answer: str, outcomes: list[str]
) -> None:
    """Gemini on Vertex answers the OpenAI SDK, or fails over to OpenAI before commit, whole
    and streamed."""
    completion = await oai.chat.completions.create(model=route, messages=USER)
    assert completion.choices[0].message.content == answer
    extra: Any = completion.model_extra
    assert [a["outcome"] for a in extra["routing"]["attempts"]] == outcomes
    stream = await oai.chat.completions.create(model=route, messages=USER, stream=True)
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == answer
