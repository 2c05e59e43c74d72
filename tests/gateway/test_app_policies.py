"""Policies and data-handling requirements through the gateway app: a skipped
target in the attempts, observe mode calling anyway, and a deny covering every target refusing
before any call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests.gateway._app_support import app_of, chat, client_of, mock_provider

if TYPE_CHECKING:
    from turnout.gateway.runtime.live import Runtime
    from turnout.gateway.server.app import GatewayApp
    from turnout.providers import MockProvider

KEY = "tk_policies_key_0001"
STRICT = "tk_policies_key_0002"
HEADERS = {"authorization": f"Bearer {KEY}"}


def _config(policies: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "server": {"auth": "keys"},
        "providers": [
            mock_provider("us"),
            mock_provider(
                "eu",
                data_handling={"zero_data_retention": True, "jurisdiction": "EU"},
            ),
        ],
        "routes": [
            {
                "name": "main",
                "models": ["main"],
                "targets": [{"provider": "us", "name": "us"}, {"provider": "eu", "name": "eu"}],
            }
        ],
        "keys": [
            {"name": "app", "key": KEY},
            {"name": "strict", "key": STRICT, "require": {"jurisdiction": ["EU"]}},
        ],
        "policies": policies,
        **extra,
    }


def _calls(app: GatewayApp, name: str) -> int:
    provider: MockProvider = _runtime(app).providers[name]
    return len(provider.requests)


async def test_an_enforced_policy_skips_its_target_in_the_attempts() -> None:
    """The denied target is `policy_skipped` with the policy named; the next one answers."""
    app = app_of(_config([{"name": "no-us", "deny_when": {"provider": "us"}}]))
    async with client_of(app) as client:
        reply = await client.post("/v1/chat/completions", json=chat("main"), headers=HEADERS)
    assert reply.status_code == 200, reply.text
    attempts = reply.json()["routing"]["attempts"]
    assert [(a["target"], a["outcome"]) for a in attempts] == [
        ("us", "policy_skipped"),
        ("eu", "answered"),
    ]
    assert 'policy "no-us"' in attempts[0]["reason"]
    assert "us;outcome=policy_skipped" in reply.headers["x-turnout-attempts"]
    assert _calls(app, "us") == 0


async def test_observe_mode_records_a_shadow_and_calls_anyway() -> None:
    """An observe policy leaves the target called, its entry carrying the shadow decision."""
    app = app_of(
        _config([{"name": "watch-us", "mode": "observe", "deny_when": {"provider": "us"}}])
    )
    async with client_of(app) as client:
        reply = await client.post("/v1/chat/completions", json=chat("main"), headers=HEADERS)
    assert reply.status_code == 200, reply.text
    first = reply.json()["routing"]["attempts"][0]
    assert (first["target"], first["outcome"]) == ("us", "answered")
    assert first["shadow"] == ['policy "watch-us" (observe) would deny this target (provider us)']
    assert _calls(app, "us") == 1


async def test_a_deny_covering_every_target_is_403_before_any_call() -> None:
    """Every target denied: 403 POLICY_DENIED, and no provider was called."""
    app = app_of(_config([{"name": "nothing", "deny_when": {"route": "main"}}]))
    async with client_of(app) as client:
        reply = await client.post("/v1/chat/completions", json=chat("main"), headers=HEADERS)
        streamed = await client.post(
            "/v1/chat/completions", json=chat("main", stream=True), headers=HEADERS
        )
    assert reply.status_code == 403
    assert reply.json()["error"]["code"] == "POLICY_DENIED"
    assert 'policy "nothing"' in reply.json()["error"]["message"]
    assert streamed.status_code == 403
    assert _calls(app, "us") == 0
    assert _calls(app, "eu") == 0


async def test_a_keys_data_handling_requirement_skips_what_fails_it() -> None:
    """A key requiring an EU jurisdiction skips the provider that declares none."""
    app = app_of(_config([]))
    async with client_of(app) as client:
        strict = {"authorization": f"Bearer {STRICT}"}
        reply = await client.post("/v1/chat/completions", json=chat("main"), headers=strict)
        plain = await client.post("/v1/chat/completions", json=chat("main"), headers=HEADERS)
    attempts = reply.json()["routing"]["attempts"]
    assert [(a["target"], a["outcome"]) for a in attempts] == [
        ("us", "policy_skipped"),
        ("eu", "answered"),
    ]
    assert 'declares no jurisdiction, and key "strict" requires one of: EU' in attempts[0]["reason"]
    assert plain.json()["routing"]["attempts"][0]["outcome"] == "answered"


async def test_a_bindings_requirement_applies_to_the_callers_it_grants() -> None:
    """The winning binding's data-handling requirement skips a failing target."""
    bindings = [
        {
            "name": "zdr-only",
            "subjects": [{"everyone": True}],
            "grants": [{"models": "main"}],
            "require": {"zero_data_retention": True},
        }
    ]
    app = app_of(_config([], bindings=bindings))
    async with client_of(app) as client:
        reply = await client.post("/v1/chat/completions", json=chat("main"), headers=HEADERS)
    attempts = reply.json()["routing"]["attempts"]
    assert attempts[0]["outcome"] == "policy_skipped"
    assert 'binding "zdr-only"' in attempts[0]["reason"]


def _runtime(app: GatewayApp) -> Runtime:
    runtime = app.runtime
    assert runtime is not None, "the app was built with its runtime"
    return runtime
