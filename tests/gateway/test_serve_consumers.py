"""`x-turnout-consumer`: the first step of resolution. A consumer's route, its provider pin (one
target, no failover), the project's default route it inherits, a memory through its agent;
404 for an unknown consumer, 403 for another project's, 503 NO_ROUTE once its route left the
config file. The resolution is the same on every backend: these run on SQLite."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from tests.gateway._app_support import client_of
from tests.gateway._store_support import add_consumer, chat, control_of, file_config, started
from turnout.config.load import parse_config
from turnout.store import service as svc
from turnout.store.snapshot import load_snapshot

if TYPE_CHECKING:
    import httpx

    from turnout.store import Store

FILE_KEY = "Bearer file-key-0123456789"


def _two_routes() -> dict[str, Any]:
    config = file_config()
    config["providers"] = [{"name": "m", "kind": "mock"}, {"name": "pin", "kind": "mock"}]
    config["routes"] = [
        *config["routes"],
        {"name": "side", "targets": [{"provider": "m", "model": "side-model"}]},
    ]
    return config


async def _ask(client: httpx.AsyncClient, consumer: str, model: str = "gpt-4o-mini") -> Any:
    headers = {"authorization": FILE_KEY, "x-turnout-consumer": consumer}
    return await client.post("/v1/chat/completions", json=chat(model), headers=headers)


@pytest.mark.parametrize("empty_store", ["sqlite"], indirect=True)
async def test_a_consumer_route_pin_default_and_memory_chain_decide(store: Store) -> None:
    """An agent's route beats the model's route; a pin is one call to its provider with its
    model; a chat with nothing inherits the project default; a memory follows its agent."""
    control = control_of(store, _two_routes())
    ids = load_snapshot(store).projects["default"].ids
    project = ids["route", "side"]
    project_id = load_snapshot(store).projects["default"].id
    agent = add_consumer(store, project_id, "agent", "agent", model_route_id=project)
    add_consumer(store, project_id, "pinned", "chat", ai_provider_id=ids["provider", "pin"],
                 model="pinned-model")  # fmt: skip
    add_consumer(store, project_id, "memory", "memory", agent_id=agent)
    add_consumer(store, project_id, "plain", "chat")
    svc.update_project(store, project_id, {"default_model_route_id": ids["route", "main"]})
    async with started(control) as app, client_of(app) as client:
        by_id = await _ask(client, agent)
        pinned = await _ask(client, "pinned")
        memory = await _ask(client, "memory")
        plain = await _ask(client, "plain", "anything")
    assert by_id.status_code == 200
    assert by_id.headers["x-turnout-route"] == "side"
    assert pinned.status_code == 200
    routing = pinned.json()["routing"]
    assert [(a["provider"], a["model"]) for a in routing["attempts"]] == [("pin", "pinned-model")]
    assert routing["route_id"] == ids["provider", "pin"]
    assert memory.headers["x-turnout-route"] == "side"
    assert plain.status_code == 200
    assert plain.headers["x-turnout-route"] == "main"


@pytest.mark.parametrize("empty_store", ["sqlite"], indirect=True)
async def test_unknown_and_foreign_consumers_are_refused(store: Store) -> None:
    """An unknown consumer is 404 naming the header; another project's consumer is 403."""
    control = control_of(store, file_config())
    acme = svc.create_project(store, {"name": "acme"})
    foreign = add_consumer(store, acme["id"], "theirs", "chat")
    async with started(control) as app, client_of(app) as client:
        unknown = await _ask(client, "nobody")
        other = await _ask(client, foreign)
    assert unknown.status_code == 404
    assert unknown.json()["error"]["code"] == "NOT_FOUND"
    assert "x-turnout-consumer" in unknown.json()["error"]["message"]
    assert other.status_code == 403
    assert other.json()["error"]["code"] == "consumer_not_allowed"


@pytest.mark.parametrize("empty_store", ["sqlite"], indirect=True)
async def test_a_consumer_whose_route_left_the_file_gets_no_route(store: Store) -> None:
    """The file drops a route a consumer is assigned: the row is kept for the consumer, which
    then meets 503 NO_ROUTE instead of another route."""
    config = _two_routes()
    control = control_of(store, config)
    snapshot = load_snapshot(store).projects["default"]
    add_consumer(store, snapshot.id, "agent", "agent", model_route_id=snapshot.ids["route", "side"])
    smaller = {**config, "routes": config["routes"][:1]}
    control._reload_file = lambda: parse_config(smaller, env={})
    async with started(control) as app, client_of(app) as client:
        before = await _ask(client, "agent")
        app.swap_runtime(await control.reload_file())
        after = await _ask(client, "agent")
    assert before.status_code == 200
    assert after.status_code == 503
    assert after.json()["error"]["code"] == "NO_ROUTE"
    assert "side" in after.json()["error"]["message"]
    assert (
        load_snapshot(store).projects["default"].ids["route", "side"]
        == snapshot.ids["route", "side"]
    )
