"""The store: projects, providers, routes, consumers, keys, bindings, policies and the audit of
every change, in SQLite (a file, the default) or PostgreSQL (for several replicas).

Reached only through small service functions (`turnout.store.service`); `turnout serve` serves
from snapshots of it (`turnout.store.snapshot`), after recording the config file's objects in it
(`turnout.store.file_sync`).
"""

from __future__ import annotations

from turnout.store.engine import Store, downgrade, migrate, open_store
from turnout.store.secret_box import SECRET_KEY_VARIABLE, SecretBox

__all__ = ["SECRET_KEY_VARIABLE", "SecretBox", "Store", "downgrade", "migrate", "open_store"]
