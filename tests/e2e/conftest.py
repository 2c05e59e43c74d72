"""What the end-to-end suites share: an OpenAI and an Anthropic SDK client for the module's
`gateway` fixture (each module starts its own gateway over its own configuration)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anthropic
import openai
import pytest_asyncio

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.e2e._gateway import RunningGateway


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def oai(gateway: RunningGateway) -> AsyncIterator[openai.AsyncOpenAI]:
    """The official OpenAI SDK on the module's gateway, without retries."""
    client = openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key="anything", max_retries=0)
    yield client
    await client.close()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def ant(gateway: RunningGateway) -> AsyncIterator[anthropic.AsyncAnthropic]:
    """The official Anthropic SDK on the module's gateway, without retries."""
    client = anthropic.AsyncAnthropic(base_url=gateway.url, api_key="anything", max_retries=0)
    yield client
    await client.close()
