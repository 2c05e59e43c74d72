"""The stored form of the config file's admin keys, which the control plane hands to the admin
API.

Rule 1: in the config file, an admin key is written as the key itself (usually `${VAR}`) or as
its hash (`sha256:` and 64 hex digits); either way only the hash is kept.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from turnout.access.keys import hash_key

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["admin_key_hashes"]

_HASH_FORM: Final = re.compile(r"sha256:[0-9a-f]{64}")


def admin_key_hashes(keys: Iterable[str]) -> frozenset[str]:
    """Rule 1: the hash of each admin key of the file (a `sha256:` entry is taken as is,
    lower-cased)."""
    return frozenset(
        key.lower() if _HASH_FORM.fullmatch(key.lower()) else hash_key(key) for key in keys if key
    )
