"""The store backends of the admin API suites: the store suites' own (SQLite always,
PostgreSQL when reachable), migrated once per module, since every admin test works in
projects of its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.store.conftest import empty_store, postgres_url, store, store_on
from turnout.store import migrate

if TYPE_CHECKING:
    from collections.abc import Iterator

    from turnout.store import Store

__all__ = ["empty_store", "module_store", "postgres_url", "store"]


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def module_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    """A migrated store shared by one module's tests, on each backend."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    with store_on(request.param, tmp_path_factory.mktemp("store"), url) as store:
        migrate(store)
        yield store
