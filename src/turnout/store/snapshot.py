"""What serving reads of the store: one immutable snapshot of every project, loaded in one
read transaction, so the hot path never waits on the database.

Rule 1: a snapshot holds the objects written through the admin API (`source` `api`) as the
config file's own models, secrets decrypted and keys as their hashes; objects that came from
the config file (`source` `file`) are served from the file, and appear here only by id.
Rule 2: revoked keys are left out of a project's keys: a revoked key is refused on the first
request that sees the new snapshot. Their names and hashes are kept apart (`revoked_keys`), so a
refused request can still be logged and audited under the key it presented.
Rule 3: a snapshot carries the store's `version`; a replica that reads the same version has
nothing to reload.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from turnout.errors import ObjectNotFound
from turnout.schema import (
    BindingConfig,
    ConsumerConfig,
    KeyConfig,
    PolicyConfig,
    ProviderConfig,
    RouteConfig,
)
from turnout.store.models import Binding, Consumer, Key, Meta, Policy, Project, Provider, Route
from turnout.store.provider_secrets import MASK, unseal

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sqlalchemy.orm import Session

    from turnout.store.engine import Store

__all__ = ["ProjectSnapshot", "StoreSnapshot", "load_snapshot", "project_snapshot"]

_EMPTY: Mapping[tuple[str, str], str] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class ProjectSnapshot:
    """One project's stored objects, in the config file's shapes.

    `ids` maps `(kind, name)` to the stored id of every provider, route, key and consumer of
    the project, file-managed ones included (kinds: `provider`, `route`, `key`, `consumer`).
    `default_route` is the name of the project's default route, if it has one;
    `revoked_keys` the `(name, hash)` of each revoked key (Rule 2).
    """

    id: str
    name: str
    default_route: str | None = None
    providers: tuple[ProviderConfig, ...] = ()
    routes: tuple[RouteConfig, ...] = ()
    keys: tuple[KeyConfig, ...] = ()
    bindings: tuple[BindingConfig, ...] = ()
    policies: tuple[PolicyConfig, ...] = ()
    consumers: tuple[ConsumerConfig, ...] = ()
    revoked_keys: tuple[tuple[str, str], ...] = ()
    ids: Mapping[tuple[str, str], str] = field(default_factory=lambda: _EMPTY)


@dataclass(frozen=True, slots=True)
class StoreSnapshot:
    """Every project of the store at one `version`, by project name."""

    version: int
    projects: Mapping[str, ProjectSnapshot]


def load_snapshot(store: Store) -> StoreSnapshot:
    """Read the whole store in one transaction. Decrypting a provider secret needs
    `TURNOUT_SECRET_KEY` (`SecretKeyMissing` otherwise)."""
    with store.sessions() as session, session.begin():
        version = session.scalars(select(Meta.version)).one()
        projects = {
            row.name: _project(session, store, row)
            for row in session.scalars(select(Project).order_by(Project.created_at, Project.id))
        }
    return StoreSnapshot(version, MappingProxyType(projects))


def project_snapshot(session: Session, store: Store, project_id: str) -> ProjectSnapshot:
    """One project as `session` sees it, pending writes included (a write's validation hook
    reads the project as it will be). `ObjectNotFound` for an unknown project."""
    project = session.get(Project, project_id)
    if project is None:
        raise ObjectNotFound(f"no project {project_id!r}")
    return _project(session, store, project)


def _project(session: Session, store: Store, project: Project) -> ProjectSnapshot:
    pid = project.id
    ids: dict[tuple[str, str], str] = {}
    names: dict[str, str] = {}  # stored id -> name, to turn consumer references into names

    providers: list[ProviderConfig] = []
    for row in _rows(session, Provider, pid):
        ids["provider", row.name] = row.id
        names[row.id] = row.name
        if row.source == "api":
            body: dict[str, Any] = {"name": row.name, "kind": row.kind, **row.settings}
            if row.secret is not None:
                body.update(unseal(store.secrets, row.secret))
            body = {name: value for name, value in body.items() if value != MASK}
            providers.append(ProviderConfig.model_validate(body))
    routes: list[RouteConfig] = []
    for row in _rows(session, Route, pid):
        ids["route", row.name] = row.id
        names[row.id] = row.name
        if row.source == "api":
            routes.append(RouteConfig.model_validate({"name": row.name, **row.settings}))
    keys: list[KeyConfig] = []
    revoked: list[tuple[str, str]] = []
    for row in _rows(session, Key, pid):
        ids["key", row.name] = row.id
        if row.revoked_at is None:
            body = {"name": row.name, "hash": row.key_hash, **row.identity}
            keys.append(KeyConfig.model_validate(body))
        else:
            revoked.append((row.name, row.key_hash))
    consumers_rows = list(_rows(session, Consumer, pid))
    for row in consumers_rows:
        ids["consumer", row.name] = row.id
        names[row.id] = row.name
    consumers = tuple(_consumer(row, names) for row in consumers_rows)
    return ProjectSnapshot(
        id=pid,
        name=project.name,
        default_route=names.get(project.default_model_route_id or ""),
        providers=tuple(providers),
        routes=tuple(routes),
        keys=tuple(keys),
        bindings=tuple(
            BindingConfig.model_validate({"name": row.name, **row.settings})
            for row in _rows(session, Binding, pid)
        ),
        policies=tuple(
            PolicyConfig.model_validate({"name": row.name, **row.settings})
            for row in _rows(session, Policy, pid)
        ),
        consumers=consumers,
        revoked_keys=tuple(revoked),
        ids=MappingProxyType(ids),
    )


def _consumer(row: Consumer, names: Mapping[str, str]) -> ConsumerConfig:
    body: dict[str, Any] = {"name": row.name, "kind": row.kind}
    if row.model_route_id is not None:
        body["model_route"] = names[row.model_route_id]
    if row.ai_provider_id is not None:
        body["provider"] = names[row.ai_provider_id]
    if row.model is not None:
        body["model"] = row.model
    if row.agent_id is not None:
        body["agent"] = names[row.agent_id]
    return ConsumerConfig.model_validate(body)


def _rows(session: Session, model: Any, project_id: str) -> Any:
    query = select(model).where(model.project_id == project_id)
    return session.scalars(query.order_by(model.created_at, model.id))
