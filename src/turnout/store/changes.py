"""Reading the audit of changes (`config_changes`): who changed what, when, and the object
before and after (secrets already masked when the row was written).

Rule 1: newest first (by version); `since_version` keeps the changes after that version, so a
reader that remembers the last version it saw asks only for what is new.
Rule 2: at most `MAX_LIMIT` rows per read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import select

from turnout.store._writes import stamps
from turnout.store.models import ConfigChange

if TYPE_CHECKING:
    from turnout.store.engine import Store

__all__ = ["DEFAULT_LIMIT", "MAX_LIMIT", "list_changes"]

DEFAULT_LIMIT: Final = 100
"""Rows a read returns when it names no limit."""
MAX_LIMIT: Final = 1000
"""The most rows one read returns."""


def list_changes(
    store: Store,
    *,
    project_id: str | None = None,
    kind: str | None = None,
    object_id: str | None = None,
    since_version: int | None = None,
    limit: int = DEFAULT_LIMIT,
) -> list[dict[str, Any]]:
    """The changes that match every filter given, newest first, at most `limit` (capped at
    `MAX_LIMIT`; below 1 reads 1)."""
    query = select(ConfigChange)
    if project_id is not None:
        query = query.where(ConfigChange.project_id == project_id)
    if kind is not None:
        query = query.where(ConfigChange.kind == kind)
    if object_id is not None:
        query = query.where(ConfigChange.object_id == object_id)
    if since_version is not None:
        query = query.where(ConfigChange.version > since_version)
    query = query.order_by(ConfigChange.version.desc(), ConfigChange.id.desc())
    query = query.limit(min(max(limit, 1), MAX_LIMIT))
    with store.sessions() as session:
        return [_read(row) for row in session.scalars(query)]


def _read(row: ConfigChange) -> dict[str, Any]:
    return {
        "version": row.version,
        "at": stamps(row.at, row.at)["created_at"],
        "actor": row.admin_key_id,
        "action": row.action,
        "kind": row.kind,
        "object_id": row.object_id,
        "project_id": row.project_id,
        "before": row.before,
        "after": row.after,
    }
