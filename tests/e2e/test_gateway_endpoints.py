"""End to end: the endpoints clients call, through a real gateway socket with the official
OpenAI SDK in front of `turnout mock-upstream`: a base URL without `/v1`, as
LiteLLM's proxy provider and other clients use it, and `models.retrieve` of an id that may
hold a `/`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import openai
import pytest
import pytest_asyncio

from tests.e2e._gateway import RunningGateway, running_gateway
from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.asyncio(loop_scope="module")

USER: Any = [{"role": "user", "content": "Why is checkout failing?"}]


def _config(upstream: MockUpstream) -> dict[str, Any]:
    url = upstream.openai_base_url
    return {
        "server": {"auth": "open"},
        "providers": [{"name": "openai", "kind": "openai", "api_key": "sk-e2e", "base_url": url}],
        "routes": [
            {"name": "main", "models": ["gpt-4o-mini"], "targets": [{"provider": "openai"}]},
            {
                "name": "vendored",
                "models": ["openai/gpt-4o"],
                "targets": [{"provider": "openai", "model": "gpt-4o"}],
            },
            {
                "name": "embed",
                "models": ["text-embedding-3-small"],
                "targets": [{"provider": "openai"}],
            },
        ],
    }


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def gateway() -> AsyncIterator[RunningGateway]:
    async with MockUpstream() as upstream, running_gateway(_config(upstream)) as running:
        yield running


def _client(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url, api_key="anything", max_retries=0)


async def test_the_openai_sdk_works_on_a_bare_base_url(gateway: RunningGateway) -> None:
    """With `base_url` the gateway's root (no `/v1`), chat, embeddings and the model list
    answer, on the paths without `/v1`."""
    before = len(gateway.requests)
    async with _client(gateway.url) as client:
        completion = await client.chat.completions.create(model="gpt-4o-mini", messages=USER)
        vectors = await client.embeddings.create(model="text-embedding-3-small", input="hi")
        listed = await client.models.list()
    assert completion.choices[0].message.content
    assert vectors.data[0].embedding
    assert {model.id for model in listed.data} >= {"gpt-4o-mini", "openai/gpt-4o"}
    assert [path for _, path in gateway.requests[before:]] == [
        "/chat/completions",
        "/embeddings",
        "/models",
    ]


@pytest.mark.parametrize("root", ["", "/v1"], ids=["bare", "v1"])
async def test_models_retrieve_finds_a_usable_model(gateway: RunningGateway, root: str) -> None:
    """`client.models.retrieve(id)` returns the model object, an id with a `/` included."""
    async with _client(f"{gateway.url}{root}") as client:
        plain = await client.models.retrieve("gpt-4o-mini")
        vendored = await client.models.retrieve("openai/gpt-4o")
    assert (plain.id, plain.object) == ("gpt-4o-mini", "model")
    assert vendored.id == "openai/gpt-4o"


async def test_models_retrieve_of_an_unknown_model_is_not_found(gateway: RunningGateway) -> None:
    """A model no route serves: the SDK raises `NotFoundError`, with turnout's code."""
    async with _client(gateway.openai_base_url) as client:
        with pytest.raises(openai.NotFoundError) as caught:
            await client.models.retrieve("llama-3")
    assert caught.value.code == "NOT_FOUND"
