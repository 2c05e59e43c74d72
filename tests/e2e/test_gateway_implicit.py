"""End to end: with providers and no route configured, each provider's implicit route serves
its family's models, through both SDKs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anthropic
import openai
import pytest
import pytest_asyncio

from tests.e2e._gateway import RunningGateway, running_gateway
from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.asyncio(loop_scope="module")

USER: Any = [{"role": "user", "content": "Why is checkout failing?"}]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def upstream() -> AsyncIterator[MockUpstream]:
    async with MockUpstream() as server:
        yield server


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def gateway(upstream: MockUpstream) -> AsyncIterator[RunningGateway]:
    config = {
        "server": {"auth": "open"},
        "providers": [
            {
                "name": "openai",
                "kind": "openai",
                "api_key": "sk-openai-org",
                "base_url": upstream.openai_base_url,
            },
            {
                "name": "anthropic",
                "kind": "anthropic",
                "api_key": "sk-ant-org",
                "base_url": upstream.url,
            },
        ],
    }
    async with running_gateway(config) as running:
        yield running


async def test_openai_model_goes_to_the_openai_provider(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """`gpt-4o-mini` with no route configured: the `openai` implicit route, its own key."""
    async with openai.AsyncOpenAI(
        base_url=gateway.openai_base_url, api_key="placeholder", max_retries=0
    ) as client:
        raw = await client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=USER
        )
    assert raw.headers["x-turnout-route"] == "openai"
    assert raw.parse().choices[0].message.content == "mock answer from gpt-4o-mini"
    assert upstream.app.log.entries()[-1].credential == "sk-openai-org"


async def test_claude_model_goes_to_the_anthropic_provider(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """`claude-…` through the Anthropic SDK: the `anthropic` implicit route, same bytes."""
    async with anthropic.AsyncAnthropic(
        base_url=gateway.url, api_key="placeholder", max_retries=0
    ) as client:
        raw = await client.messages.with_raw_response.create(
            model="claude-haiku-test",
            max_tokens=64,
            messages=USER,
            extra_headers={"anthropic-beta": "prompt-caching-2024-07-31"},
        )
    assert raw.headers["x-turnout-route"] == "anthropic"
    message = await raw.parse()
    assert message.content[0].type == "text"
    assert message.content[0].text == "mock answer from claude-haiku-test"
    logged = upstream.app.log.entries()[-1]
    assert logged.credential == "sk-ant-org"
    assert logged.request_headers["anthropic-beta"] == "prompt-caching-2024-07-31"


async def test_anthropic_stream_is_forwarded_event_for_event(gateway: RunningGateway) -> None:
    """Same format, streamed: the SDK assembles the upstream's own events and usage."""
    async with (
        anthropic.AsyncAnthropic(
            base_url=gateway.url, api_key="placeholder", max_retries=0
        ) as client,
        client.messages.stream(model="claude-haiku-test", max_tokens=64, messages=USER) as stream,
    ):
        text = "".join([piece async for piece in stream.text_stream])
        final = await stream.get_final_message()
    assert text == "mock answer from claude-haiku-test"
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens > 0


async def test_openai_stream_reports_usage_when_asked(gateway: RunningGateway) -> None:
    """`stream_options.include_usage`: the last chunk carries the usage, as OpenAI sends it."""
    async with openai.AsyncOpenAI(
        base_url=gateway.openai_base_url, api_key="placeholder", max_retries=0
    ) as client:
        stream = await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=USER,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens > 0
