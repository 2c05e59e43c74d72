"""Service functions for caller keys. A key is generated here and its plaintext returned once,
by `create_key`; only its hash (`turnout.access.keys.hash_key`) and a short prefix to recognise
it by are stored. The identity fields are the config file's (`user`, `teams`, `routes` …).
Every write takes a `validate` hook, called with the project as the write leaves it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from turnout.access.keys import generate_key, hash_key
from turnout.schema import KeyConfig
from turnout.store._writes import (
    audited_write,
    get_row,
    merge_patch,
    refuse_unknown,
    require_project,
    stamps,
    validated_fields,
)
from turnout.store.ids import new_id
from turnout.store.models import Key, utcnow

if TYPE_CHECKING:
    from collections.abc import Mapping

    from sqlalchemy.orm import Session

    from turnout.store._writes import Validate
    from turnout.store.engine import Store

__all__ = [
    "create_key",
    "delete_key",
    "find_key",
    "get_key",
    "list_keys",
    "revoke_key",
    "update_key",
]

_PREFIX_CHARS = 8


def create_key(
    store: Store,
    project_id: str,
    body: Mapping[str, Any],
    *,
    actor: str | None = None,
    validate: Validate | None = None,
) -> tuple[dict[str, Any], str]:
    """Create a key with `body`'s name and identity; returns it and its plaintext (only now)."""
    plaintext = generate_key()
    name, identity = _validate(dict(body), hash_key(plaintext))
    with audited_write(
        store, "key", "create", _shown, project_id=project_id, actor=actor, validate=validate
    ) as change:
        require_project(change.session, project_id)
        row = Key(
            id=new_id("key"),
            project_id=project_id,
            name=name,
            key_hash=hash_key(plaintext),
            prefix=plaintext[:_PREFIX_CHARS],
            identity=identity,
        )
        change.add(row)
    return change.written(), plaintext


def get_key(store: Store, project_id: str, key_id: str) -> dict[str, Any]:
    """The key (without its hash), or `ObjectNotFound`."""
    with store.sessions() as session:
        return _read(get_row(session, Key, "key", project_id, key_id))


def find_key(store: Store, key_id: str) -> dict[str, Any] | None:
    """The key with this id in whichever project holds it (a key id is unique), or None."""
    with store.sessions() as session:
        row = session.get(Key, key_id)
        return None if row is None else _read(row)


def list_keys(store: Store, project_id: str) -> list[dict[str, Any]]:
    """Every key of the project, oldest first."""
    with store.sessions() as session:
        require_project(session, project_id)
        query = select(Key).where(Key.project_id == project_id).order_by(Key.created_at, Key.id)
        return [_read(row) for row in session.scalars(query)]


def update_key(
    store: Store,
    project_id: str,
    key_id: str,
    patch: Mapping[str, Any],
    *,
    actor: str | None = None,
    validate: Validate | None = None,
) -> dict[str, Any]:
    """Merge-patch the key's name and identity (the key itself never changes)."""
    with audited_write(
        store, "key", "update", _shown, project_id=project_id, actor=actor, validate=validate
    ) as change:
        row = get_row(change.session, Key, "key", project_id, key_id)
        change.track(row)
        refuse_unknown("key", patch, KeyConfig.model_fields.keys() - {"key", "hash"})
        row.name, row.identity = _validate(
            merge_patch({"name": row.name} | row.identity, patch), row.key_hash
        )
    return change.written()


def revoke_key(
    store: Store,
    project_id: str,
    key_id: str,
    *,
    actor: str | None = None,
    validate: Validate | None = None,
) -> dict[str, Any]:
    """Mark the key revoked (now); revoking twice keeps the first time."""
    with audited_write(
        store, "key", "revoke", _shown, project_id=project_id, actor=actor, validate=validate
    ) as change:
        row = get_row(change.session, Key, "key", project_id, key_id)
        change.track(row)
        row.revoked_at = row.revoked_at or utcnow()
    return change.written()


def delete_key(
    store: Store,
    project_id: str,
    key_id: str,
    *,
    actor: str | None = None,
    validate: Validate | None = None,
) -> None:
    """Delete the key, or `ObjectNotFound`."""
    with audited_write(
        store, "key", "delete", _shown, project_id=project_id, actor=actor, validate=validate
    ) as change:
        change.delete(get_row(change.session, Key, "key", project_id, key_id))


def _validate(body: dict[str, Any], key_hash: str) -> tuple[str, dict[str, Any]]:
    body.pop("key", None)
    fields = validated_fields("key", KeyConfig, body | {"hash": key_hash})
    fields.pop("hash")
    name = fields.pop("name")
    return name, fields


def _shown(_session: Session, row: Key) -> dict[str, Any]:
    return _read(row)


def _read(row: Key) -> dict[str, Any]:
    revoked = stamps(row.revoked_at, row.revoked_at)["created_at"] if row.revoked_at else None
    return (
        {"id": row.id, "project_id": row.project_id, "name": row.name, "prefix": row.prefix}
        | row.identity
        | {"revoked_at": revoked}
        | stamps(row.created_at, row.updated_at)
    )
