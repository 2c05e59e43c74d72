"""End to end: the model catalog through a real gateway socket, with the official OpenAI SDK
against `turnout mock-upstream` (which reports usage): a model the config does not price is
billed at the catalog's price, and a target whose catalog context window the request cannot
fit is skipped for one with a larger window."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from tests.e2e._gateway import RunningGateway, running_gateway
from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import openai

pytestmark = pytest.mark.asyncio(loop_scope="module")

USER: Any = [{"role": "user", "content": "Why is checkout failing?"}]
CATALOG = {
    "version": 1,
    "updated": "2026-03-01",
    "currency": "USD",
    "models": {
        "small-model": {"prices": {"input": 1.0, "output": 2.0}, "context_window": 8192},
        "large-model": {"prices": {"input": 3.0, "output": 4.0}, "context_window": 200000},
    },
}


def _config(upstream: MockUpstream, catalog_file: str) -> dict[str, Any]:
    provider = {"kind": "openai", "api_key": "sk-test", "base_url": upstream.openai_base_url}
    return {
        "server": {"auth": "open"},
        "catalog_file": catalog_file,
        "providers": [
            {"name": "openai", **provider},
            {"name": "priced", **provider, "prices": {"gpt-4o-mini": {"input": 1, "output": 1}}},
        ],
        "routes": [
            {
                "name": "catalog-priced",
                "models": ["catalog-priced"],
                "targets": [{"provider": "openai", "model": "gpt-4o-mini"}],
            },
            {
                "name": "config-priced",
                "models": ["config-priced"],
                "targets": [{"provider": "priced", "model": "gpt-4o-mini"}],
            },
            {
                "name": "windows",
                "models": ["windows"],
                "targets": [
                    {"provider": "openai", "model": "small-model", "name": "small"},
                    {"provider": "openai", "model": "large-model", "name": "large"},
                ],
            },
        ],
    }


def _routing(completion: Any) -> dict[str, Any]:
    extra = completion.model_extra
    assert extra is not None
    routing: dict[str, Any] = extra["routing"]
    return routing


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def upstream() -> AsyncIterator[MockUpstream]:
    async with MockUpstream() as server:
        yield server


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def gateway(
    upstream: MockUpstream, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[RunningGateway]:
    path = tmp_path_factory.mktemp("catalog") / "turnout-catalog.json"
    path.write_text(json.dumps(CATALOG))
    async with running_gateway(_config(upstream, str(path))) as running:
        yield running


async def test_an_unpriced_model_is_billed_at_the_catalog_price(oai: openai.AsyncOpenAI) -> None:
    """No `prices` for gpt-4o-mini: the record's cost is the shipped catalog's, and says so."""
    raw = await oai.chat.completions.with_raw_response.create(model="catalog-priced", messages=USER)
    completion = raw.parse()
    routing = _routing(completion)
    usage = completion.usage
    assert usage is not None
    assert usage.prompt_tokens > 0
    expected = (usage.prompt_tokens * 0.15 + usage.completion_tokens * 0.60) / 1e6
    assert routing["cost"] == pytest.approx(expected)
    assert routing["price_source"] == "catalog"
    assert float(raw.headers["x-turnout-cost"]) == pytest.approx(expected)


async def test_a_configured_price_is_billed_before_the_catalog(oai: openai.AsyncOpenAI) -> None:
    """The provider's own price wins, and the record says it came from the config."""
    completion = await oai.chat.completions.create(model="config-priced", messages=USER)
    routing = _routing(completion)
    usage = completion.usage
    assert usage is not None
    expected = (usage.prompt_tokens + usage.completion_tokens) / 1e6
    assert routing["cost"] == pytest.approx(expected)
    assert routing["price_source"] == "config"


async def test_a_request_over_a_catalog_window_fails_over_to_a_larger_one(
    oai: openai.AsyncOpenAI, upstream: MockUpstream
) -> None:
    """About 12,400 tokens skip the 8,192-token target (ineligible); the large one answers."""
    long: Any = [{"role": "user", "content": "x" * (4 * 12_000)}]
    completion = await oai.chat.completions.create(model="windows", messages=long, max_tokens=400)
    routing = _routing(completion)
    attempts = routing["attempts"]
    assert [(a["target"], a["outcome"]) for a in attempts] == [
        ("small", "ineligible"),
        ("large", "answered"),
    ]
    assert attempts[0]["reason"] == "context window 8,192 < estimated 12,400 tokens"
    assert "small-model" not in [entry.model for entry in upstream.app.log.entries()]


async def test_a_request_within_the_window_is_served_by_the_first_target(
    oai: openai.AsyncOpenAI,
) -> None:
    """A short request fits the small window: no skip."""
    completion = await oai.chat.completions.create(model="windows", messages=USER)
    first = _routing(completion)["attempts"][0]
    assert (first["target"], first["outcome"]) == ("small", "answered")
