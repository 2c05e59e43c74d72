"""The admin API's views over real HTTP, on SQLite and PostgreSQL: the audit of changes, this
replica's health after a real failover, upstreams, and the routing test (grants that steer,
where the model would go without them, refusals)."""

from __future__ import annotations

import argparse
import asyncio
import io
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import pytest_asyncio

from tests.gateway.admin._support import (
    ADMIN_KEY,
    BASE_FILE,
    HEADERS,
    StoreContext,
    file_config,
    new_project,
    running,
)
from turnout.access.keys import hash_key
from turnout.gateway.admin.auth import admin_key_id
from turnout.gateway.commands.health import main_health

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from turnout.store import Store

pytestmark = pytest.mark.asyncio(loop_scope="module")

ADMIN_ID = admin_key_id(hash_key(ADMIN_KEY))
APP_KEY = "tk_file_app_key_for_tests"
FILE: dict[str, Any] = {
    **BASE_FILE,
    "providers": [
        {"name": "file-mock", "kind": "mock"},
        {"name": "mock-a", "kind": "mock"},
        {"name": "mock-b", "kind": "mock"},
    ],
    "routes": [
        {"name": "file-route", "models": ["file-*"], "targets": [{"provider": "file-mock"}]},
        {
            "name": "pair",
            "models": ["pair", "f*"],
            "targets": [
                {"provider": "mock-a", "model": "mock-429-retry-8", "name": "first"},
                {"provider": "mock-b", "model": "pair-b", "name": "second"},
            ],
        },
    ],
    "bindings": [
        {"name": "everyone-all", "subjects": [{"everyone": True}], "grants": [{"models": "*"}]},
        {
            "name": "platform-via-pair",
            "subjects": [{"team": "platform"}],
            "grants": [{"models": "file-*", "route": "pair"}],
        },
    ],
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def admin(module_store: Store) -> AsyncIterator[httpx.AsyncClient]:
    """An admin client of a gateway serving `FILE` over the module's store."""
    context = StoreContext(module_store, file_config(FILE))
    async with running(context) as url, httpx.AsyncClient(base_url=url, headers=HEADERS) as c:
        yield c


async def test_changes_are_audited_newest_first_with_secrets_masked(
    admin: httpx.AsyncClient,
) -> None:
    """Each write is a change naming the admin key's id (never the key), newest first; a
    provider's key reads masked; filters and `limit` narrow the list."""
    pid = await new_project(admin)
    base = f"/admin/v1/projects/{pid}/providers"
    provider = await admin.post(base, json={"name": "p", "kind": "mock", "api_key": "sk-x1"})
    oid = provider.json()["id"]
    await admin.patch(f"{base}/{oid}", json={"api_key": "sk-x2"})
    await admin.delete(f"{base}/{oid}")
    changes = (await admin.get(f"/admin/v1/changes?project_id={pid}")).json()["data"]
    assert [(c["action"], c["kind"]) for c in changes] == [
        ("delete", "provider"),
        ("update", "provider"),
        ("create", "provider"),
        ("create", "project"),
    ]
    assert {c["actor"] for c in changes} == {ADMIN_ID}
    assert changes[2]["after"]["api_key"] == "********"
    assert "sk-x" not in str(changes)
    versions = [c["version"] for c in changes]
    assert versions == sorted(versions, reverse=True)
    newer = (await admin.get(f"/admin/v1/changes?since_version={versions[2]}")).json()["data"]
    assert [c["version"] for c in newer] == versions[:2]
    one = (await admin.get(f"/admin/v1/changes?project_id={pid}&limit=1")).json()["data"]
    assert [c["action"] for c in one] == ["delete"]
    of_object = (await admin.get(f"/admin/v1/changes?object_id={oid}&kind=provider")).json()
    assert len(of_object["data"]) == 3


async def test_health_and_upstreams_after_a_failover(admin: httpx.AsyncClient) -> None:
    """A 429 with Retry-After cools the first target: health shows the key cooling down with
    seconds left (and `turnout health` reads it so); upstreams shows the route's targets in
    try order, the healthy one active, the bindings that grant it, and the request with its
    failover in the route's last 24 hours."""
    chat = {"model": "pair", "messages": [{"role": "user", "content": "hi"}]}
    before = (await admin.get("/admin/v1/upstreams")).json()
    (earlier,) = [route for route in before["routes"] if route["route"] == "pair"]
    answered = await admin.post(
        "/v1/chat/completions", json=chat, headers={"authorization": f"Bearer {APP_KEY}"}
    )
    assert answered.status_code == 200, answered.text
    health = (await admin.get("/admin/v1/health")).json()["data"]
    (default,) = [project for project in health if project["project"] == "default"]
    assert default["breaker"]["failure_threshold"] == 3
    (cooling,) = [key for key in default["keys"] if key["state"] == "cooling_down"]
    assert (cooling["provider"], cooling["model"]) == ("mock-a", "mock-429-retry-8")
    assert 0 < cooling["seconds_left"] <= 8
    upstreams = (await admin.get("/admin/v1/upstreams")).json()
    (pair,) = [route for route in upstreams["routes"] if route["route"] == "pair"]
    assert [t["name"] for t in pair["targets"]] == ["first", "second"]
    assert [t["state"] for t in pair["targets"]] == ["cooling_down", "available"]
    assert pair["healthy"] == ["second"]
    assert pair["active"] == "second"
    assert pair["granted_by"] == ["everyone-all", "platform-via-pair"]
    assert pair["traffic_24h"] - earlier["traffic_24h"] == 1
    assert pair["failovers_24h"] - earlier["failovers_24h"] == 1
    served = {p["provider"]: p["routes"] for p in upstreams["providers"]}
    assert served["mock-a"] == ["pair"]
    assert served["file-mock"] == ["file-route"]
    out = io.StringIO()
    args = argparse.Namespace(
        admin_key=ADMIN_KEY, url=str(admin.base_url), json=False, timeout=10.0
    )
    assert await asyncio.to_thread(main_health, args, out) == 2
    assert "mock-a/mock-429-retry-8  cooling down" in out.getvalue()


async def _test(admin: httpx.AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    reply = await admin.post("/admin/v1/routing/test", json=body)
    assert reply.status_code == 200, reply.text
    found: dict[str, Any] = reply.json()
    return found


async def test_routing_test_shows_a_steering_grant_and_the_way_without_it(
    admin: httpx.AsyncClient,
) -> None:
    """A subject whose grant names a route goes there; `without_grant` is where the model
    goes otherwise; the grant is named."""
    found = await _test(admin, {"model": "file-x", "subject": {"team": "platform"}})
    assert found["project"] == "default"
    assert found["resolved"]["route"] == "pair"
    assert [t["name"] for t in found["resolved"]["targets"]] == ["first", "second"]
    assert found["grant"]["binding"] == "platform-via-pair"
    assert found["grant"]["route"] == "pair"
    assert found["without_grant"]["route"] == "file-route"
    assert found["refused"] is None


async def test_routing_test_by_key_stored_or_from_the_file(admin: httpx.AsyncClient) -> None:
    """`key_id` names a stored key of the project (its identity counts) or a file key by
    name; an unknown key is 404."""
    listed = (await admin.get("/admin/v1/projects")).json()["data"]
    default = next((p for p in listed if p["name"] == "default"), None)
    if default is None:
        default = (await admin.post("/admin/v1/projects", json={"name": "default"})).json()
    key = await admin.post(
        f"/admin/v1/projects/{default['id']}/keys", json={"name": "ops", "teams": ["platform"]}
    )
    stored = await _test(admin, {"model": "file-x", "key_id": key.json()["id"]})
    assert stored["caller"] == 'key "ops"'
    assert stored["resolved"]["route"] == "pair"
    from_file = await _test(admin, {"model": "file-x", "key_id": "file-app"})
    assert from_file["resolved"]["route"] == "file-route"
    assert from_file["grant"]["binding"] == "everyone-all"
    assert from_file["without_grant"] is None
    unknown = await admin.post("/admin/v1/routing/test", json={"model": "x", "key_id": "nope"})
    assert unknown.status_code == 404


async def test_routing_test_reports_a_refusal_as_the_caller_would_get_it(
    admin: httpx.AsyncClient,
) -> None:
    """A model no route serves is answered 200 with the refusal the caller would get."""
    found = await _test(admin, {"model": "zzz-unknown"})
    assert found["resolved"] is None
    assert (found["refused"]["status"], found["refused"]["code"]) == (503, "NO_ROUTE")


async def test_routing_test_body_rules(admin: httpx.AsyncClient) -> None:
    """A routing test needs a model, and names its caller one way only (400 otherwise)."""
    for body in ({}, {"model": "x", "key_id": "file-app", "subject": {"team": "t"}}):
        reply = await admin.post("/admin/v1/routing/test", json=body)
        assert reply.status_code == 400
        assert reply.json()["error"]["code"] == "VALIDATION_FAILED"


async def test_routing_test_finds_a_stored_keys_own_project(admin: httpx.AsyncClient) -> None:
    """A stored key of another project than the file's is tested in its own project; a
    `project_id` naming another project is 400 naming the field."""
    project_id = await new_project(admin)
    base = f"/admin/v1/projects/{project_id}"
    await admin.post(f"{base}/providers", json={"name": "own-mock", "kind": "mock"})
    route = {"name": "own-route", "models": ["own-*"], "targets": [{"provider": "own-mock"}]}
    assert (await admin.post(f"{base}/routes", json=route)).status_code == 201
    key = (await admin.post(f"{base}/keys", json={"name": "elsewhere"})).json()
    found = await _test(admin, {"model": "own-x", "key_id": key["id"]})
    assert (found["project_id"], found["caller"]) == (project_id, 'key "elsewhere"')
    asked = await _test(admin, {"model": "own-x", "key_id": key["id"], "project_id": project_id})
    assert asked["project_id"] == project_id
    body = {"model": "own-x", "key_id": key["id"], "project_id": await new_project(admin)}
    refused = await admin.post("/admin/v1/routing/test", json=body)
    assert refused.status_code == 400, refused.text
    [problem] = refused.json()["error"]["meta"]["errors"]
    assert problem["path"] == "project_id"
    assert project_id in problem["message"]


async def test_a_project_named_by_its_name_in_a_path_is_told_its_id(
    admin: httpx.AsyncClient,
) -> None:
    """A path naming a project by name is 404 with the project's id to use instead."""
    project_id = await new_project(admin)
    name = (await admin.get(f"/admin/v1/projects/{project_id}")).json()["name"]
    reply = await admin.get(f"/admin/v1/projects/{name}/routes")
    assert reply.status_code == 404
    message = reply.json()["error"]["message"]
    assert (
        message
        == f"no project with the id {name!r}; project {name!r} has the id {project_id!r}: use that"
    )
