"""`/readyz` detail on the shared state store: ready on memory, `degraded` with
the store's own detail while Redis is unreachable, and never the state URL's password."""

from __future__ import annotations

from typing import Any

from tests.gateway._app_support import app_of, client_of, mock_provider

# Nothing listens on port 1: every Redis operation fails at once, and the store degrades.
UNREACHABLE = "redis://turnout:s3cret-password@127.0.0.1:1/0"


def _config(state: str) -> dict[str, Any]:
    return {
        "server": {"auth": "open"},
        "state": state,
        "providers": [mock_provider("m")],
        "routes": [{"name": "main", "models": ["gpt-4o-mini"], "targets": [{"provider": "m"}]}],
    }


async def test_memory_state_is_ready_with_its_detail() -> None:
    """On the default memory store, /readyz is ready and says which store serves."""
    app = app_of(_config("memory"))
    async with client_of(app) as client:
        ready = await client.get("/readyz")
    assert ready.status_code == 200
    body = ready.json()
    assert body["status"] == "ready"
    assert body["state"]["backend"] == "memory"
    assert body["state"]["healthy"] is True


async def test_unreachable_redis_is_degraded_but_still_200() -> None:
    """After Redis failed, /readyz stays 200 (calls are served on local state) with status
    `degraded`, the Redis detail, and the URL without its password."""
    app = app_of(_config(UNREACHABLE))
    runtime = app.runtime
    assert runtime is not None
    assert await runtime.state.get("probe") is None  # fails over to local state, never raises
    async with client_of(app) as client:
        ready = await client.get("/readyz")
    assert ready.status_code == 200
    body = ready.json()
    assert body["status"] == "degraded"
    assert body["state"]["backend"] == "redis"
    assert body["state"]["healthy"] is False
    assert "s3cret-password" not in ready.text
    await runtime.aclose()
