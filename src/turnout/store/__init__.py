"""The store: projects, providers, routes, consumers, keys, bindings, policies and the audit of
every change, in SQLite (a file, the default) or PostgreSQL (for several replicas).

Reached only through small service functions (`turnout.store.service`). Not wired into
`turnout serve` yet: the admin API over these functions, and serving from snapshots of the store,
come next.
"""

from __future__ import annotations

from turnout.store.engine import Store, downgrade, migrate, open_store
from turnout.store.secret_box import SECRET_KEY_VARIABLE, SecretBox

__all__ = ["SECRET_KEY_VARIABLE", "SecretBox", "Store", "downgrade", "migrate", "open_store"]
