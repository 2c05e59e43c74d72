"""The gateway app in process: every documented error code this endpoint set can produce, in
each client's own envelope, with the routing headers known so far."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.gateway._app_support import app_of, chat, client_of, messages, mock_provider
from turnout.config.load import parse_config
from turnout.gateway.resolution.lookups import build_runtime
from turnout.gateway.runtime.live import Runtime
from turnout.gateway.server.app import GatewayApp
from turnout.routing.clock import FakeClock

if TYPE_CHECKING:
    from collections.abc import MutableMapping

    import httpx

APP_KEY = "tk_app_key_0001"
NARROW_KEY = "tk_narrow_key_02"


def _target(model: str, name: str, **options: Any) -> dict[str, Any]:
    return {"provider": "m1", "model": model, "name": name, **options}


CONFIG: dict[str, Any] = {
    "server": {"auth": "keys", "max_body_bytes": 2048},
    "providers": [
        mock_provider("m1"),
        {"name": "ant", "kind": "anthropic", "api_key": "k", "base_url": "http://127.0.0.1:9"},
    ],
    "routes": [
        {"name": "main", "models": ["gpt-4o-mini"], "targets": [_target("gpt-4o-mini", "a")]},
        {
            "name": "limited",
            "models": ["limited"],
            "targets": [
                _target("lim-a/fault:status=429;retry_after=7", "a"),
                _target("lim-b/fault:status=429;retry_after=3", "b"),
            ],
        },
        {
            "name": "unreachable",
            "models": ["unreachable"],
            "allow_cross_provider": True,
            "targets": [_target("un-a/fault:reset", "a"), _target("un-b/fault:reset", "b")],
        },
        {
            "name": "slow",
            "models": ["slow"],
            "targets": [
                _target("slow-a/fault:latency=30", "a", timeout=5),
                _target("slow-b/fault:latency=30", "b", timeout=5),
            ],
        },
        {
            "name": "bad",
            "models": ["bad"],
            "allow_cross_provider": True,
            "targets": [
                _target("bad-a/fault:status=400;message=max_tokens is too large", "a"),
                _target("bad-b", "b"),
            ],
        },
        {
            "name": "vision",
            "models": ["vision"],
            "targets": [_target("v", "a", capabilities=["vision"])],
        },
        {"name": "paused", "models": ["paused"], "targets": [_target("p", "a", paused=True)]},
        {
            "name": "single-429",
            "models": ["single-429"],
            "targets": [_target("s429/fault:status=429;retry_after=7.2", "a")],
        },
        {"name": "claude", "models": ["claude-*"], "targets": [{"provider": "ant"}]},
    ],
    "keys": [
        {"name": "app", "key": APP_KEY},
        {"name": "narrow", "key": NARROW_KEY, "routes": ["main"]},
    ],
}
AUTH = {"authorization": f"Bearer {APP_KEY}"}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def app(clock: FakeClock) -> GatewayApp:
    return GatewayApp(build_runtime(parse_config(CONFIG, env={}), clock=clock))


async def _post(
    app: GatewayApp,
    path: str,
    body: Any,
    *,
    headers: dict[str, str] | None = None,
    clock: FakeClock | None = None,
) -> httpx.Response:
    async with client_of(app) as client:
        call = client.post(path, json=body, headers=AUTH if headers is None else headers)
        return await (clock.run(call) if clock is not None else call)


def _openai_error(reply: httpx.Response) -> dict[str, Any]:
    body = reply.json()
    assert set(body) == {"error"}
    error: dict[str, Any] = body["error"]
    assert {"message", "type", "code", "param"} <= set(error)
    return error


def _anthropic_error(reply: httpx.Response) -> dict[str, Any]:
    body = reply.json()
    assert body["type"] == "error"
    error: dict[str, Any] = body["error"]
    return error


async def test_malformed_json_is_invalid_request_in_each_format(app: GatewayApp) -> None:
    """Bad JSON: 400 `invalid_request`, OpenAI envelope on chat, Anthropic on messages."""
    async with client_of(app) as client:
        openai = await client.post("/v1/chat/completions", content=b"{nope", headers=AUTH)
        anthropic = await client.post("/v1/messages", content=b"[1]", headers=AUTH)
    assert openai.status_code == 400
    assert _openai_error(openai)["code"] == "invalid_request"
    assert _openai_error(openai)["type"] == "invalid_request_error"
    assert anthropic.status_code == 400
    assert _anthropic_error(anthropic)["type"] == "invalid_request_error"
    assert _anthropic_error(anthropic)["code"] == "invalid_request"
    assert "x-request-id" in openai.headers


async def test_schema_error_names_the_field(app: GatewayApp) -> None:
    """A body of the wrong shape is 400 `invalid_request` whose message names the field."""
    reply = await _post(app, "/v1/chat/completions", {"model": "gpt-4o-mini", "messages": "hi"})
    assert reply.status_code == 400
    error = _openai_error(reply)
    assert error["message"].startswith("messages:")
    assert error["param"] == "messages"


async def test_body_over_the_limit_is_413(app: GatewayApp) -> None:
    """A body over `max_body_bytes` is 413 `request_too_large`."""
    reply = await _post(app, "/v1/chat/completions", chat("gpt-4o-mini", pad="x" * 4096))
    assert reply.status_code == 413
    assert _openai_error(reply)["code"] == "request_too_large"


async def test_missing_and_unknown_keys_are_401(app: GatewayApp) -> None:
    """With `auth: keys`, no key or an unknown key is 401 `invalid_api_key`."""
    missing = await _post(app, "/v1/chat/completions", chat("gpt-4o-mini"), headers={})
    unknown = await _post(
        app, "/v1/messages", messages("claude-x"), headers={"x-api-key": "tk_unknown_999"}
    )
    assert missing.status_code == 401
    assert _openai_error(missing)["code"] == "invalid_api_key"
    assert unknown.status_code == 401
    assert _anthropic_error(unknown)["type"] == "authentication_error"
    assert _anthropic_error(unknown)["code"] == "invalid_api_key"


async def test_a_missing_key_is_refused_before_the_body_is_read(app: GatewayApp) -> None:
    """The key is checked from the headers: a 401 goes out without one `receive()` call, and
    a body over the limit from a caller without a key is a 401, not a 413."""
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        pytest.fail("the body was read before the key was checked")

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    headers = [(b"content-length", b"31457280")]
    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions", "headers": headers}
    await app(scope, receive, send)
    assert sent[0]["status"] == 401


async def test_head_is_answered_as_get(app: GatewayApp) -> None:
    """HEAD /healthz is routed as GET /healthz (200), not 405."""
    async with client_of(app) as client:
        reply = await client.head("/healthz")
    assert reply.status_code == 200


async def test_route_outside_the_key_ceiling_is_model_denied(app: GatewayApp) -> None:
    """A key limited to `main` asking for another route: 400 `MODEL_DENIED`."""
    headers = {"x-turnout-key": NARROW_KEY}
    reply = await _post(app, "/v1/chat/completions", chat("limited"), headers=headers)
    assert reply.status_code == 400
    assert _openai_error(reply)["code"] == "MODEL_DENIED"


async def test_empty_model_uses_the_key_only_route_else_403(app: GatewayApp) -> None:
    """Empty model: the key's only route serves; a key with no route list gets 403."""
    narrow = await _post(
        app, "/v1/chat/completions", chat(""), headers={"x-turnout-key": NARROW_KEY}
    )
    denied = await _post(app, "/v1/chat/completions", chat(""))
    assert narrow.status_code == 200
    assert narrow.headers["x-turnout-route"] == "main"
    assert denied.status_code == 403
    assert _openai_error(denied)["code"] == "model_not_allowed"


async def test_unserved_model_is_no_route(app: GatewayApp) -> None:
    """A model no route serves: 503 `NO_ROUTE` naming the closest route."""
    reply = await _post(app, "/v1/chat/completions", chat("llama-3"))
    assert reply.status_code == 503
    error = _openai_error(reply)
    assert error["code"] == "NO_ROUTE"
    assert 'no route serves model "llama-3"' in error["message"]


async def test_tied_implicit_routes_are_upstream_ambiguous() -> None:
    """Two implicit routes of one family tie: 503 `UPSTREAM_AMBIGUOUS`."""
    base = "http://127.0.0.1:9/v1"
    app = app_of(
        {
            "providers": [
                {"name": "a", "kind": "openai", "api_key": "k1", "base_url": base},
                {"name": "b", "kind": "openai", "api_key": "k2", "base_url": base},
            ]
        }
    )
    reply = await _post(app, "/v1/chat/completions", chat("gpt-4o"), headers={})
    assert reply.status_code == 503
    assert _openai_error(reply)["code"] == "UPSTREAM_AMBIGUOUS"


async def test_every_target_ineligible_is_route_ineligible(app: GatewayApp) -> None:
    """Tools asked of a vision-only target: 400 `route_ineligible`, type route_ineligible."""
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
    reply = await _post(app, "/v1/chat/completions", chat("vision", tools=tools))
    assert reply.status_code == 400
    error = _openai_error(reply)
    assert error["code"] == "route_ineligible"
    assert error["type"] == "route_ineligible"
    assert reply.headers["x-turnout-route"] == "vision"


async def test_every_target_paused_is_no_deployment_available(app: GatewayApp) -> None:
    """All targets paused: 503 `no_deployment_available`."""
    reply = await _post(app, "/v1/chat/completions", chat("paused"))
    assert reply.status_code == 503
    assert _openai_error(reply)["code"] == "no_deployment_available"


async def test_route_without_embeddings_is_embeddings_not_supported(app: GatewayApp) -> None:
    """Embeddings of a route with no embeddings target: 400 `embeddings_not_supported`."""
    reply = await _post(app, "/v1/embeddings", {"model": "claude-x", "input": "hello"})
    assert reply.status_code == 400
    assert _openai_error(reply)["code"] == "embeddings_not_supported"


async def test_exhausted_route_envelope_and_retry_after(app: GatewayApp, clock: FakeClock) -> None:
    """Two 429s: 429 `UPSTREAM_POOL_EXHAUSTED`, type route_exhausted, meta with the attempts
    and last error, Retry-After = the shortest cooldown (8 s and 3 s -> 3) with
    `x-should-retry: true`, both headers."""
    reply = await _post(app, "/v1/chat/completions", chat("limited"), clock=clock)
    assert reply.status_code == 429
    error = _openai_error(reply)
    assert error["code"] == "UPSTREAM_POOL_EXHAUSTED"
    assert error["type"] == "route_exhausted"
    assert [a["outcome"] for a in error["meta"]["attempts"]] == ["failed", "failed"]
    assert error["meta"]["last_error"]["status"] == 429
    assert reply.headers["retry-after"] == "3"
    assert reply.headers["x-should-retry"] == "true"
    assert reply.headers["x-turnout-route"] == "limited"
    assert reply.headers["x-turnout-attempts"].count("outcome=failed;class=rate_limited") == 2


async def test_no_http_answer_at_all_is_upstream_unreachable(
    app: GatewayApp, clock: FakeClock
) -> None:
    """Two connection resets: 502 `upstream_unreachable`."""
    reply = await _post(app, "/v1/messages", messages("unreachable"), clock=clock)
    assert reply.status_code == 502
    error = _anthropic_error(reply)
    assert error["code"] == "upstream_unreachable"
    assert error["type"] == "api_error"


async def test_every_call_timing_out_is_upstream_timeout(app: GatewayApp, clock: FakeClock) -> None:
    """Two timeouts: 504 `upstream_timeout` (on the fake clock: no real wait)."""
    reply = await _post(app, "/v1/chat/completions", chat("slow"), clock=clock)
    assert reply.status_code == 504
    assert _openai_error(reply)["code"] == "upstream_timeout"
    assert clock.now() == pytest.approx(10.0)


async def test_deterministic_400_passes_through_in_both_formats(app: GatewayApp) -> None:
    """A terminal 400 is the provider's own status and message, which no retry can change
    (`x-should-retry: false`); the backup is not tried."""
    openai = await _post(app, "/v1/chat/completions", chat("bad"))
    anthropic = await _post(app, "/v1/messages", messages("bad"))
    assert openai.status_code == anthropic.status_code == 400
    assert _openai_error(openai)["message"] == "max_tokens is too large"
    assert _openai_error(openai)["type"] == "invalid_request_error"
    assert _anthropic_error(anthropic)["message"] == "max_tokens is too large"
    assert _anthropic_error(anthropic)["type"] == "invalid_request_error"
    assert openai.headers["x-should-retry"] == anthropic.headers["x-should-retry"] == "false"
    attempts = openai.headers["x-turnout-attempts"].split(",")
    assert attempts[0].startswith("a;outcome=failed;class=invalid_request;status=400")
    assert attempts[1] == "b;outcome=not_tried"


async def test_one_call_passes_its_own_status_and_retry_after(app: GatewayApp) -> None:
    """A route with one call that got 429 answers with that 429 and its Retry-After (rounded
    up), not a route_exhausted envelope."""
    reply = await _post(app, "/v1/chat/completions", chat("single-429"))
    assert reply.status_code == 429
    error = _openai_error(reply)
    assert error["code"] == "rate_limited"
    assert error["type"] != "route_exhausted"
    assert reply.headers["retry-after"] == "8"
    assert "x-should-retry" not in reply.headers  # a 429: the SDK's own rule retries it


async def test_unknown_path_and_wrong_method(app: GatewayApp) -> None:
    """An unknown path is 404 `NOT_FOUND`; a known path with another method is 405
    `method_not_allowed` with `allow`, in Anthropic's envelope under `/v1/messages`."""
    async with client_of(app) as client:
        missing = await client.get("/v1/nothing")
        wrong = await client.get("/v1/chat/completions")
        wrong_messages = await client.get("/v1/messages")
    assert missing.status_code == 404
    assert _openai_error(missing)["code"] == "NOT_FOUND"
    assert wrong.status_code == 405
    assert wrong.headers["allow"] == "POST"
    assert _openai_error(wrong)["code"] == "method_not_allowed"
    assert wrong_messages.status_code == 405
    assert _anthropic_error(wrong_messages)["code"] == "method_not_allowed"


async def test_before_the_runtime_loads_every_endpoint_is_not_ready() -> None:
    """Before lifespan startup has loaded the configuration, an endpoint answers 503
    `not_ready` in its own envelope, while `/healthz` is already 200."""
    app = GatewayApp(load=lambda: pytest.fail("not started"))
    async with client_of(app) as client:
        openai = await client.post("/v1/chat/completions", json=chat("gpt-4o-mini"))
        anthropic = await client.post("/v1/messages", json=messages("claude-x"))
        health = await client.get("/healthz")
    assert openai.status_code == anthropic.status_code == 503
    assert _openai_error(openai)["code"] == "not_ready"
    assert _anthropic_error(anthropic)["code"] == "not_ready"
    assert _anthropic_error(anthropic)["type"] == "overloaded_error"
    assert health.status_code == 200


async def test_unexpected_failure_is_500_without_a_traceback(
    app: GatewayApp, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug is 500 `internal_error` naming the request id; the traceback only goes to the log."""

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(Runtime, "resolve", broken)
    reply = await _post(app, "/v1/chat/completions", chat("gpt-4o-mini"))
    assert reply.status_code == 500
    error = _openai_error(reply)
    assert error["code"] == "internal_error"
    assert "secret internals" not in reply.text
    assert reply.headers["x-request-id"] in error["message"]
    assert any("failed unexpectedly" in record.message for record in caplog.records)
