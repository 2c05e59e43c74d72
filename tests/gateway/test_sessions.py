"""Session family pins in process: the pin's TTL on a fake clock, a broken pin
never failing a call, and which plans order targets by family
(`turnout.gateway.resolution.request_plans`).

The gateway runs in process (`httpx.ASGITransport`) in front of `turnout mock-upstream` on a
real socket: only `openai` and `anthropic` providers have a family.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pytest
import pytest_asyncio

from tests.gateway._app_support import chat, client_of, runtime_of
from turnout.access.keys import Caller, Credentials
from turnout.config.load import parse_config
from turnout.gateway.resolution.lookups import build_runtime
from turnout.gateway.server.app import GatewayApp
from turnout.mock_upstream import MockUpstream
from turnout.routing.clock import FakeClock
from turnout.state.sessions import pin_key

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import httpx

    from turnout.gateway.runtime.live import Runtime

pytestmark = pytest.mark.asyncio(loop_scope="module")

TTL = 60.0
ANONYMOUS = Caller("default", None)


def _config(upstream: MockUpstream, **extra: Any) -> dict[str, Any]:
    return {
        "server": {"auth": "open"},
        "defaults": {"session_pin_ttl_seconds": TTL, "circuit_breaker": {"enabled": False}},
        "providers": [
            {"name": "ant", "kind": "anthropic", "api_key": "ak", "base_url": upstream.url},
            {"name": "ant-2", "kind": "anthropic", "api_key": "ak2", "base_url": upstream.url},
            {
                "name": "oai",
                "kind": "openai",
                "api_key": "ok",
                "base_url": upstream.openai_base_url,
            },
        ],
        "routes": [
            {
                "name": "coder",
                "models": ["coder"],
                "allow_cross_provider": True,
                "targets": [
                    {"provider": "ant", "model": "claude-in", "name": "claude"},
                    {"provider": "oai", "model": "gpt-in", "name": "gpt"},
                ],
            },
            {
                "name": "same",
                "models": ["same"],
                "allow_cross_provider": True,
                "targets": [{"provider": "ant", "model": "c1"}, {"provider": "ant-2"}],
            },
            {
                "name": "plain",
                "models": ["plain"],
                "targets": [{"provider": "ant", "model": "c1"}, {"provider": "oai"}],
                "fallbacks": {"general": ["strict"]},
            },
            {
                "name": "strict",
                "models": ["strict"],
                "allow_cross_provider": True,
                "switch_family_on_quota": False,
                "targets": [{"provider": "ant", "model": "c2"}, {"provider": "oai", "model": "g2"}],
            },
        ],
        **extra,
    }


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def upstream() -> AsyncIterator[MockUpstream]:
    async with MockUpstream(hold_limit=10) as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(upstream: MockUpstream) -> None:
    upstream.app.log.clear()
    upstream.app.faults.clear()


@pytest_asyncio.fixture(loop_scope="module")
async def runtime(upstream: MockUpstream) -> AsyncIterator[Runtime]:
    made = build_runtime(parse_config(_config(upstream), env={}), clock=FakeClock())
    try:
        yield made
    finally:
        await made.aclose()


async def _ask(app: GatewayApp, session: str | None = "s-ttl") -> httpx.Response:
    headers = {"x-turnout-session-id": session} if session is not None else {}
    async with client_of(app) as client:
        return await client.post("/v1/chat/completions", json=chat("coder"), headers=headers)


async def test_a_pin_lives_ttl_seconds_after_the_sessions_last_request(
    runtime: Runtime, upstream: MockUpstream
) -> None:
    """Pinned to openai by a quota move; each request restarts the TTL; once a whole TTL
    passes without a request the session starts on the first target's family again."""
    clock = runtime.clock
    assert isinstance(clock, FakeClock)
    app = GatewayApp(runtime)
    upstream.app.faults.script("claude-in", ["quota"])
    assert (await _ask(app)).headers["x-turnout-target"] == "gpt"
    assert await runtime.pins.pins.get("coder", "s-ttl") == "openai"
    for _ in range(2):
        clock.advance(TTL - 1)
        assert (await _ask(app)).headers["x-turnout-target"] == "gpt"
    clock.advance(TTL)
    assert await runtime.pins.pins.get("coder", "s-ttl") is None
    assert (await _ask(app)).headers["x-turnout-target"] == "claude"
    assert await runtime.pins.pins.get("coder", "s-ttl") == "anthropic"


async def test_a_request_without_a_session_pins_nothing(
    runtime: Runtime, upstream: MockUpstream
) -> None:
    """Without a session id the quota move applies to that request only: the next one starts
    on the first target's family."""
    app = GatewayApp(runtime)
    upstream.app.faults.script("claude-in", ["quota"])
    assert (await _ask(app, session=None)).headers["x-turnout-target"] == "gpt"
    assert (await _ask(app, session=None)).headers["x-turnout-target"] == "claude"


async def test_an_outage_crossing_leaves_the_pin(runtime: Runtime, upstream: MockUpstream) -> None:
    """A session pinned to anthropic whose target fails with a 503 is answered by openai for
    that request only: the pin stays anthropic and the next request is claude's."""
    app = GatewayApp(runtime)
    assert (await _ask(app, session="s-outage")).headers["x-turnout-target"] == "claude"
    upstream.app.faults.script("claude-in", ["status=503"])
    assert (await _ask(app, session="s-outage")).headers["x-turnout-target"] == "gpt"
    assert await runtime.pins.pins.get("coder", "s-outage") == "anthropic"
    assert (await _ask(app, session="s-outage")).headers["x-turnout-target"] == "claude"


async def test_an_outage_crossing_on_a_first_request_pins_nothing(
    runtime: Runtime, upstream: MockUpstream
) -> None:
    """A new session whose first request crosses for an outage is not pinned to the family
    that stood in: its next request starts on the first target's family again."""
    app = GatewayApp(runtime)
    upstream.app.faults.script("claude-in", ["reset"])
    assert (await _ask(app, session="s-fresh")).headers["x-turnout-target"] == "gpt"
    assert await runtime.pins.pins.get("coder", "s-fresh") is None
    assert (await _ask(app, session="s-fresh")).headers["x-turnout-target"] == "claude"


async def test_quota_on_a_route_that_never_switches_leaves_the_pin(
    runtime: Runtime, upstream: MockUpstream
) -> None:
    """With `switch_family_on_quota: false`, a quota failure still lets openai answer, but
    the session stays pinned to anthropic."""
    app = GatewayApp(runtime)
    headers = {"x-turnout-session-id": "s-strict"}
    async with client_of(app) as client:
        first = await client.post("/v1/chat/completions", json=chat("strict"), headers=headers)
        assert first.headers["x-turnout-target"] == "ant:c2"
        upstream.app.faults.script("c2", ["quota"])
        second = await client.post("/v1/chat/completions", json=chat("strict"), headers=headers)
        assert second.headers["x-turnout-target"] == "oai:g2"
    assert await runtime.pins.pins.get("strict", "s-strict") == "anthropic"


async def test_an_unreadable_pin_never_fails_the_call(
    runtime: Runtime, upstream: MockUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    """A pin value that is not a family name counts as no pin (logged once as a warning),
    and the next success writes a good pin over it."""
    app = GatewayApp(runtime)
    key = pin_key("coder", "s-broken")
    with caplog.at_level(logging.DEBUG, logger="turnout.gateway.sessions"):
        for _ in range(2):
            await runtime.state.set(key, b"\xff\xfe", TTL)
            reply = await _ask(app, session="s-broken")
            assert reply.status_code == 200
            assert reply.headers["x-turnout-target"] == "claude"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "session pin read failed" in warnings[0].getMessage()
    upstream.app.faults.script("claude-in", ["quota"])
    assert (await _ask(app, session="s-broken")).headers["x-turnout-target"] == "gpt"
    assert await runtime.pins.pins.get("coder", "s-broken") == "openai"


async def test_pins_survive_a_state_store_that_is_down(upstream: MockUpstream) -> None:
    """With `state:` a Redis nobody listens on, sessions are still served and pinned (on the
    replica's local state)."""
    config = _config(upstream, state="redis://127.0.0.1:9/0")
    runtime = build_runtime(parse_config(config, env={}), clock=FakeClock())
    try:
        app = GatewayApp(runtime)
        upstream.app.faults.script("claude-in", ["quota"])
        assert (await _ask(app, session="s-down")).headers["x-turnout-target"] == "gpt"
        assert (await _ask(app, session="s-down")).headers["x-turnout-target"] == "gpt"
    finally:
        await runtime.aclose()


def _plan(runtime: Runtime, model: str) -> Any:
    resolution = runtime.resolve(model, endpoint="chat")
    return runtime.plan_for(resolution, ANONYMOUS, lambda: Credentials(None), endpoint="chat")


async def test_a_cross_provider_route_gets_a_family_plan(runtime: Runtime) -> None:
    """Two families on a cross-provider route: each rule names its target's family and the
    route's switch is carried; a route of one family, or without the option, gets no plan."""
    plan = _plan(runtime, "coder")
    route = runtime.resolve("coder", endpoint="chat").route
    target_plan = plan.for_route(route)
    assert [target_plan.rule(i).family for i in (0, 1)] == ["anthropic", "openai"]
    assert target_plan.switch_family_on_quota
    assert _plan(runtime, "same") is None


async def test_a_fallback_route_across_families_is_planned(runtime: Runtime) -> None:
    """A plain route whose fallback route is cross-provider gets a plan ordering only the
    fallback by family, with that route's switch off."""
    plan = _plan(runtime, "plain")
    assert plan is not None
    by_name = {route.name: target_plan for route, target_plan in plan.routes.items()}
    assert not by_name["plain"].families
    assert by_name["strict"].families == {"anthropic", "openai"}
    assert not by_name["strict"].switch_family_on_quota


def _cross_runtime(*targets: dict[str, Any], cross: bool = True) -> Runtime:
    """A runtime with one route `r` over `targets`, its providers never called."""
    return runtime_of(
        {
            "providers": [
                {"name": "ant", "kind": "anthropic", "api_key": "ak"},
                {"name": "oai", "kind": "openai", "api_key": "ok"},
                {"name": "oai-byok", "kind": "openai"},
                {
                    "name": "oai-mapped",
                    "kind": "openai",
                    "api_key": "ok",
                    "model_aliases": {"c": "g"},
                },
            ],
            "routes": [{"name": "r", "allow_cross_provider": cross, "targets": list(targets)}],
        }
    )


async def test_the_chat_route_leaves_out_cross_family_targets_without_credential_or_mapping() -> (
    None
):
    """On a cross-provider route, chat keeps the first target's family and the other family's
    targets with an own key and a model mapping; the others are left out with a warning
    naming the route, the target and the rule."""
    runtime = _cross_runtime(
        {"provider": "ant", "name": "claude"},
        {"provider": "oai-byok", "model": "gpt-5", "name": "byok"},
        {"provider": "oai", "name": "unmapped"},
        {"provider": "oai-mapped", "name": "mapped"},
        {"provider": "oai", "model": "gpt-5", "name": "explicit"},
    )
    kept = [target.name for target in runtime.routes["r"].route.targets]
    assert kept == ["claude", "mapped", "explicit"]
    chat_warnings = [w for w in runtime.warnings if "/v1/chat/completions" in w]
    byok = (
        'routes[0].targets[1]: target "byok" of route "r" does not serve /v1/chat/completions:'
        " a cross-family target needs its own credential"
    )
    unmapped = (
        'routes[0].targets[2]: target "unmapped" of route "r" does not serve'
        " /v1/chat/completions: a cross-family target needs a model mapping (a target model,"
        " an alias or provider model_aliases)"
    )
    assert chat_warnings == [byok, unmapped]


async def test_without_cross_provider_every_family_serves_chat() -> None:
    """Without allow_cross_provider chat is the lingua franca: every target stays."""
    runtime = _cross_runtime(
        {"provider": "ant", "name": "claude"},
        {"provider": "oai", "name": "unmapped"},
        cross=False,
    )
    assert [target.name for target in runtime.routes["r"].route.targets] == [
        "claude",
        "unmapped",
    ]
    assert not [w for w in runtime.warnings if "/v1/chat/completions" in w]


async def _count(app: GatewayApp, session: str) -> httpx.Response:
    body = {"model": "coder", "messages": [{"role": "user", "content": "How many tokens?"}]}
    async with client_of(app) as client:
        return await client.post(
            "/v1/messages/count_tokens", json=body, headers={"x-turnout-session-id": session}
        )


async def test_count_tokens_follows_the_sessions_pinned_family(
    runtime: Runtime, upstream: MockUpstream
) -> None:
    """count_tokens counts with the route's first Anthropic target; once the session is pinned
    to openai, whose targets cannot count, it is 404 naming the pin rather than a count from
    the other family."""
    app = GatewayApp(runtime)
    unpinned = await _count(app, "s-count")
    assert unpinned.status_code == 200
    assert unpinned.headers["x-turnout-target"] == "claude"
    assert isinstance(unpinned.json()["input_tokens"], int)
    await runtime.pins.pins.pin("coder", "s-count", "openai")
    pinned = await _count(app, "s-count")
    assert pinned.status_code == 404
    message = pinned.json()["error"]["message"]
    assert 'of the "openai" family this session is pinned to' in message
    assert [entry.path for entry in upstream.app.log.entries()] == ["/v1/messages/count_tokens"]
