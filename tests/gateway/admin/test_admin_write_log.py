"""Every admin write has one INFO line naming the admin key's id, the method, the collection,
the project, the object's id and name and the answer's status: a created key's plaintext and
the admin key never reach it, reads and the routing test have none."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import httpx

from tests.gateway.admin._support import HEADERS, StoreContext, file_config, new_project, running

if TYPE_CHECKING:
    import pytest

    from turnout.store import Store


def _writes(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [
        dict(r.fields)  # type: ignore[attr-defined]
        for r in caplog.records
        if r.name == "turnout.admin" and r.getMessage() == "admin_write"
    ]


async def test_each_write_has_one_line_with_who_what_and_status(
    module_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """Create a project and a key, patch and revoke the key, a refused create (409) and a
    delete of a missing key (404): one line each, in order; the GETs add none."""
    context = StoreContext(module_store, file_config())
    caplog.set_level(logging.INFO, logger="turnout.admin")
    async with (
        running(context) as url,
        httpx.AsyncClient(base_url=url, headers=HEADERS) as admin,
    ):
        pid = await new_project(admin)
        keys = f"/admin/v1/projects/{pid}/keys"
        created = await admin.post(keys, json={"name": "svc"})
        assert created.status_code == 201
        kid, plaintext = created.json()["id"], created.json()["key"]
        assert (await admin.patch(f"{keys}/{kid}", json={"teams": ["ops"]})).status_code == 200
        assert (await admin.post(f"{keys}/{kid}/revoke")).status_code == 200
        assert (await admin.post(keys, json={"name": "svc"})).status_code == 409
        assert (await admin.delete(f"{keys}/key_missing")).status_code == 404
        assert (await admin.get(keys)).status_code == 200
    admin_id = _writes(caplog)[0]["admin"]
    assert admin_id.startswith("adm_")
    rows = [
        (w["method"], w["kind"], w["project"], w["id"], w["name"], w["status"])
        for w in _writes(caplog)
    ]
    assert rows == [
        ("POST", "projects", pid, pid, rows[0][4], 201),
        ("POST", "keys", pid, kid, "svc", 201),
        ("PATCH", "keys", pid, kid, "svc", 200),
        ("POST", "keys", pid, kid, "svc", 200),
        ("POST", "keys", pid, None, "svc", 409),
        ("DELETE", "keys", pid, "key_missing", None, 404),
    ]
    assert rows[0][4].startswith("p-")
    assert {w["admin"] for w in _writes(caplog)} == {admin_id}
    written = str(_writes(caplog))
    assert plaintext not in written
    assert HEADERS["authorization"].removeprefix("Bearer ") not in written
