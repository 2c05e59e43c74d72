"""Service functions for consumers: agents, chats, discussions and memories, each with an
assignment (a route, a provider pin, or the project's default route).

Bodies use the config file's field names with references by id: `model_route_id`,
`ai_provider_id` (and `model`), `agent_id`; the file's `model_route`, `provider` and `agent`
(by name) are accepted too and turned into ids. A consumer reads back with both.

Rule 1: the assignment rules are `turnout.access.consumers.check_assignment`, the same the
config file is checked with, so a rule reads the same on both.
Rule 2: a referenced route, provider or agent must exist in the consumer's project (404 naming
the field); an assigned route must be enabled.
Rule 3: an update is a JSON merge-patch validated whole, so clearing a pin and setting a route
in one PATCH works; clearing `ai_provider_id` clears the pin's `model` with it.
Rule 4: a consumer's kind never changes (its id says it). Deleting an agent deletes the chats
and memories that belong to it.
Rule 5: consumer names are unique in their project, ignoring case, apart from routes' and
providers'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import func, select

from turnout.access.consumers import (
    API_FIELDS,
    CONSUMER_KINDS,
    Assignment,
    check_assignment,
    disabled_route_message,
    effective_assignment,
)
from turnout.errors import ConfigError, NameTaken, ObjectNotFound
from turnout.store._writes import (
    audited_write,
    get_row,
    merge_patch,
    require_project,
    stamps,
)
from turnout.store.ids import new_id
from turnout.store.models import Consumer, Project, Provider, Route

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sqlalchemy.orm import Session

    from turnout.store._writes import Validate
    from turnout.store.engine import Store

__all__ = [
    "create_consumer",
    "delete_consumer",
    "get_consumer",
    "inheriting_consumers",
    "list_consumers",
    "update_consumer",
]

_COLUMNS: Final = ("name", "kind", "model_route_id", "ai_provider_id", "model", "agent_id")
# Each reference by id, the file's name for it, what it points at.
_REFERENCES: Final = (
    ("model_route_id", "model_route", Route, "route"),
    ("ai_provider_id", "provider", Provider, "provider"),
    ("agent_id", "agent", Consumer, "consumer"),
)
_FIELDS: Final = frozenset(_COLUMNS) | {name for _, name, _, _ in _REFERENCES}
_MAX_NAME: Final = 128
_MAX_MODEL: Final = 256


def create_consumer(
    store: Store,
    project_id: str,
    body: Mapping[str, Any],
    *,
    actor: str | None = None,
    validate: Validate | None = None,
) -> dict[str, Any]:
    """Create a consumer from `body` (`name`, `kind` and its assignment); returns it with its
    id, prefixed by its kind (`agent_`, `chat_`, `disc_`, `mem_`)."""
    fields = _shape(dict(body))
    with audited_write(
        store, "consumer", "create", _read, project_id=project_id, actor=actor, validate=validate
    ) as change:
        session = change.session
        project = require_project(session, project_id)
        fields = _by_id(session, project_id, fields)
        _check(session, project, fields, own_id=None)
        row = Consumer(id=new_id(fields["kind"]), project_id=project_id)
        _assign(row, fields)
        change.add(row)
    return change.written()


def get_consumer(store: Store, project_id: str, consumer_id: str) -> dict[str, Any]:
    """The consumer, or `ObjectNotFound`."""
    with store.sessions() as session:
        return _read(session, get_row(session, Consumer, "consumer", project_id, consumer_id))


def list_consumers(
    store: Store, project_id: str, *, kind: str | None = None
) -> list[dict[str, Any]]:
    """Every consumer of the project (of one `kind`, if given), oldest first."""
    with store.sessions() as session:
        require_project(session, project_id)
        query = select(Consumer).where(Consumer.project_id == project_id)
        if kind is not None:
            query = query.where(Consumer.kind == kind)
        rows = session.scalars(query.order_by(Consumer.created_at, Consumer.id))
        return [_read(session, row) for row in rows]


def update_consumer(
    store: Store,
    project_id: str,
    consumer_id: str,
    patch: Mapping[str, Any],
    *,
    actor: str | None = None,
    validate: Validate | None = None,
) -> dict[str, Any]:
    """Merge-patch the consumer (absent: unchanged; None: cleared) and check it whole."""
    changes = _shape(dict(patch), partial=True)
    with audited_write(
        store, "consumer", "update", _read, project_id=project_id, actor=actor, validate=validate
    ) as change:
        session = change.session
        row = get_row(session, Consumer, "consumer", project_id, consumer_id)
        project = require_project(session, project_id)
        change.track(row)
        changes = _by_id(session, project_id, changes)
        if changes.get("ai_provider_id", "") is None and "model" not in changes:
            changes["model"] = None  # the pin's model goes with the pin
        current = {name: getattr(row, name) for name in _COLUMNS}
        fields = merge_patch({k: v for k, v in current.items() if v is not None}, changes)
        if fields.get("kind") != row.kind:
            raise ConfigError(
                f"invalid consumer: kind: a {row.kind} stays a {row.kind}; create a new consumer "
                "of the other kind",
                [("kind", "the kind of a consumer cannot change")],
            )
        _check(session, project, _shape(fields), own_id=row.id)
        _assign(row, fields)
    return change.written()


def delete_consumer(
    store: Store,
    project_id: str,
    consumer_id: str,
    *,
    actor: str | None = None,
    validate: Validate | None = None,
) -> None:
    """Delete the consumer (an agent with the chats and memories that belong to it)."""
    with audited_write(
        store, "consumer", "delete", _read, project_id=project_id, actor=actor, validate=validate
    ) as change:
        session = change.session
        change.delete(get_row(session, Consumer, "consumer", project_id, consumer_id))


def inheriting_consumers(session: Session, project_id: str, default_route_id: str) -> list[str]:
    """The ids of the project's consumers that resolve to its default route, oldest first."""
    rows = list(
        session.scalars(
            select(Consumer)
            .where(Consumer.project_id == project_id)
            .order_by(Consumer.created_at, Consumer.id)
        )
    )
    by_id = {row.id: row for row in rows}
    found = []
    for row in rows:
        agent = by_id.get(row.agent_id or "")
        effective = effective_assignment(
            _assignment(row),
            agent=None if agent is None else _assignment(agent),
            default_route=default_route_id,
        )
        if effective.inherited_from == "project":
            found.append(row.id)
    return found


# ---- checks ---------------------------------------------------------------------------------


def _shape(body: dict[str, Any], *, partial: bool = False) -> dict[str, Any]:
    """Field names and value types; the relations between fields are `_check`'s."""
    unknown = sorted(set(body) - _FIELDS)
    if unknown:
        raise ConfigError(
            f"invalid consumer: unknown field {unknown[0]!r}",
            [(unknown[0], "unknown field")],
        )
    problems: list[tuple[str, str]] = []
    for name, value in body.items():
        if value is not None and not isinstance(value, str):
            problems.append((name, "must be a string"))
    if not partial or "name" in body:
        given = body.get("name")
        if not isinstance(given, str) or not given.strip() or len(given.strip()) > _MAX_NAME:
            problems.append(("name", f"1 to {_MAX_NAME} characters"))
        else:
            body["name"] = given.strip()
    if (not partial or "kind" in body) and body.get("kind") not in CONSUMER_KINDS:
        problems.append(("kind", f"one of {', '.join(CONSUMER_KINDS)}"))
    model = body.get("model")
    if isinstance(model, str) and not 0 < len(model) <= _MAX_MODEL:
        problems.append(("model", f"1 to {_MAX_MODEL} characters"))
    if problems:
        raise _invalid(problems)
    return body


def _by_id(session: Session, project_id: str, fields: dict[str, Any]) -> dict[str, Any]:
    """The file's references by name turned into ids (None stays None: it clears)."""
    out = dict(fields)
    for id_field, name_field, model, kind in _REFERENCES:
        if name_field not in out:
            continue
        name = out.pop(name_field)
        found = None
        if name is not None:
            query = select(model.id).where(model.project_id == project_id, model.name == name)
            found = session.scalars(query).first()
            if found is None:
                raise ObjectNotFound(
                    f"{name_field}: no {kind} named {name!r} in project {project_id!r}",
                    meta={"field": name_field},
                )
        if id_field in out and out[id_field] != found:
            raise _invalid([(name_field, f"names another {kind} than {id_field}; set only one")])
        out[id_field] = found
    return out


def _check(
    session: Session, project: Project, fields: dict[str, Any], *, own_id: str | None
) -> None:
    """Rules 1, 2 and 5 for the consumer as `fields` leave it."""
    route = _referenced(session, project.id, Route, "model_route_id", fields)
    _referenced(session, project.id, Provider, "ai_provider_id", fields)
    agent = _referenced(session, project.id, Consumer, "agent_id", fields)
    problems = check_assignment(
        _assignment_of(fields),
        agent=None if agent is None else _assignment(agent),
        default_route=project.default_model_route_id,
        fields=API_FIELDS,
    )
    if route is not None and not route.settings.get("enabled", True):
        problems.append(("model_route_id", disabled_route_message(route.name)))
    if problems:
        raise _invalid(problems)
    taken = select(Consumer.id).where(
        Consumer.project_id == project.id, func.lower(Consumer.name) == fields["name"].lower()
    )
    if any(found != own_id for found in session.scalars(taken)):
        raise NameTaken(
            f"a consumer of this project is already named {fields['name']!r}",
            meta={"name": fields["name"]},
        )


def _referenced(
    session: Session, project_id: str, model: Any, field: str, fields: Mapping[str, Any]
) -> Any:
    """The row `fields[field]` names, None when unset; `ObjectNotFound` naming the field when no
    such object exists, a validation error naming it when the object is another project's."""
    object_id = fields.get(field)
    if object_id is None:
        return None
    row = session.get(model, object_id)
    kind = {"model_route_id": "route", "ai_provider_id": "provider"}.get(field, "agent")
    if row is None:
        raise ObjectNotFound(
            f"{field}: no {kind} {object_id!r} in project {project_id!r}", meta={"field": field}
        )
    if row.project_id != project_id:
        rule = (
            f"{kind} {object_id!r} belongs to another project; a consumer's {kind} must be one"
            f" of project {project_id!r}'s own"
        )
        raise _invalid([(field, rule)])
    return row


def _invalid(problems: list[tuple[str, str]]) -> ConfigError:
    summary = "; ".join(f"{field}: {message}" for field, message in problems)
    return ConfigError(f"invalid consumer: {summary}", problems)


# ---- rows -----------------------------------------------------------------------------------


def _assignment_of(fields: Mapping[str, Any]) -> Assignment:
    return Assignment(
        kind=fields["kind"],
        route=fields.get("model_route_id"),
        provider=fields.get("ai_provider_id"),
        model=fields.get("model"),
        agent=fields.get("agent_id"),
    )


def _assignment(row: Consumer) -> Assignment:
    return _assignment_of({name: getattr(row, name) for name in _COLUMNS})


def _assign(row: Consumer, fields: Mapping[str, Any]) -> None:
    for name in _COLUMNS:
        setattr(row, name, fields.get(name))


def _read(session: Session, row: Consumer) -> dict[str, Any]:
    out: dict[str, Any] = {"id": row.id, "project_id": row.project_id}
    out |= {name: getattr(row, name) for name in _COLUMNS}
    for id_field, name_field, model, _ in _REFERENCES:
        target: Any = None if out[id_field] is None else session.get(model, out[id_field])
        out[name_field] = None if target is None else target.name
    return out | stamps(row.created_at, row.updated_at)
