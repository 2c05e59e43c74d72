"""The store backends (SQLite always, PostgreSQL when reachable) for every suite outside
tests/store that serves from the store: one PostgreSQL database per run for all of them."""

from __future__ import annotations

from tests.store.conftest import empty_store, postgres_url, store

__all__ = ["empty_store", "postgres_url", "store"]
