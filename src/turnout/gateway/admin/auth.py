"""Admin keys: their stored form, who presents one, and the id the audit names.

Rule 1: an admin key is presented as `Authorization: Bearer <key>` or `x-api-key: <key>`; it is
hashed once (`hash_key`) and compared with every admin key's hash in constant time, all of
them, so the time taken says nothing about which hash came close.
Rule 2: the audit names an admin key by `adm_` and the first 12 hex digits of its hash, never
by the key.
Rule 3: only an admin key's hash is kept, whether the config file writes the key or its hash
(`turnout.gateway.runtime.admin_keys`).
Rule 4: a presented admin key that is none of them is a failed sign-in (`turnout.access.sign_ins`).
"""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING, Final

from turnout.access.keys import HASH_SCHEME, hash_key

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["ADMIN_ID_PREFIX", "admin_key_id", "presented_key", "verify"]

ADMIN_ID_PREFIX: Final = "adm_"
_ID_DIGITS: Final = 12


def admin_key_id(key_hash: str) -> str:
    """Rule 2: `adm_` and the hash's first 12 hex digits."""
    return ADMIN_ID_PREFIX + key_hash.removeprefix(HASH_SCHEME)[:_ID_DIGITS]


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The key of `Authorization: Bearer …`, else of `x-api-key`, else None."""
    authorization = headers.get("authorization", "")
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    api_key = headers.get("x-api-key", "").strip()
    return api_key or None


def verify(presented: str | None, hashes: Iterable[str]) -> str | None:
    """Rule 1: the hash of the admin key `presented`, or None when it is none of them."""
    if presented is None:
        return None
    digest = hash_key(presented).encode()
    found: str | None = None
    for known in hashes:
        if hmac.compare_digest(digest, known.encode()) and found is None:
            found = known
    return found
