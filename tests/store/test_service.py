"""The store's service functions on both backends: CRUD, merge-patch, names, secrets, audit."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select

from turnout.errors import ConfigError, NameTaken, ObjectNotFound, SecretKeyMissing
from turnout.store import SecretBox, Store
from turnout.store import service as svc
from turnout.store.models import ConfigChange, Key, Provider

ROUTE: dict[str, Any] = {"name": "main", "targets": [{"provider": "openai", "model": "gpt-4o"}]}
PROVIDER: dict[str, Any] = {"name": "openai", "kind": "openai", "api_key": "sk-very-secret-1234"}


def _project(store: Store) -> str:
    return str(svc.create_project(store, {"name": "acme"})["id"])


def _changes(store: Store) -> list[ConfigChange]:
    with store.sessions() as session:
        return list(session.scalars(select(ConfigChange).order_by(ConfigChange.id)))


def test_project_crud_and_default_route(store: Store) -> None:
    """A project is created, read, listed, patched to a default route of its own, and deleted."""
    project = svc.create_project(store, {"name": "acme"})
    assert project["id"].startswith("proj_")
    route = svc.create_object(store, "route", project["id"], ROUTE)
    assert route["id"].startswith("route_")
    patched = svc.update_project(store, project["id"], {"default_model_route_id": route["id"]})
    assert patched["default_model_route_id"] == route["id"]
    assert svc.get_project(store, project["id"]) == patched
    assert [p["id"] for p in svc.list_projects(store)] == [project["id"]]
    svc.delete_project(store, project["id"])
    with pytest.raises(ObjectNotFound):
        svc.get_object(store, "route", project["id"], route["id"])


def test_default_route_must_be_a_route_of_the_project(store: Store) -> None:
    """A project default naming no route of the project is refused with 404."""
    project_id = _project(store)
    with pytest.raises(ObjectNotFound):
        svc.update_project(store, project_id, {"default_model_route_id": "route_missing"})


def test_merge_patch_absent_unchanged_null_clears(store: Store) -> None:
    """An update keeps absent fields, clears null ones and validates the merged object."""
    project_id = _project(store)
    route = svc.create_object(store, "route", project_id, ROUTE | {"models": ["gpt-*"]})
    patched = svc.update_object(store, "route", project_id, route["id"], {"models": None})
    assert "models" not in patched
    assert patched["targets"] == ROUTE["targets"]
    patched = svc.update_object(store, "route", project_id, route["id"], {"enabled": False})
    assert patched["enabled"] is False
    assert patched["created_at"] == route["created_at"]
    with pytest.raises(ConfigError, match="targets"):
        svc.update_object(store, "route", project_id, route["id"], {"targets": []})


def test_a_patch_clearing_an_unknown_field_is_refused(store: Store) -> None:
    """A merge-patch naming a field the object lacks (even to clear it, or a key's own key)
    is refused naming the field, not taken as a no-op."""
    project_id = _project(store)
    route = svc.create_object(store, "route", project_id, ROUTE)
    key, _ = svc.create_key(store, project_id, {"name": "k"})
    with pytest.raises(ConfigError, match="modles: unknown field"):
        svc.update_object(store, "route", project_id, route["id"], {"modles": None})
    with pytest.raises(ConfigError, match="key: unknown field"):
        svc.update_key(store, project_id, key["id"], {"key": "sk-other-0123456789"})
    with pytest.raises(ConfigError, match="nmae: unknown field"):
        svc.update_project(store, project_id, {"nmae": None})


def test_routes_and_providers_share_one_name_space(store: Store) -> None:
    """A route may not take a provider's name (ignoring case), nor two routes one name."""
    project_id = _project(store)
    svc.create_object(store, "provider", project_id, PROVIDER)
    with pytest.raises(NameTaken) as caught:
        svc.create_object(store, "route", project_id, ROUTE | {"name": "OpenAI"})
    assert (caught.value.status, caught.value.code) == (409, "NAME_TAKEN")
    route = svc.create_object(store, "route", project_id, ROUTE)
    with pytest.raises(NameTaken):
        svc.create_object(store, "route", project_id, ROUTE)
    with pytest.raises(NameTaken):
        svc.update_object(store, "route", project_id, route["id"], {"name": "openai"})
    other = _other_project(store)
    assert svc.create_object(store, "route", other, ROUTE)["name"] == "main"


def _other_project(store: Store) -> str:
    return str(svc.create_project(store, {"name": "other"})["id"])


def test_unknown_object_is_not_found(store: Store) -> None:
    """Reading, patching or deleting an unknown id is 404 NOT_FOUND, in any project."""
    project_id = _project(store)
    with pytest.raises(ObjectNotFound) as caught:
        svc.get_object(store, "policy", project_id, "pol_missing")
    assert (caught.value.status, caught.value.code) == (404, "NOT_FOUND")
    route = svc.create_object(store, "route", project_id, ROUTE)
    with pytest.raises(ObjectNotFound):
        svc.delete_object(store, "route", _other_project(store), route["id"])


def test_provider_secret_is_encrypted_at_rest(store: Store) -> None:
    """The raw secret column never holds the plaintext; reads mask it; the owner decrypts it."""
    project_id = _project(store)
    provider = svc.create_object(store, "provider", project_id, PROVIDER)
    assert provider["api_key"] == "********"
    with store.sessions() as session:
        raw = session.scalars(select(Provider.secret)).one()
        settings = session.scalars(select(Provider.settings)).one()
    assert raw is not None
    assert b"sk-very-secret" not in raw
    assert "sk-very-secret" not in str(settings)
    assert svc.provider_secret(store, project_id, provider["id"]) == PROVIDER["api_key"]
    svc.update_object(store, "provider", project_id, provider["id"], {"headers": {"x": "1"}})
    assert svc.provider_secret(store, project_id, provider["id"]) == PROVIDER["api_key"]
    svc.update_object(store, "provider", project_id, provider["id"], {"api_key": None})
    assert svc.provider_secret(store, project_id, provider["id"]) is None


def test_missing_secret_key_names_the_variable(store: Store) -> None:
    """Storing or reading a secret without TURNOUT_SECRET_KEY fails naming the variable."""
    project_id = _project(store)
    provider = svc.create_object(store, "provider", project_id, PROVIDER)
    keyless = Store(store.engine, store.sessions, SecretBox(None))
    with pytest.raises(SecretKeyMissing, match="TURNOUT_SECRET_KEY"):
        svc.provider_secret(keyless, project_id, provider["id"])
    with pytest.raises(SecretKeyMissing, match="TURNOUT_SECRET_KEY"):
        svc.create_object(keyless, "provider", project_id, PROVIDER | {"name": "b"})
    wrong = Store(store.engine, store.sessions, SecretBox("another passphrase"))
    with pytest.raises(SecretKeyMissing, match="another key"):
        svc.provider_secret(wrong, project_id, provider["id"])


def test_key_plaintext_is_returned_once_and_never_stored(store: Store) -> None:
    """A created key's plaintext is returned once; the store keeps only its hash and prefix."""
    project_id = _project(store)
    key, plaintext = svc.create_key(store, project_id, {"name": "ci", "user": "ana"})
    assert key["id"].startswith("key_")
    assert plaintext.startswith("tk_")
    assert key["user"] == "ana"
    with store.sessions() as session:
        row = session.scalars(select(Key)).one()
    assert plaintext not in repr(vars(row))
    assert row.key_hash.startswith("sha256:")
    assert plaintext not in str([c.after for c in _changes(store)])
    revoked = svc.revoke_key(store, project_id, key["id"])
    assert revoked["revoked_at"] is not None
    assert svc.update_key(store, project_id, key["id"], {"user": None})["revoked_at"]


def test_every_write_is_audited_with_secrets_masked(store: Store) -> None:
    """Each write leaves one config_changes row, in version order, with no secret in it."""
    project_id = _project(store)
    provider = svc.create_object(store, "provider", project_id, PROVIDER, actor="adm_1")
    svc.update_object(store, "provider", project_id, provider["id"], {"api_key": "sk-new-5678"})
    svc.delete_object(store, "provider", project_id, provider["id"])
    changes = _changes(store)
    assert [(c.action, c.kind) for c in changes] == [
        ("create", "project"),
        ("create", "provider"),
        ("update", "provider"),
        ("delete", "provider"),
    ]
    assert [c.version for c in changes] == [1, 2, 3, 4]
    assert svc.current_version(store) == 4
    assert changes[1].admin_key_id == "adm_1"
    text = str([(c.before, c.after) for c in changes])
    assert "sk-very-secret" not in text
    assert "sk-new" not in text


def test_refused_write_changes_nothing(store: Store) -> None:
    """A refused write leaves no audit row and does not bump the version."""
    project_id = _project(store)
    with pytest.raises(ConfigError):
        svc.create_object(store, "binding", project_id, {"name": "b", "subjects": []})
    assert svc.current_version(store) == 1
    assert len(_changes(store)) == 1
