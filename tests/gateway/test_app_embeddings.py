"""The gateway app in process: `/v1/embeddings` through a route's embeddings targets, with
failover, shared health, the routing object and headers."""

from __future__ import annotations

from typing import Any

import pytest

from tests.gateway._app_support import client_of, mock_provider, runtime_of
from turnout.gateway.server.app import GatewayApp

CONFIG: dict[str, Any] = {
    "providers": [mock_provider("m1", prices={"emb-a": {"input": 0.02, "output": 0}})],
    "routes": [
        {
            "name": "embed",
            "models": ["text-embedding-*"],
            "targets": [
                {"provider": "m1", "model": "emb-x/fault:status=429;retry_after=30", "name": "a"},
                {"provider": "m1", "model": "emb-a", "name": "b"},
            ],
        }
    ],
}


@pytest.fixture
def app() -> GatewayApp:
    return GatewayApp(runtime_of(CONFIG))


async def test_embeddings_fail_over_and_carry_routing(app: GatewayApp) -> None:
    """A 429 on the first target, vectors from the second, in input order, with `routing`."""
    async with client_of(app) as client:
        reply = await client.post(
            "/v1/embeddings", json={"model": "text-embedding-3-small", "input": ["a", "bb"]}
        )
    assert reply.status_code == 200
    body = reply.json()
    assert [item["index"] for item in body["data"]] == [0, 1]
    assert body["model"] == "emb-a"
    assert [a["outcome"] for a in body["routing"]["attempts"]] == ["failed", "answered"]
    assert reply.headers["x-turnout-target"] == "b"
    assert reply.headers["x-turnout-route"] == "embed"
    assert float(reply.headers["x-turnout-cost"]) > 0


async def test_embeddings_share_the_route_health(app: GatewayApp) -> None:
    """The cooldown the first request set makes the next request skip that target."""
    body = {"model": "text-embedding-3-small", "input": "a"}
    async with client_of(app) as client:
        await client.post("/v1/embeddings", json=body)
        second = await client.post("/v1/embeddings", json=body)
    outcomes = [a["outcome"] for a in second.json()["routing"]["attempts"]]
    assert outcomes == ["cooling_down", "answered"]


async def test_base64_embeddings_pass_through_as_asked(app: GatewayApp) -> None:
    """The caller's own body reaches the upstream: `encoding_format: base64` is answered."""
    async with client_of(app) as client:
        reply = await client.post(
            "/v1/embeddings",
            json={"model": "text-embedding-3-small", "input": "a", "encoding_format": "base64"},
        )
    assert isinstance(reply.json()["data"][0]["embedding"], str)


async def test_malformed_embeddings_body_is_invalid_request(app: GatewayApp) -> None:
    """An input of the wrong shape: 400 `invalid_request` naming `input`."""
    async with client_of(app) as client:
        reply = await client.post("/v1/embeddings", json={"model": "text-embedding-3", "input": 5})
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["message"].startswith("input:")
