"""Opening the store and migrating its schema.

`open_store(url)` takes `sqlite:///path` (the file and its folder are created; WAL journal,
foreign keys enforced) or `postgresql://…` (driven by psycopg 3). `migrate(store)` brings the
schema to the newest revision; on PostgreSQL it holds an advisory lock meanwhile (on SQLite, a
lock on a file beside the database), so replicas that start together migrate once and the
others wait, then find nothing to do.

On PostgreSQL every wait is bounded (`StoreTimeouts`): opening a connection, each statement
(the server cancels it; a migration's statements are not bounded), and waiting for a pooled
connection; and each call from the event loop is bounded as a whole (`Store.run`), so a
database that accepts connections and never answers is reported as unreachable within
seconds instead of holding its callers.
"""

from __future__ import annotations

import fcntl
import functools
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeVar

from sqlalchemy import create_engine, event, insert, inspect, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from turnout.errors import ConfigError
from turnout.store.calls import StoreCalls
from turnout.store.secret_box import SecretBox

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from alembic.config import Config
    from sqlalchemy.engine import URL, Connection, Engine

__all__ = [
    "HEAD_REVISION",
    "MIGRATIONS",
    "Store",
    "StoreTimeouts",
    "downgrade",
    "migrate",
    "open_store",
    "start_lock",
]

MIGRATIONS: Final = Path(__file__).parent / "migrations"
"""The folder of the store's migrations, shipped in the package."""
HEAD_REVISION: Final = "0004"
"""The newest migration's revision. `migrate` compares the database's revision with it first,
so a process that starts on an up-to-date store never loads the migration tool (about 10 MiB
and a noticeable part of the start-up time). A test keeps it equal to the migrations' head."""
# An arbitrary constant that names turnout's migration lock among the database's advisory locks.
_MIGRATION_LOCK: Final = 0x7475726E6F7574
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class StoreTimeouts:
    """How long the gateway waits on PostgreSQL, in seconds: to open a connection (`connect`,
    2; the driver waits at least 2), for one statement (`statement`, 10; the server cancels
    it), for a pooled connection when all are busy (`checkout`, 5), and for one call made from
    the event loop as a whole (`call`, 5: it then fails as `StoreUnavailable`, whatever its
    thread is still waiting on). SQLite, a local file, takes only `call`."""

    connect: float = 2.0
    statement: float = 10.0
    checkout: float = 5.0
    call: float = 5.0


@dataclass(frozen=True, slots=True)
class Store:
    """An open store: its engine, a session factory, the box for provider secrets, and the
    bounded calls from the event loop (`run`; whether the store answered the last one)."""

    engine: Engine
    sessions: sessionmaker[Session]
    secrets: SecretBox
    calls: StoreCalls = field(default_factory=StoreCalls)

    @property
    def backend(self) -> str:
        """`postgresql` or `sqlite`."""
        return str(self.engine.dialect.name)

    async def run(self, function: Callable[..., _T], *args: Any, **keywords: Any) -> _T:
        """`function(self, *args, **keywords)` on a thread of its own, bounded by the call
        timeout (`StoreUnavailable` past it, or when the database cannot be reached)."""
        return await self.calls.run(functools.partial(function, self, *args, **keywords))

    @property
    def is_postgres(self) -> bool:
        """Whether the database is PostgreSQL (else SQLite)."""
        return self.engine.dialect.name == "postgresql"

    def close(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


def open_store(
    url: str,
    *,
    secrets: SecretBox | None = None,
    timeouts: StoreTimeouts | None = None,
    **engine_options: Any,
) -> Store:
    """Open the store at `url` (`sqlite:///path` or `postgresql://…`); no schema change.

    `secrets` defaults to the box keyed by `TURNOUT_SECRET_KEY`; `timeouts` to
    `StoreTimeouts()`; `engine_options` go to SQLAlchemy's `create_engine` (`connect_args`
    are merged with the timeouts').
    """
    bounds = timeouts if timeouts is not None else StoreTimeouts()
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        engine = _sqlite_engine(url, parsed.database, engine_options)
    elif backend == "postgresql":
        parsed = parsed.set(drivername="postgresql+psycopg")
        engine = _postgres_engine(parsed, bounds, engine_options)
    else:
        raise ConfigError(f"store: {backend!r} is not supported: use sqlite:/// or postgresql://")
    box = secrets if secrets is not None else SecretBox.from_env()
    sessions = sessionmaker(engine, expire_on_commit=False)
    return Store(engine, sessions, box, StoreCalls(timeout=bounds.call))


def _postgres_engine(url: URL, bounds: StoreTimeouts, options: dict[str, Any]) -> Engine:
    """A PostgreSQL engine with the bounds; a bound that the URL or `connect_args` set already
    is kept."""
    connect_args = dict(options.pop("connect_args", {}))
    query = {key: str(value) for key, value in url.query.items()}
    if "connect_timeout" not in query:
        connect_args.setdefault("connect_timeout", max(2, round(bounds.connect)))
    given = " ".join(
        str(each) for each in (query.get("options"), connect_args.get("options")) if each
    )
    if "statement_timeout" not in given:
        statement = f"-c statement_timeout={round(bounds.statement * 1000)}"
        given = f"{given} {statement}" if given else statement
    connect_args["options"] = given
    options.setdefault("pool_timeout", bounds.checkout)
    return create_engine(url, pool_pre_ping=True, connect_args=connect_args, **options)


def _sqlite_engine(url: str, database: str | None, options: dict[str, Any]) -> Engine:
    in_memory = not database or database == ":memory:"
    if not in_memory:
        Path(str(database)).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, **options)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        if not in_memory:
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.close()

    return engine


def migrate(store: Store, revision: str = "head", *, create: bool = True) -> None:
    """Upgrade the schema to `revision` (default: the newest); nothing to do, and nothing
    loaded, when the store is already at the newest.

    `create`: a database without any table gets the newest schema made at once from the models
    (with its seed row, stamped at the newest revision) instead of by running every migration,
    so a first start never loads the migration tool either. A test keeps the two schemas
    identical on both backends."""
    if revision == "head":
        found = current_revisions(store)
        if found == [HEAD_REVISION]:
            return
        if create and not found and _run(store, _create_head):
            return
    from alembic import command  # noqa: PLC0415 - only when there is something to migrate

    _run(store, lambda connection: command.upgrade(_alembic_config(connection), revision))


def downgrade(store: Store, revision: str) -> None:
    """Downgrade the schema to `revision` (`-1`: one step; `base`: empty)."""
    from alembic import command  # noqa: PLC0415 - see migrate

    _run(store, lambda connection: command.downgrade(_alembic_config(connection), revision))


def _create_head(connection: Connection) -> bool:
    """Under the migration lock: the newest schema, its seed row and its revision stamp, in
    one transaction, when the database has no table at all (else False: another process made
    it meanwhile, or it holds an older schema that the migrations upgrade)."""
    if inspect(connection).get_table_names():
        return False
    from turnout.store.models import Base, Meta  # noqa: PLC0415 - the schema only when made

    if connection.dialect.name == "sqlite":
        # The driver would commit each CREATE on its own: one transaction holds them all, so
        # a start cut short leaves an empty file, not half a schema.
        connection.exec_driver_sql("BEGIN IMMEDIATE")
    Base.metadata.create_all(connection)
    connection.execute(insert(Meta).values(id=1, version=0))
    connection.execute(
        text(
            "CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL, "
            "CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))"
        )
    )
    connection.execute(
        text("INSERT INTO alembic_version (version_num) VALUES (:head)"), {"head": HEAD_REVISION}
    )
    return True


def current_revisions(store: Store) -> list[str]:
    """The revisions the database says it is at: none for a store never migrated (or one
    that cannot be read now, which the migration then reports)."""
    try:
        with store.engine.connect() as connection:
            rows = connection.execute(text("SELECT version_num FROM alembic_version"))
            return [str(value) for value in rows.scalars()]
    except DBAPIError:
        return []


def _run(store: Store, step: Callable[[Connection], _T]) -> _T:
    """`step` on a connection of its own under the migration locks, committed."""
    with start_lock(store), store.engine.connect() as connection:
        if store.is_postgres:
            # A migration may take longer than a statement of serving is allowed.
            connection.execute(text("SET statement_timeout = 0"))
            connection.execute(select(text(f"pg_advisory_lock({_MIGRATION_LOCK})")))
            connection.commit()
        try:
            result = step(connection)
            connection.commit()
        finally:
            if store.is_postgres:
                connection.rollback()
                connection.execute(select(text(f"pg_advisory_unlock({_MIGRATION_LOCK})")))
                connection.execute(text("RESET statement_timeout"))
                connection.commit()
    return result


@contextmanager
def start_lock(store: Store) -> Iterator[None]:
    """On SQLite, an exclusive lock on a file beside the database (`<file>.migrate-lock`),
    held while migrating (the counterpart of PostgreSQL's advisory lock), so processes that
    start together on one file migrate, and record their config file, one at a time; on
    PostgreSQL, nothing. Not reentrant: hold it around one step at a time."""
    database = store.engine.url.database
    if store.is_postgres or not database or database == ":memory:":
        yield
        return
    with open(f"{database}.migrate-lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _alembic_config(connection: Connection) -> Config:
    from alembic.config import Config  # noqa: PLC0415 - see migrate

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config
