"""The store's rules as the admin API answers them, over real HTTP on SQLite and PostgreSQL:
consumers and their assignments, 409s for dependents, inherited defaults and file-managed
objects (with their `meta`), and the one validator run on every write (400 listing each
problem; nothing written)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx
import pytest
import pytest_asyncio

from tests.gateway.admin._support import (
    HEADERS,
    StoreContext,
    error_of,
    file_config,
    new_project,
    running,
)
from turnout.store.models import Route

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from turnout.store import Store

pytestmark = pytest.mark.asyncio(loop_scope="module")

PROVIDER: dict[str, Any] = {"name": "vendor", "kind": "mock"}
ROUTE: dict[str, Any] = {"name": "main", "targets": [{"provider": "vendor"}]}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def admin(module_store: Store) -> AsyncIterator[httpx.AsyncClient]:
    """An admin client of a gateway over the module's store."""
    context = StoreContext(module_store, file_config())
    async with running(context) as url, httpx.AsyncClient(base_url=url, headers=HEADERS) as c:
        yield c


async def _with_route(admin: httpx.AsyncClient) -> tuple[str, str, str]:
    """A project with a provider and a route: the project's base path and both ids."""
    base = f"/admin/v1/projects/{await new_project(admin)}"
    provider = await admin.post(f"{base}/providers", json=PROVIDER)
    route = await admin.post(f"{base}/routes", json=ROUTE)
    assert route.status_code == 201, route.text
    return base, provider.json()["id"], route.json()["id"]


async def test_consumers_ids_by_kind_and_one_patch_moves_a_pin(admin: httpx.AsyncClient) -> None:
    """A consumer's id says its kind; one PATCH clears a pin and sets a route; the list
    filters by kind."""
    base, provider_id, route_id = await _with_route(admin)
    agent = await admin.post(
        f"{base}/consumers",
        json={"name": "bot", "kind": "agent", "ai_provider_id": provider_id, "model": "m1"},
    )
    assert agent.status_code == 201, agent.text
    assert agent.json()["id"].startswith("agent_")
    moved = await admin.patch(
        f"{base}/consumers/{agent.json()['id']}",
        json={"ai_provider_id": None, "model_route_id": route_id},
        headers={"content-type": "application/merge-patch+json"},
    )
    assert moved.status_code == 200, moved.text
    assert (moved.json()["ai_provider_id"], moved.json()["model_route_id"]) == (None, route_id)
    chat = await admin.post(
        f"{base}/consumers", json={"name": "c1", "kind": "chat", "model_route": "main"}
    )
    assert chat.status_code == 400
    assert error_of(chat)["code"] == "VALIDATION_FAILED"
    agents = (await admin.get(f"{base}/consumers?kind=agent")).json()["data"]
    assert [c["name"] for c in agents] == ["bot"]


async def test_a_route_in_use_is_409_with_its_dependents(admin: httpx.AsyncClient) -> None:
    """Deleting a route an agent uses is 409 `MODEL_ROUTE_HAS_DEPENDENTS` counting and
    sampling the consumers; deleting a provider a route uses is `PROVIDER_HAS_DEPENDENTS`."""
    base, provider_id, route_id = await _with_route(admin)
    agent = await admin.post(
        f"{base}/consumers", json={"name": "bot", "kind": "agent", "model_route_id": route_id}
    )
    refused = await admin.delete(f"{base}/routes/{route_id}")
    assert refused.status_code == 409
    error = error_of(refused)
    assert error["code"] == "MODEL_ROUTE_HAS_DEPENDENTS"
    assert error["meta"]["consumers"] == {"count": 1, "sample": [agent.json()["id"]]}
    in_use = await admin.delete(f"{base}/providers/{provider_id}")
    assert in_use.status_code == 409
    assert error_of(in_use)["code"] == "PROVIDER_HAS_DEPENDENTS"
    assert (await admin.get(f"{base}/routes/{route_id}")).status_code == 200


async def test_clearing_an_inherited_default_is_409(admin: httpx.AsyncClient) -> None:
    """A project default that a chat inherits cannot be cleared (409
    `PROJECT_DEFAULT_ROUTE_INHERITED`), but it can be repointed."""
    base, _, route_id = await _with_route(admin)
    await admin.patch(base, json={"default_model_route_id": route_id})
    chat = await admin.post(f"{base}/consumers", json={"name": "c1", "kind": "chat"})
    assert chat.status_code == 201, chat.text
    cleared = await admin.patch(base, json={"default_model_route_id": None})
    assert cleared.status_code == 409
    error = error_of(cleared)
    assert error["code"] == "PROJECT_DEFAULT_ROUTE_INHERITED"
    assert error["meta"]["consumers"]["count"] == 1


async def test_a_file_managed_route_is_read_only(
    admin: httpx.AsyncClient, module_store: Store
) -> None:
    """An object the config file owns reads as such and refuses PATCH and DELETE with 409
    `FILE_MANAGED`."""
    base, _, route_id = await _with_route(admin)
    with module_store.sessions.begin() as session:
        session.get_one(Route, route_id).source = "file"
    assert (await admin.get(f"{base}/routes/{route_id}")).json()["source"] == "file"
    for reply in (
        await admin.patch(f"{base}/routes/{route_id}", json={"models": ["x"]}),
        await admin.delete(f"{base}/routes/{route_id}"),
    ):
        assert reply.status_code == 409
        assert error_of(reply)["code"] == "FILE_MANAGED"


async def test_every_write_is_checked_by_the_one_validator(admin: httpx.AsyncClient) -> None:
    """A route whose target names no provider of the project is 400 `VALIDATION_FAILED`
    with the problem's path, and is not stored."""
    base = f"/admin/v1/projects/{await new_project(admin)}"
    reply = await admin.post(
        f"{base}/routes", json={"name": "r", "targets": [{"provider": "missing"}]}
    )
    assert reply.status_code == 400
    error = error_of(reply)
    assert error["code"] == "VALIDATION_FAILED"
    assert [problem["path"] for problem in error["meta"]["errors"]] == [
        "routes[0].targets[0].provider"
    ]
    assert (await admin.get(f"{base}/routes")).json() == {"data": []}


async def test_a_stored_route_may_not_clash_with_the_file(admin: httpx.AsyncClient) -> None:
    """In the config file's project, a stored route whose pattern overlaps a file route's at
    the same specificity is refused, naming both."""
    listed = (await admin.get("/admin/v1/projects")).json()["data"]
    found = next((p for p in listed if p["name"] == "default"), None)
    if found is None:
        found = (await admin.post("/admin/v1/projects", json={"name": "default"})).json()
    base = f"/admin/v1/projects/{found['id']}"
    await admin.post(f"{base}/providers", json={"name": "stored-mock", "kind": "mock"})
    reply = await admin.post(
        f"{base}/routes",
        json={"name": "clash", "models": ["file-*"], "targets": [{"provider": "stored-mock"}]},
    )
    assert reply.status_code == 400
    message = error_of(reply)["message"]
    assert "file-route" in message
    assert "clash" in message


async def test_a_reference_to_another_projects_route_is_400(admin: httpx.AsyncClient) -> None:
    """A project default or a consumer's route of another project is 400 naming the field;
    an id that exists nowhere stays 404."""
    _, _, foreign = await _with_route(admin)
    base, _, _ = await _with_route(admin)
    for path, body in (
        (base, {"default_model_route_id": foreign}),
        (f"{base}/consumers", {"name": "bot", "kind": "agent", "model_route_id": foreign}),
    ):
        write = admin.patch if path == base else admin.post
        refused = await write(path, json=body)
        assert refused.status_code == 400, refused.text
        error = error_of(refused)
        assert error["code"] == "VALIDATION_FAILED"
        field = next(iter(k for k in body if k.endswith("route_id")))
        [problem] = error["meta"]["errors"]
        assert problem["path"] == field
        assert "belongs to another project" in problem["message"]
        missing = await write(path, json={**body, field: "route_nowhere"})
        assert missing.status_code == 404, missing.text


async def test_one_target_over_the_attempt_budget_names_the_total(
    admin: httpx.AsyncClient,
) -> None:
    """A route whose one target has max_retries 10 is 400 naming the computed total."""
    base = f"/admin/v1/projects/{await new_project(admin)}"
    await admin.post(f"{base}/providers", json=PROVIDER)
    body = {"name": "main", "targets": [{"provider": "vendor", "max_retries": 10}]}
    refused = await admin.post(f"{base}/routes", json=body)
    assert refused.status_code == 400, refused.text
    [problem] = error_of(refused)["meta"]["errors"]
    assert problem["message"] == "total attempts 11 exceeds the maximum of 10"
