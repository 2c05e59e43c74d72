"""Backends for the store suites: SQLite always; PostgreSQL when reachable.

PostgreSQL is `TURNOUT_TEST_POSTGRES_URL` if set, else `postgresql://postgres@127.0.0.1:5432/test`
when something answers there. Each run creates a database of its own from that one (dropped at
the end), and each test a schema of its own in it, so runs and tests never share tables.
"""

from __future__ import annotations

import os
import uuid
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from turnout.store import SecretBox, Store, migrate, open_store

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

DEFAULT_POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
SECRET_KEY = Fernet.generate_key().decode()


def _admin_url(url: str) -> str:
    return make_url(url).set(drivername="postgresql+psycopg").render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A database of this run's own, or a skip saying why there is none."""
    url = os.environ.get("TURNOUT_TEST_POSTGRES_URL") or DEFAULT_POSTGRES_URL
    admin = create_engine(
        _admin_url(url), isolation_level="AUTOCOMMIT", connect_args={"connect_timeout": 2}
    )
    name = f"turnout_test_{uuid.uuid4().hex[:12]}"
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
    except OperationalError as exc:
        admin.dispose()
        pytest.skip(f"no PostgreSQL at {url} ({type(exc).__name__}); set TURNOUT_TEST_POSTGRES_URL")
    try:
        yield make_url(url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@contextmanager
def store_on(backend: str, folder: Path, postgres: str | None) -> Iterator[Store]:
    """A store with no tables yet on `backend` (`sqlite`: a file in `folder`; `postgresql`: a
    schema of its own in the database at `postgres`), keyed with a fresh secret key."""
    box = SecretBox(SECRET_KEY)
    if backend == "sqlite":
        store = open_store(f"sqlite:///{folder}/db/turnout.db", secrets=box)
        yield store
        store.close()
        return
    assert postgres is not None
    schema = f"t_{uuid.uuid4().hex[:12]}"
    setup = open_store(postgres)
    with setup.engine.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    store = open_store(postgres, secrets=box, connect_args={"options": f"-csearch_path={schema}"})
    yield store
    store.close()
    with setup.engine.begin() as connection:
        connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    setup.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A store with no tables yet, on each backend, keyed with a fresh secret key."""
    url = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    with store_on(request.param, tmp_path, url) as store:
        yield store


@pytest.fixture
def store(empty_store: Store) -> Store:
    """A migrated store, on each backend."""
    migrate(empty_store)
    return empty_store
