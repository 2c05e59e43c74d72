"""Credential modes through the gateway app: the credential filter, passthrough
forwarding, org-key fallback for callers' own credentials, `auth: open`, the NO_ROUTE messages
of an empty filter and `/v1/models` per credential mode."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.gateway._app_support import app_of, chat, client_of, messages, mock_provider

if TYPE_CHECKING:
    import httpx

    from turnout.gateway.runtime.live import Runtime
    from turnout.gateway.server.app import GatewayApp
    from turnout.providers import MockProvider

APP_KEY = "tk_app_key_for_tests_01"
OWN = "sk-callers-own-credential"


def _config(*, auth: str = "keys", fallback: bool = False, **extra: Any) -> dict[str, Any]:
    return {
        "server": {"auth": auth},
        "providers": [
            mock_provider("byok", credential_mode="passthrough"),
            mock_provider("byok2", credential_mode="passthrough"),
            mock_provider("org"),
            mock_provider("ant-byok", wire="anthropic-messages", credential_mode="passthrough"),
        ],
        "routes": [
            {
                "name": "mixed",
                "models": ["mixed"],
                "org_key_fallback_for_caller_credentials": fallback,
                "targets": [
                    {"provider": "org", "name": "org", "model": "org-m"},
                    {"provider": "byok", "name": "byok", "model": "byok-m"},
                ],
            },
            {
                "name": "two-byok",
                "models": ["two-byok"],
                "org_key_fallback_for_caller_credentials": True,
                "targets": [
                    {"provider": "byok", "name": "one", "model": "m1/fault:status=503"},
                    {"provider": "byok2", "name": "two", "model": "m2/fault:status=429"},
                    {"provider": "org", "name": "org", "model": "org-m"},
                ],
            },
            {
                "name": "reject",
                "models": ["reject"],
                "org_key_fallback_for_caller_credentials": True,
                "targets": [
                    {"provider": "byok", "name": "byok", "model": "r/fault:status=401"},
                    {"provider": "org", "name": "org", "model": "org-m"},
                ],
            },
            {"name": "org-only", "models": ["org-only"], "targets": [{"provider": "org"}]},
            {"name": "byok-only", "models": ["byok-only"], "targets": [{"provider": "byok"}]},
            {
                "name": "claude",
                "models": ["claude-*"],
                "targets": [{"provider": "ant-byok", "name": "ant"}],
            },
        ],
        "keys": [{"name": "app", "key": APP_KEY}],
        **extra,
    }


def _mock(app: GatewayApp, name: str) -> MockProvider:
    provider: MockProvider = _runtime(app).providers[name]
    return provider


def _credentials(app: GatewayApp, name: str) -> list[str | None]:
    """The credential each call to mock provider `name` carried."""
    return [entry.credential for entry in _mock(app, name).requests]


KEY_ONLY = {"x-turnout-key": APP_KEY}
WITH_OWN = {"x-turnout-key": APP_KEY, "authorization": f"Bearer {OWN}"}


@pytest.fixture
async def keyed() -> Any:
    app = app_of(_config())
    async with client_of(app) as client:
        yield app, client


async def test_a_callers_own_credential_reaches_only_the_passthrough_target(
    keyed: tuple[GatewayApp, httpx.AsyncClient],
) -> None:
    """With its own credential the caller is served by the passthrough target, with that
    credential; the org-key target is filtered out and not in the routing object."""
    app, client = keyed
    reply = await client.post("/v1/chat/completions", json=chat("mixed"), headers=WITH_OWN)
    assert reply.status_code == 200, reply.text
    routing = reply.json()["routing"]
    assert [a["target"] for a in routing["attempts"]] == ["byok"]
    assert _credentials(app, "byok") == [OWN]
    assert _mock(app, "org").requests == []
    assert not routing["credential_fallback"]


async def test_a_caller_without_a_credential_gets_only_org_key_targets(
    keyed: tuple[GatewayApp, httpx.AsyncClient],
) -> None:
    """A keyed caller with no credential of its own is served by org-key targets only."""
    app, client = keyed
    reply = await client.post("/v1/chat/completions", json=chat("mixed"), headers=KEY_ONLY)
    assert reply.status_code == 200, reply.text
    assert [a["target"] for a in reply.json()["routing"]["attempts"]] == ["org"]
    assert _mock(app, "byok").requests == []
    assert _credentials(app, "org") == [None]


async def test_an_empty_filter_for_a_caller_with_a_credential_is_no_route(
    keyed: tuple[GatewayApp, httpx.AsyncClient],
) -> None:
    """A route with no passthrough target: 503 NO_ROUTE saying so."""
    _, client = keyed
    reply = await client.post("/v1/chat/completions", json=chat("org-only"), headers=WITH_OWN)
    assert reply.status_code == 503
    error = reply.json()["error"]
    assert error["code"] == "NO_ROUTE"
    assert error["message"] == (
        'no route can serve model "org-only" for a caller with its own credential:'
        ' route "org-only" has no passthrough target'
    )


async def test_an_empty_filter_for_a_caller_without_one_is_no_route(
    keyed: tuple[GatewayApp, httpx.AsyncClient],
) -> None:
    """A route with no org-key target and a caller without a credential: 503 NO_ROUTE."""
    app, client = keyed
    reply = await client.post("/v1/chat/completions", json=chat("byok-only"), headers=KEY_ONLY)
    assert reply.status_code == 503
    error = reply.json()["error"]
    assert error["code"] == "NO_ROUTE"
    assert "for a caller without its own credential" in error["message"]
    assert 'route "byok-only" has no org-key target' in error["message"]
    assert _mock(app, "byok").requests == []


async def test_org_key_fallback_serves_after_every_passthrough_failed(
    keyed: tuple[GatewayApp, httpx.AsyncClient],
) -> None:
    """Both passthrough targets fail retryably with the caller's credential; the org-key
    target answers without it; `credential_fallback` is true."""
    app, client = keyed
    reply = await client.post("/v1/chat/completions", json=chat("two-byok"), headers=WITH_OWN)
    assert reply.status_code == 200, reply.text
    routing = reply.json()["routing"]
    assert [(a["target"], a["outcome"]) for a in routing["attempts"]] == [
        ("one", "failed"),
        ("two", "failed"),
        ("org", "answered"),
    ]
    assert routing["credential_fallback"] is True
    assert _credentials(app, "byok") == [OWN]
    assert _credentials(app, "byok2") == [OWN]
    assert _credentials(app, "org") == [None]


async def test_a_rejected_caller_credential_is_returned(
    keyed: tuple[GatewayApp, httpx.AsyncClient],
) -> None:
    """401 on the caller's credential is the caller's answer; no org-key fallback."""
    app, client = keyed
    reply = await client.post("/v1/chat/completions", json=chat("reject"), headers=WITH_OWN)
    assert reply.status_code == 401
    assert _mock(app, "org").requests == []


async def test_caller_credential_failures_leave_health_alone(
    keyed: tuple[GatewayApp, httpx.AsyncClient],
) -> None:
    """Repeated retryable failures on callers' credentials never trip or cool the key."""
    app, client = keyed
    for _ in range(4):
        reply = await client.post("/v1/chat/completions", json=chat("two-byok"), headers=WITH_OWN)
        assert reply.status_code == 200
    snapshot = _runtime(app).health.snapshot()
    assert all(entry.failures == 0 for entry in snapshot if entry.text.startswith("byok"))


async def test_models_lists_what_the_credential_mode_can_use(
    keyed: tuple[GatewayApp, httpx.AsyncClient],
) -> None:
    """GET /v1/models leaves out routes the caller's credential mode cannot use."""
    _, client = keyed
    own = {m["id"] for m in (await client.get("/v1/models", headers=WITH_OWN)).json()["data"]}
    org = {m["id"] for m in (await client.get("/v1/models", headers=KEY_ONLY)).json()["data"]}
    assert "byok-only" in own
    assert "org-only" not in own
    assert "org-only" in org
    assert "byok-only" not in org
    assert {"mixed", "two-byok"} <= own & org


async def test_open_auth_forwards_what_the_caller_sent_to_passthrough_only() -> None:
    """auth: open: no filter; a passthrough target forwards the caller's credential, an
    org-key target never sees it."""
    app = app_of(_config(auth="open", keys=[]))
    async with client_of(app) as client:
        sent = {"authorization": "Bearer placeholder-from-sdk"}
        reply = await client.post("/v1/chat/completions", json=chat("mixed"), headers=sent)
        assert reply.status_code == 200, reply.text
        reply = await client.post("/v1/chat/completions", json=chat("byok-only"), headers=sent)
        assert reply.status_code == 200, reply.text
    assert _credentials(app, "org") == [None]
    assert _credentials(app, "byok") == ["placeholder-from-sdk"]


async def test_open_auth_never_calls_a_passthrough_target_keyless() -> None:
    """auth: open with nothing to forward: a passthrough-only route is NO_ROUTE, and a mixed
    route is served by its org-key target."""
    app = app_of(_config(auth="open", keys=[]))
    async with client_of(app) as client:
        reply = await client.post("/v1/chat/completions", json=chat("byok-only"))
        assert reply.status_code == 503
        assert reply.json()["error"]["code"] == "NO_ROUTE"
        reply = await client.post("/v1/chat/completions", json=chat("mixed"))
        assert reply.status_code == 200
    assert _mock(app, "byok").requests == []


async def test_messages_forward_the_callers_own_key_and_stream() -> None:
    """An Anthropic caller's own x-api-key reaches the passthrough target, streamed too."""
    app = app_of(_config())
    headers = {"x-turnout-key": APP_KEY, "x-api-key": OWN, "anthropic-version": "2023-06-01"}
    async with client_of(app) as client:
        reply = await client.post("/v1/messages", json=messages("claude-x"), headers=headers)
        assert reply.status_code == 200, reply.text
        body = messages("claude-x", stream=True)
        streamed = await client.post("/v1/messages", json=body, headers=headers)
        assert streamed.status_code == 200
        assert "message_stop" in streamed.text
    assert _credentials(app, "ant-byok") == [OWN, OWN]


def _runtime(app: GatewayApp) -> Runtime:
    runtime = app.runtime
    assert runtime is not None, "the app was built with its runtime"
    return runtime
