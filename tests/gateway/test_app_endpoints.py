"""The endpoint table in process: every `/v1/...` endpoint also without `/v1`,
`GET /v1/models/{id}` for the models this caller could use, and the built-in mock's model
list."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.gateway._app_support import app_of, chat, client_of, messages, mock_provider
from turnout.gateway.resolution.lookups import embedded_runtime
from turnout.gateway.server.app import ENDPOINTS, GatewayApp
from turnout.mock_upstream.answers import MODELS

if TYPE_CHECKING:
    import httpx

APP_KEY = "tk_endpoints_app_01"
NARROW_KEY = "tk_endpoints_narrow_02"
CONFIG: dict[str, Any] = {
    "server": {"auth": "keys"},
    "providers": [
        mock_provider("m1"),
        mock_provider("ant", wire="anthropic-messages"),
        mock_provider("byok", credential_mode="passthrough"),
    ],
    "routes": [
        {"name": "main", "models": ["gpt-4o-mini"], "targets": [{"provider": "m1"}]},
        {"name": "vendored", "models": ["openai/*"], "targets": [{"provider": "m1"}]},
        {"name": "claude", "models": ["claude-*"], "targets": [{"provider": "ant"}]},
        {"name": "own", "models": ["own-*"], "targets": [{"provider": "byok"}]},
    ],
    "keys": [
        {"name": "app", "key": APP_KEY},
        {"name": "narrow", "key": NARROW_KEY, "routes": ["main"]},
    ],
}
AUTH = {"authorization": f"Bearer {APP_KEY}"}
BODIES: dict[str, Any] = {
    "/v1/chat/completions": chat("gpt-4o-mini"),
    "/v1/messages": messages("claude-x"),
    "/v1/messages/count_tokens": messages("claude-x"),
    "/v1/embeddings": {"model": "gpt-4o-mini", "input": "hello"},
    "/v1/models": None,
    "/v1/responses": {"model": "gpt-4o-mini", "input": "hello"},
}


@pytest.fixture
def app() -> GatewayApp:
    return app_of(CONFIG)


async def _send(app: GatewayApp, method: str, path: str, **options: Any) -> httpx.Response:
    async with client_of(app) as client:
        return await client.request(method, path, headers=options.pop("headers", AUTH), **options)


def test_every_v1_endpoint_has_a_bare_twin() -> None:
    """Each `/v1/...` entry of the table is also served without `/v1`, by the same handler
    and client format (a new endpoint cannot ship without its twin)."""
    versioned = {key: served for key, served in ENDPOINTS.items() if key[1].startswith("/v1/")}
    assert set(BODIES) == {path for _, path in versioned}
    for (method, path), served in versioned.items():
        assert ENDPOINTS[(method, path.removeprefix("/v1"))] is served


@pytest.mark.parametrize("path", list(BODIES))
async def test_a_bare_path_answers_as_the_v1_one(app: GatewayApp, path: str) -> None:
    """`/chat/completions`, `/messages`, `/messages/count_tokens`, `/embeddings`, `/models`
    and `/responses` answer exactly as their `/v1` twins (status and envelope)."""
    body = BODIES[path]
    method = "GET" if body is None else "POST"
    versioned = await _send(app, method, path, json=body)
    bare = await _send(app, method, path.removeprefix("/v1"), json=body)
    assert bare.status_code == versioned.status_code
    assert bare.status_code in {200, 404}  # the in-process mock cannot count tokens: 404
    assert set(bare.json()) == set(versioned.json())


async def test_bare_paths_refuse_other_methods_in_their_format(app: GatewayApp) -> None:
    """A bare path with another method is 405 with `allow`, in Anthropic's envelope for
    `/messages`."""
    wrong = await _send(app, "GET", "/messages")
    assert wrong.status_code == 405
    assert wrong.headers["allow"] == "POST"
    assert wrong.json()["type"] == "error"


@pytest.mark.parametrize(
    ("model", "path"),
    [
        ("gpt-4o-mini", "/v1/models/gpt-4o-mini"),
        ("main", "/models/main"),
        ("openai/gpt-4o", "/v1/models/openai/gpt-4o"),
        ("openai/gpt-4o", "/v1/models/openai%2Fgpt-4o"),
        ("claude-sonnet-4-5", "/v1/models/claude-sonnet-4-5"),
    ],
)
async def test_a_model_the_caller_can_use_is_its_model_object(
    app: GatewayApp, model: str, path: str
) -> None:
    """`GET /v1/models/{id}`: OpenAI's model object for a model this caller could send, also
    one only a pattern matches and one whose id holds a `/` (sent as is or encoded)."""
    reply = await _send(app, "GET", path)
    assert reply.status_code == 200, reply.text
    assert reply.json() == {"id": model, "object": "model", "created": 0, "owned_by": "turnout"}
    assert reply.headers["x-request-id"]


@pytest.mark.parametrize(
    ("model", "headers"),
    [
        ("llama-3", AUTH),
        ("claude-sonnet-4-5", {"authorization": f"Bearer {NARROW_KEY}"}),
        ("own-model", AUTH),
        ("gpt-4o-mini", {"x-turnout-key": APP_KEY, "authorization": "Bearer sk-own"}),
    ],
    ids=["no-route", "outside-the-key", "no-target-for-no-credential", "no-target-for-own"],
)
async def test_a_model_the_caller_cannot_use_is_404(
    app: GatewayApp, model: str, headers: dict[str, str]
) -> None:
    """A model no route serves, one outside the key's routes, or one whose route keeps no
    target for the caller's kind of credential: 404 `NOT_FOUND` in OpenAI's format, that a
    retry cannot change."""
    reply = await _send(app, "GET", f"/v1/models/{model}", headers=headers)
    assert reply.status_code == 404
    error = reply.json()["error"]
    assert (error["code"], error["type"]) == ("NOT_FOUND", "invalid_request_error")
    assert model in error["message"]
    assert reply.headers["x-should-retry"] == "false"


async def test_model_paths_without_an_id_or_with_another_method(app: GatewayApp) -> None:
    """`/v1/models/` names no model: 404; `POST /v1/models/x`: 405 allowing GET; a missing
    key is still 401 before anything is looked up."""
    empty = await _send(app, "GET", "/v1/models/")
    posted = await _send(app, "POST", "/v1/models/gpt-4o-mini", json={})
    keyless = await _send(app, "GET", "/v1/models/gpt-4o-mini", headers={})
    assert (empty.status_code, posted.status_code, keyless.status_code) == (404, 405, 401)
    assert posted.headers["allow"] == "GET"


async def test_the_built_in_mock_lists_and_serves_its_models() -> None:
    """Without a configuration or vendor keys, `GET /v1/models` lists the mock upstream's
    models, each retrievable and answered by the mock."""
    app = GatewayApp(embedded_runtime({}))
    async with client_of(app) as client:
        listed = await client.get("/v1/models")
        one = await client.get("/v1/models/claude-sonnet-4-5")
        answer = await client.post("/chat/completions", json=chat("gpt-4o"))
    assert [model["id"] for model in listed.json()["data"]] == sorted(MODELS, key=str.lower)
    assert one.json()["id"] == "claude-sonnet-4-5"
    assert answer.status_code == 200
    assert answer.headers["x-turnout-route"] == "mock"
