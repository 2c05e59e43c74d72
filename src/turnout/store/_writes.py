"""What every service function shares: one transaction per write, the audit row and version bump
that go with it, JSON merge-patch, and the plain dicts objects are returned as.

Rule 1: a write and its `config_changes` row and version bump commit together or not at all.
Rule 2: nothing returned or audited holds a secret: provider secrets are masked, keys never kept.
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, TypeVar

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from turnout.errors import ConfigError, NameTaken, ObjectNotFound
from turnout.store.models import ConfigChange, Meta, Project

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from pydantic import ValidationError
    from sqlalchemy.orm import Session

    from turnout.store.engine import Store

__all__ = [
    "MASK",
    "audit",
    "current_version",
    "get_row",
    "merge_patch",
    "require_project",
    "stamps",
    "to_config_error",
    "write",
]

_Row = TypeVar("_Row")

MASK: Final = "********"
"""What a stored secret reads as."""


@contextmanager
def write(store: Store) -> Iterator[Session]:
    """A session in one transaction, committed on success; a unique-index clash is `NameTaken`."""
    try:
        with store.sessions.begin() as session:
            yield session
    except IntegrityError as exc:
        raise NameTaken("the name is already used in this project") from exc


def audit(
    session: Session,
    *,
    actor: str | None,
    action: str,
    kind: str,
    object_id: str,
    project_id: str | None,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
) -> None:
    """Bump the version and record the change (`before`/`after` already masked)."""
    session.flush()
    meta = session.get_one(Meta, 1, with_for_update=True)
    meta.version += 1
    session.add(
        ConfigChange(
            version=meta.version,
            admin_key_id=actor,
            action=action,
            kind=kind,
            object_id=object_id,
            project_id=project_id,
            before=before,
            after=after,
        )
    )


def current_version(store: Store) -> int:
    """The version counter: it grows with every write."""
    with store.sessions() as session:
        return session.scalars(select(Meta.version)).one()


def get_row(
    session: Session, model: type[_Row], kind: str, project_id: str, object_id: str
) -> _Row:
    """The row of `model` with this id in this project, or `ObjectNotFound`."""
    row = session.get(model, object_id)
    if row is None or getattr(row, "project_id", project_id) != project_id:
        raise ObjectNotFound(f"no {kind} {object_id!r} in project {project_id!r}")
    return row


def require_project(session: Session, project_id: str) -> Project:
    """The project, or `ObjectNotFound`."""
    return get_row(session, Project, "project", project_id, project_id)


def merge_patch(target: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """JSON merge-patch: a key absent from `patch` is unchanged, None removes it, objects merge."""
    merged = dict(target)
    for name, value in patch.items():
        if value is None:
            merged.pop(name, None)
        elif isinstance(value, dict) and isinstance(merged.get(name), dict):
            merged[name] = merge_patch(merged[name], value)
        else:
            merged[name] = value
    return merged


def stamps(created_at: datetime, updated_at: datetime) -> dict[str, str]:
    """The `created_at`/`updated_at` of a returned object, as ISO 8601 in UTC."""
    return {"created_at": _utc(created_at), "updated_at": _utc(updated_at)}


def _utc(moment: datetime) -> str:
    # SQLite hands back naive datetimes; every stored time is UTC.
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return aware.astimezone(UTC).isoformat()


def to_config_error(kind: str, exc: ValidationError) -> ConfigError:
    """A pydantic error as a 400 `VALIDATION_FAILED` naming each field and rule."""
    errors = [(".".join(str(part) for part in e["loc"]), e["msg"]) for e in exc.errors()]
    summary = "; ".join(f"{path}: {message}" for path, message in errors)
    return ConfigError(f"invalid {kind}: {summary}", errors)
