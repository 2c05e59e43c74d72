"""The store: projects, providers, routes, consumers, keys, bindings, policies and the audit of
every change, in SQLite (a file, the default) or PostgreSQL (for several replicas).

Reached only through small service functions (`turnout.store.service`); `turnout serve` serves
from snapshots of it (`turnout.store.snapshot`), after recording the config file's objects in it
(`turnout.store.file_sync`). The names below are loaded on first use: the audit writer process
imports modules of this package without loading the database toolkit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnout._lazy import lazy_names

if TYPE_CHECKING:
    from turnout.store.engine import Store, downgrade, migrate, open_store
    from turnout.store.secret_box import SECRET_KEY_VARIABLE, SecretBox

_HOMES = {
    "Store": "turnout.store.engine",
    "downgrade": "turnout.store.engine",
    "migrate": "turnout.store.engine",
    "open_store": "turnout.store.engine",
    "SECRET_KEY_VARIABLE": "turnout.store.secret_box",
    "SecretBox": "turnout.store.secret_box",
}
"""The module each name is defined in."""


__getattr__, __dir__ = lazy_names(globals(), _HOMES)

__all__ = ["SECRET_KEY_VARIABLE", "SecretBox", "Store", "downgrade", "migrate", "open_store"]
