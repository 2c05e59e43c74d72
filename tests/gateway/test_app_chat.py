"""The gateway app in process: whole chat answers, the routing object and headers, the
same-format fast path and translation across formats."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from tests.gateway._app_support import (
    app_of,
    chat,
    client_of,
    messages,
    mock_provider,
    runtime_of,
)
from turnout.gateway.server.app import GatewayApp

PRICES = {"gpt-4o-mini": {"input": 0.15, "output": 0.60}}
CONFIG: dict[str, Any] = {
    "providers": [
        mock_provider("m1", prices=PRICES),
        mock_provider("m2"),
        mock_provider("ant", wire="anthropic-messages"),
    ],
    "routes": [
        {
            "name": "main",
            "models": ["gpt-4o-mini"],
            "targets": [
                {"provider": "m1", "model": "gpt-4o-mini", "name": "primary"},
                {"provider": "m2", "model": "backup-model", "name": "backup"},
            ],
        },
        {
            "name": "flaky",
            "models": ["flaky"],
            "targets": [
                {"provider": "m1", "model": "flaky-a/fault:status=429", "name": "primary"},
                {"provider": "m2", "model": "backup-model", "name": "backup"},
            ],
        },
        {
            "name": "claude",
            "models": ["claude-*"],
            "targets": [{"provider": "ant", "name": "ant"}],
        },
        {
            "name": "cross",
            "models": ["cross"],
            "allow_cross_provider": True,
            "targets": [{"provider": "m2", "model": "gpt-cross", "name": "openai-side"}],
        },
        {
            "name": "escalating",
            "models": ["escalating"],
            "targets": [
                {"provider": "m1", "model": "esc-a/fault:status=503", "name": "a"},
                {"provider": "m1", "model": "esc-b/fault:status=503", "name": "b"},
            ],
            "fallbacks": {"general": ["main"]},
        },
        {
            "name": "openai-only",
            "models": ["openai-only"],
            "targets": [{"provider": "m2", "model": "gpt-only", "name": "openai-side"}],
        },
    ],
}


@pytest.fixture
def app() -> GatewayApp:
    return app_of(CONFIG)


def _logged(app: GatewayApp, provider: str) -> list[dict[str, Any]]:
    assert app.runtime is not None
    return [entry.as_dict() for entry in app.runtime.providers[provider].requests]


async def test_answer_carries_routing_object_and_served_model(app: GatewayApp) -> None:
    """A whole answer has `model` = the served model and a `routing` object naming the route."""
    async with client_of(app) as client:
        reply = await client.post("/v1/chat/completions", json=chat("gpt-4o-mini"))
    assert reply.status_code == 200
    body = reply.json()
    assert body["model"] == "gpt-4o-mini"
    assert body["choices"][0]["message"]["content"] == "mock answer from gpt-4o-mini"
    routing = body["routing"]
    assert routing["route"] == "main"
    assert routing["route_id"] == "main"
    assert routing["target_index"] == 0
    assert routing["fallbacks"] == 0
    assert [a["outcome"] for a in routing["attempts"]] == ["answered", "not_tried"]
    assert routing["attempts"][0]["provider"] == "m1"
    assert routing["request_id"] == reply.headers["x-request-id"]


async def test_routing_headers_on_a_whole_answer(app: GatewayApp) -> None:
    """Every routing header is present: route, target, served model, attempts, cost; and no
    `x-turnout-cache`, since the route has no response cache."""
    async with client_of(app) as client:
        reply = await client.post("/v1/chat/completions", json=chat("gpt-4o-mini"))
    headers = reply.headers
    assert len(headers["x-request-id"]) == 32
    assert headers["x-turnout-route"] == "main"
    assert headers["x-turnout-target"] == "primary"
    assert headers["x-turnout-model"] == "gpt-4o-mini"
    assert headers["x-turnout-attempts"].startswith("primary;outcome=answered;ms=")
    assert "x-turnout-cache" not in headers
    assert "x-turnout-fallback-route" not in headers


async def test_cost_header_prices_the_serving_call(app: GatewayApp) -> None:
    """`x-turnout-cost` is the serving call's usage at its provider's prices (USD per 1M)."""
    async with client_of(app) as client:
        reply = await client.post("/v1/chat/completions", json=chat("gpt-4o-mini"))
    usage = reply.json()["usage"]
    expected = (usage["prompt_tokens"] * 0.15 + usage["completion_tokens"] * 0.60) / 1e6
    assert float(reply.headers["x-turnout-cost"]) == pytest.approx(expected)


async def test_no_cost_header_without_a_price(app: GatewayApp) -> None:
    """A served model without a price gets no `x-turnout-cost` header."""
    async with client_of(app) as client:
        reply = await client.post("/v1/chat/completions", json=chat("flaky"))
    assert "x-turnout-cost" not in reply.headers


async def test_failover_is_listed_in_the_attempts_header(app: GatewayApp) -> None:
    """A 429 then an answer: both entries, with class and status, in call order."""
    async with client_of(app) as client:
        reply = await client.post("/v1/chat/completions", json=chat("flaky"))
    assert reply.status_code == 200
    failed, answered = reply.headers["x-turnout-attempts"].split(",")
    assert failed.startswith("primary;outcome=failed;class=rate_limited;status=429;ms=")
    assert answered.startswith("backup;outcome=answered;ms=")
    assert reply.headers["x-turnout-target"] == "backup"
    routing = reply.json()["routing"]
    assert routing["fallbacks"] == 1
    assert [(a["reason"], a["error_class"]) for a in routing["attempts"]] == [
        ("429 rate limited", "rate_limited"),
        (None, None),
    ]


async def test_fallback_route_is_named_in_headers_and_body(app: GatewayApp) -> None:
    """A general fallback route that served is named with its kind."""
    async with client_of(app) as client:
        reply = await client.post("/v1/chat/completions", json=chat("escalating"))
    assert reply.status_code == 200
    assert reply.headers["x-turnout-route"] == "escalating"
    assert reply.headers["x-turnout-fallback-route"] == "main"
    assert reply.headers["x-turnout-fallback-kind"] == "general"
    routing = reply.json()["routing"]
    assert routing["fallback_route"] == "main"
    answered = [a for a in routing["attempts"] if a["outcome"] == "answered"]
    assert [(a["error_class"], a["reason"]) for a in answered] == [(None, None)]


async def test_fallbacks_of_two_kinds_linking_two_routes_both_ways_serve() -> None:
    """strict -content-> lenient and lenient -general-> strict load and serve: a content hop
    into lenient ends there when lenient fails, and lenient's own outage reaches strict."""
    config = {
        "providers": [mock_provider("m")],
        "routes": [
            {
                "name": "strict",
                "targets": [{"provider": "m", "model": "s/fault:content_policy", "name": "s"}],
                "fallbacks": {"content": ["lenient"]},
            },
            {
                "name": "lenient",
                "targets": [{"provider": "m", "model": "l/fault:status=503", "name": "l"}],
                "fallbacks": {"general": ["strict"]},
            },
        ],
    }
    async with client_of(app_of(config)) as client:
        from_strict = await client.post("/v1/chat/completions", json=chat("strict"))
        from_lenient = await client.post("/v1/chat/completions", json=chat("lenient"))
    assert from_strict.status_code == 503
    assert _attempted(from_strict) == ["s", "l"]
    assert from_strict.headers["x-turnout-fallback-kind"] == "content"
    assert from_lenient.status_code == 400
    assert _attempted(from_lenient) == ["l", "s"]
    assert from_lenient.headers["x-turnout-fallback-kind"] == "general"


def _attempted(reply: Any) -> list[str]:
    """The target of each attempt entry in the `x-turnout-attempts` header."""
    return [item.split(";")[0] for item in reply.headers["x-turnout-attempts"].split(",")]


async def test_same_format_forwards_unknown_fields_and_drops_routing(app: GatewayApp) -> None:
    """Fast path: unknown fields reach the upstream as sent; caller `routing` never does."""
    body = chat(
        "gpt-4o-mini",
        routing={"route": "forged"},
        metadata={"routing": "forged", "team": "ops"},
        vendor_field={"keep": True},
    )
    async with client_of(app) as client:
        reply = await client.post("/v1/chat/completions", json=body)
    sent = _logged(app, "m1")[-1]["body"]
    assert sent["vendor_field"] == {"keep": True}
    assert "routing" not in sent
    assert sent["metadata"] == {"team": "ops"}
    assert reply.json()["routing"]["route"] == "main"


async def test_anthropic_headers_and_cache_control_reach_an_anthropic_target(
    app: GatewayApp,
) -> None:
    """`anthropic-beta`/`anthropic-version` and `cache_control` survive the fast path."""
    system = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    headers = {"anthropic-version": "2023-06-01", "anthropic-beta": "prompt-caching-2024-07-31"}
    async with client_of(app) as client:
        reply = await client.post(
            "/v1/messages", json=messages("claude-sonnet-4-5", system=system), headers=headers
        )
    assert reply.status_code == 200
    logged = _logged(app, "ant")[-1]
    assert logged["headers"]["anthropic-beta"] == "prompt-caching-2024-07-31"
    assert logged["body"]["system"] == system
    assert reply.json()["type"] == "message"


async def test_anthropic_client_to_openai_target_is_translated(app: GatewayApp) -> None:
    """/v1/messages over an allow_cross_provider route answers in Anthropic's shape."""
    body = messages("cross", routing={"x": 1}, metadata={"routing": "forged", "user_id": "u1"})
    async with client_of(app) as client:
        reply = await client.post("/v1/messages", json=body)
    assert reply.status_code == 200
    answer = reply.json()
    assert answer["type"] == "message"
    assert answer["id"].startswith("msg_")
    assert answer["model"] == "gpt-cross"
    assert answer["content"] == [{"type": "text", "text": "mock answer from gpt-cross"}]
    assert answer["routing"]["route"] == "cross"
    sent = _logged(app, "m2")[-1]["body"]
    assert sent["model"] == "gpt-cross"
    assert "routing" not in sent
    assert "routing" not in orjson.dumps(sent).decode()


async def test_openai_client_to_anthropic_target_is_translated(app: GatewayApp) -> None:
    """/v1/chat/completions to an Anthropic-format target answers in OpenAI's shape."""
    async with client_of(app) as client:
        reply = await client.post("/v1/chat/completions", json=chat("claude-haiku"))
    assert reply.status_code == 200
    answer = reply.json()
    assert answer["object"] == "chat.completion"
    assert answer["id"].startswith("chatcmpl-")
    assert answer["choices"][0]["message"]["content"] == "mock answer from claude-haiku"
    assert _logged(app, "ant")[-1]["path"].endswith("/v1/messages")


async def test_fields_a_translation_drops_are_named_in_the_answering_entry(
    app: GatewayApp,
) -> None:
    """`logprobs` and `n` sent through the OpenAI endpoint to an Anthropic target are dropped
    on the way, and the answering entry's reason says so; its error class stays null."""
    async with client_of(app) as client:
        reply = await client.post(
            "/v1/chat/completions", json=chat("claude-haiku", logprobs=True, n=2)
        )
    assert reply.status_code == 200
    entry = reply.json()["routing"]["attempts"][0]
    assert (entry["outcome"], entry["error_class"]) == ("answered", None)
    assert entry["reason"] == "dropped logprobs, n"
    sent = _logged(app, "ant")[-1]["body"]
    assert "logprobs" not in sent
    assert "n" not in sent


async def test_a_same_format_answer_has_no_reason(app: GatewayApp) -> None:
    """An OpenAI client answered by an OpenAI-format target: nothing dropped, reason null."""
    async with client_of(app) as client:
        reply = await client.post(
            "/v1/chat/completions", json=chat("gpt-4o-mini", logprobs=True, n=2)
        )
    assert reply.json()["routing"]["attempts"][0]["reason"] is None


async def test_messages_without_cross_provider_refuse_openai_targets(app: GatewayApp) -> None:
    """An OpenAI-format target does not serve /v1/messages unless the route allows it."""
    async with client_of(app) as client:
        reply = await client.post("/v1/messages", json=messages("openai-only"))
    assert reply.status_code == 503
    error = reply.json()
    assert error["type"] == "error"
    assert error["error"]["code"] == "NO_ROUTE"


async def test_session_id_header_reaches_the_routing_record() -> None:
    """`x-turnout-session-id` is the session id the route receives."""
    runtime = runtime_of(CONFIG)
    records: list[Any] = []
    runtime.routes["main"].route.on_routed = records.append
    async with client_of(GatewayApp(runtime)) as client:
        await client.post(
            "/v1/chat/completions",
            json=chat("gpt-4o-mini"),
            headers={"x-turnout-session-id": "sess-42"},
        )
    assert records[0].session_id == "sess-42"


async def test_models_lists_what_the_caller_can_use(app: GatewayApp) -> None:
    """GET /v1/models is an OpenAI list of model objects."""
    async with client_of(app) as client:
        reply = await client.get("/v1/models")
    body = reply.json()
    assert body["object"] == "list"
    ids = {item["id"] for item in body["data"]}
    assert {"gpt-4o-mini", "flaky", "cross"} <= ids
    assert all(item["object"] == "model" for item in body["data"])


async def test_health_endpoints(app: GatewayApp) -> None:
    """/healthz is ok; /readyz says the configuration is loaded."""
    async with client_of(app) as client:
        live = await client.get("/healthz")
        ready = await client.get("/readyz")
    assert live.json() == {"status": "ok"}
    assert ready.status_code == 200
    assert ready.json()["config"] == "loaded"


async def test_readyz_is_503_before_the_runtime_loads() -> None:
    """An app still waiting for its runtime is live but not ready; its API answers 503."""
    app = GatewayApp(load=lambda: runtime_of(CONFIG))
    async with client_of(app) as client:
        live = await client.get("/healthz")
        ready = await client.get("/readyz")
        call = await client.post("/v1/chat/completions", json=chat("gpt-4o-mini"))
    assert live.status_code == 200
    assert ready.status_code == 503
    assert call.status_code == 503


async def test_repeated_beta_headers_reach_the_target_joined(app: GatewayApp) -> None:
    """Two `anthropic-beta` lines are forwarded as one comma-joined value, none lost."""
    headers = [("anthropic-beta", "beta-one"), ("anthropic-beta", "beta-two")]
    async with client_of(app) as client:
        await client.post("/v1/messages", json=messages("claude-haiku"), headers=headers)
    assert _logged(app, "ant")[-1]["headers"]["anthropic-beta"] == "beta-one, beta-two"
