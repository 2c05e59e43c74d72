"""The store backends (SQLite always, PostgreSQL when reachable) for the gateway suites that
serve from the store."""

from __future__ import annotations

from tests.store.conftest import empty_store, postgres_url, store

__all__ = ["empty_store", "postgres_url", "store"]
