"""`/v1/responses` through the gateway app in process: errors in OpenAI's envelope, the
response cache (and the requests that skip it), and the stored-response paths."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import pytest

from tests.gateway._app_support import app_of, client_of, mock_provider, sse_events

if TYPE_CHECKING:
    from turnout.gateway.server.app import GatewayApp

CACHE = {"enabled": True, "ttl_seconds": 60}
CONFIG: dict[str, Any] = {
    "providers": [mock_provider("oa"), mock_provider("an", wire="anthropic-messages")],
    "routes": [
        {
            "name": "cached",
            "models": ["cached"],
            "targets": [{"provider": "an", "model": "claude-x"}],
            "cache": CACHE,
        },
        {"name": "plain", "models": ["plain"], "targets": [{"provider": "oa", "model": "gpt"}]},
    ],
}


@pytest.fixture
def app() -> GatewayApp:
    return app_of(CONFIG)


async def _post(app: GatewayApp, body: dict[str, Any], path: str = "/v1/responses") -> Any:
    async with client_of(app) as client:
        return await client.post(path, json=body)


async def test_a_translated_answer_is_a_response_object(app: GatewayApp) -> None:
    """An answer from a Chat Completions target is a Responses `response` with `routing`."""
    reply = await _post(app, {"model": "plain", "input": "hi"})
    body = reply.json()
    assert reply.status_code == 200
    assert (body["object"], body["status"]) == ("response", "completed")
    assert body["output"][0]["content"][0]["text"] == "mock answer from gpt"
    assert body["routing"]["route"] == "plain"
    assert reply.headers["x-turnout-route"] == "plain"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "plain", "input": [{"role": "robot", "content": "x"}]}, "input[0].role"),
        ({"model": "plain", "input": "x", "top_p": 2}, "top_p"),
    ],
)
async def test_a_malformed_body_is_a_400_in_openai_shape(
    app: GatewayApp, body: dict[str, Any], param: str
) -> None:
    """A body the format refuses is 400 `invalid_request` in OpenAI's envelope, naming the
    field."""
    reply = await _post(app, body)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["code"] == "invalid_request"
    assert param in error["message"]


async def test_a_route_with_no_responses_server_refuses_server_state(app: GatewayApp) -> None:
    """`previous_response_id` on a route without an OpenAI target is 400 `route_ineligible`,
    each entry saying why."""
    reply = await _post(app, {"model": "plain", "input": "x", "previous_response_id": "resp_1"})
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert (error["type"], error["code"]) == ("route_ineligible", "route_ineligible")
    assert "previous_response_id" in reply.text


async def test_the_cache_serves_a_second_call_and_skips_server_state(app: GatewayApp) -> None:
    """A repeated request is a cache hit, whole and streamed; one that needs server state is
    never served from the cache."""
    first = await _post(app, {"model": "cached", "input": "same"})
    second = await _post(app, {"model": "cached", "input": "same"})
    assert (first.headers["x-turnout-cache"], second.headers["x-turnout-cache"]) == ("miss", "hit")
    assert second.json()["output"][0]["content"][0]["text"] == "mock answer from claude-x"
    streamed = await _post(app, {"model": "cached", "input": "same", "stream": True})
    assert streamed.headers["x-turnout-cache"] == "hit"
    kinds = [name for name, _ in sse_events(streamed.text)]
    assert (kinds[0], kinds[-1]) == ("response.created", "response.completed")
    stored = {"model": "cached", "input": "same", "store": True}
    assert (await _post(app, stored)).status_code == 400  # an Anthropic target cannot store


async def test_unknown_response_ids_are_404_and_other_methods_405(app: GatewayApp) -> None:
    """`GET`/`DELETE /v1/responses/{id}` of an unknown id is 404 in OpenAI's envelope (also
    without `/v1`); another method is 405 with `allow`."""
    async with client_of(app) as client:
        for method, path in (("GET", "/v1/responses/resp_x"), ("DELETE", "/responses/resp_x")):
            reply = await client.request(method, path)
            assert reply.status_code == 404
            assert orjson.loads(reply.content)["error"]["code"] == "NOT_FOUND"
        wrong = await client.put("/v1/responses/resp_x")
    assert wrong.status_code == 405
    assert wrong.headers["allow"] == "GET, DELETE"


async def test_a_stored_response_is_only_for_the_key_that_created_it() -> None:
    """A remembered id is 404 for another key; for its own key the call goes to the provider
    that created it (here unreachable: a provider error, not a 404)."""
    config: dict[str, Any] = {
        "server": {"auth": "keys"},
        "providers": [
            {
                "name": "oai",
                "kind": "openai",
                "api_key": "sk-x",
                "base_url": "http://127.0.0.1:9/v1",
            }
        ],
        "routes": [{"name": "r", "models": ["r"], "targets": [{"provider": "oai"}]}],
        "keys": [
            {"name": "owner", "key": "tk_owner_key_01"},
            {"name": "other", "key": "tk_other_k_02"},
        ],
    }
    app = app_of(config)
    runtime = app.runtime
    assert runtime is not None
    entry = orjson.dumps({"provider": "oai", "key": "owner"})
    await runtime.state.set(f"responses:{runtime.project}:resp_kept", entry, 60)
    async with client_of(app) as client:
        other = await client.get(
            "/v1/responses/resp_kept", headers={"authorization": "Bearer tk_other_k_02"}
        )
        owner = await client.get(
            "/v1/responses/resp_kept", headers={"authorization": "Bearer tk_owner_key_01"}
        )
    assert other.status_code == 404
    assert owner.status_code == 502
    assert owner.json()["error"]["meta"]["provider"] == "oai"
