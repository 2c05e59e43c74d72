"""End to end: a `vertex` provider without a `publisher` serves a Claude target to the official
Anthropic SDK over Anthropic Messages (`:rawPredict`), since a Claude model on Vertex is of the
anthropic family whatever the provider's other models are: alone on its route, and as the
failover after the Anthropic API."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from tests.e2e._gateway import RunningGateway, running_gateway
from tests.providers._service_account import PROJECT, service_account_json
from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import anthropic

pytestmark = pytest.mark.asyncio(loop_scope="module")

USER: Any = [{"role": "user", "content": "Why is checkout failing?"}]
ON_VERTEX = "claude-sonnet-4@20250514"


def _route(name: str, *targets: tuple[str, str]) -> dict[str, Any]:
    return {
        "name": name,
        "models": [name],
        "targets": [{"provider": provider, "model": model} for provider, model in targets],
    }


def _config(upstream: MockUpstream) -> dict[str, Any]:
    return {
        "server": {"auth": "open"},
        "providers": [
            {"name": "anthropic-api", "kind": "anthropic", "api_key": "sk-ant-test",
             "base_url": upstream.url},
            {"name": "vertex", "kind": "vertex", "project": PROJECT, "location": "us-east5",
             "credential_mode": "org_key", "base_url": upstream.url,
             "credentials_json": service_account_json(f"{upstream.url}/token")},
        ],
        "routes": [
            _route("vertex-only", ("vertex", ON_VERTEX)),
            _route("claude", ("anthropic-api", "ca/fault:status=529"), ("vertex", ON_VERTEX)),
        ],
    }  # fmt: skip


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def upstream() -> AsyncIterator[MockUpstream]:
    async with MockUpstream(hold_limit=30) as server:
        yield server


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def gateway(upstream: MockUpstream) -> AsyncIterator[RunningGateway]:
    async with running_gateway(_config(upstream)) as running:
        yield running


def _raw_predict_paths(upstream: MockUpstream, since: int) -> list[str]:
    entries = upstream.app.log.entries()[since:]
    return [e.path for e in entries if e.path.endswith((":rawPredict", ":streamRawPredict"))]


@pytest.mark.parametrize(
    ("route", "outcomes"),
    [("vertex-only", ["answered"]), ("claude", ["failed", "answered"])],
)
async def test_anthropic_sdk_is_served_by_claude_on_a_vertex_provider_without_publisher(
    ant: anthropic.AsyncAnthropic, upstream: MockUpstream, route: str, outcomes: list[str]
) -> None:
    """/v1/messages reaches a Vertex Claude target through :rawPredict, whole and streamed."""
    since = len(upstream.app.log.entries())
    raw = await ant.messages.with_raw_response.create(model=route, max_tokens=64, messages=USER)
    message = await raw.parse()
    assert message.content[0].type == "text"
    assert message.content[0].text == f"mock answer from {ON_VERTEX}"
    attempts = raw.headers["x-turnout-attempts"]
    assert [part.split(";")[1] for part in attempts.split(",")] == [
        f"outcome={outcome}" for outcome in outcomes
    ]
    async with ant.messages.stream(model=route, max_tokens=64, messages=USER) as stream:
        text = "".join([piece async for piece in stream.text_stream])
    assert text == f"mock answer from {ON_VERTEX}"
    model_path = f"/v1/projects/{PROJECT}/locations/us-east5/publishers/anthropic/models/"
    assert _raw_predict_paths(upstream, since) == [
        f"{model_path}claude-sonnet-4%4020250514:rawPredict",
        f"{model_path}claude-sonnet-4%4020250514:streamRawPredict",
    ]
