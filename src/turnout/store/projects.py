"""Service functions for projects: create, read, list, merge-patch, delete (with everything the
project owns).

Rule 1: a project's `default_model_route_id` names one of its own enabled routes.
Rule 2: the default route may be repointed at any time, but not cleared while a consumer
inherits it (`ProjectDefaultRouteInherited`, with the consumers counted and sampled).
Rule 3: every write takes a `validate` hook, called with the project as the write leaves it
(deleting a project: with the project emptied).
Rule 4: the config file's project (`file_project`, its name) is never deleted nor renamed here
(`FileManaged`): serving needs it in the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from turnout.errors import (
    ConfigError,
    FileManaged,
    NameTaken,
    ObjectNotFound,
    ProjectDefaultRouteInherited,
)
from turnout.store._writes import (
    audited_write,
    merge_patch,
    refuse_unknown,
    require_project,
    stamps,
)
from turnout.store.consumers import inheriting_consumers
from turnout.store.dependents import dependents_meta
from turnout.store.ids import new_id
from turnout.store.models import Project, Route
from turnout.store.snapshot import ProjectSnapshot

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sqlalchemy.orm import Session

    from turnout.store._writes import Validate
    from turnout.store.engine import Store

__all__ = ["create_project", "delete_project", "get_project", "list_projects", "update_project"]

_FIELDS = frozenset({"name", "default_model_route_id"})


def create_project(
    store: Store,
    body: Mapping[str, Any],
    *,
    actor: str | None = None,
    validate: Validate | None = None,
) -> dict[str, Any]:
    """Create a project (`name`, optional `default_model_route_id`: none on a new project)."""
    fields = _checked(dict(body))
    if fields.get("default_model_route_id") is not None:
        raise ConfigError("default_model_route_id: a new project has no routes yet")
    project_id = new_id("project")
    with audited_write(
        store, "project", "create", _shown, project_id=project_id, actor=actor, validate=validate
    ) as change:
        _check_name(change.session, fields["name"], None)
        change.add(Project(id=project_id, name=fields["name"]))
    return change.written()


def get_project(store: Store, project_id: str) -> dict[str, Any]:
    """The project, or `ObjectNotFound`."""
    with store.sessions() as session:
        return _read(require_project(session, project_id))


def list_projects(store: Store) -> list[dict[str, Any]]:
    """Every project, oldest first."""
    with store.sessions() as session:
        query = select(Project).order_by(Project.created_at, Project.id)
        return [_read(row) for row in session.scalars(query)]


def update_project(
    store: Store,
    project_id: str,
    patch: Mapping[str, Any],
    *,
    actor: str | None = None,
    validate: Validate | None = None,
    file_project: str | None = None,
) -> dict[str, Any]:
    """Merge-patch the project: `name`, `default_model_route_id` (None clears it: Rule 2); the
    config file's project keeps its name (Rule 4)."""
    with audited_write(
        store, "project", "update", _shown, project_id=project_id, actor=actor, validate=validate
    ) as change:
        session = change.session
        row = require_project(session, project_id)
        change.track(row)
        current = {"name": row.name, "default_model_route_id": row.default_model_route_id}
        refuse_unknown("project", patch, _FIELDS)
        fields = _checked(merge_patch(current, patch))
        if row.name == file_project and fields["name"] != row.name:
            raise _file_managed(row, "renamed")
        _check_name(session, fields["name"], row.id)
        route_id = fields.get("default_model_route_id")
        if route_id is not None:
            _check_default_route(session, project_id, route_id)
        elif row.default_model_route_id is not None:
            _refuse_inherited_clear(session, project_id, row.default_model_route_id)
        row.name, row.default_model_route_id = fields["name"], route_id
    return change.written()


def delete_project(
    store: Store,
    project_id: str,
    *,
    actor: str | None = None,
    validate: Validate | None = None,
    file_project: str | None = None,
) -> None:
    """Delete the project and every object it owns; never the config file's (Rule 4)."""
    with audited_write(
        store, "project", "delete", _shown, project_id=project_id, actor=actor, validate=None
    ) as change:
        session = change.session
        row = require_project(session, project_id)
        if row.name == file_project:
            raise _file_managed(row, "deleted")
        change.delete(row)
        if validate is not None:  # the project as the write leaves it: gone, with its objects
            session.flush()
            validate(ProjectSnapshot(id=row.id, name=row.name))


def _file_managed(row: Project, done: str) -> FileManaged:
    return FileManaged(
        f"project {row.name!r} ({row.id}) is the config file's project: it cannot be {done}"
        " through the admin API (change `project` in the file instead)",
        meta={"id": row.id, "name": row.name},
    )


def _check_default_route(session: Session, project_id: str, route_id: str) -> None:
    """Rule 1: a route that exists (404 naming the field), of the project and enabled (400)."""
    route = session.get(Route, route_id)
    if route is None:
        raise ObjectNotFound(
            f"default_model_route_id: no route {route_id!r} in project {project_id!r}",
            meta={"field": "default_model_route_id"},
        )
    message = None
    if route.project_id != project_id:
        message = (
            f"route {route_id!r} belongs to another project; a default route must be one of"
            f" project {project_id!r}'s own"
        )
    elif not route.settings.get("enabled", True):
        message = f"route {route.name!r} is disabled; a default route must be enabled"
    if message is not None:
        raise ConfigError(
            f"invalid project: default_model_route_id: {message}",
            [("default_model_route_id", message)],
        )


def _refuse_inherited_clear(session: Session, project_id: str, route_id: str) -> None:
    """Rule 2: clearing the default while consumers inherit it."""
    inheriting = inheriting_consumers(session, project_id, route_id)
    if inheriting:
        count = len(inheriting)
        raise ProjectDefaultRouteInherited(
            f"cannot clear default_model_route_id: {count} consumer{'s' if count != 1 else ''} "
            "inherit it; assign them a route or a provider first, or point the default at "
            "another route",
            meta=dependents_meta({"consumers": inheriting}),
        )


def _checked(fields: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(fields) - _FIELDS)
    if unknown:
        raise ConfigError(f"invalid project: unknown field {unknown[0]!r}")
    name = fields.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 128:
        raise ConfigError("invalid project: name: 1 to 128 characters")
    return fields | {"name": name.strip()}


def _check_name(session: Session, name: str, own_id: str | None) -> None:
    found = session.scalars(select(Project.id).where(Project.name == name)).first()
    if found is not None and found != own_id:
        raise NameTaken(f"a project is already named {name!r}", meta={"name": name})


def _shown(_session: Session, row: Project) -> dict[str, Any]:
    return _read(row)


def _read(row: Project) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": row.name,
        "default_model_route_id": row.default_model_route_id,
    } | stamps(row.created_at, row.updated_at)
