"""Access bindings through the gateway app: grants that name a route steer,
no grant is 400 MODEL_DENIED, a deny binding 403 POLICY_DENIED, no bindings the implicit
Everyone grant."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.gateway._app_support import app_of, chat, client_of, messages, mock_provider
from turnout.access.bindings import AccessPolicy
from turnout.config.load import parse_config
from turnout.errors import NoRoute
from turnout.gateway.resolution.lookups import ProjectLookups, build_runtime
from turnout.gateway.runtime.live import Runtime
from turnout.schema import BindingConfig

if TYPE_CHECKING:
    import httpx

    from turnout.gateway.server.app import GatewayApp

PLATFORM_KEY = "tk_platform_key_01"
SALES_KEY = "tk_sales_key_02"
OPS_KEY = "tk_ops_key_03"
SALES_MAIN_KEY = "tk_sales_main_key_04"

ROUTES: list[dict[str, Any]] = [
    {"name": "claude", "models": ["claude-*"], "targets": [{"provider": "ant", "name": "direct"}]},
    {
        "name": "claude-bedrock",
        "models": ["claude*"],
        "targets": [{"provider": "bedrock", "name": "bedrock"}],
    },
    {"name": "main", "models": ["gpt-4o-mini"], "targets": [{"provider": "m1", "name": "a"}]},
    {"name": "codestral", "models": ["codestral*"], "targets": [{"provider": "m1", "name": "a"}]},
]
BINDINGS: list[dict[str, Any]] = [
    {
        "name": "platform-bedrock",
        "subjects": [{"team": "platform"}],
        "grants": [{"models": "claude*", "route": "claude-bedrock"}],
    },
    {
        "name": "everyone-claude",
        "subjects": [{"everyone": True}],
        "grants": [{"models": "claude-*"}],
    },
    {
        "name": "ops-anything-c",
        "subjects": [{"team": "ops"}],
        "grants": [{"models": "c*", "route": "claude-bedrock"}],
    },
    {
        "name": "no-opus-for-sales",
        "mode": "deny",
        "subjects": [{"team": "sales"}],
        "grants": [{"models": "claude-opus*"}],
    },
]


def _config(*, bindings: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "server": {"auth": "keys"},
        "providers": [
            mock_provider("ant", wire="anthropic-messages"),
            mock_provider("bedrock", wire="anthropic-messages"),
            mock_provider("m1"),
        ],
        "routes": ROUTES,
        "keys": [
            {"name": "platform", "key": PLATFORM_KEY, "teams": ["platform"]},
            {"name": "sales", "key": SALES_KEY, "teams": ["sales"]},
            {"name": "ops", "key": OPS_KEY, "teams": ["ops"]},
            {"name": "sales-main", "key": SALES_MAIN_KEY, "teams": ["sales"], "routes": ["main"]},
        ],
        "bindings": BINDINGS if bindings is None else bindings,
    }


@pytest.fixture
def app() -> GatewayApp:
    return app_of(_config())


async def _post(app: GatewayApp, path: str, body: Any, key: str) -> httpx.Response:
    async with client_of(app) as client:
        return await client.post(path, json=body, headers={"authorization": f"Bearer {key}"})


def _code(reply: httpx.Response) -> str:
    code: str = reply.json()["error"]["code"]
    return code


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/chat/completions", chat("claude-sonnet-4-5")),
        ("/v1/messages", messages("claude-sonnet-4-5")),
    ],
)
async def test_team_grant_naming_a_route_steers_only_that_team(
    app: GatewayApp, path: str, body: dict[str, Any]
) -> None:
    """A team's grant naming claude-bedrock sends its keys there; others keep `claude`."""
    first = await _post(app, path, body, PLATFORM_KEY)
    other = await _post(app, path, body, SALES_KEY)
    again = await _post(app, path, body, PLATFORM_KEY)
    assert (first.status_code, other.status_code, again.status_code) == (200, 200, 200)
    assert first.headers["x-turnout-route"] == "claude-bedrock"
    assert other.headers["x-turnout-route"] == "claude"
    assert again.headers["x-turnout-route"] == "claude-bedrock"


async def test_grant_route_serves_a_model_only_it_matches(app: GatewayApp) -> None:
    """The granted route also serves a model outside other routes' patterns (`claude3`)."""
    reply = await _post(app, "/v1/chat/completions", chat("claude3"), PLATFORM_KEY)
    assert reply.status_code == 200
    assert reply.headers["x-turnout-route"] == "claude-bedrock"


async def test_grant_naming_a_route_that_does_not_serve_the_model_is_no_route(
    app: GatewayApp,
) -> None:
    """A grant whose route does not serve the model fails closed: 503 NO_ROUTE, no other
    route (though `codestral` serves the model)."""
    reply = await _post(app, "/v1/chat/completions", chat("codestral-2"), OPS_KEY)
    assert reply.status_code == 503
    assert _code(reply) == "NO_ROUTE"
    assert (
        'names route "claude-bedrock", which does not serve it'
        in (reply.json()["error"]["message"])
    )


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages"])
async def test_caller_without_a_grant_is_model_denied(app: GatewayApp, path: str) -> None:
    """Once a binding grants models, a caller with no grant for the model gets 400
    MODEL_DENIED, in the endpoint's own error envelope."""
    body = chat("gpt-4o-mini") if path.endswith("completions") else messages("gpt-4o-mini")
    reply = await _post(app, path, body, SALES_KEY)
    assert reply.status_code == 400
    assert _code(reply) == "MODEL_DENIED"
    if path == "/v1/messages":
        assert reply.json()["type"] == "error"
    else:
        assert set(reply.json()) == {"error"}


async def test_deny_binding_is_policy_denied(app: GatewayApp) -> None:
    """A deny binding covering the caller and model is 403 POLICY_DENIED, despite a grant."""
    reply = await _post(app, "/v1/messages", messages("claude-opus-4"), SALES_KEY)
    assert reply.status_code == 403
    assert _code(reply) == "POLICY_DENIED"


async def test_a_key_limited_to_another_route_is_model_denied_before_the_deny(
    app: GatewayApp,
) -> None:
    """A sales key limited to route main asking for claude-opus-4 (route claude, denied to
    sales) is 400 MODEL_DENIED naming the key's routes, not 403 POLICY_DENIED: the key's
    ceilings come before the grant check."""
    reply = await _post(app, "/v1/messages", messages("claude-opus-4"), SALES_MAIN_KEY)
    assert reply.status_code == 400
    assert _code(reply) == "MODEL_DENIED"
    assert reply.json()["error"]["message"].endswith("its routes are: main")


async def test_models_list_leaves_out_models_without_a_grant(app: GatewayApp) -> None:
    """GET /v1/models lists only models the caller's grants cover."""
    async with client_of(app) as client:
        listed = await client.get("/v1/models", headers={"authorization": f"Bearer {SALES_KEY}"})
    names = {row["id"] for row in listed.json()["data"]}
    assert "gpt-4o-mini" not in names
    assert "claude-bedrock" in names


async def test_no_bindings_is_the_implicit_everyone_grant() -> None:
    """Without bindings every key may use every model through its usual route."""
    app = app_of(_config(bindings=[]))
    gpt = await _post(app, "/v1/chat/completions", chat("gpt-4o-mini"), SALES_KEY)
    claude = await _post(app, "/v1/chat/completions", chat("claude-sonnet-4-5"), PLATFORM_KEY)
    assert gpt.status_code == 200
    assert gpt.headers["x-turnout-route"] == "main"
    assert claude.headers["x-turnout-route"] == "claude"


def test_grant_whose_route_vanished_fails_closed() -> None:
    """A grant naming a route the runtime does not serve is 503 NO_ROUTE, never `claude`."""
    built = build_runtime(parse_config(_config(bindings=[]), env={}))
    vanished = BindingConfig.model_validate(
        {
            "name": "gone",
            "subjects": [{"everyone": True}],
            "grants": [{"models": "claude*", "route": "old"}],
        }
    )
    access = AccessPolicy.from_config([vanished], {}, check_routes=False)
    runtime = Runtime(
        config=built.config,
        lookups=ProjectLookups,
        health=built.health,
        providers=built.providers,
        routes=built.routes,
        index=built.index,
        keys=built.keys,
        access=access,
    )
    with pytest.raises(NoRoute, match='names route "old", which does not exist or is disabled'):
        runtime.resolve("claude-sonnet-4-5", endpoint="chat")


async def test_deny_binding_alone_still_refuses_under_the_implicit_grant() -> None:
    """With only a deny binding, other models stay open and the denied one is 403."""
    app = app_of(_config(bindings=[BINDINGS[-1]]))
    opus = await _post(app, "/v1/chat/completions", chat("claude-opus-4"), SALES_KEY)
    gpt = await _post(app, "/v1/chat/completions", chat("gpt-4o-mini"), SALES_KEY)
    assert opus.status_code == 403
    assert _code(opus) == "POLICY_DENIED"
    assert gpt.status_code == 200


async def test_model_a_target_of_the_grant_route_only_aliases_goes_where_it_would_go() -> None:
    """A model the granted route does not serve, but one of its targets' providers
    aliases, uses the route the caller would get without the grant; a model nobody aliases
    still fails closed."""
    config = _config()
    config["providers"][1] = mock_provider(
        "bedrock", wire="anthropic-messages", model_aliases={"codestral-2": "claude-haiku"}
    )
    aliased_app = app_of(config)
    aliased = await _post(aliased_app, "/v1/chat/completions", chat("codestral-2"), OPS_KEY)
    other = await _post(aliased_app, "/v1/chat/completions", chat("codestral-3"), OPS_KEY)
    assert aliased.status_code == 200
    assert aliased.headers["x-turnout-route"] == "codestral"
    assert other.status_code == 503
    assert _code(other) == "NO_ROUTE"
