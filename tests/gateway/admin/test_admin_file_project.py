"""The config file's project through the admin API of a real gateway serving from the store:
it cannot be deleted nor renamed (409 `FILE_MANAGED`), so later writes, revocations first,
keep taking effect; `/readyz` covers it and every project made through the API; and a store
version that cannot be served (the project gone from the store by other means) is an alarm in
`/readyz`, a metric and one ERROR line per version."""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import httpx

from tests.gateway._store_support import HeldFeed, file_config
from turnout.config.load import parse_config
from turnout.gateway.resolution.lookups import ProjectLookups
from turnout.gateway.runtime.control import ControlPlane
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import bind_socket, serving
from turnout.store import service
from turnout.store.file_sync import sync_file

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import pytest

    from turnout.store import Store

ADMIN_KEY = "adm-file-project-0123456789"
ADMIN = {"authorization": f"Bearer {ADMIN_KEY}"}
CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}


@asynccontextmanager
async def _gateway(store: Store) -> AsyncIterator[tuple[httpx.AsyncClient, ControlPlane]]:
    """A gateway over `store` serving the file's project `default`, and its control plane."""
    file = parse_config(file_config(admin_keys=[ADMIN_KEY]), env={})
    sync_file(store, file)
    control = ControlPlane(store, file, lookups=ProjectLookups, feed=HeldFeed())
    app = GatewayApp(
        control=control, admin_hashes=control.admin_key_hashes, admin=control, status=control.status
    )
    with bind_socket("127.0.0.1", 0) as sock:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        async with (
            serving(app, sock, ServerLimits(shutdown_grace=0.0)),
            httpx.AsyncClient(base_url=url, timeout=10) as client,
        ):
            yield client, control


def _file_project_id(store: Store) -> str:
    found: str = next(row["id"] for row in service.list_projects(store) if row["name"] == "default")
    return found


async def test_the_file_project_cannot_be_deleted_and_revocations_go_on(store: Store) -> None:
    """DELETE and a rename of the file's project are 409 FILE_MANAGED; a key created and
    revoked afterwards is served, then refused."""
    async with _gateway(store) as (client, _):
        base = f"/admin/v1/projects/{_file_project_id(store)}"
        deleted = await client.delete(base, headers=ADMIN)
        assert deleted.status_code == 409, deleted.text
        assert deleted.json()["error"]["code"] == "FILE_MANAGED"
        renamed = await client.patch(base, json={"name": "other"}, headers=ADMIN)
        assert renamed.status_code == 409, renamed.text
        assert renamed.json()["error"]["code"] == "FILE_MANAGED"
        created = await client.post(f"{base}/keys", json={"name": "app"}, headers=ADMIN)
        assert created.status_code == 201, created.text
        caller = {"authorization": f"Bearer {created.json()['key']}"}
        assert (await client.post("/v1/chat/completions", json=CHAT, headers=caller)).is_success
        revoked = await client.post(f"{base}/keys/{created.json()['id']}/revoke", headers=ADMIN)
        assert revoked.status_code == 200, revoked.text
        refused = await client.post("/v1/chat/completions", json=CHAT, headers=caller)
        assert refused.status_code == 401, refused.text


async def test_another_project_can_still_be_deleted(store: Store) -> None:
    """The guard names the file's project only: a project of the API's own deletes (204)."""
    async with _gateway(store) as (client, _):
        made = await client.post("/admin/v1/projects", json={"name": "team"}, headers=ADMIN)
        assert made.status_code == 201, made.text
        deleted = await client.delete(f"/admin/v1/projects/{made.json()['id']}", headers=ADMIN)
        assert deleted.status_code == 204, deleted.text


async def test_readyz_covers_a_project_made_through_the_admin_api(store: Store) -> None:
    """With a project `team` of two routes made through the API, `/readyz` counts three
    routes, and `served` lists `default` (1 route) and `team` (2); the fields it had keep
    their meaning (`project` the file's, `projects` how many)."""
    async with _gateway(store) as (client, _):
        before = (await client.get("/readyz")).json()
        assert (before["routes"], list(before["served"])) == (1, ["default"])
        made = await client.post("/admin/v1/projects", json={"name": "team"}, headers=ADMIN)
        assert made.status_code == 201, made.text
        base = f"/admin/v1/projects/{made.json()['id']}"
        provider = await client.post(
            f"{base}/providers", json={"name": "vendor", "kind": "mock"}, headers=ADMIN
        )
        assert provider.status_code == 201, provider.text
        for name in ("fast", "slow"):
            route = {"name": name, "targets": [{"provider": "vendor"}]}
            reply = await client.post(f"{base}/routes", json=route, headers=ADMIN)
            assert reply.status_code == 201, reply.text
        ready = (await client.get("/readyz")).json()
    assert (ready["project"], ready["projects"], ready["routes"]) == ("default", 2, 3)
    assert {name: part["routes"] for name, part in ready["served"].items()} == {
        "default": 1,
        "team": 2,
    }
    assert ready["served"]["team"]["health"] == {"shared": False}
    assert ready["health"] == {"shared": False}


async def test_a_store_version_that_cannot_be_served_is_an_alarm(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """With the file's project gone from the store, its version is refused with one ERROR line
    (however many refreshes), `/readyz` says so and `turnout_store_version_refused` holds it;
    once a newer version serves again, both clear."""
    async with _gateway(store) as (client, control):
        service.delete_project(store, _file_project_id(store))
        refused = service.current_version(store)
        with caplog.at_level(logging.ERROR, logger="turnout.gateway"):
            assert await control.refresh() is False
            assert await control.refresh() is False
        lines = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
        assert len(lines) == 1, lines
        assert f"store version {refused} is refused" in lines[0]
        body = (await client.get("/readyz")).json()
        assert body["status"] == "degraded"
        assert body["refused_version"]["version"] == refused
        assert "not in the store" in body["refused_version"]["reason"]
        assert (
            f"turnout_store_version_refused {float(refused)}" in (await client.get("/metrics")).text
        )
        sync_file(store, control.file)
        assert await control.refresh() is True
        body = (await client.get("/readyz")).json()
        assert (body["status"], body["refused_version"]) == ("ready", None)
        assert "turnout_store_version_refused 0.0" in (await client.get("/metrics")).text
