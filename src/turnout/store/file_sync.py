"""Bringing the config file's objects into the store at start: the file's project, and a row
per file provider and route (`source` `file`), so each has a stable prefixed id and reserves its
name in the project's name space.

Rule 1: one transaction: the project exists, every file provider and route has its row with the
file's settings, and file rows the file no longer lists are gone; or nothing changed.
Rule 2: idempotent: a row is written only when its settings differ, so a second start with the
same file bumps no version and audits nothing.
Rule 3: the file is authoritative: a file row holds no secret (`api_key` is not stored, header
values are masked); the gateway serves file objects from the file, the store gives them ids.
Rule 4: a file row that the file dropped but a consumer or the project's default route still
references is kept (a foreign key holds it), so that consumer meets 503 NO_ROUTE instead of
silently inheriting another route; it goes at the first start after it is no longer referenced.
Rule 5: a file object whose name an admin-API object of the same kind already holds is refused
with a `ConfigError` naming both; nothing is written.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, or_, select

from turnout.errors import ConfigError
from turnout.store._writes import MASK, audit, write
from turnout.store.ids import new_id
from turnout.store.models import Consumer, Project, Provider, Route

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sqlalchemy.orm import Session

    from turnout.schema import FileConfig, ProviderConfig, RouteConfig
    from turnout.store.engine import Store

__all__ = ["SyncReport", "sync_file"]

logger = logging.getLogger("turnout.store")


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What a sync did: the project's id, and the names created, updated, deleted and kept
    (Rule 4), each as `kind:name`."""

    project_id: str
    created: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()

    @property
    def changed(self) -> bool:
        """Whether anything was written."""
        return bool(self.created or self.updated or self.deleted)


def sync_file(store: Store, config: FileConfig) -> SyncReport:
    """Rules 1-5 for `config` (a validated file configuration)."""
    done = _Done()
    with write(store) as session:
        project = _ensure_project(session, config.project, done.created)
        providers = {p.name: _provider_settings(p) for p in config.providers}
        routes = {r.name: _route_settings(r) for r in config.routes}
        kinds = (("provider", Provider, providers), ("route", Route, routes))
        for kind, model, wanted in kinds:
            _check_api_names(session, model, kind, project.id, wanted)
        for kind, model, wanted in kinds:
            _upsert(session, (kind, model), project.id, wanted, done)
        # Routes first: a provider is referenced by routes only by name, never by a key.
        for kind, model, wanted in reversed(kinds):
            _drop_missing(session, (kind, model), project, set(wanted), done)
    created, updated, deleted, kept = done.created, done.updated, done.deleted, done.kept
    for name in kept:
        logger.warning(
            "%s left the configuration file but a consumer or the project's default route "
            "still names it: kept in the store (requests that reach it get NO_ROUTE) until "
            "they are reassigned",
            name.replace(":", " "),
        )
    return SyncReport(project.id, tuple(created), tuple(updated), tuple(deleted), tuple(kept))


@dataclass(slots=True)
class _Done:
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)


def _ensure_project(session: Session, name: str, created: list[str]) -> Project:
    row = session.scalars(select(Project).where(Project.name == name)).first()
    if row is not None:
        return row
    row = Project(id=new_id("project"), name=name)
    session.add(row)
    session.flush()
    after = {"id": row.id, "name": row.name, "default_model_route_id": None}
    audit(session, actor=None, action="create", kind="project", object_id=row.id,
          project_id=row.id, before=None, after=after)  # fmt: skip
    created.append(f"project:{name}")
    return row


def _provider_settings(config: ProviderConfig) -> dict[str, Any]:
    """Rule 3: the provider's fields but `name`, `kind` and `api_key`; header values masked."""
    fields = config.model_dump(mode="json", exclude_unset=True)
    for name in ("name", "kind", "api_key"):
        fields.pop(name, None)
    if "headers" in fields:
        fields["headers"] = dict.fromkeys(fields["headers"], MASK)
    return {"kind": config.kind, "settings": fields}


def _route_settings(config: RouteConfig) -> dict[str, Any]:
    fields = config.model_dump(mode="json", exclude_unset=True)
    fields.pop("name", None)
    return {"settings": fields}


def _check_api_names(
    session: Session,
    model: type[Provider] | type[Route],
    kind: str,
    project_id: str,
    wanted: dict[str, dict[str, Any]],
) -> None:
    """Rule 5."""
    if not wanted:
        return
    lowered = {name.lower(): name for name in wanted}
    query = select(model.name).where(
        model.project_id == project_id,
        model.source == "api",
        func.lower(model.name).in_(list(lowered)),
    )
    clashes = sorted(session.scalars(query))
    if clashes:
        order = list(wanted)
        problems = [
            (
                f"{kind}s[{order.index(lowered[name.lower()])}].name",
                (
                    f"the name {name!r} is held by a {kind} created through the admin API in "
                    "this project; rename one of them"
                ),
            )
            for name in clashes
        ]
        raise ConfigError("; ".join(f"{path}: {rule}" for path, rule in problems), problems)


def _upsert(
    session: Session,
    table: tuple[str, type[Provider] | type[Route]],
    project_id: str,
    wanted: dict[str, dict[str, Any]],
    done: _Done,
) -> None:
    kind, model = table
    rows = {row.name: row for row in _file_rows(session, model, project_id)}
    for name, columns in wanted.items():
        row = rows.get(name)
        before = None if row is None else _read(row)
        if row is None:
            row = model(id=new_id(kind), project_id=project_id, name=name, source="file")
            session.add(row)
        elif all(getattr(row, column) == value for column, value in columns.items()):
            continue  # Rule 2
        for column, value in columns.items():
            setattr(row, column, value)
        session.flush()
        action = "create" if before is None else "update"
        audit(session, actor=None, action=action, kind=kind, object_id=row.id,
              project_id=project_id, before=before, after=_read(row))  # fmt: skip
        (done.created if before is None else done.updated).append(f"{kind}:{name}")


def _drop_missing(
    session: Session,
    table: tuple[str, type[Provider] | type[Route]],
    project: Project,
    wanted: set[str],
    done: _Done,
) -> None:
    kind, model = table
    for row in _file_rows(session, model, project.id):
        if row.name in wanted:
            continue
        if _is_referenced(session, row.id, project):
            done.kept.append(f"{kind}:{row.name}")  # Rule 4
            continue
        before = _read(row)
        session.delete(row)
        session.flush()
        audit(session, actor=None, action="delete", kind=kind, object_id=row.id,
              project_id=project.id, before=before, after=None)  # fmt: skip
        done.deleted.append(f"{kind}:{row.name}")


def _is_referenced(session: Session, object_id: str, project: Project) -> bool:
    if project.default_model_route_id == object_id:
        return True
    query = select(Consumer.id).where(
        or_(Consumer.model_route_id == object_id, Consumer.ai_provider_id == object_id)
    )
    return session.scalars(query.limit(1)).first() is not None


def _file_rows(
    session: Session, model: type[Provider] | type[Route], project_id: str
) -> Sequence[Provider | Route]:
    query = select(model).where(model.project_id == project_id, model.source == "file")
    return list(session.scalars(query.order_by(model.created_at, model.id)))


def _read(row: Provider | Route) -> dict[str, Any]:
    """The row as audited: name, source, kind (providers) and settings; never a secret."""
    out: dict[str, Any] = {"id": row.id, "name": row.name, "source": row.source}
    if isinstance(row, Provider):
        out["kind"] = row.kind
    return out | {"settings": dict(row.settings)}
