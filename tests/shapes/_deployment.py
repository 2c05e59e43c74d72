"""One deployment shape, started for real: `turnout serve` processes (each with its workers) on
a store and a state of the shape's own, in front of a mock upstream of their own, serving two
projects: the config file's, and a second one made through the admin API once they started.

- PostgreSQL: a schema of the shape's own in the run's database, dropped at the end.
- SQLite: a file in the shape's folder.
- Redis: a `redis-server` of the shape's own on a free port (the gateway keeps its keys and
  channels under one fixed prefix, so shapes, and runs, never share a Redis).

Each process logs warnings and errors to a file of its own in the folder; `logs()` shows them
for a failing test. Every process is ended (SIGTERM, then SIGKILL) when the block ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tests.e2e._replicas import Replica
from tests.state._redis_server import running_redis
from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator
    from pathlib import Path

    from sqlalchemy.engine import Engine

    from tests.shapes._matrix import Shape

__all__ = [
    "ADMIN_KEY",
    "AUDIT_KEY",
    "COOLDOWN",
    "FAILURE_THRESHOLD",
    "FILE_KEY",
    "Deployment",
    "deployed",
]

ADMIN_KEY = "adm-shapes-0123456789abcdef"
FILE_KEY = "shapes-file-key-0123456789abcdef"
AUDIT_KEY = "shapes-audit-key-0123456789abcdef"
COOLDOWN = 0.5  # the breaker's open period (seconds)
FAILURE_THRESHOLD = 2

_CONFIG = """\
project: default
store: "{store}"
state: "{state}"
server: {{auth: keys, shutdown_grace_seconds: 0}}
admin_keys: ["{admin}"]
defaults:
  circuit_breaker: {{failure_threshold: {threshold}, cooldown_seconds: {cooldown}}}
providers:
  - {{name: up, kind: openai-compatible, api_key: sk-test, base_url: "{upstream}"}}
  - {{name: m, kind: mock}}
routes:
  - name: breaker
    models: [breaker]
    targets:
      - {{provider: up, model: breaker-p1, name: p1, max_retries: 0}}
      - {{provider: up, model: breaker-p2, name: p2}}
  - name: stream
    models: [stream]
    targets:
      - {{provider: up, model: stream-p1, name: p1, max_retries: 0}}
      - {{provider: up, model: stream-p2, name: p2}}
  - name: audit
    models: [audit]
    targets:
      - {{provider: up, model: audit-p1, name: p1, max_retries: 0}}
      - {{provider: up, model: audit-p2, name: p2}}
  - name: home
    models: [home]
    targets: [{{provider: m, model: home-answer}}]
keys:
  - {{name: file, key: "{file_key}"}}
  - {{name: audit, key: "{audit_key}"}}
"""


@dataclass
class Deployment:
    """A started shape: its `replicas` (processes), the `upstream` they call, the store as
    the test reads it (`store`), the id of the config file's project (`project`) and of a
    second project made through the admin API at the start (`second`)."""

    shape: Shape
    upstream: MockUpstream
    replicas: list[Replica]
    store: Engine
    project: str = ""
    second: str = ""

    def calls(self, model: str) -> int:
        """How many requests for `model` the mock upstream received."""
        return sum(1 for entry in self.upstream.app.log.entries() if entry.model == model)

    def query(self, sql: str, **values: Any) -> list[tuple[Any, ...]]:
        """Rows of `sql` on the deployment's store."""
        with self.store.connect() as connection:
            return [tuple(row) for row in connection.execute(text(sql), values)]

    def logs(self) -> str:
        """What each process logged (warnings and up), process by process."""
        return "\n".join(f"--- {r.name} ({r.url}) ---\n{r.tail(200)}" for r in self.replicas)


@contextlib.asynccontextmanager
async def deployed(shape: Shape, folder: Path, postgres: str | None) -> AsyncIterator[Deployment]:
    """`shape` started in `folder` (on a schema of its own in the database at `postgres`, for
    a PostgreSQL shape) until the block ends."""
    async with contextlib.AsyncExitStack() as stack:
        upstream = await stack.enter_async_context(MockUpstream())
        state = "memory"
        if shape.state == "redis":
            state = (await stack.enter_async_context(running_redis())).url
        served, engine = stack.enter_context(_store(shape, folder, postgres))
        stack.callback(engine.dispose)
        config = folder / "turnout.yaml"
        config.write_text(_config(served, state, upstream))
        options = ("--workers", str(shape.workers)) if shape.workers > 1 else ()
        names = "abc"[: shape.replicas]
        replicas = [Replica(n, config, folder / f"{n}.log", options) for n in names]
        deployment = Deployment(shape, upstream, replicas, engine)
        stack.push_async_callback(_stop, replicas)
        await asyncio.gather(*(replica.start() for replica in replicas))
        deployment.project, deployment.second = await _projects(replicas[0])
        yield deployment


def _config(store: str, state: str, upstream: MockUpstream) -> str:
    return _CONFIG.format(
        store=store,
        state=state,
        admin=ADMIN_KEY,
        threshold=FAILURE_THRESHOLD,
        cooldown=COOLDOWN,
        upstream=upstream.openai_base_url,
        file_key=FILE_KEY,
        audit_key=AUDIT_KEY,
    )


@contextlib.contextmanager
def _store(shape: Shape, folder: Path, postgres: str | None) -> Iterator[tuple[str, Engine]]:
    """The store URL the processes are given, and an engine on the same store for the test."""
    if shape.store == "sqlite":
        path = folder / "turnout.db"
        yield f"sqlite:///{path}", create_engine(f"sqlite:///{path}")
        return
    assert postgres is not None
    schema = f"shape_{uuid.uuid4().hex[:12]}"
    url = make_url(postgres).set(drivername="postgresql+psycopg")
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        served = f"{postgres}?options={quote(f'-csearch_path={schema}')}"
        yield served, create_engine(url, connect_args={"options": f"-csearch_path={schema}"})
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


async def _stop(replicas: list[Replica]) -> None:
    await asyncio.gather(*(replica.stop() for replica in replicas))


async def _projects(replica: Replica) -> tuple[str, str]:
    """The id of the config file's project (`default`), and of a second project made now."""
    headers = {"authorization": f"Bearer {ADMIN_KEY}"}
    async with httpx.AsyncClient(base_url=replica.url, headers=headers, timeout=30) as admin:
        listed = await admin.get("/admin/v1/projects")
        assert listed.status_code == 200, listed.text
        made = await admin.post("/admin/v1/projects", json={"name": "second"})
        assert made.status_code == 201, made.text
    default = next(p["id"] for p in listed.json()["data"] if p["name"] == "default")
    return str(default), str(made.json()["id"])
