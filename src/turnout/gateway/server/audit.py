"""The request audit of a serving process: its store's audit writer, where the writer spills,
and the writer's life beside the control plane.

Rule 1: each serving process (each pre-forked worker, after the fork) has one audit writer, the
sink of its app's observer: an `AuditPipe`, whose writing runs in a child process of that
serving process (`audit_process`), logging as it does; with an in-memory store, a writer in the
process itself. It starts at lifespan startup, once the control plane has loaded the store and
before the listener accepts, without waiting for the child; the child replays what earlier
processes spilled. It is closed at lifespan shutdown, after the listener stopped and before the
store closes, so what is queued is written (or its usage spilled).
Rule 2: the spill folder is `audit_spill_dir` when set (a relative path is resolved against
the configuration file's folder, or the working directory without a file); else, with an
SQLite store file, `<file>-spill` beside it (`turnout.db-spill`); else (PostgreSQL, an
in-memory SQLite store) `turnout-spill` in that same folder. It is made only when something
is spilled; the workers and replicas on one machine may share it (each writer holds a file of
its own, and adopts the files of writers that ended).
Rule 3: the writer failing to start or to close never stops serving: it is logged.
Rule 4: the dashboard opens a request this process no longer holds (or another worker served)
from the store's audit, and keeps its sign-in sessions in the store, where every worker and
replica sees them.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from turnout.gateway.observe.observer import Observer
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.ui.session import StoredSessions

if TYPE_CHECKING:
    from collections.abc import Callable

    from sqlalchemy.engine import URL

    from turnout.gateway.runtime.control import ControlPlane
    from turnout.gateway.runtime.served import ServedProjects
    from turnout.store.audit_pipe import AuditPipe
    from turnout.store.audit_search import RequestFilter
    from turnout.store.engine import Store

__all__ = ["AuditedControl", "spill_folder", "store_app"]

logger = logging.getLogger("turnout.gateway")

CHILD_COMMAND: Final = (sys.executable, "-m", "turnout.gateway.server.audit_process")
"""The command line of a serving process's audit writer process (Rule 1)."""
SPILL_FOLDER: Final = "turnout-spill"
"""The spill folder's name when the store is not an SQLite file (Rule 2)."""


def spill_folder(url: URL, setting: str | None, base: Path) -> Path:
    """Rule 2: where the audit writer of the store at `url` spills usage; `setting` is the
    config's `audit_spill_dir`, `base` the configuration file's folder (the working directory
    without a file)."""
    if setting:
        return (base / Path(setting).expanduser()).resolve()
    database = url.database
    if url.get_backend_name() == "sqlite" and database and database != ":memory:":
        path = Path(database)
        return (base / path).resolve().with_name(f"{path.name}-spill")
    return (base / SPILL_FOLDER).resolve()


class AuditedControl:
    """A control plane whose serving process audits its requests (Rule 1): the app's runtime
    source, starting and closing the `writer` around the control plane's own life."""

    def __init__(self, control: ControlPlane, writer: AuditPipe) -> None:
        self.control = control
        self.writer = writer

    async def start(self, swap: Callable[[ServedProjects], object]) -> ServedProjects:
        """Load and follow the store, then start the writer (it replays the spill)."""
        served = await self.control.start(swap)
        try:
            await self.writer.start()
        except Exception:  # Rule 3: serving goes on; usage is spilled meanwhile
            logger.exception("audit: the audit writer could not start")
        return served

    async def aclose(self) -> None:
        """Write what is queued, then stop the control plane (which closes the store)."""
        try:
            await self.writer.aclose()
        except Exception:  # Rule 3
            logger.exception("audit: closing the audit writer failed")
        await self.control.aclose()


def store_app(control: ControlPlane, config_path: str | None) -> GatewayApp:
    """The app of one serving process over `control`, auditing its requests into the store
    (Rule 1). `config_path` is the configuration file (None: the embedded defaults)."""
    from turnout.store.audit_pipe import AuditPipe  # noqa: PLC0415 - the database layer, lazily
    from turnout.store.audit_policy import AuditPolicy  # noqa: PLC0415 - likewise

    base = Path(config_path).resolve().parent if config_path else Path.cwd()
    file = control.file
    writer = AuditPipe(
        control.store,
        spill_dir=spill_folder(control.store.engine.url, file.audit_spill_dir, base),
        policy=AuditPolicy(retention_days=file.audit_retention_days),
        command=CHILD_COMMAND,
    )
    app = GatewayApp(
        control=AuditedControl(control, writer),
        admin_hashes=control.admin_key_hashes,
        admin=control,
        observer=Observer(sink=writer),
        status=control.status,
    )
    if app.dashboard is not None:
        app.dashboard.audit = functools.partial(_audited, control.store)
        app.dashboard.traffic = functools.partial(_traffic, control.store)
        app.dashboard.search = functools.partial(_search, control.store)
        app.dashboard.spend = functools.partial(_spend, control.store)
        app.dashboard.sessions = StoredSessions(control.store)  # every replica sees them
    return app


async def _traffic(store: Store, project: str, route: str) -> dict[str, dict[str, Any]]:
    """A route's traffic from the store's audit per window of the route page, on a thread
    bounded by the store's call timeout."""
    from turnout.gateway.ui.route_view import WINDOWS  # noqa: PLC0415 - the page's, lazily
    from turnout.store.route_stats import route_windows  # noqa: PLC0415 - see _audited

    now = datetime.now(UTC)
    starts = {window: now - timedelta(seconds=seconds) for window, seconds in WINDOWS.items()}

    def read(store: Store) -> dict[str, dict[str, Any]]:
        return route_windows(store, project=project, route=route, windows=starts)

    return await store.run(read)


async def _search(
    store: Store, wanted: RequestFilter, before: int | None, limit: int
) -> dict[str, Any]:
    """A page of the audit's requests, on a thread bounded by the store's call timeout."""
    from turnout.store.audit_search import search_requests  # noqa: PLC0415 - see _audited

    return await store.run(lambda store: search_requests(store, wanted, before=before, limit=limit))


SPEND_DAYS: Final = 30
"""The days the dashboard's spend covers."""


async def _spend(store: Store) -> dict[str, list[dict[str, Any]]]:
    """Spend per project and per key over the last `SPEND_DAYS` days, from the usage ledger,
    on a thread bounded by the store's call timeout."""
    from turnout.store.usage import usage_report  # noqa: PLC0415 - see _audited

    since = datetime.now(UTC) - timedelta(days=SPEND_DAYS)

    def read(store: Store) -> dict[str, list[dict[str, Any]]]:
        keys = usage_report(store, group_by=["project", "key"], since=since)
        return {"projects": _per_project(keys), "keys": keys}

    return await store.run(read)


def _per_project(keys: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The per-key spend summed per project (one ledger read gives both)."""
    projects: dict[tuple[Any, Any], dict[str, Any]] = {}
    for row in keys:
        total = projects.setdefault(
            (row["project_id"], row["project"]),
            {"project_id": row["project_id"], "project": row["project"], "requests": 0,
             "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
             "cache_write_tokens": 0, "cost": None, "unpriced_requests": 0},
        )  # fmt: skip
        for name in ("requests", "input_tokens", "output_tokens", "cache_read_tokens",
                     "cache_write_tokens", "unpriced_requests"):  # fmt: skip
            total[name] += row[name]
        if row["cost"] is not None:
            total["cost"] = (total["cost"] or 0.0) + row["cost"]
    return sorted(projects.values(), key=lambda row: str(row["project"]))


async def _audited(store: Store, request_id: str) -> dict[str, Any] | None:
    """One request from the store's audit, read on a thread."""
    from turnout.store.usage import get_request  # noqa: PLC0415 - the database layer, lazily

    return await asyncio.to_thread(get_request, store, request_id)
