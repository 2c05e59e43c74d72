"""End to end: a provider that rejects a key says whose key it was, through a real gateway
socket under `auth: open`, as the official SDKs see it.

turnout's own (org-key) credential refused upstream is the operator's problem, never the
caller's: its message names the provider and says it was the configured key. A caller's own
credential forwarded by a passthrough provider keeps the vendor's message as it is.
"""

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
REJECTED = "Incorrect API key provided."


def _config(upstream: MockUpstream) -> dict[str, Any]:
    openai_url = upstream.openai_base_url
    return {
        "server": {"auth": "open"},
        "providers": [
            {
                "name": "openai",
                "kind": "openai",
                "api_key": "sk-org-revoked",
                "base_url": openai_url,
            },
            {
                "name": "anthropic",
                "kind": "anthropic",
                "api_key": "k-revoked",
                "base_url": upstream.url,
            },
            {"name": "byok", "kind": "openai", "base_url": openai_url},
        ],
        "routes": [
            {
                "name": "org",
                "models": ["org-*"],
                "targets": [{"provider": "openai", "model": "o/fault:status=401"}],
            },
            {
                "name": "claude",
                "models": ["claude-*"],
                "targets": [{"provider": "anthropic", "model": "c/fault:status=401"}],
            },
            {
                "name": "own",
                "models": ["own-*"],
                "targets": [{"provider": "byok", "model": "b/fault:status=401"}],
            },
        ],
    }


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def gateway() -> AsyncIterator[RunningGateway]:
    async with MockUpstream() as upstream, running_gateway(_config(upstream)) as running:
        yield running


async def _openai_error(gateway: RunningGateway, model: str) -> openai.APIStatusError:
    client = openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key="sk-anything")
    async with client:
        with pytest.raises(openai.APIStatusError) as caught:
            await client.chat.completions.create(model=model, messages=USER)
    return caught.value


async def test_the_org_key_refused_names_the_provider_and_its_key(
    gateway: RunningGateway,
) -> None:
    """The provider's 401 on turnout's own key keeps its status, and its message says the
    provider rejected its configured key (the caller's key was never checked), once."""
    before = len(gateway.requests)
    error = await _openai_error(gateway, "org-x")
    assert error.status_code == 401
    body: Any = error.body
    assert body["message"] == f'provider "openai" rejected its configured key: {REJECTED}'
    assert body["code"] == "auth"
    assert error.response.headers["x-should-retry"] == "false"
    assert len(gateway.requests) == before + 1


async def test_an_anthropic_org_key_refused_says_so_too(gateway: RunningGateway) -> None:
    """The same for the Anthropic SDK and an Anthropic provider's own key."""
    client = anthropic.AsyncAnthropic(base_url=gateway.url, api_key="sk-anything")
    async with client:
        with pytest.raises(anthropic.AuthenticationError) as caught:
            await client.messages.create(model="claude-x", max_tokens=8, messages=USER)
    body: Any = caught.value.body
    assert body["error"]["message"].startswith('provider "anthropic" rejected its configured key: ')


async def test_a_callers_own_key_refused_keeps_the_vendors_message(
    gateway: RunningGateway,
) -> None:
    """A passthrough provider forwarded the caller's own key: the vendor's message is the
    caller's to read, as it is."""
    error = await _openai_error(gateway, "own-x")
    assert error.status_code == 401
    body: Any = error.body
    assert body["message"] == REJECTED
