"""Refusals to pull a referenced object away, file-managed objects, and integrity errors."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from turnout.errors import (
    FileManaged,
    ModelRouteHasDependents,
    ProjectDefaultRouteInherited,
    ProviderHasDependents,
)
from turnout.store import Store
from turnout.store import service as svc
from turnout.store._writes import write
from turnout.store.models import ConfigChange, Consumer, Provider, Route

PROVIDER: dict[str, Any] = {"name": "openai", "kind": "openai", "api_key": "sk-dependents"}
ROUTE: dict[str, Any] = {"name": "main", "targets": [{"provider": "openai", "model": "gpt-4o"}]}


def _setup(store: Store) -> tuple[str, str, str]:
    """A project with a provider and a route; their ids."""
    project_id = svc.create_project(store, {"name": "acme"})["id"]
    provider_id = svc.create_object(store, "provider", project_id, PROVIDER)["id"]
    route_id = svc.create_object(store, "route", project_id, ROUTE)["id"]
    return project_id, provider_id, route_id


def _changes(store: Store) -> int:
    with store.sessions() as session:
        return session.scalars(select(func.count()).select_from(ConfigChange)).one()


def test_a_referenced_route_is_neither_deleted_nor_disabled(store: Store) -> None:
    """Consumers, the project default, a grant, a key and another route's fallbacks keep a
    route: 409 with every kind counted and up to 5 ids sampled, and nothing changes."""
    project_id, _, route_id = _setup(store)
    agents = [
        svc.create_consumer(
            store, project_id, {"name": f"bot{i}", "kind": "agent", "model_route_id": route_id}
        )["id"]
        for i in range(7)
    ]
    svc.update_project(store, project_id, {"default_model_route_id": route_id})
    binding = svc.create_object(
        store,
        "binding",
        project_id,
        {
            "name": "b",
            "subjects": [{"everyone": True}],
            "grants": [{"models": "*", "route": "main"}],
        },
    )
    key, _ = svc.create_key(store, project_id, {"name": "app", "routes": ["main"]})
    backup = svc.create_object(
        store, "route", project_id, ROUTE | {"name": "backup", "fallbacks": {"general": ["main"]}}
    )
    version, changes = svc.current_version(store), _changes(store)
    with pytest.raises(ModelRouteHasDependents) as deleting:
        svc.delete_object(store, "route", project_id, route_id)
    assert (deleting.value.status, deleting.value.code) == (409, "MODEL_ROUTE_HAS_DEPENDENTS")
    assert deleting.value.meta == {
        "consumers": {"count": 7, "sample": agents[:5]},
        "projects": {"count": 1, "sample": [project_id]},
        "bindings": {"count": 1, "sample": [binding["id"]]},
        "keys": {"count": 1, "sample": [key["id"]]},
        "routes": {"count": 1, "sample": [backup["id"]]},
    }
    assert deleting.value.message == (
        "cannot delete route 'main': 7 consumers, 1 project default, 1 binding, 1 key and "
        "1 route reference it; point them at another route first"
    )
    with pytest.raises(ModelRouteHasDependents, match=r"^cannot disable route 'main'") as disabling:
        svc.update_object(store, "route", project_id, route_id, {"enabled": False})
    assert disabling.value.meta == deleting.value.meta
    assert (svc.current_version(store), _changes(store)) == (version, changes)
    # Renaming or retuning a referenced route stays allowed.
    svc.update_object(store, "route", project_id, route_id, {"max_attempts": 3})


def test_a_provider_in_use_is_not_deleted_until_free(store: Store) -> None:
    """A route target and a consumer pin keep a provider (409); once they are gone, the
    route, then the provider, delete cleanly (no foreign-key error, no false name clash)."""
    project_id, provider_id, route_id = _setup(store)
    chat = svc.create_consumer(
        store, project_id, {"name": "talk", "kind": "chat", "ai_provider_id": provider_id}
    )
    with pytest.raises(ProviderHasDependents) as caught:
        svc.delete_object(store, "provider", project_id, provider_id)
    assert (caught.value.status, caught.value.code) == (409, "PROVIDER_HAS_DEPENDENTS")
    assert caught.value.meta == {
        "routes": {"count": 1, "sample": [route_id]},
        "consumers": {"count": 1, "sample": [chat["id"]]},
    }
    svc.delete_consumer(store, project_id, chat["id"])
    svc.delete_object(store, "route", project_id, route_id)
    svc.delete_object(store, "provider", project_id, provider_id)
    assert svc.list_objects(store, "provider", project_id) == []


def test_clearing_an_inherited_default_is_refused_but_repointing_is_not(store: Store) -> None:
    """With consumers inheriting it, the default can move to another route but not be
    cleared (409 with consumers counted); once they have assignments, it clears."""
    project_id, provider_id, route_id = _setup(store)
    other = svc.create_object(store, "route", project_id, ROUTE | {"name": "other"})["id"]
    svc.update_project(store, project_id, {"default_model_route_id": route_id})
    chats = [
        svc.create_consumer(store, project_id, {"name": f"c{i}", "kind": "chat"})["id"]
        for i in range(6)
    ]
    svc.create_consumer(  # pinned: does not inherit
        store, project_id, {"name": "pinned", "kind": "discussion", "ai_provider_id": provider_id}
    )
    assert svc.update_project(store, project_id, {"default_model_route_id": other})[
        "default_model_route_id"
    ] == (other)
    with pytest.raises(ProjectDefaultRouteInherited) as caught:
        svc.update_project(store, project_id, {"default_model_route_id": None})
    assert (caught.value.status, caught.value.code) == (409, "PROJECT_DEFAULT_ROUTE_INHERITED")
    assert caught.value.meta == {"consumers": {"count": 6, "sample": chats[:5]}}
    for chat_id in chats:
        svc.update_consumer(store, project_id, chat_id, {"ai_provider_id": provider_id})
    cleared = svc.update_project(store, project_id, {"default_model_route_id": None})
    assert cleared["default_model_route_id"] is None


def test_file_managed_objects_are_read_only_without_allow_file(store: Store) -> None:
    """A provider or route from the config file refuses updates and deletes with 409
    FILE_MANAGED naming it; the file's sync passes `allow_file` and may."""
    project_id, provider_id, route_id = _setup(store)
    with store.sessions.begin() as session:
        session.get_one(Provider, provider_id).source = "file"
        session.get_one(Route, route_id).source = "file"
    with pytest.raises(FileManaged) as caught:
        svc.update_object(store, "route", project_id, route_id, {"max_attempts": 2})
    assert (caught.value.status, caught.value.code) == (409, "FILE_MANAGED")
    assert caught.value.message.startswith(f"route 'main' ({route_id}) comes from the config file")
    with pytest.raises(FileManaged, match=r"^provider 'openai'"):
        svc.delete_object(store, "provider", project_id, provider_id)
    patched = svc.update_object(
        store, "route", project_id, route_id, {"max_attempts": 2}, allow_file=True
    )
    assert patched["max_attempts"] == 2
    svc.delete_object(store, "route", project_id, route_id, allow_file=True)
    svc.delete_object(store, "provider", project_id, provider_id, allow_file=True)


def test_an_integrity_error_that_is_no_name_clash_is_not_name_taken(store: Store) -> None:
    """A foreign-key failure goes up as the database's error, never as NAME_TAKEN."""
    project_id, _, _ = _setup(store)
    consumer = Consumer(
        id="agent_x", project_id=project_id, name="x", kind="agent", model_route_id="route_gone"
    )
    with pytest.raises(IntegrityError), write(store) as session:
        session.add(consumer)
