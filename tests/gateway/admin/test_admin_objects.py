"""The admin API's stored objects over real HTTP, on SQLite and PostgreSQL: projects,
providers, routes, keys, bindings and policies; create, read, list, merge-patch, delete;
prefixed ids, masked secrets, provider ids in targets, and the error envelope."""

from __future__ import annotations

import uuid
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

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from turnout.store import Store

pytestmark = pytest.mark.asyncio(loop_scope="module")

MOCK = {"name": "mock-a", "kind": "mock"}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def admin(module_store: Store) -> AsyncIterator[httpx.AsyncClient]:
    """An admin client of a gateway over the module's store, on a real socket."""
    context = StoreContext(module_store, file_config())
    async with running(context) as url, httpx.AsyncClient(base_url=url, headers=HEADERS) as c:
        yield c


async def test_project_lifecycle(admin: httpx.AsyncClient) -> None:
    """A project is created (201, `proj_` id, stamps), read, listed, renamed and deleted."""
    name = f"team-{uuid.uuid4().hex[:8]}"
    created = await admin.post("/admin/v1/projects", json={"name": name})
    assert created.status_code == 201
    project = created.json()
    assert project["id"].startswith("proj_")
    assert project["name"] == name
    assert project["default_model_route_id"] is None
    assert {"created_at", "updated_at"} <= set(project)
    one = f"/admin/v1/projects/{project['id']}"
    assert (await admin.get(one)).json() == project
    listed = (await admin.get("/admin/v1/projects")).json()
    assert project in listed["data"]
    renamed = await admin.patch(one, json={"name": f"{name}-b"})
    assert renamed.status_code == 200
    assert renamed.json()["name"] == f"{name}-b"
    deleted = await admin.delete(one)
    assert deleted.status_code == 204
    assert deleted.content == b""
    gone = await admin.get(one)
    assert gone.status_code == 404
    assert error_of(gone)["code"] == "NOT_FOUND"


async def test_provider_and_route_by_provider_id(admin: httpx.AsyncClient) -> None:
    """A provider reads back with an `aip_` id and its key masked; a route naming it by
    `ai_provider_id` is stored with its name, under a `route_` id."""
    pid = await new_project(admin)
    base = f"/admin/v1/projects/{pid}"
    provider = await admin.post(f"{base}/providers", json={**MOCK, "api_key": "sk-secret-1"})
    assert provider.status_code == 201, provider.text
    stored = provider.json()
    assert stored["id"].startswith("aip_")
    assert stored["api_key"] == "********"
    assert "sk-secret-1" not in provider.text
    route = await admin.post(
        f"{base}/routes",
        json={"name": "r1", "models": ["x-*"], "targets": [{"ai_provider_id": stored["id"]}]},
    )
    assert route.status_code == 201, route.text
    assert route.json()["id"].startswith("route_")
    assert route.json()["targets"] == [{"provider": "mock-a"}]
    listed = (await admin.get(f"{base}/routes")).json()["data"]
    assert [r["name"] for r in listed] == ["r1"]


async def test_unknown_provider_id_in_a_target_is_400(admin: httpx.AsyncClient) -> None:
    """A target whose `ai_provider_id` names no provider of the project is a 400 naming it."""
    pid = await new_project(admin)
    reply = await admin.post(
        f"/admin/v1/projects/{pid}/routes",
        json={"name": "r1", "targets": [{"ai_provider_id": "aip_000000000000000000000000"}]},
    )
    assert reply.status_code == 400
    error = error_of(reply)
    assert error["code"] == "VALIDATION_FAILED"
    assert error["meta"]["errors"][0]["path"] == "targets[0].ai_provider_id"


async def test_merge_patch_null_clears_and_absent_keeps(admin: httpx.AsyncClient) -> None:
    """PATCH is a JSON merge-patch: null clears a field, an absent field is unchanged, and
    `application/merge-patch+json` is accepted."""
    pid = await new_project(admin)
    base = f"/admin/v1/projects/{pid}"
    await admin.post(f"{base}/providers", json=MOCK)
    route = await admin.post(
        f"{base}/routes",
        json={
            "name": "r1",
            "models": ["x-*"],
            "request_timeout": 30,
            "targets": [{"provider": "mock-a"}],
        },
    )
    one = f"{base}/routes/{route.json()['id']}"
    patched = await admin.patch(
        one,
        content=b'{"request_timeout": null, "models": ["y-*"]}',
        headers={"content-type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200, patched.text
    body = patched.json()
    assert "request_timeout" not in body
    assert body["models"] == ["y-*"]
    assert body["targets"] == [{"provider": "mock-a"}]


async def test_keys_show_their_plaintext_once_and_revoke(admin: httpx.AsyncClient) -> None:
    """A new key comes back with its `tk_` plaintext once; reads never show it; revoke sets
    `revoked_at`; delete removes it."""
    pid = await new_project(admin)
    base = f"/admin/v1/projects/{pid}/keys"
    created = await admin.post(base, json={"name": "ci", "teams": ["platform"]})
    assert created.status_code == 201, created.text
    key = created.json()
    assert key["id"].startswith("key_")
    assert key["key"].startswith("tk_")
    read = (await admin.get(f"{base}/{key['id']}")).json()
    assert "key" not in read
    assert key["key"] not in str(read)
    assert read["teams"] == ["platform"]
    revoked = await admin.post(f"{base}/{key['id']}/revoke")
    assert revoked.status_code == 200
    assert revoked.json()["revoked_at"] is not None
    assert (await admin.delete(f"{base}/{key['id']}")).status_code == 204
    assert (await admin.get(base)).json() == {"data": []}


async def test_bindings_and_policies(admin: httpx.AsyncClient) -> None:
    """Bindings (`bind_`) and policies (`pol_`) are created, patched and deleted."""
    pid = await new_project(admin)
    base = f"/admin/v1/projects/{pid}"
    binding = await admin.post(
        f"{base}/bindings",
        json={"name": "all", "subjects": [{"everyone": True}], "grants": [{"models": "*"}]},
    )
    assert binding.status_code == 201, binding.text
    assert binding.json()["id"].startswith("bind_")
    policy = await admin.post(
        f"{base}/policies", json={"name": "no-x", "deny_when": {"provider": "x"}}
    )
    assert policy.status_code == 201, policy.text
    assert policy.json()["id"].startswith("pol_")
    patched = await admin.patch(f"{base}/policies/{policy.json()['id']}", json={"mode": "observe"})
    assert patched.json()["mode"] == "observe"
    deleted = await admin.delete(f"{base}/bindings/{binding.json()['id']}")
    assert deleted.status_code == 204


async def test_a_taken_name_is_409(admin: httpx.AsyncClient) -> None:
    """A route named like a provider of the project is 409 `NAME_TAKEN`."""
    pid = await new_project(admin)
    base = f"/admin/v1/projects/{pid}"
    await admin.post(f"{base}/providers", json=MOCK)
    reply = await admin.post(
        f"{base}/routes", json={"name": "MOCK-A", "targets": [{"provider": "mock-a"}]}
    )
    assert reply.status_code == 409
    assert error_of(reply)["code"] == "NAME_TAKEN"


async def test_a_shape_error_lists_each_problem(admin: httpx.AsyncClient) -> None:
    """A body that breaks the config file's shape is 400 `VALIDATION_FAILED` with each
    problem's path in `meta.errors`."""
    pid = await new_project(admin)
    reply = await admin.post(
        f"/admin/v1/projects/{pid}/routes",
        json={"name": "r1", "targets": [{"provider": "p", "max_retries": -1}]},
    )
    assert reply.status_code == 400
    error = error_of(reply)
    assert error["code"] == "VALIDATION_FAILED"
    assert error["meta"]["errors"][0]["path"] == "targets.0.max_retries"


async def test_an_object_of_another_project_is_404(admin: httpx.AsyncClient) -> None:
    """An id read through another project is `NOT_FOUND`; so is an unknown project."""
    first, second = await new_project(admin), await new_project(admin)
    provider = await admin.post(f"/admin/v1/projects/{first}/providers", json=MOCK)
    elsewhere = await admin.get(f"/admin/v1/projects/{second}/providers/{provider.json()['id']}")
    assert elsewhere.status_code == 404
    assert error_of(elsewhere)["code"] == "NOT_FOUND"
    nowhere = await admin.get("/admin/v1/projects/proj_nope/routes")
    assert nowhere.status_code == 404


def _bodies(provider_id: str, route_id: str) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Per collection: a body to create and a merge-patch to apply."""
    return {
        "providers": ({"name": "extra", "kind": "mock"}, {"model_patterns": ["extra-*"]}),
        "routes": (
            {"name": "extra-route", "targets": [{"ai_provider_id": provider_id}]},
            {"models": ["extra-*"]},
        ),
        "consumers": (
            {"name": "bot", "kind": "agent", "model_route_id": route_id},
            {"name": "bot-2"},
        ),
        "keys": ({"name": "svc"}, {"teams": ["ops"]}),
        "bindings": (
            {"name": "b", "subjects": [{"team": "ops"}], "grants": [{"models": "x-*"}]},
            {"enabled": False},
        ),
        "policies": ({"name": "p", "deny_when": {"family": "gemini"}}, {"mode": "observe"}),
    }


@pytest.mark.parametrize(
    "plural", ["providers", "routes", "consumers", "keys", "bindings", "policies"]
)
async def test_every_collection_round_trips(admin: httpx.AsyncClient, plural: str) -> None:
    """Each collection: create (201), read, list, merge-patch (200, the change kept) and
    delete (204, then 404)."""
    base = f"/admin/v1/projects/{await new_project(admin)}"
    provider = (await admin.post(f"{base}/providers", json=MOCK)).json()
    route = await admin.post(
        f"{base}/routes", json={"name": "r", "targets": [{"provider": "mock-a"}]}
    )
    body, patch = _bodies(provider["id"], route.json()["id"])[plural]
    created = await admin.post(f"{base}/{plural}", json=body)
    assert created.status_code == 201, created.text
    one = f"{base}/{plural}/{created.json()['id']}"
    read = (await admin.get(one)).json()
    assert read["id"] == created.json()["id"]
    assert read["id"] in {
        item["id"] for item in (await admin.get(f"{base}/{plural}")).json()["data"]
    }
    patched = await admin.patch(one, json=patch)
    assert patched.status_code == 200, patched.text
    for name, value in patch.items():
        assert patched.json()[name] == value
    assert (await admin.delete(one)).status_code == 204
    assert (await admin.get(one)).status_code == 404


async def test_a_provider_keeps_its_catalog_overrides_and_cache_prices(
    admin: httpx.AsyncClient,
) -> None:
    """A provider's `catalog` and cache prices are stored as sent; a bad window is a 400
    naming its path, the same rule as in the file."""
    pid = await new_project(admin)
    base = f"/admin/v1/projects/{pid}/providers"
    catalog = {"gpt-4o": {"context_window": 64000}}
    prices = {"gpt-4o": {"input": 2.0, "output": 8.0, "cache_read": 0.5}}
    made = await admin.post(base, json={**MOCK, "catalog": catalog, "prices": prices})
    assert made.status_code == 201, made.text
    assert made.json()["catalog"]["gpt-4o"]["context_window"] == 64000
    assert made.json()["prices"]["gpt-4o"]["cache_read"] == 0.5
    bad = await admin.post(
        base, json={**MOCK, "name": "mock-b", "catalog": {"gpt-4o": {"context_window": 0}}}
    )
    assert bad.status_code == 400
    paths = [e["path"] for e in error_of(bad)["meta"]["errors"]]
    assert paths == ["catalog.gpt-4o.context_window"]
