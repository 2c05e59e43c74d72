"""End to end: routing policies through a real gateway socket, called with the official OpenAI
and Anthropic SDKs, in front of `turnout mock-upstream`: a policy-skipped target in
the attempts, observe mode calling anyway, and a deny covering every target refused before any
upstream call (the mock's request log stays empty)."""

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

APP_KEY = "tk_e2e_policies_key"
US_KEY = "sk-org-us-e2e"
EU_KEY = "sk-org-eu-e2e"
ANT_KEY = "sk-org-anthropic-e2e"
USER: Any = [{"role": "user", "content": "Why is checkout failing?"}]


def _config(upstream: MockUpstream) -> dict[str, Any]:
    url = upstream.openai_base_url
    return {
        "server": {"auth": "keys"},
        "providers": [
            {"name": "us", "kind": "openai", "api_key": US_KEY, "base_url": url},
            {
                "name": "eu",
                "kind": "openai-compatible",
                "api_key": EU_KEY,
                "base_url": url,
                "data_handling": {"zero_data_retention": True, "jurisdiction": "EU"},
            },
            {"name": "ant", "kind": "anthropic", "api_key": ANT_KEY, "base_url": upstream.url},
        ],
        "routes": [
            {
                "name": "main",
                "models": ["gpt-4o-mini"],
                "targets": [
                    {"provider": "us", "name": "us", "model": "gpt-4o-mini"},
                    {"provider": "eu", "name": "eu", "model": "eu-mini"},
                ],
            },
            {
                "name": "watched",
                "models": ["watched-*"],
                "targets": [{"provider": "us", "name": "us", "model": "gpt-4o-mini"}],
            },
            {
                "name": "claude",
                "models": ["claude-*"],
                "targets": [{"provider": "ant", "name": "ant"}],
            },
        ],
        "keys": [{"name": "app", "key": APP_KEY}],
        "policies": [
            {"name": "keep-main-off-us", "deny_when": {"provider": "us", "route": "main"}},
            {"name": "watch-us", "mode": "observe", "deny_when": {"route": "watched"}},
            {"name": "no-anthropic", "deny_when": {"family": "anthropic"}},
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


def _credentials(upstream: MockUpstream) -> list[str | None]:
    return [entry.credential for entry in upstream.app.log.entries()]


def _openai(gateway: RunningGateway) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=APP_KEY, max_retries=0)


async def test_a_denied_target_is_policy_skipped_and_the_next_serves(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """The enforce policy skips `us` on route main (named in the entry); `eu` answers."""
    async with _openai(gateway) as client:
        reply = await client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=USER
        )
    attempts = reply.http_response.json()["routing"]["attempts"]
    assert [(a["target"], a["outcome"]) for a in attempts] == [
        ("us", "policy_skipped"),
        ("eu", "answered"),
    ]
    assert 'policy "keep-main-off-us"' in attempts[0]["reason"]
    assert reply.headers["x-turnout-target"] == "eu"
    assert _credentials(upstream) == [EU_KEY]


async def test_observe_mode_calls_the_target_and_records_the_shadow(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """An observe policy only records what it would have done; the target is called."""
    async with _openai(gateway) as client:
        reply = await client.chat.completions.with_raw_response.create(
            model="watched-model", messages=USER
        )
    entry = reply.http_response.json()["routing"]["attempts"][0]
    assert entry["outcome"] == "answered"
    assert entry["shadow"] == ['policy "watch-us" (observe) would deny this target (route watched)']
    assert _credentials(upstream) == [US_KEY]


async def test_a_deny_covering_every_target_is_403_before_any_call(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """Every target of the route denied: 403 POLICY_DENIED in the Anthropic envelope, streamed
    or not, and the upstream never hears of it."""
    async with anthropic.AsyncAnthropic(
        base_url=gateway.url, api_key=APP_KEY, max_retries=0
    ) as client:
        with pytest.raises(anthropic.PermissionDeniedError) as caught:
            await client.messages.create(model="claude-sonnet-4-6", max_tokens=64, messages=USER)
        with pytest.raises(anthropic.PermissionDeniedError):
            async with client.messages.stream(
                model="claude-sonnet-4-6", max_tokens=64, messages=USER
            ) as stream:
                await stream.get_final_message()
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["error"]["code"] == "POLICY_DENIED"
    assert 'policy "no-anthropic"' in body["error"]["message"]
    assert _credentials(upstream) == []
