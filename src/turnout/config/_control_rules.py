"""The control plane's two settings: `store` (where configuration, audit and usage are kept) and
`admin_keys` (who may call the admin API).

Rule 1: `store` is `sqlite:///PATH` or `postgresql://…`. A relative SQLite path is resolved
against the configuration file's folder (`store_url`), so the store sits beside the file whatever
the working directory; without a file, against the folder the caller names (the working
directory for `turnout serve`).
Rule 2: an admin key is its plaintext (usually `${VAR}`) or its `sha256:` hash; either way only
the hash is kept (`turnout.gateway.runtime.admin_keys.admin_key_hashes`). Messages name the entry,
never its value.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Final

from turnout.access.keys import HASH_SCHEME

if TYPE_CHECKING:
    from turnout.schema import FileConfig

__all__ = ["DEFAULT_STORE", "check_store", "store_url"]

DEFAULT_STORE: Final = "sqlite:///turnout.db"
"""The store when the file names none: `turnout.db` beside the configuration file."""

_SQLITE: Final = "sqlite:///"
_POSTGRES: Final = ("postgresql://", "postgresql+psycopg://", "postgres://")
_HASH_FORM = re.compile(r"sha256:[0-9a-f]{64}")


def check_store(config: FileConfig) -> list[tuple[str, str]]:
    """Rules 1 and 2: every problem with `store` and `admin_keys`, as `(path, message)`."""
    errors: list[tuple[str, str]] = []
    store = config.store
    if not store.startswith((_SQLITE, *_POSTGRES)):
        scheme = store.split(":", 1)[0] if ":" in store else store  # never the rest: a password
        rule = f"unknown store {scheme!r}: use a 'sqlite:///PATH' or 'postgresql://…' URL"
        errors.append(("store", rule))
    elif store.startswith(_SQLITE) and not store.removeprefix(_SQLITE):
        errors.append(("store", "a sqlite:/// URL needs a file path (sqlite:///turnout.db)"))
    for index, key in enumerate(config.admin_keys):
        path = f"admin_keys[{index}]"
        if not key.strip():
            errors.append((path, "an admin key may not be empty"))
        elif key != key.strip():
            errors.append((path, "an admin key may not start or end with white space"))
        elif key.lower().startswith(HASH_SCHEME) and not _HASH_FORM.fullmatch(key.lower()):
            errors.append((path, f"a hashed admin key must be '{HASH_SCHEME}' and 64 hex digits"))
    return errors


def store_url(config: FileConfig, base: Path) -> str:
    """Rule 1: the store's URL with a relative SQLite path resolved against `base` (the
    configuration file's folder); `sqlite:///:memory:` and absolute paths are kept."""
    url = config.store
    if not url.startswith(_SQLITE):
        return url
    path, _, query = url.removeprefix(_SQLITE).partition("?")
    if path == ":memory:" or Path(path).is_absolute():
        return url
    resolved = (base / path).resolve()
    return f"{_SQLITE}{resolved}" + (f"?{query}" if query else "")
