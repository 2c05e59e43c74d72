"""Fixtures for the provider tests: one mock upstream for the session, and every adapter kind
(the HTTP ones on the providers' own client, `Http1Transport`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Literal

import pytest

from turnout.mock_upstream import ThreadedMockUpstream
from turnout.providers import (
    Anthropic,
    AzureOpenAI,
    Bedrock,
    Gemini,
    HttpProvider,
    HttpTimeouts,
    MockProvider,
    OpenAI,
    OpenAICompatible,
    Vertex,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

ADAPTERS = (
    "openai",
    "anthropic",
    "openai-compatible",
    "azure-openai",
    "azure-anthropic",
    "gemini",
    "vertex-gemini",
    "vertex-claude",
    "bedrock",
    "bedrock-invoke",
    "mock",
)
"""Every adapter kind, with Azure once per wire format, Vertex once per publisher and Bedrock
once per API."""
GEMINI_KEY = "gm-test-key"
"""The key the shared mock upstream expects on Gemini calls (in `x-goog-api-key`)."""
VERTEX_TOKEN = "ya29.test-fixed-token"
"""A bearer token the shared mock upstream accepts on Vertex calls (besides those it issues)."""
AWS_CREDENTIALS = ("AKIDTESTBEDROCK", "test-secret-key")
"""The test AWS keys the shared mock upstream checks Bedrock signatures against."""


@pytest.fixture(scope="session")
def upstream() -> Iterator[ThreadedMockUpstream]:
    """The mock upstream on a free 127.0.0.1 port, shared by the provider tests."""
    with ThreadedMockUpstream(
        hold_limit=10.0,
        gemini_key=GEMINI_KEY,
        vertex_token=VERTEX_TOKEN,
        aws_credentials=AWS_CREDENTIALS,
    ) as server:
        yield server


def make_adapter(kind: str, upstream: ThreadedMockUpstream, **options: Any) -> HttpProvider:
    """An adapter of `kind` pointed at `upstream` (`mock` needs no upstream)."""
    if kind == "openai":
        return OpenAI("sk-openai", base_url=upstream.openai_base_url, **options)
    if kind == "anthropic":
        return Anthropic("sk-ant", base_url=upstream.url, **options)
    if kind == "openai-compatible":
        return OpenAICompatible(base_url=upstream.openai_base_url, api_key="sk-compat", **options)
    if kind == "azure-openai":
        return AzureOpenAI(upstream.url, "az-key", wire="openai-chat", **options)
    if kind == "gemini":
        return Gemini(GEMINI_KEY, base_url=upstream.url, **options)
    if kind in ("bedrock", "bedrock-invoke"):
        key_id, secret = AWS_CREDENTIALS
        return Bedrock(
            "us-west-2",
            base_url=upstream.url,
            api="invoke" if kind == "bedrock-invoke" else None,
            access_key_id=key_id,
            secret_access_key=secret,
            **options,
        )
    if kind in ("vertex-gemini", "vertex-claude"):
        publisher: Literal["anthropic", "google"] = (
            "anthropic" if kind == "vertex-claude" else "google"
        )
        return Vertex(
            "test-project",
            token=lambda: (VERTEX_TOKEN, time.time() + 3600),
            publisher=publisher,
            base_url=upstream.url,
            **options,
        )
    if kind == "azure-anthropic":
        return AzureOpenAI(
            f"{upstream.url}/anthropic", "az-ant", wire="anthropic-messages", **options
        )
    options.pop("timeouts", None)
    return MockProvider(**options)


@pytest.fixture(params=ADAPTERS)
async def adapter(
    request: pytest.FixtureRequest, upstream: ThreadedMockUpstream
) -> AsyncIterator[HttpProvider]:
    """Each adapter kind in turn, with a clean upstream log; closed after the test."""
    upstream.reset()
    provider = make_adapter(request.param, upstream, timeouts=HttpTimeouts(read=5.0))
    yield provider
    await provider.aclose()


def logged(provider: HttpProvider, upstream: ThreadedMockUpstream) -> list[dict[str, Any]]:
    """What the upstream of `provider` logged (in process for the mock), oldest first."""
    if isinstance(provider, MockProvider):
        return [entry.as_dict() for entry in provider.requests]
    return upstream.requests()
