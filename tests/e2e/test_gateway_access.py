"""End to end: access bindings and key routes through a real gateway socket, called with the
official OpenAI and Anthropic SDKs, in front of `turnout mock-upstream`.

The two Claude providers carry different credentials, so the mock's request log tells which
route's target was called, and an empty log proves a refusal made no upstream call.
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

PLATFORM_KEY = "tk_e2e_platform_key"
SALES_KEY = "tk_e2e_sales_key"
OPS_KEY = "tk_e2e_ops_key"
SOLO_KEY = "tk_e2e_solo_key"
PAIR_KEY = "tk_e2e_pair_key"
DIRECT_CREDENTIAL = "sk-ant-direct"
BEDROCK_CREDENTIAL = "sk-ant-bedrock"
OPENAI_CREDENTIAL = "sk-openai-org"
USER: Any = [{"role": "user", "content": "Why is checkout failing?"}]


def _config(upstream: MockUpstream) -> dict[str, Any]:
    """The AIControls example: route `claude` on `claude-*`, route `claude-bedrock` on `claude*`,
    a platform-team grant through `claude-bedrock`, everyone else on their own pattern."""
    return {
        "server": {"auth": "keys"},
        "providers": [
            {
                "name": "direct",
                "kind": "anthropic",
                "api_key": DIRECT_CREDENTIAL,
                "base_url": upstream.url,
            },
            {
                "name": "bedrock",
                "kind": "anthropic",
                "api_key": BEDROCK_CREDENTIAL,
                "base_url": upstream.url,
            },
            {
                "name": "oai",
                "kind": "openai",
                "api_key": OPENAI_CREDENTIAL,
                "base_url": upstream.openai_base_url,
            },
        ],
        "routes": [
            {"name": "claude", "models": ["claude-*"], "targets": [{"provider": "direct"}]},
            {"name": "claude-bedrock", "models": ["claude*"], "targets": [{"provider": "bedrock"}]},
            {
                "name": "mini",
                "models": ["gpt-4o-mini"],
                "targets": [{"provider": "oai", "model": "gpt-4o-mini"}],
            },
            {"name": "nano", "models": ["gpt-4.1-nano"], "targets": [{"provider": "oai"}]},
        ],
        "keys": [
            {"name": "platform", "key": PLATFORM_KEY, "teams": ["platform"]},
            {"name": "sales", "key": SALES_KEY, "teams": ["sales"]},
            {"name": "ops", "key": OPS_KEY, "teams": ["ops"]},
            {"name": "solo", "key": SOLO_KEY, "routes": ["mini"]},
            {"name": "pair", "key": PAIR_KEY, "routes": ["mini", "nano"]},
        ],
        "bindings": [
            {
                "name": "platform-bedrock",
                "subjects": [{"team": "platform"}],
                "grants": [{"models": "claude*", "route": "claude-bedrock"}],
            },
            {
                "name": "everyone-claude",
                "subjects": [{"everyone": True}],
                "grants": [{"models": "claude-*"}, {"models": "gpt-*"}],
            },
            {
                "name": "ops-c-through-bedrock",
                "subjects": [{"team": "ops"}],
                "grants": [{"models": "c*", "route": "claude-bedrock"}],
            },
            {
                "name": "no-haiku-for-sales",
                "mode": "deny",
                "subjects": [{"team": "sales"}],
                "grants": [{"models": "claude-haiku*"}],
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
def _clean_log(upstream: MockUpstream) -> None:
    upstream.app.log.clear()


def _openai(gateway: RunningGateway, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=key, max_retries=0)


def _anthropic(gateway: RunningGateway, key: str) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=gateway.url, api_key=key, max_retries=0)


def _credentials(upstream: MockUpstream) -> list[str | None]:
    return [entry.credential for entry in upstream.app.log.entries()]


async def test_team_grant_sends_the_team_through_its_route(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """A platform caller's claude model goes through `claude-bedrock`, as its grant names."""
    async with _anthropic(gateway, PLATFORM_KEY) as client:
        reply = await client.messages.with_raw_response.create(
            model="claude-sonnet-4-6", max_tokens=64, messages=USER
        )
    message = await reply.parse()
    assert message.content[0].type == "text"
    assert reply.headers["x-turnout-route"] == "claude-bedrock"
    assert _credentials(upstream) == [BEDROCK_CREDENTIAL]


async def test_everyone_else_uses_the_route_their_model_resolves_to(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """A caller outside the team gets the most specific pattern's route, `claude`."""
    async with _openai(gateway, SALES_KEY) as client:
        reply = await client.chat.completions.with_raw_response.create(
            model="claude-sonnet-4-6", messages=USER
        )
    assert reply.headers["x-turnout-route"] == "claude"
    assert reply.parse().choices[0].message.content
    assert _credentials(upstream) == [DIRECT_CREDENTIAL]


async def test_grant_route_that_does_not_serve_the_model_fails_closed(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """A grant naming a route that does not serve the model is 503 NO_ROUTE, never another
    route, and nothing is called upstream."""
    async with _openai(gateway, OPS_KEY) as client:
        with pytest.raises(openai.APIStatusError) as caught:
            await client.chat.completions.create(model="codestral-latest", messages=USER)
    assert caught.value.status_code == 503
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["code"] == "NO_ROUTE"
    assert "claude-bedrock" in error["message"]
    assert _credentials(upstream) == []


async def test_deny_binding_refuses_in_the_anthropic_envelope(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """A deny binding covering the caller and model is 403 POLICY_DENIED before any call."""
    async with _anthropic(gateway, SALES_KEY) as client:
        with pytest.raises(anthropic.PermissionDeniedError) as caught:
            await client.messages.create(model="claude-haiku-4-6", max_tokens=64, messages=USER)
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["error"]["code"] == "POLICY_DENIED"
    assert _credentials(upstream) == []


async def test_model_without_a_grant_is_model_denied(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """A model no grant covers is 400 MODEL_DENIED, before any call."""
    async with _openai(gateway, SALES_KEY) as client:
        with pytest.raises(openai.BadRequestError) as caught:
            await client.chat.completions.create(model="o3-pro", messages=USER)
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["code"] == "MODEL_DENIED"
    assert _credentials(upstream) == []


async def test_key_with_one_route_and_an_empty_model_uses_that_route(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """An empty model from a key granted exactly one route goes to that route."""
    async with _openai(gateway, SOLO_KEY) as client:
        reply = await client.chat.completions.with_raw_response.create(model="", messages=USER)
    assert reply.headers["x-turnout-route"] == "mini"
    assert [entry.model for entry in upstream.app.log.entries()] == ["gpt-4o-mini"]
    assert _credentials(upstream) == [OPENAI_CREDENTIAL]


async def test_key_with_two_routes_and_no_model_is_refused_listing_them(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """An empty model from a key with two routes is 403 model_not_allowed naming both."""
    async with _openai(gateway, PAIR_KEY) as client:
        with pytest.raises(openai.PermissionDeniedError) as caught:
            await client.chat.completions.create(model="", messages=USER)
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["code"] == "model_not_allowed"
    assert "mini" in error["message"]
    assert "nano" in error["message"]
    assert _credentials(upstream) == []


async def test_key_route_ceiling_refuses_another_route(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """A key limited to `mini` asking for a model of `nano` is 400 MODEL_DENIED."""
    async with _openai(gateway, SOLO_KEY) as client:
        with pytest.raises(openai.BadRequestError) as caught:
            await client.chat.completions.create(model="gpt-4.1-nano", messages=USER)
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["code"] == "MODEL_DENIED"
    assert _credentials(upstream) == []


async def test_unknown_key_is_401(gateway: RunningGateway, upstream: MockUpstream) -> None:
    """A key the gateway does not know is 401 invalid_api_key in the caller's envelope."""
    async with _anthropic(gateway, "tk_nobody_at_all") as client:
        with pytest.raises(anthropic.AuthenticationError) as caught:
            await client.messages.create(model="claude-sonnet-4-6", max_tokens=64, messages=USER)
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["error"]["code"] == "invalid_api_key"
    assert _credentials(upstream) == []


async def test_models_list_shows_only_what_the_caller_may_use(gateway: RunningGateway) -> None:
    """`/v1/models` through the SDK lists the key's usable models: not `nano` (outside its
    routes), not the route name `mini` (no grant covers that name)."""
    async with _openai(gateway, SOLO_KEY) as client:
        page = await client.models.list()
    assert [model.id for model in page.data] == ["gpt-4o-mini"]
