"""One migrated store per backend for the whole audit suite, emptied after each test.

Migrating takes most of a store test's time; these tests only add and read audit, usage,
project and key rows, so they share one schema per backend and delete those rows after each
test instead. Tests that need a store without tables use `empty_store`.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pytest
from sqlalchemy import delete, text

from tests.store.conftest import SECRET_KEY
from turnout.store import SecretBox, Store, migrate, open_store
from turnout.store.models import ConfigChange, Project, RequestAttempt, RequestAudit, UsageEntry

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(scope="package", params=["sqlite", "postgresql"])
def shared_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    """A migrated store on each backend, shared by the suite."""
    box = SecretBox(SECRET_KEY)
    if request.param == "sqlite":
        folder = tmp_path_factory.mktemp("audit-db")
        store = open_store(f"sqlite:///{folder}/turnout.db", secrets=box)
        migrate(store)
        yield store
        store.close()
        return
    url: str = request.getfixturevalue("postgres_url")
    schema = f"a_{uuid.uuid4().hex[:12]}"
    setup = open_store(url)
    with setup.engine.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    store = open_store(url, secrets=box, connect_args={"options": f"-csearch_path={schema}"})
    migrate(store)
    yield store
    store.close()
    with setup.engine.begin() as connection:
        connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    setup.close()


@pytest.fixture
def store(shared_store: Store) -> Iterator[Store]:
    """The shared store, emptied of audit, usage, projects and keys after the test."""
    yield shared_store
    with shared_store.engine.begin() as connection:
        for model in (RequestAttempt, RequestAudit, UsageEntry, Project, ConfigChange):
            connection.execute(delete(model))
