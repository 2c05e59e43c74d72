"""The dashboard's sessions in the store, on each backend: found by id until they expire or are
deleted, stored by the hash of their id only, and never a configuration change."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import select

from turnout.store.models import UiSession
from turnout.store.service import current_version
from turnout.store.ui_sessions import delete_ui_session, open_ui_session, ui_session_key

if TYPE_CHECKING:
    from turnout.store import Store

KEY_HASH = "sha256:" + "ab" * 32
START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def test_a_session_lives_until_it_expires(store: Store) -> None:
    """A session is found up to its expiry and not a second later; a stranger id finds none."""
    open_ui_session(store, "session-one", KEY_HASH, 3600.0, now=START)
    assert ui_session_key(store, "session-one", now=START + timedelta(seconds=3599)) == KEY_HASH
    assert ui_session_key(store, "session-one", now=START + timedelta(seconds=3600)) is None
    assert ui_session_key(store, "session-two", now=START) is None


def test_signing_out_deletes_the_session_and_expired_ones_are_swept(store: Store) -> None:
    """Deleting a session ends it; opening a session deletes the expired ones; the table holds
    hashes of ids, never an id, and no write bumps the configuration version."""
    version = current_version(store)
    open_ui_session(store, "old-session", KEY_HASH, 60.0, now=START)
    open_ui_session(store, "kept-session", KEY_HASH, 60.0, now=START)
    delete_ui_session(store, "kept-session")
    assert ui_session_key(store, "kept-session", now=START) is None
    open_ui_session(store, "new-session", KEY_HASH, 60.0, now=START + timedelta(hours=1))
    with store.sessions() as session:
        stored = session.scalars(select(UiSession.id_hash)).all()
    assert len(stored) == 1
    assert "new-session" not in stored[0]
    assert current_version(store) == version
