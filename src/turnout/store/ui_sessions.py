"""The dashboard's sign-in sessions in the store, where every replica sees them.

Rule 1: a session is found by the SHA-256 of its id; the id itself (what the browser's cookie
holds) is never stored, so reading the table signs nobody in.
Rule 2: a session is valid until `expires_at`; an expired row is never honoured, and expired
rows are deleted when the next session is made.
Rule 3: sessions are not configuration: writing one bumps no version and leaves no change row.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import delete, select

from turnout.store.models import UiSession

if TYPE_CHECKING:
    from turnout.store.engine import Store

__all__ = ["delete_ui_session", "open_ui_session", "ui_session_key"]


def _id_hash(session_id: str) -> str:
    return "sha256:" + hashlib.sha256(session_id.encode()).hexdigest()


def open_ui_session(
    store: Store, session_id: str, admin_key_hash: str, ttl: float, *, now: datetime | None = None
) -> None:
    """Store the session `session_id` of the admin key whose hash is `admin_key_hash`, valid
    for `ttl` seconds; expired sessions are deleted on the way (Rule 2)."""
    at = now if now is not None else datetime.now(UTC)
    with store.sessions.begin() as session:
        session.execute(delete(UiSession).where(UiSession.expires_at <= at))
        session.add(
            UiSession(
                id_hash=_id_hash(session_id),
                admin_key_hash=admin_key_hash,
                created_at=at,
                expires_at=at + timedelta(seconds=ttl),
            )
        )


def ui_session_key(store: Store, session_id: str, *, now: datetime | None = None) -> str | None:
    """The admin key hash of the live session `session_id`, None when there is none (never
    made, signed out, or expired)."""
    at = now if now is not None else datetime.now(UTC)
    with store.sessions() as session:
        row = session.scalars(
            select(UiSession).where(UiSession.id_hash == _id_hash(session_id))
        ).one_or_none()
        if row is None or _aware(row.expires_at) <= at:
            return None
        return row.admin_key_hash


def delete_ui_session(store: Store, session_id: str) -> None:
    """Sign the session out: its row is deleted (nothing when there is none)."""
    with store.sessions.begin() as session:
        session.execute(delete(UiSession).where(UiSession.id_hash == _id_hash(session_id)))


def _aware(when: datetime) -> datetime:
    """SQLite hands back a stored time without its zone; it was stored in UTC."""
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)
