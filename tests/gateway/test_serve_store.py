"""Serving from the store: keys of every project in one lookup, a write served after
`committed()`, revoked keys refused, stored ids in the routing record, a failing store that
never fails serving, and health carried over a reload."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

import pytest

from tests.gateway._app_support import client_of
from tests.gateway._store_support import chat, control_of, file_config, started
from turnout.access.keys import hash_key
from turnout.errors import ConfigError
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.lifespan import Lifespan
from turnout.store import open_store
from turnout.store import service as svc
from turnout.store.snapshot import load_snapshot

if TYPE_CHECKING:
    from turnout.gateway.runtime.live import Runtime
    from turnout.schema import FileConfig
    from turnout.store import Store

FILE_KEY = {"authorization": "Bearer file-key-0123456789"}
ACME_ROUTE = {"name": "acme-route", "models": ["acme-model"], "targets": [{"provider": "am"}]}


class _AdminSeam(Protocol):
    """What the admin API reaches serving through (it declares the same shape)."""

    store: Store

    def admin_key_hashes(self) -> frozenset[str]: ...

    def file_config(self) -> FileConfig | None: ...

    def runtime_for(self, project_name: str) -> Runtime | None: ...

    async def committed(self) -> None: ...


def _acme(store: Store) -> str:
    project = svc.create_project(store, {"name": "acme"})
    svc.create_object(store, "provider", project["id"], {"name": "am", "kind": "mock"})
    svc.create_object(store, "route", project["id"], ACME_ROUTE)
    return str(project["id"])


async def test_a_key_created_in_the_store_works_after_commit(store: Store) -> None:
    """A key the store gains is served by its project's runtime once `committed()` returns."""
    control = control_of(store, file_config())
    project_id = _acme(store)
    async with started(control) as app, client_of(app) as client:
        _, plaintext = svc.create_key(store, project_id, {"name": "acme-app"})
        headers = {"authorization": f"Bearer {plaintext}"}
        before = await client.post("/v1/chat/completions", json=chat("acme-model"), headers=headers)
        await control.committed()
        after = await client.post("/v1/chat/completions", json=chat("acme-model"), headers=headers)
        file_caller = await client.post(
            "/v1/chat/completions", json=chat("acme-model"), headers=FILE_KEY
        )
    assert before.status_code == 401
    assert after.status_code == 200
    assert after.headers["x-turnout-route"] == "acme-route"
    assert file_caller.status_code == 503  # the file's project has no such route


async def test_a_revoked_key_is_refused_on_the_next_request(store: Store) -> None:
    """Revoking a stored key makes the very next request after the reload a 401."""
    control = control_of(store, file_config())
    project_id = _acme(store)
    key, plaintext = svc.create_key(store, project_id, {"name": "acme-app"})
    headers = {"authorization": f"Bearer {plaintext}"}
    async with started(control) as app, client_of(app) as client:
        served = await client.post("/v1/chat/completions", json=chat("acme-model"), headers=headers)
        svc.revoke_key(store, project_id, key["id"])
        await control.committed()
        refused = await client.post(
            "/v1/chat/completions", json=chat("acme-model"), headers=headers
        )
    assert served.status_code == 200
    assert refused.status_code == 401
    assert refused.json()["error"]["code"] == "invalid_api_key"


@pytest.mark.parametrize("empty_store", ["sqlite"], indirect=True)
async def test_the_routing_record_carries_stored_ids(store: Store) -> None:
    """`route_id` and `served_provider_id` are the ids the store gave the file's objects."""
    control = control_of(store, file_config())
    ids = load_snapshot(store).projects["default"].ids
    async with started(control) as app, client_of(app) as client:
        reply = await client.post("/v1/chat/completions", json=chat(), headers=FILE_KEY)
    routing = reply.json()["routing"]
    assert routing["route_id"] == ids["route", "main"]
    assert routing["route_id"].startswith("route_")
    assert routing["served_provider_id"] == ids["provider", "m"]
    assert routing["served_provider_id"].startswith("aip_")


@pytest.mark.parametrize("empty_store", ["sqlite"], indirect=True)
async def test_readyz_shows_the_config_version(store: Store) -> None:
    """`/readyz` names the store version being served, and follows a committed write."""
    control = control_of(store, file_config())
    async with started(control) as app, client_of(app) as client:
        first = (await client.get("/readyz")).json()
        _acme(store)
        await control.committed()
        second = (await client.get("/readyz")).json()
    assert first["config_version"] == load_snapshot(store).version - 3
    assert second["config_version"] == svc.current_version(store)
    assert second["projects"] == 2


async def test_an_unchanged_project_keeps_its_runtime_and_a_changed_one_its_health(
    store: Store,
) -> None:
    """A write to one project leaves another's runtime as it was; a rebuilt runtime keeps the
    health registry, so breakers and cooldowns survive the reload."""
    control = control_of(store, file_config())
    project_id = _acme(store)
    async with started(control):
        before = control.served
        svc.create_key(store, project_id, {"name": "acme-app"})
        await control.committed()
        after = control.served
    assert after.runtimes["default"] is before.runtimes["default"]
    assert after.runtimes["acme"] is not before.runtimes["acme"]
    assert after.runtimes["acme"].health is before.runtimes["acme"].health


async def test_a_failing_store_never_fails_serving(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """While the store cannot be read, refreshes keep the last snapshot, requests are served,
    and one WARNING says so per outage; the store's return is said once too."""
    control = control_of(store, file_config())
    async with started(control) as app, client_of(app) as client:
        healthy = control.store
        control.store = open_store("postgresql://turnout@127.0.0.1:1/nothing")
        with caplog.at_level(logging.INFO, logger="turnout.gateway"):
            assert await control.refresh() is False
            await control.committed()
            served = await client.post("/v1/chat/completions", json=chat(), headers=FILE_KEY)
            control.store.close()
            control.store = healthy
            await control.refresh()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert served.status_code == 200
    assert len(warnings) == 1
    assert "the store cannot be read" in warnings[0].getMessage()
    assert any("the store answers again" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("empty_store", ["sqlite"], indirect=True)
def test_the_control_plane_is_the_admin_apis_seam(store: Store) -> None:
    """The control plane has the admin API's shape: admin key hashes, the file, runtimes."""
    control = control_of(store, file_config(admin_keys=["admin-key-0123456789"]))
    seam: _AdminSeam = control
    control.load()
    assert seam.admin_key_hashes() == {hash_key("admin-key-0123456789")}
    assert seam.file_config() is control.file
    assert seam.runtime_for("default") is control.served.primary
    assert seam.runtime_for("elsewhere") is None


@pytest.mark.parametrize("empty_store", ["sqlite"], indirect=True)
def test_the_control_plane_validates_a_write_against_the_file(store: Store) -> None:
    """As a write's hook, a stored route whose model pattern clashes with a file route's is
    refused; one that clashes with nothing is written."""
    control = control_of(store, file_config())
    project_id = load_snapshot(store).projects["default"].id
    route = {"name": "clash", "models": ["x-model"], "targets": [{"provider": "m"}]}
    svc.create_object(store, "route", project_id, route, validate=control.validate)
    bad = {"name": "dup", "models": ["gpt-4o-mini"], "targets": [{"provider": "m"}]}
    with pytest.raises(ConfigError) as caught:
        svc.create_object(store, "route", project_id, bad, validate=control.validate)
    assert "gpt-4o-mini" in str(caught.value)
    assert [r.name for r in load_snapshot(store).projects["default"].routes] == ["clash"]


async def test_the_admin_api_over_the_control_plane_serves_a_new_key_at_once(
    store: Store,
) -> None:
    """A key created through /admin/v1 (the control plane as its context) answers the very
    next chat request; revoked through it, the next one is 401."""
    control = control_of(store, file_config(admin_keys=["admin-key-0123456789"]))
    admin = {"authorization": "Bearer admin-key-0123456789"}
    project_id = load_snapshot(store).projects["default"].id
    app = GatewayApp(control=control, admin=control)
    lifespan = Lifespan(app)
    await lifespan.startup()
    try:
        async with client_of(app) as client:
            base = f"/admin/v1/projects/{project_id}/keys"
            made = (await client.post(base, json={"name": "api-app"}, headers=admin)).json()
            caller = {"authorization": f"Bearer {made['key']}"}
            served = await client.post("/v1/chat/completions", json=chat(), headers=caller)
            await client.post(f"{base}/{made['id']}/revoke", headers=admin)
            refused = await client.post("/v1/chat/completions", json=chat(), headers=caller)
    finally:
        await lifespan.shutdown()
    assert served.status_code == 200
    assert refused.status_code == 401
