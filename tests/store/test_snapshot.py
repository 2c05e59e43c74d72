"""The serving snapshot of the store: API objects in the file's shapes, ids, revoked keys."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from turnout.errors import SecretKeyMissing
from turnout.store import SecretBox, Store, migrate, open_store
from turnout.store import service as svc
from turnout.store.snapshot import load_snapshot

from .conftest import SECRET_KEY

if TYPE_CHECKING:
    from pathlib import Path

ROUTE = {"name": "main", "targets": [{"provider": "openai", "model": "gpt-4o"}]}
PROVIDER = {"name": "openai", "kind": "openai", "api_key": "sk-snapshot-secret"}


def test_snapshot_holds_api_objects_in_file_shapes(store: Store) -> None:
    """Providers come back with their decrypted key, routes and the default route by name."""
    project = svc.create_project(store, {"name": "acme"})
    provider = svc.create_object(store, "provider", project["id"], PROVIDER)
    route = svc.create_object(store, "route", project["id"], ROUTE)
    svc.update_project(store, project["id"], {"default_model_route_id": route["id"]})
    snapshot = load_snapshot(store)
    acme = snapshot.projects["acme"]
    assert snapshot.version == svc.current_version(store)
    assert acme.id == project["id"]
    assert acme.default_route == "main"
    assert acme.providers[0].api_key == "sk-snapshot-secret"
    assert [r.name for r in acme.routes] == ["main"]
    assert acme.ids["provider", "openai"] == provider["id"]
    assert acme.ids["route", "main"] == route["id"]


def test_revoked_keys_are_left_out(store: Store) -> None:
    """A revoked key is not in the snapshot; a live one is there by its hash."""
    project_id = svc.create_project(store, {"name": "acme"})["id"]
    svc.create_key(store, project_id, {"name": "kept"})
    gone, _ = svc.create_key(store, project_id, {"name": "gone"})
    svc.revoke_key(store, project_id, gone["id"])
    keys = load_snapshot(store).projects["acme"].keys
    assert [k.name for k in keys] == ["kept"]
    assert str(keys[0].hash).startswith("sha256:")


def test_snapshot_needs_the_secret_key_for_stored_secrets(tmp_path: Path) -> None:
    """A store whose provider secret cannot be decrypted fails loudly, not with a blank key."""
    url = f"sqlite:///{tmp_path}/turnout.db"
    keyed = open_store(url, secrets=SecretBox(SECRET_KEY))
    migrate(keyed)
    project_id = svc.create_project(keyed, {"name": "acme"})["id"]
    svc.create_object(keyed, "provider", project_id, PROVIDER)
    keyed.close()
    keyless = open_store(url, secrets=SecretBox(None))
    with pytest.raises(SecretKeyMissing):
        load_snapshot(keyless)
    keyless.close()
