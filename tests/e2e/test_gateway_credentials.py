"""End to end: credential modes through a real gateway socket, called with the official OpenAI
and Anthropic SDKs, in front of `turnout mock-upstream`.

The mock's request log records the credential each upstream request carried, so it proves that
a caller's own credential reached the passthrough targets and never an org-key target, not even
under org-key fallback.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anthropic
import httpx
import openai
import pytest
import pytest_asyncio

from tests.e2e._gateway import RunningGateway, running_gateway
from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.asyncio(loop_scope="module")

APP_KEY = "tk_e2e_credentials_key"
OWN = "sk-callers-own-key-e2e"
OAUTH = "sk-ant-oat-callers-plan-token"
ORG_OPENAI = "sk-org-openai-e2e"
ORG_ANTHROPIC = "sk-org-anthropic-e2e"
USER: Any = [{"role": "user", "content": "Why is checkout failing?"}]


def _config(upstream: MockUpstream) -> dict[str, Any]:
    openai_url, anthropic_url = upstream.openai_base_url, upstream.url
    return {
        "server": {"auth": "keys"},
        "providers": [
            {"name": "oai-byok", "kind": "openai", "base_url": openai_url},
            {"name": "oai-org", "kind": "openai", "api_key": ORG_OPENAI, "base_url": openai_url},
            {"name": "ant-byok", "kind": "anthropic", "base_url": anthropic_url},
            {
                "name": "ant-org",
                "kind": "anthropic",
                "api_key": ORG_ANTHROPIC,
                "base_url": anthropic_url,
            },
        ],
        "routes": [
            {
                "name": "gpt",
                "models": ["gpt-*"],
                "targets": [{"provider": "oai-byok"}, {"provider": "oai-org"}],
            },
            {
                "name": "gpt-fallback",
                "models": ["fallback-*"],
                "org_key_fallback_for_caller_credentials": True,
                "targets": [
                    {"provider": "oai-byok", "model": "fb/fault:status=429", "name": "own"},
                    {"provider": "oai-org", "model": "gpt-4o-mini", "name": "org"},
                ],
            },
            {
                "name": "gpt-reject",
                "models": ["reject-*"],
                "org_key_fallback_for_caller_credentials": True,
                "targets": [
                    {"provider": "oai-byok", "model": "rj/fault:status=401", "name": "own"},
                    {"provider": "oai-org", "model": "gpt-4o-mini", "name": "org"},
                ],
            },
            {
                "name": "claude",
                "models": ["claude-*"],
                "org_key_fallback_for_caller_credentials": True,
                "targets": [
                    {"provider": "ant-byok", "model": "cl/fault:quota", "name": "plan"},
                    {"provider": "ant-org", "model": "claude-sonnet-4-5", "name": "org"},
                ],
            },
            {
                "name": "claude-own",
                "models": ["plan-*"],
                "targets": [{"provider": "ant-byok", "model": "claude-sonnet-4-5"}],
            },
            {"name": "org-only", "models": ["org-*"], "targets": [{"provider": "oai-org"}]},
        ],
        "keys": [{"name": "app", "key": APP_KEY}],
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


def _openai(gateway: RunningGateway, own: str | None = OWN) -> openai.AsyncOpenAI:
    """The OpenAI SDK with the turnout key in x-turnout-key and its own key as api_key."""
    return openai.AsyncOpenAI(
        base_url=gateway.openai_base_url,
        api_key=own or APP_KEY,
        default_headers={"x-turnout-key": APP_KEY},
        max_retries=0,
    )


def _logged(upstream: MockUpstream) -> list[tuple[str | None, dict[str, str]]]:
    """(first credential, every credential header) of each upstream request, in order."""
    return [
        (entry.credential, entry.as_dict()["credentials"]) for entry in upstream.app.log.entries()
    ]


def _never_seen(upstream: MockUpstream, secret: str, *, by: str) -> bool:
    """`secret` is in no credential header of the requests whose credential is `by`."""
    return all(
        secret not in " ".join(headers.values())
        for credential, headers in _logged(upstream)
        if credential == by
    )


async def test_a_callers_own_key_is_forwarded_to_the_passthrough_target(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """The OpenAI SDK's own key reaches the passthrough target as its Bearer credential; the
    org-key target of the same route is filtered out."""
    async with _openai(gateway) as client:
        reply = await client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=USER
        )
    completion = reply.parse()
    assert completion.choices[0].message.content
    assert reply.headers["x-turnout-target"] == "oai-byok"
    assert [credential for credential, _ in _logged(upstream)] == [OWN]


async def test_a_caller_without_its_own_key_gets_the_org_key_target(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """Only the turnout key: the org-key target serves with the org's key."""
    async with _openai(gateway, own=None) as client:
        await client.chat.completions.create(model="gpt-4o-mini", messages=USER)
    assert [credential for credential, _ in _logged(upstream)] == [ORG_OPENAI]


async def test_org_key_fallback_never_hands_on_the_callers_key(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """The passthrough call is rate limited; the org-key target answers with its own key,
    the caller's key in none of its headers; the routing object says credential_fallback."""
    async with _openai(gateway) as client:
        reply = await client.chat.completions.with_raw_response.create(
            model="fallback-model", messages=USER
        )
    body = reply.http_response.json()
    assert body["routing"]["credential_fallback"] is True
    assert [(a["target"], a["outcome"]) for a in body["routing"]["attempts"]] == [
        ("own", "failed"),
        ("org", "answered"),
    ]
    assert [credential for credential, _ in _logged(upstream)] == [OWN, ORG_OPENAI]
    assert _never_seen(upstream, OWN, by=ORG_OPENAI)


async def test_org_key_fallback_streams_too(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """A streamed request falls back the same way before its first token."""
    async with _openai(gateway) as client:
        stream = await client.chat.completions.create(
            model="fallback-model", messages=USER, stream=True
        )
        text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text
    assert [credential for credential, _ in _logged(upstream)] == [OWN, ORG_OPENAI]
    assert _never_seen(upstream, OWN, by=ORG_OPENAI)


async def test_a_rejected_caller_key_is_returned_not_failed_over(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """401 on the caller's own key reaches the caller; the org-key target is not called."""
    async with _openai(gateway) as client:
        with pytest.raises(openai.AuthenticationError) as caught:
            await client.chat.completions.create(model="reject-model", messages=USER)
    assert caught.value.status_code == 401
    assert [credential for credential, _ in _logged(upstream)] == [OWN]


async def test_an_anthropic_callers_plan_token_falls_back_on_quota(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """A Claude-plan bearer token is forwarded as a bearer token; out of quota, the org-key
    Anthropic target answers with its own x-api-key and never sees the token."""
    async with anthropic.AsyncAnthropic(
        base_url=gateway.url,
        auth_token=OAUTH,
        default_headers={"x-turnout-key": APP_KEY},
        max_retries=0,
    ) as client:
        reply = await client.messages.with_raw_response.create(
            model="claude-sonnet-4-6", max_tokens=64, messages=USER
        )
    assert reply.http_response.json()["routing"]["credential_fallback"] is True
    logged = _logged(upstream)
    assert [credential for credential, _ in logged] == [OAUTH, ORG_ANTHROPIC]
    assert logged[0][1] == {"authorization": f"Bearer {OAUTH}"}
    assert logged[1][1] == {"x-api-key": ORG_ANTHROPIC}


async def test_an_anthropic_callers_own_key_keeps_the_header_it_came_in(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """The caller's own Anthropic credential is forwarded in the form it was sent: the SDK's
    `Authorization: Bearer`, or a plain client's `x-api-key`."""
    async with anthropic.AsyncAnthropic(
        base_url=gateway.url,
        api_key=OWN,
        default_headers={"x-turnout-key": APP_KEY},
        max_retries=0,
    ) as client:
        message = await client.messages.create(model="plan-model", max_tokens=64, messages=USER)
    assert message.content
    async with httpx.AsyncClient(base_url=gateway.url) as plain:
        reply = await plain.post(
            "/v1/messages",
            json={"model": "plan-model", "max_tokens": 64, "messages": USER},
            headers={"x-turnout-key": APP_KEY, "x-api-key": OWN, "anthropic-version": "2023-06-01"},
        )
    assert reply.status_code == 200, reply.text
    assert _logged(upstream) == [
        (OWN, {"authorization": f"Bearer {OWN}"}),
        (OWN, {"x-api-key": OWN}),
    ]


async def test_an_empty_credential_filter_is_no_route_before_any_call(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """A caller with its own key on a route without passthrough targets: 503 NO_ROUTE naming
    the route, and nothing upstream."""
    async with _openai(gateway) as client:
        with pytest.raises(openai.APIStatusError) as caught:
            await client.chat.completions.create(model="org-model", messages=USER)
    assert caught.value.status_code == 503
    error = caught.value.body
    assert isinstance(error, dict)
    assert error["code"] == "NO_ROUTE"
    assert 'route "org-only" has no passthrough target' in error["message"]
    assert _logged(upstream) == []
