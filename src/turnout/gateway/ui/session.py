"""Who may see the dashboard: the holders of an admin key.

Rule 1: a browser signs in once with an admin key (a form); the key then travels in a cookie
that scripts cannot read (`HttpOnly`), that other sites cannot make the browser send
(`SameSite=Strict`), limited to `/ui`, `Secure` when the request came over HTTPS, for 12 hours.
Scripts and terminals may send the key as `Authorization: Bearer` or `x-api-key` instead.
Rule 2: a key is accepted when its hash is one of the admin key hashes, compared in constant time;
the gateway keeps only hashes.
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Final
from urllib.parse import quote, unquote

from turnout.access.keys import hash_key

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["COOKIE", "clear_cookie", "is_admin", "presented_key", "session_cookie"]

COOKIE: Final = "turnout_admin"
_MAX_AGE: Final = 12 * 3600


def is_admin(key: str | None, hashes: frozenset[str]) -> bool:
    """Rule 2: whether `key` is an admin key."""
    if not key:
        return False
    digest = hash_key(key)
    return any(hmac.compare_digest(digest, known) for known in hashes)


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The admin key a request presents: a bearer token, `x-api-key`, or the session cookie."""
    authorization = headers.get("authorization", "")
    if authorization[:7].lower() == "bearer ":
        return authorization[7:].strip() or None
    if "x-api-key" in headers:
        return headers["x-api-key"].strip() or None
    for part in headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE and value:
            return unquote(value)
    return None


def session_cookie(key: str, *, secure: bool) -> bytes:
    """Rule 1: the `set-cookie` value that signs a browser in."""
    flags = f"Path=/ui; HttpOnly; SameSite=Strict; Max-Age={_MAX_AGE}"
    return f"{COOKIE}={quote(key, safe='')}; {flags}{'; Secure' if secure else ''}".encode()


def clear_cookie() -> bytes:
    """The `set-cookie` value that signs a browser out."""
    return f"{COOKIE}=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0".encode()
