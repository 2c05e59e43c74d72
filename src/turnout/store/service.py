"""The store's service functions, in one place for the admin API to call: every read and write
of stored objects goes through these (each write in one transaction, audited, version bumped)."""

from __future__ import annotations

from turnout.store._writes import current_version
from turnout.store.changes import list_changes
from turnout.store.keys import create_key, delete_key, get_key, list_keys, revoke_key, update_key
from turnout.store.objects import (
    ObjectKind,
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
    "create_key",
    "create_object",
    "create_project",
    "current_version",
    "delete_key",
    "delete_object",
    "delete_project",
    "get_key",
    "get_object",
    "get_project",
    "list_changes",
    "list_keys",
    "list_objects",
    "list_projects",
    "provider_secret",
    "revoke_key",
    "update_key",
    "update_object",
    "update_project",
]
