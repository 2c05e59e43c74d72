"""End to end: one Claude route over three vendors, [Anthropic API, Bedrock, Vertex AI], on
`turnout mock-upstream`, called through the official Anthropic and OpenAI SDKs. The first two
fail; the route tries them in order and Claude on Vertex answers, whole and streamed, before
anything reached the caller."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anthropic
import openai
import pytest
import pytest_asyncio

from tests.e2e._gateway import RunningGateway, running_gateway
from tests.providers._service_account import PROJECT, service_account_json
from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.asyncio(loop_scope="module")

USER: Any = [{"role": "user", "content": "Why is checkout failing?"}]
AWS = ("AKIDE2ECLAUDE", "e2e-claude-secret")
ON_ANTHROPIC = "claude-sonnet-4-5"
ON_BEDROCK = "us.anthropic.claude-sonnet-4-5-v1:0"
ON_VERTEX = "claude-sonnet-4-5@20250929"


def _config(upstream: MockUpstream) -> dict[str, Any]:
    return {
        "server": {"auth": "open"},
        "providers": [
            {"name": "anthropic-api", "kind": "anthropic", "api_key": "sk-ant-test",
             "base_url": upstream.url},
            {"name": "aws", "kind": "bedrock", "region": "us-east-1", "base_url": upstream.url,
             "access_key_id": AWS[0], "secret_access_key": AWS[1]},
            {"name": "vertex-claude", "kind": "vertex", "project": PROJECT, "location": "us-east5",
             "publisher": "anthropic", "base_url": upstream.url,
             "credentials_json": service_account_json(f"{upstream.url}/token")},
        ],
        "routes": [
            {
                "name": "claude",
                "models": ["claude"],
                "targets": [
                    {"provider": "anthropic-api", "model": ON_ANTHROPIC},
                    {"provider": "aws", "model": ON_BEDROCK},
                    {"provider": "vertex-claude", "model": ON_VERTEX},
                ],
            }
        ],
    }  # fmt: skip


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def upstream() -> AsyncIterator[MockUpstream]:
    async with MockUpstream(hold_limit=30, aws_credentials=AWS) as server:
        yield server


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def gateway(upstream: MockUpstream) -> AsyncIterator[RunningGateway]:
    async with running_gateway(_config(upstream)) as running:
        yield running


def _script_outage(upstream: MockUpstream) -> None:
    """The next call to the Anthropic API is overloaded and the next to Bedrock throttled."""
    upstream.app.faults.script(ON_ANTHROPIC, ["status=529"])
    upstream.app.faults.script(ON_BEDROCK, ["status=503"])


def _vendors_called(upstream: MockUpstream, since: int) -> list[str]:
    """Which vendor each request after log entry `since` went to, in order."""
    names = []
    for entry in upstream.app.log.entries()[since:]:
        if "/publishers/anthropic/" in entry.path:
            names.append("vertex")
        elif entry.path.startswith("/model/"):
            names.append("bedrock")
        elif entry.path.endswith("/v1/messages"):
            names.append("anthropic")
    return names


async def test_the_anthropic_sdk_crosses_three_vendors_in_order(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """Anthropic 529, then Bedrock 503, then Vertex answers; the attempts header says so."""
    client = anthropic.AsyncAnthropic(base_url=gateway.url, api_key="any", max_retries=0)
    for stream in (False, True):
        _script_outage(upstream)
        since = len(upstream.app.log.entries())
        if stream:
            async with client.messages.stream(model="claude", max_tokens=64, messages=USER) as s:
                text = "".join([piece async for piece in s.text_stream])
                attempts = s.response.headers["x-turnout-attempts"]
        else:
            raw = await client.messages.with_raw_response.create(
                model="claude", max_tokens=64, messages=USER
            )
            message = await raw.parse()
            assert message.content[0].type == "text"
            text = message.content[0].text
            attempts = raw.headers["x-turnout-attempts"]
        assert text == f"mock answer from {ON_VERTEX}"
        outcomes = [part.split(";")[1] for part in attempts.split(",")]
        assert outcomes == ["outcome=failed", "outcome=failed", "outcome=answered"]
        assert _vendors_called(upstream, since) == ["anthropic", "bedrock", "vertex"]
    await client.close()


async def test_the_openai_sdk_reaches_claude_on_vertex_the_same_way(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """An OpenAI caller of the same route is translated to each vendor in turn."""
    client = openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key="any", max_retries=0)
    _script_outage(upstream)
    since = len(upstream.app.log.entries())
    completion = await client.chat.completions.create(model="claude", messages=USER)
    await client.close()
    assert completion.choices[0].message.content == f"mock answer from {ON_VERTEX}"
    routing: Any = (completion.model_extra or {})["routing"]
    assert [a["outcome"] for a in routing["attempts"]] == ["failed", "failed", "answered"]
    assert [a["provider"] for a in routing["attempts"]] == ["anthropic-api", "aws", "vertex-claude"]
    assert _vendors_called(upstream, since) == ["anthropic", "bedrock", "vertex"]
