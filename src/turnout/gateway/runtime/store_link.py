"""The store as one serving process reaches it: prepared once, read as versions and snapshots,
and its outages reported once.

Rule 1: every store call is bounded (`Store.run`); preparing the store (migrating it, bringing
the config file's objects into it) is bounded by `PREPARE_SECONDS`, as migrating may take
longer than a store call of serving is allowed.
Rule 2: a store that fails never fails serving: one WARNING line says so per outage and one
INFO line when the store answers again.
Rule 3: a store that cannot be reached at start is no start-up error: the snapshot of the
config file alone (`file_alone`, store version 0) serves, and the store is prepared by the
first call that reaches it.
Rule 4: without `TURNOUT_SECRET_KEY`, a store holding encrypted provider secrets is a start-up
error naming the variable; a store without any starts, with one WARNING line when the admin API
is on (a provider secret sent to it is then refused with 503 `SECRET_KEY_MISSING`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from turnout.errors import NameTaken, StoreUnavailable
from turnout.gateway.runtime.feeds import POLL_SECONDS
from turnout.store.calls import is_unreachable
from turnout.store.engine import migrate, start_lock
from turnout.store.file_sync import sync_file
from turnout.store.secret_box import SECRET_KEY_VARIABLE
from turnout.store.service import check_secret_key, current_version
from turnout.store.snapshot import ProjectSnapshot, StoreSnapshot, load_snapshot

if TYPE_CHECKING:
    from turnout.schema import FileConfig
    from turnout.store.engine import Store

__all__ = ["PREPARE_SECONDS", "StoreLink", "file_alone"]

logger = logging.getLogger("turnout.gateway")

PREPARE_SECONDS = 60.0
"""Rule 1: the bound on preparing a store that could not be reached at start."""


class StoreLink:
    """The open `store` of one serving process (see the module rules); `prepared` False until
    it is migrated and holds the config file's objects."""

    __slots__ = ("_outage", "prepared", "store")

    def __init__(self, store: Store, *, prepared: bool = True) -> None:
        self.store = store
        self.prepared = prepared
        self._outage = False

    def prepare(self, file: FileConfig) -> None:
        """Migrate the store and bring `file`'s objects into it, once (blocking I/O; raises the
        store's errors)."""
        if self.prepared:
            return
        migrate(self.store)
        with start_lock(self.store):
            _sync(self.store, file)
        self.prepared = True

    def check_secret_key(self, file: FileConfig) -> None:
        """Rule 4 (blocking I/O)."""
        check_secret_key(self.store)
        if file.admin_keys and not self.store.secrets.has_key:
            logger.warning(
                "the admin API is on and %s is not set: a provider secret sent to it is"
                " refused with 503 SECRET_KEY_MISSING until the variable is set",
                SECRET_KEY_VARIABLE,
            )

    def first_snapshot(self, file: FileConfig) -> StoreSnapshot:
        """The start-up snapshot, the store prepared and checked first (blocking I/O); the
        file alone when the store cannot be reached (Rule 3)."""
        try:
            self.prepare(file)
            self.check_secret_key(file)
            return load_snapshot(self.store)
        except Exception as exc:
            if not is_unreachable(exc):
                raise
            return self._unreachable_at_start(exc, file)

    async def first_snapshot_bounded(self, file: FileConfig) -> StoreSnapshot:
        """`first_snapshot`, every store call bounded (Rule 1)."""
        calls = self.store.calls
        try:
            await calls.run(self.prepare, file, within=PREPARE_SECONDS)
            await calls.run(self.check_secret_key, file)
            return await self.store.run(load_snapshot)
        except Exception as exc:
            if not is_unreachable(exc):
                raise
            return self._unreachable_at_start(exc, file)

    async def version(self, file: FileConfig) -> int:
        """The store's version, preparing the store with `file` first if it was not (raises
        the store's errors)."""
        if not self.prepared:
            await self.store.calls.run(self.prepare, file, within=PREPARE_SECONDS)
        return await self.store.run(current_version)

    async def snapshot(self) -> StoreSnapshot:
        """The store's snapshot (raises the store's errors)."""
        return await self.store.run(load_snapshot)

    async def synced(self, file: FileConfig, serving: int | None) -> StoreSnapshot | None:
        """The store's snapshot once `file` is brought into it (None: the store cannot be
        reached, or was not prepared yet, which the next call that reaches it does), while
        store version `serving` is served. Raises the store's errors other than unreachable."""
        if not self.prepared:
            return None
        try:
            snapshot = await self.store.run(_sync_and_load, file)
        except Exception as exc:
            if not is_unreachable(exc):
                raise
            self.failed(exc, serving)
            return None
        self.recovered()
        return snapshot

    def failed(self, exc: Exception, serving: int | None) -> None:
        """Rule 2: a store call failed while store version `serving` is served."""
        if not self._outage:
            self._outage = True
            logger.warning(
                "the store cannot be read (%s); still serving store version %s",
                self.store.calls.failure or type(exc).__name__,
                serving,
            )

    def recovered(self) -> None:
        """Rule 2: a store call answered."""
        if self._outage:
            self._outage = False
            logger.info("the store answers again")

    def _unreachable_at_start(self, exc: Exception, file: FileConfig) -> StoreSnapshot:
        """Rule 3: the snapshot of the file alone, for a store that cannot be reached."""
        if not isinstance(exc, StoreUnavailable):
            self.store.calls.mark(type(exc).__name__)
        self._outage = True
        logger.warning(
            "the store is unreachable (%s): serving the config file's project from the file"
            " alone, and trying the store again every %g s",
            self.store.calls.failure,
            POLL_SECONDS,
        )
        return file_alone(file)


def file_alone(file: FileConfig) -> StoreSnapshot:
    """Rule 3: the snapshot that serves the config file's project from the file alone."""
    project = ProjectSnapshot(id="", name=file.project)
    return StoreSnapshot(version=0, projects={file.project: project})


def _sync(store: Store, file: FileConfig) -> None:
    """Bring `file`'s objects into `store` (blocking I/O)."""
    try:
        sync_file(store, file)
    except NameTaken:  # another replica synced the same file at the same moment
        sync_file(store, file)


def _sync_and_load(store: Store, file: FileConfig) -> StoreSnapshot:
    """Bring `file` into `store` and read the store back (blocking I/O)."""
    _sync(store, file)
    return load_snapshot(store)
