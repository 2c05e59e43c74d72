"""Configuration changes announced by PostgreSQL itself: NOTIFY with every write, LISTEN in
every replica (`PostgresFeed`, the change feed of replicas on one PostgreSQL store without Redis).

Rule 1: every write that bumps the store's version sends `NOTIFY turnout_config` in its own
transaction (`notify_change`), with `<schema> <version>` as payload: PostgreSQL delivers it when,
and only if, the write commits, whoever wrote (a replica's admin API or the `turnout keys`
command). A listener ignores changes of another schema (another store in the same database)
and versions it announced itself or already saw (its own echo).
Rule 2: `wait()` returns on a notification, or after `interval` seconds (1 by default) when
none came: the store's version poll stays the backstop.
Rule 3: the listening connection is its own (psycopg 3, asynchronous, autocommit), opened on
the first `wait()` in the process that serves. When it fails or cannot be opened, the feed
falls back to that poll silently: one WARNING per outage, then a new connection is tried every
`interval` seconds; once listening again it logs one INFO line and wakes a refresh at once
(what changed meanwhile was not announced).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import func, select, text

from turnout.routing.clock import LoopClock, wait_or_sleep

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from turnout.routing.clock import Clock
    from turnout.store.engine import Store

__all__ = ["NOTIFY_CHANNEL", "PostgresFeed", "notify_change"]

logger = logging.getLogger(__name__)

NOTIFY_CHANNEL: Final = "turnout_config"
"""The PostgreSQL channel of configuration changes."""


def notify_change(session: Session, version: int) -> None:
    """Rule 1: on PostgreSQL, queue the notification of `version` in `session`'s transaction."""
    if session.get_bind().dialect.name != "postgresql":
        return
    payload = func.concat(func.current_schema(), " ", str(version))
    session.execute(select(func.pg_notify(NOTIFY_CHANNEL, payload)))


class PostgresFeed:
    """A change feed listening on `store`'s PostgreSQL database (see the module rules):
    `interval` is the backstop and the reconnect pace (seconds), `clock` times both."""

    def __init__(self, store: Store, *, interval: float = 1.0, clock: Clock | None = None) -> None:
        self.store = store
        self.interval = interval
        self.notices = 0  # notifications of this store's changes, this replica's own too
        self.received = 0  # wakes by a change this replica had not announced
        self.listening = False
        self._clock: Clock = clock if clock is not None else LoopClock()
        self._news = asyncio.Event()
        self._known = 0  # the newest version announced or heard
        self._newest = 0  # the newest version heard
        self._schema: str | None = None
        self._listener: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._degraded = False
        self._closed = False

    @property
    def heard(self) -> int:
        """The newest version of this store notified to this feed (0: none yet)."""
        return self._newest

    async def start(self) -> None:
        """Start listening and wait until the first attempt to is over (idempotent)."""
        if self._closed:
            return
        if self._listener is None:
            self._listener = asyncio.get_running_loop().create_task(self._listen())
        await self._ready.wait()

    async def wait(self) -> None:
        """Rule 2: return on a notification of another's change, or after `interval` seconds."""
        await self.start()
        await wait_or_sleep(self._clock, self._news, self.interval)
        if self._news.is_set():
            self.received += 1
        self._news.clear()

    async def announce(self, version: int) -> None:
        """The write's transaction notified already (Rule 1): remember `version` as known, and
        drop the news of it if its notification came first."""
        self._known = max(self._known, version)
        if self._newest <= self._known:
            self._news.clear()

    async def aclose(self) -> None:
        """Stop listening and close the connection."""
        self._closed = True
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener

    async def _listen(self) -> None:
        import psycopg  # noqa: PLC0415 - only a PostgreSQL store needs it

        while not self._closed:
            try:
                if self._schema is None:
                    self._schema = await self.store.calls.run(self._current_schema)
                connection = await psycopg.AsyncConnection.connect(
                    autocommit=True, **self._connect_params()
                )
                async with connection:
                    await connection.execute(f"LISTEN {NOTIFY_CHANNEL}")
                    self._up()
                    async for notice in connection.notifies():
                        self._heard(notice.payload)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - Rule 3: any failure falls back to polling
                self._down(exc)
            self.listening = False
            await self._clock.sleep(self.interval)

    def _current_schema(self) -> str:
        with self.store.sessions() as session:
            return str(session.scalar(select(text("current_schema()"))))

    def _connect_params(self) -> dict[str, Any]:
        engine = self.store.engine
        _args, params = engine.dialect.create_connect_args(engine.url)
        params.setdefault("connect_timeout", max(1, round(self.interval * 2)))
        # A server that vanished without closing the connection is noticed within about 20 s
        # (the poll carries changes meanwhile).
        for name, value in (("keepalives", 1), ("keepalives_idle", 10)):
            params.setdefault(name, value)
        params.setdefault("keepalives_interval", 5)
        params.setdefault("keepalives_count", 2)
        return dict(params)

    def _heard(self, payload: str) -> None:
        schema, _, raw = payload.rpartition(" ")
        if schema != self._schema:
            return
        try:
            version = int(raw)
        except ValueError:
            return
        self.notices += 1
        self._newest = max(self._newest, version)
        if version > self._known:
            self._known = version
            self._news.set()

    def _up(self) -> None:
        self.listening = True
        self._ready.set()
        if self._degraded:
            self._degraded = False
            logger.info("configuration changes: listening to the store again")
            self._newest = self._known + 1  # not announced: whatever changed meanwhile
            self._news.set()

    def _down(self, exc: BaseException) -> None:
        self._ready.set()
        if not self._degraded:
            self._degraded = True
            logger.warning(
                "configuration changes: cannot listen to the store (%s); reading its version"
                " every %g s until it answers",
                type(exc).__name__,
                self.interval,
            )
