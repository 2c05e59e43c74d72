"""A write's validation hook: it sees the project as the write leaves it, and a raise undoes
the whole write."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import func, select

from turnout.config.stored import project_problems
from turnout.errors import ConfigError
from turnout.schema import FileConfig
from turnout.store import service as svc
from turnout.store.models import ConfigChange

if TYPE_CHECKING:
    from collections.abc import Callable

    from turnout.store import Store
    from turnout.store.snapshot import ProjectSnapshot

PROVIDER: dict[str, Any] = {"name": "openai", "kind": "openai", "api_key": "sk-hook"}
ROUTE: dict[str, Any] = {"name": "main", "targets": [{"provider": "openai", "model": "gpt-4o"}]}


def _refuse(snapshot: ProjectSnapshot) -> None:
    raise ConfigError("refused by the hook", [("routes", "no")])


def _state(store: Store, project_id: str) -> tuple[int, int, list[Any], list[Any], list[Any]]:
    """Everything a refused write could have touched."""
    with store.sessions() as session:
        changes = session.scalars(select(func.count()).select_from(ConfigChange)).one()
    return (
        svc.current_version(store),
        changes,
        svc.list_objects(store, "route", project_id),
        svc.list_consumers(store, project_id),
        svc.list_keys(store, project_id),
    )


def test_the_hook_sees_the_project_after_the_write(store: Store) -> None:
    """Creating a consumer shows the hook every consumer with its references as names, and
    the project's default route."""
    project_id = svc.create_project(store, {"name": "acme"})["id"]
    svc.create_object(store, "provider", project_id, PROVIDER)
    route_id = svc.create_object(store, "route", project_id, ROUTE)["id"]
    svc.update_project(store, project_id, {"default_model_route_id": route_id})
    bot = svc.create_consumer(
        store, project_id, {"name": "bot", "kind": "agent", "model_route_id": route_id}
    )
    seen: list[ProjectSnapshot] = []
    body = {"name": "notes", "kind": "memory", "agent_id": bot["id"], "provider": "openai"}
    svc.create_consumer(store, project_id, body | {"model": "gpt-4o"}, validate=seen.append)
    (snapshot,) = seen
    assert (snapshot.id, snapshot.default_route) == (project_id, "main")
    assert [c.model_dump(exclude_defaults=True) for c in snapshot.consumers] == [
        {"name": "bot", "kind": "agent", "model_route": "main"},
        {
            "name": "notes",
            "kind": "memory",
            "provider": "openai",
            "model": "gpt-4o",
            "agent": "bot",
        },
    ]


def test_a_raising_hook_leaves_nothing_written(store: Store) -> None:
    """Every kind of write, refused by its hook, leaves no row, no version bump and no audit
    row behind."""
    project_id = svc.create_project(store, {"name": "acme"})["id"]
    svc.create_object(store, "provider", project_id, PROVIDER)
    route = svc.create_object(store, "route", project_id, ROUTE)
    key, _ = svc.create_key(store, project_id, {"name": "app"})
    agent_body = {"name": "bot", "kind": "agent", "model_route_id": route["id"]}
    agent = svc.create_consumer(store, project_id, agent_body)
    writes: list[Callable[..., Any]] = [
        lambda v: svc.create_object(store, "route", project_id, ROUTE | {"name": "r2"}, validate=v),
        lambda v: svc.update_object(
            store, "route", project_id, route["id"], {"max_attempts": 2}, validate=v
        ),
        lambda v: svc.update_project(
            store, project_id, {"default_model_route_id": route["id"]}, validate=v
        ),
        lambda v: svc.create_consumer(store, project_id, agent_body | {"name": "b2"}, validate=v),
        lambda v: svc.update_consumer(store, project_id, agent["id"], {"name": "b3"}, validate=v),
        lambda v: svc.delete_consumer(store, project_id, agent["id"], validate=v),
        lambda v: svc.create_key(store, project_id, {"name": "k2"}, validate=v),
        lambda v: svc.revoke_key(store, project_id, key["id"], validate=v),
        lambda v: svc.delete_key(store, project_id, key["id"], validate=v),
        lambda v: svc.delete_project(store, project_id, validate=v),
    ]
    before = _state(store, project_id)
    for call in writes:
        with pytest.raises(ConfigError, match="refused by the hook"):
            call(_refuse)
        assert _state(store, project_id) == before
    assert svc.get_project(store, project_id)["default_model_route_id"] is None


def test_the_files_validator_as_hook_refuses_a_clash_with_the_file(store: Store) -> None:
    """With the file and store checked together, a stored route named like a file route is
    refused and not stored."""
    file = FileConfig.model_validate(
        {"project": "acme", "providers": [PROVIDER], "routes": [ROUTE | {"name": "filed"}]}
    )

    def check(snapshot: ProjectSnapshot) -> None:
        problems = project_problems(file, snapshot)
        if problems:
            raise ConfigError("invalid configuration", problems)

    project_id = svc.create_project(store, {"name": "acme"}, validate=check)["id"]
    svc.create_object(store, "route", project_id, ROUTE, validate=check)
    with pytest.raises(ConfigError) as caught:
        svc.create_object(store, "route", project_id, ROUTE | {"name": "filed"}, validate=check)
    assert any("filed" in message for _, message in caught.value.errors)
    assert [r["name"] for r in svc.list_objects(store, "route", project_id)] == ["main"]
