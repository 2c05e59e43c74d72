"""Consumers in the store on both backends: CRUD, ids by kind, the assignment rules, PATCH."""

from __future__ import annotations

from typing import Any

import pytest

from turnout.errors import ConfigError, NameTaken, ObjectNotFound, ProjectDefaultRouteInherited
from turnout.store import Store
from turnout.store import service as svc

PROVIDER: dict[str, Any] = {"name": "openai", "kind": "openai", "api_key": "sk-consumers"}
ROUTE: dict[str, Any] = {"name": "main", "targets": [{"provider": "openai", "model": "gpt-4o"}]}


def _setup(store: Store) -> tuple[str, str, str]:
    """A project with a provider and a route; their ids."""
    project_id = svc.create_project(store, {"name": "acme"})["id"]
    provider_id = svc.create_object(store, "provider", project_id, PROVIDER)["id"]
    route_id = svc.create_object(store, "route", project_id, ROUTE)["id"]
    return project_id, provider_id, route_id


def _refused(call: Any, *args: Any) -> list[tuple[str, str]]:
    """The `(field, message)` problems of a write refused with 400 VALIDATION_FAILED."""
    with pytest.raises(ConfigError) as caught:
        call(*args)
    assert (caught.value.status, caught.value.code) == (400, "VALIDATION_FAILED")
    return list(caught.value.errors)


def test_consumer_crud_ids_by_kind_and_names(store: Store) -> None:
    """Each kind gets its id prefix; references read back by id and name; the file's names
    are accepted in a body; list, patch and delete work; an agent takes its memories along,
    and a project all of its consumers."""
    project_id, provider_id, route_id = _setup(store)
    agent = svc.create_consumer(
        store, project_id, {"name": "bot", "kind": "agent", "model_route_id": route_id}
    )
    assert agent["id"].startswith("agent_")
    assert (agent["model_route_id"], agent["model_route"]) == (route_id, "main")
    chat = svc.create_consumer(
        store, project_id, {"name": "talk", "kind": "chat", "provider": "openai", "model": "m"}
    )
    assert chat["id"].startswith("chat_")
    assert (chat["ai_provider_id"], chat["provider"], chat["model"]) == (provider_id, "openai", "m")
    disc = svc.create_consumer(
        store, project_id, {"name": "d", "kind": "discussion", "ai_provider_id": provider_id}
    )
    memory = svc.create_consumer(
        store, project_id, {"name": "notes", "kind": "memory", "agent_id": agent["id"]}
    )
    assert (disc["id"][:5], memory["id"][:4], memory["agent"]) == ("disc_", "mem_", "bot")
    assert svc.get_consumer(store, project_id, chat["id"]) == chat
    listed = svc.list_consumers(store, project_id)
    assert [c["id"] for c in listed] == [agent["id"], chat["id"], disc["id"], memory["id"]]
    assert [c["id"] for c in svc.list_consumers(store, project_id, kind="memory")] == [memory["id"]]
    renamed = svc.update_consumer(store, project_id, chat["id"], {"name": "chatter"})
    assert (renamed["name"], renamed["ai_provider_id"]) == ("chatter", provider_id)
    svc.delete_consumer(store, project_id, agent["id"])
    with pytest.raises(ObjectNotFound):
        svc.get_consumer(store, project_id, memory["id"])
    with pytest.raises(NameTaken):
        svc.create_consumer(
            store, project_id, {"name": "CHATTER", "kind": "discussion", "provider": "openai"}
        )
    svc.delete_project(store, project_id)  # consumers with references go with their project
    assert svc.list_projects(store) == []


def test_the_assignment_rules_are_refused_with_400(store: Store) -> None:
    """Both set, a chat's route, a model with a route (named or inherited), nothing and no
    default, a changed kind and a disabled route are each refused naming the field."""
    project_id, provider_id, route_id = _setup(store)
    create = svc.create_consumer
    both = {"name": "a", "kind": "agent", "model_route_id": route_id, "ai_provider_id": provider_id}
    assert [f for f, _ in _refused(create, store, project_id, both)] == ["ai_provider_id"]
    chat_route = {"name": "c", "kind": "chat", "model_route_id": route_id}
    assert [f for f, _ in _refused(create, store, project_id, chat_route)] == ["model_route_id"]
    model_route = {"name": "a", "kind": "agent", "model_route_id": route_id, "model": "m"}
    assert [f for f, _ in _refused(create, store, project_id, model_route)] == ["model"]
    neither = {"name": "c", "kind": "chat"}
    assert _refused(create, store, project_id, neither) == [
        (
            "ai_provider_id",
            (
                "a chat needs a route or a provider pin: set ai_provider_id, or give the project a "
                "default route to inherit"
            ),
        )
    ]
    svc.update_project(store, project_id, {"default_model_route_id": route_id})
    chat = create(store, project_id, neither)  # now it inherits the default
    message = _refused(svc.update_consumer, store, project_id, chat["id"], {"model": "m"})[0][1]
    assert message.endswith(f"this consumer has the project's default route {route_id!r}")
    kind = _refused(svc.update_consumer, store, project_id, chat["id"], {"kind": "agent"})
    assert kind == [("kind", "the kind of a consumer cannot change")]
    off = svc.create_object(store, "route", project_id, ROUTE | {"name": "off", "enabled": False})
    disabled = {"name": "a", "kind": "agent", "model_route_id": off["id"]}
    assert _refused(create, store, project_id, disabled) == [
        ("model_route_id", "route 'off' is disabled; assign an enabled route")
    ]
    assert svc.list_consumers(store, project_id) == [chat]


def test_references_must_be_in_the_same_project(store: Store) -> None:
    """A route or provider id of another project is a validation error naming the field; an
    id that exists nowhere is 404 naming it."""
    project_id, provider_id, route_id = _setup(store)
    other = svc.create_project(store, {"name": "other"})["id"]
    for field, value in (("model_route_id", route_id), ("ai_provider_id", provider_id)):
        with pytest.raises(ConfigError, match=f"^invalid consumer: {field}: ") as refused:
            svc.create_consumer(store, other, {"name": "a", "kind": "agent", field: value})
        assert [path for path, _ in refused.value.errors] == [field]
        with pytest.raises(ObjectNotFound, match=f"^{field}: ") as caught:
            svc.create_consumer(store, other, {"name": "a", "kind": "agent", field: "x_nowhere"})
        assert caught.value.meta == {"field": field}
    with pytest.raises(ObjectNotFound, match=r"^agent_id: no agent 'agent_missing'"):
        svc.create_consumer(
            store,
            project_id,
            {
                "name": "m",
                "kind": "memory",
                "ai_provider_id": provider_id,
                "agent_id": "agent_missing",
            },
        )
    with pytest.raises(ObjectNotFound, match=r"^provider: no provider named 'nope'"):
        svc.create_consumer(store, project_id, {"name": "c", "kind": "chat", "provider": "nope"})


def test_one_patch_clears_a_pin_and_sets_a_route(store: Store) -> None:
    """An agent pinned to a provider and model moves to a route in one PATCH; the pin's model
    goes with the pin."""
    project_id, provider_id, route_id = _setup(store)
    agent = svc.create_consumer(
        store,
        project_id,
        {"name": "bot", "kind": "agent", "ai_provider_id": provider_id, "model": "gpt-4o"},
    )
    moved = svc.update_consumer(
        store, project_id, agent["id"], {"ai_provider_id": None, "model_route_id": route_id}
    )
    assert (moved["model_route_id"], moved["ai_provider_id"], moved["model"]) == (
        route_id,
        None,
        None,
    )
    back = svc.update_consumer(
        store, project_id, agent["id"], {"provider": "openai", "model_route": None}
    )
    assert (back["model_route_id"], back["ai_provider_id"]) == (None, provider_id)


def test_a_memory_follows_its_agent_and_counts_as_inheriting(store: Store) -> None:
    """A memory needs no assignment while its agent has one; while both inherit the project
    default, clearing the default counts both."""
    project_id, provider_id, route_id = _setup(store)
    agent = svc.create_consumer(
        store, project_id, {"name": "bot", "kind": "agent", "ai_provider_id": provider_id}
    )
    memory = svc.create_consumer(
        store, project_id, {"name": "notes", "kind": "memory", "agent_id": agent["id"]}
    )
    assert memory["agent_id"] == agent["id"]
    lone = {"name": "lone", "kind": "memory"}
    assert [f for f, _ in _refused(svc.create_consumer, store, project_id, lone)] == [
        "ai_provider_id"
    ]
    svc.update_project(store, project_id, {"default_model_route_id": route_id})
    svc.update_consumer(store, project_id, agent["id"], {"ai_provider_id": None})
    with pytest.raises(ProjectDefaultRouteInherited) as caught:
        svc.update_project(store, project_id, {"default_model_route_id": None})
    assert caught.value.meta == {"consumers": {"count": 2, "sample": [agent["id"], memory["id"]]}}
