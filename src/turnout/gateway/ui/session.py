"""Who may see the dashboard: the holders of an admin key, and the browsers they signed in.

Rule 1: a browser signs in once with an admin key (a form) and gets a session: a random id
(256 bits from `secrets`) in a cookie that scripts cannot read (`HttpOnly`), that other sites'
forms and scripts cannot make the browser send (`SameSite=Lax`), limited to `/ui`, `Secure`
unless the dashboard is served on a loopback address over plain HTTP, for 12 hours. The key
itself never goes into the cookie.
Rule 2: the session lives server-side (`SessionBook`): in the store when the gateway has one, so
every replica honours it and signing out (which deletes it) ends it on every replica at once;
otherwise in this process's memory. A session whose admin key was removed from the
configuration is refused.
Rule 3: scripts and terminals may send the key as `Authorization: Bearer` or `x-api-key` on each
request instead; it is accepted when its hash is one of the admin key hashes, compared in
constant time (the gateway keeps only hashes).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import secrets
from typing import TYPE_CHECKING, Final, Protocol

from turnout.access.keys import hash_key
from turnout.routing.clock import LoopClock

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.routing.clock import Clock
    from turnout.store import Store

__all__ = [
    "COOKIE",
    "SESSION_SECONDS",
    "MemorySessions",
    "SessionBook",
    "StoredSessions",
    "admin_hash",
    "clear_cookies",
    "is_loopback",
    "new_session_id",
    "presented_key",
    "presented_session",
    "session_cookie",
]

COOKIE: Final = "turnout_session"
SESSION_SECONDS: Final = 12 * 3600.0
"""How long a dashboard session lasts after sign-in (seconds)."""
_OLD_COOKIE: Final = "turnout_admin"  # the cookie of earlier versions, which held the key itself
_FLAGS: Final = "Path=/ui; HttpOnly; SameSite=Lax"


class SessionBook(Protocol):
    """Where dashboard sessions live (Rule 2)."""

    async def open(self, session_id: str, admin_key_hash: str, seconds: float) -> None:
        """Keep a new session of the admin key whose hash is `admin_key_hash`."""
        ...

    async def key_of(self, session_id: str) -> str | None:
        """The admin key hash of the live session `session_id` (None: none, or expired)."""
        ...

    async def close(self, session_id: str) -> None:
        """End the session (signing out)."""
        ...


class MemorySessions:
    """Sessions in this process's memory (a gateway without a store), on `clock`."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock: Clock = clock if clock is not None else LoopClock()
        self._sessions: dict[str, tuple[str, float]] = {}

    async def open(self, session_id: str, admin_key_hash: str, seconds: float) -> None:
        now = self._clock.now()
        self._sessions = {k: v for k, v in self._sessions.items() if v[1] > now}
        self._sessions[_digest(session_id)] = (admin_key_hash, now + seconds)

    async def key_of(self, session_id: str) -> str | None:
        found = self._sessions.get(_digest(session_id))
        if found is None or found[1] <= self._clock.now():
            return None
        return found[0]

    async def close(self, session_id: str) -> None:
        self._sessions.pop(_digest(session_id), None)


class StoredSessions:
    """Sessions in the store's `ui_sessions` table, read and written on a thread."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def open(self, session_id: str, admin_key_hash: str, seconds: float) -> None:
        from turnout.store.ui_sessions import open_ui_session  # noqa: PLC0415 - the database layer

        await asyncio.to_thread(open_ui_session, self._store, session_id, admin_key_hash, seconds)

    async def key_of(self, session_id: str) -> str | None:
        from turnout.store.ui_sessions import ui_session_key  # noqa: PLC0415 - the database layer

        return await asyncio.to_thread(ui_session_key, self._store, session_id)

    async def close(self, session_id: str) -> None:
        from turnout.store.ui_sessions import delete_ui_session  # noqa: PLC0415

        await asyncio.to_thread(delete_ui_session, self._store, session_id)


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def admin_hash(key: str, hashes: frozenset[str]) -> str | None:
    """Rule 3: the hash of the admin key `key`, None when it is none of them (every hash is
    compared, in constant time)."""
    digest = hash_key(key)
    found = None
    for known in hashes:
        if hmac.compare_digest(digest, known) and found is None:
            found = known
    return found


def presented_key(headers: Mapping[str, str]) -> str | None:
    """Rule 3: the admin key a script sends: a bearer token, else `x-api-key`."""
    scheme, _, value = headers.get("authorization", "").strip().partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return headers.get("x-api-key", "").strip() or None


def new_session_id() -> str:
    """A new random session id (256 bits, url-safe)."""
    return secrets.token_urlsafe(32)


def presented_session(headers: Mapping[str, str]) -> str | None:
    """The session id the request's cookie holds, if any."""
    for part in headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE and value:
            return value
    return None


def is_loopback(host: str) -> bool:
    """Whether a `Host` header names this machine (`localhost`, `127.0.0.1`, `[::1]` …)."""
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 or host.startswith("[") else host
    name = name.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def session_cookie(session_id: str, *, secure: bool) -> list[bytes]:
    """Rule 1: the `set-cookie` values that sign a browser in (an older key cookie cleared)."""
    tail = "; Secure" if secure else ""
    return [
        f"{COOKIE}={session_id}; {_FLAGS}; Max-Age={int(SESSION_SECONDS)}{tail}".encode(),
        f"{_OLD_COOKIE}=; {_FLAGS}; Max-Age=0".encode(),
    ]


def clear_cookies(*, secure: bool) -> list[bytes]:
    """The `set-cookie` values that sign a browser out."""
    tail = "; Secure" if secure else ""
    return [f"{COOKIE}=; {_FLAGS}; Max-Age=0{tail}".encode()]
