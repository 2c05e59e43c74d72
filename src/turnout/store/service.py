"""The store's service functions, in one place for the admin API to call: every read and write
of stored objects goes through these (each write in one transaction, audited, version bumped;
writes made inside `one_transaction(store)` commit together or not at all).

Every write takes `validate`, a hook called with the project as the write leaves it (inside the
transaction: raising rolls the write back), and `actor`, the admin key id for the audit row.
Updates and deletes of providers and routes take `allow_file`, for the config file's sync only."""

from __future__ import annotations

from turnout.store._writes import current_version, one_transaction
from turnout.store.changes import list_changes
from turnout.store.consumers import (
    create_consumer,
    delete_consumer,
    get_consumer,
    list_consumers,
    update_consumer,
)
from turnout.store.keys import (
    create_key,
    delete_key,
    find_key,
    get_key,
    list_keys,
    revoke_key,
    update_key,
)
from turnout.store.objects import (
    ObjectKind,
    check_secret_key,
    create_object,
    delete_object,
    get_object,
    list_objects,
    provider_secret,
    update_object,
)
from turnout.store.projects import (
    create_project,
    delete_project,
    get_project,
    list_projects,
    update_project,
)

__all__ = [
    "ObjectKind",
    "check_secret_key",
    "create_consumer",
    "create_key",
    "create_object",
    "create_project",
    "current_version",
    "delete_consumer",
    "delete_key",
    "delete_object",
    "delete_project",
    "find_key",
    "get_consumer",
    "get_key",
    "get_object",
    "get_project",
    "list_changes",
    "list_consumers",
    "list_keys",
    "list_objects",
    "list_projects",
    "one_transaction",
    "provider_secret",
    "revoke_key",
    "update_consumer",
    "update_key",
    "update_object",
    "update_project",
]
