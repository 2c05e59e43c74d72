"""The store's schema: migrations run on both backends and agree with the models."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, select

from tests.store.conftest import store_on
from turnout.errors import ConfigError
from turnout.store import downgrade, migrate, open_store
from turnout.store.engine import HEAD_REVISION, MIGRATIONS, current_revisions
from turnout.store.models import Base, Meta

if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from turnout.store import Store

TABLES = {
    "bindings",
    "config_changes",
    "consumers",
    "keys",
    "meta",
    "policies",
    "projects",
    "providers",
    "request_attempts",
    "request_audit",
    "routes",
    "ui_sessions",
    "usage_ledger",
}
SECOND_TABLES = TABLES - {"ui_sessions"}
FIRST_TABLES = SECOND_TABLES - {"request_attempts", "request_audit", "usage_ledger"}


def _tables(store: Store) -> set[str]:
    return set(inspect(store.engine).get_table_names()) - {"alembic_version"}


def _differences(store: Store) -> list[object]:
    with store.engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, Base.metadata))


def test_upgrade_from_empty_creates_every_table(empty_store: Store) -> None:
    """Upgrading an empty database creates every table and a version counter at 0."""
    assert _tables(empty_store) == set()
    migrate(empty_store)
    assert _tables(empty_store) == TABLES
    with empty_store.sessions() as session:
        assert session.scalars(select(Meta.version)).all() == [0]


def test_upgrade_twice_is_a_no_op(store: Store) -> None:
    """Migrating an up-to-date store changes nothing (replicas that start later find no work)."""
    migrate(store)
    assert _tables(store) == TABLES


def test_downgrade_one_step_then_upgrade_again(store: Store) -> None:
    """The audit's route index, the dashboard's sessions, then the audit and usage tables
    downgrade away, then the first revision to an empty schema, and all upgrade again
    cleanly."""
    downgrade(store, "-1")
    indexes = {index["name"] for index in inspect(store.engine).get_indexes("request_audit")}
    assert "ix_request_audit_route_at" not in indexes
    assert _tables(store) == TABLES
    downgrade(store, "-1")
    assert _tables(store) == SECOND_TABLES
    downgrade(store, "-1")
    assert _tables(store) == FIRST_TABLES
    downgrade(store, "-1")
    assert _tables(store) == set()
    migrate(store)
    assert _tables(store) == TABLES
    assert _differences(store) == []


def test_models_and_migrations_agree(store: Store) -> None:
    """Autogenerate finds no difference between the migrated schema and the models."""
    assert _differences(store) == []


def test_sqlite_store_creates_its_folder(tmp_path: Path) -> None:
    """A SQLite store creates the folders of its file and enforces foreign keys."""
    store = open_store(f"sqlite:///{tmp_path}/a/b/turnout.db")
    migrate(store)
    assert (tmp_path / "a" / "b" / "turnout.db").exists()
    with store.engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    store.close()


def test_unknown_database_is_refused() -> None:
    """A store URL of another database kind is refused with a ConfigError."""
    with pytest.raises(ConfigError, match="not supported"):
        open_store("mysql://localhost/turnout")


def test_head_revision_is_the_migrations_head() -> None:
    """The revision `migrate` checks before loading the migration tool is the newest one."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    assert ScriptDirectory.from_config(config).get_heads() == [HEAD_REVISION]


def test_migrated_store_reports_the_head_revision(store: Store) -> None:
    """A migrated store reads as being at the newest revision; a store never migrated at none."""
    assert current_revisions(store) == [HEAD_REVISION]


def test_never_migrated_store_has_no_revision(empty_store: Store) -> None:
    """A store with no tables yet has no revision, so `migrate` runs the migrations."""
    assert current_revisions(empty_store) == []


def test_starting_on_an_up_to_date_store_does_not_load_the_migration_tool(
    tmp_path: Path,
) -> None:
    """A process opening and migrating a store that is already at the newest revision never
    imports alembic (its memory and import time stay out of the gateway)."""
    database = tmp_path / "turnout.db"
    migrate(open_store(f"sqlite:///{database}"))
    script = (
        "import sys\n"
        "from turnout.store import migrate, open_store\n"
        f"migrate(open_store('sqlite:///{database}'))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('alembic', 'cryptography')))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TURNOUT_SECRET_KEY"}
    out = subprocess.run(  # noqa: S603 - our own interpreter and script
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "[]"


def _schema(store: Store) -> dict[str, Any]:
    """Every table's columns, keys, indexes and constraints, and the seed and version rows,
    as the database itself reports them."""
    inspector = inspect(store.engine)
    tables: dict[str, Any] = {}
    for table in sorted(inspector.get_table_names()):
        columns = [
            (c["name"], str(c["type"]), c["nullable"], str(c.get("default")))
            for c in inspector.get_columns(table)
        ]
        tables[table] = {
            "columns": columns,
            "primary key": inspector.get_pk_constraint(table),
            "foreign keys": sorted(inspector.get_foreign_keys(table), key=repr),
            "indexes": sorted(inspector.get_indexes(table), key=repr),
            "unique": sorted(inspector.get_unique_constraints(table), key=repr),
            "checks": sorted(inspector.get_check_constraints(table), key=repr),
        }
    with store.engine.connect() as connection:
        tables["rows"] = [
            connection.exec_driver_sql("SELECT id, version FROM meta").all(),
            connection.exec_driver_sql("SELECT version_num FROM alembic_version").all(),
        ]
    return tables


def test_a_created_schema_is_the_migrated_schema(empty_store: Store, tmp_path: Path) -> None:
    """An empty database gets its schema made at once from the models; it is the schema the
    migrations make, table by table (columns, keys, indexes, constraints), with the same seed
    row and the same revision."""
    url = None if empty_store.backend == "sqlite" else str(empty_store.engine.url)
    with store_on(empty_store.backend, tmp_path / "migrated", url) as migrated:
        migrate(migrated, create=False)
        migrate(empty_store)
        made, expected = _schema(empty_store), _schema(migrated)
    assert set(made) == {*TABLES, "alembic_version", "rows"}
    assert made["rows"] == expected["rows"] == [[(1, 0)], [(HEAD_REVISION,)]]
    for table in sorted(expected):
        assert made[table] == expected[table], table


def test_a_creation_cut_short_leaves_no_table(
    empty_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A start that fails while making the schema leaves the database empty (one
    transaction), so the next start makes it whole."""

    def failing(*args: Any, **options: Any) -> None:
        made(*args, **options)
        raise RuntimeError("cut short")

    made = Base.metadata.create_all
    monkeypatch.setattr(Base.metadata, "create_all", failing)
    with pytest.raises(RuntimeError, match="cut short"):
        migrate(empty_store)
    assert set(inspect(empty_store.engine).get_table_names()) == set()
    monkeypatch.undo()
    migrate(empty_store)
    assert _tables(empty_store) == TABLES
    assert current_revisions(empty_store) == [HEAD_REVISION]


def test_a_first_start_does_not_load_the_migration_tool(tmp_path: Path) -> None:
    """A process that opens a store in a new folder makes its schema without importing
    alembic."""
    script = (
        "import sys\n"
        "from turnout.store import migrate, open_store\n"
        f"migrate(open_store('sqlite:///{tmp_path}/new/turnout.db'))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'alembic'))\n"
    )
    out = subprocess.run(  # noqa: S603 - our own interpreter and script
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
    assert current_revisions(open_store(f"sqlite:///{tmp_path}/new/turnout.db")) == [HEAD_REVISION]
