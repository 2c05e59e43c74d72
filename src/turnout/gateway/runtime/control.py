"""The control plane of one serving process: the store, the config file, and the runtimes built
from both, kept current as the store changes.

Rule 1: requests never touch the database: they are served from `served`, built from one
snapshot of the store and the config file (`turnout.gateway.runtime.projects`).
Rule 2: a change reaches serving through `refresh`: the store's version is read, and only when
it moved is a new snapshot loaded, built and swapped in (`swap`, as a SIGHUP reload swaps:
requests in flight finish on the old runtimes). `committed()` refreshes at once (a write by this
process) and announces it; a `ChangeFeed` wakes `refresh` otherwise
(`turnout.gateway.runtime.feeds`).
Rule 3: a store that fails during a refresh never fails serving: the last snapshot keeps
serving (`turnout.gateway.runtime.store_link`), and `status` says whether the store answers. A
store that cannot be reached at start is no start-up error either: the config file's project
is served from the file alone and the store is prepared and loaded by the first refresh that
reaches it.
Rule 4: a store version that cannot be served at all (the file's project missing from it, or
refused) keeps the last one serving and is an alarm: one ERROR line per version, and
`status.refused` (`/readyz`, a metric) until a newer version is served.
Rule 5: refreshes and SIGHUP reloads of the file run one at a time, each swapping in its
result before the next starts. A reload's store work (syncing the file, reading the store back)
is a bounded store call like any other; a store that cannot be reached (or that was never
prepared) does not refuse the reload: the new file's project is served over the snapshot
loaded last, and the first refresh that reaches the store brings the file into it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING

from turnout.config.stored import project_problems
from turnout.errors import ConfigError
from turnout.gateway.runtime.admin_keys import admin_key_hashes
from turnout.gateway.runtime.feeds import PollFeed, change_feed
from turnout.gateway.runtime.projects import build_served
from turnout.gateway.runtime.state_store import open_state_store
from turnout.gateway.runtime.status import ControlStatus
from turnout.gateway.runtime.store_link import StoreLink, file_alone
from turnout.store.service import current_version

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from turnout.gateway.runtime.feeds import ChangeFeed
    from turnout.gateway.runtime.live import LookupsFactory, Runtime
    from turnout.gateway.runtime.served import ServedProjects
    from turnout.routing.clock import Clock
    from turnout.schema import FileConfig
    from turnout.state.base import StateStore
    from turnout.store.engine import Store
    from turnout.store.snapshot import ProjectSnapshot, StoreSnapshot

__all__ = ["ControlPlane"]

logger = logging.getLogger("turnout.gateway")


class ControlPlane:
    """The store and the runtimes of one serving process (see the module rules); the admin API
    reaches serving through it.

    `store` is open and migrated; `file` the configuration file's contents (the embedded
    defaults when `embedded`); `lookups` builds each runtime's per-request lookups;
    `reload_file` (optional) reads the file again for SIGHUP; `clock`
    times runtimes and the poll; `feed` (default: `change_feed`'s choice) wakes refreshes;
    `prepared` False when the store could not be migrated and synced at start (Rule 3).
    """

    def __init__(
        self,
        store: Store,
        file: FileConfig,
        *,
        lookups: LookupsFactory,
        embedded: bool = False,
        reload_file: Callable[[], FileConfig] | None = None,
        clock: Clock | None = None,
        feed: ChangeFeed | None = None,
        prepared: bool = True,
    ) -> None:
        self._link = StoreLink(store, prepared=prepared)
        self.status = ControlStatus(store.calls, store.backend)
        self.file = file
        self.embedded = embedded
        self._reload_file = reload_file
        self._clock = clock
        self.state: StateStore = open_state_store(file.state, clock)
        self.feed: ChangeFeed = (
            feed if feed is not None else change_feed(store, self.state, file.state, clock)
        )
        self._build_served = partial(
            build_served, lookups=lookups, embedded=embedded, clock=clock, state=self.state
        )
        self._served: ServedProjects | None = None
        self._swap: Callable[[ServedProjects], object] | None = None
        self._lock = asyncio.Lock()
        self._poller: asyncio.Task[None] | None = None
        self._snapshot = file_alone(file)

    # -- the admin API's view

    def admin_key_hashes(self) -> frozenset[str]:
        """The hashes of the file's `admin_keys`."""
        return admin_key_hashes(self.file.admin_keys)

    def file_config(self) -> FileConfig | None:
        """The config file's contents (None when serving the embedded defaults)."""
        return None if self.embedded else self.file

    def runtime_for(self, project_name: str) -> Runtime | None:
        """The runtime serving `project_name` now, if it is served."""
        served = self._served
        return None if served is None else served.runtimes.get(project_name)

    def served_runtimes(self) -> Mapping[str, Runtime]:
        """The runtime of every project served now, by name."""
        served = self._served
        return MappingProxyType({}) if served is None else served.runtimes

    def validate(self, project: ProjectSnapshot) -> None:
        """A write's validation hook (the store's `validate=`): `ConfigError` listing every
        problem of `project` as it would be served with the config file."""
        problems = project_problems(self.file, project)
        if problems:
            summary = "; ".join(f"{path}: {message}" for path, message in problems)
            raise ConfigError(f"invalid project {project.name!r}: {summary}", problems)

    async def committed(self) -> None:
        """A write committed: announce it, so the other replicas rebuild while this one does,
        and refresh now; returns once its runtimes serve (Rule 2)."""
        try:
            version = await self.store.run(current_version)
        except Exception:  # noqa: BLE001 - the refresh below reports a failing store
            version = None
        if version is not None:
            await self.feed.announce(version)
        await self.refresh()

    # -- the store

    @property
    def store(self) -> Store:
        """The store serving reads (and the admin API writes)."""
        return self._link.store

    @store.setter
    def store(self, store: Store) -> None:
        self._link.store = store

    @property
    def prepared(self) -> bool:
        """Whether the store is migrated and holds the config file's objects."""
        return self._link.prepared

    def prepare(self) -> None:
        """Migrate the store and bring the file's objects into it, once (blocking I/O; raises
        the store's errors)."""
        self._link.prepare(self.file)

    # -- serving

    @property
    def served(self) -> ServedProjects:
        """What is served now (`load` or `start` first)."""
        if self._served is None:
            raise RuntimeError("the control plane has not loaded the store yet")
        return self._served

    def load(self) -> ServedProjects:
        """Load the store and build every runtime (start-up; blocking I/O); the file alone
        when the store cannot be reached (Rule 3). `SecretKeyMissing` when the store holds
        provider secrets and `TURNOUT_SECRET_KEY` is not set."""
        self._snapshot = self._link.first_snapshot(self.file)
        self._served = self._build(self.file, self._snapshot)
        return self._served

    async def start(self, swap: Callable[[ServedProjects], object]) -> ServedProjects:
        """Load (unless loaded), then keep `served` current, swapping through `swap`."""
        if self._served is None:
            self._snapshot = await self._link.first_snapshot_bounded(self.file)
            self._served = self._build(self.file, self._snapshot)
        self._swap = swap
        self._poller = asyncio.get_running_loop().create_task(self._poll())
        return self._served

    async def refresh(self) -> bool:
        """Rule 2: swap in the store's newest state if its version moved (True when swapped)."""
        async with self._lock:
            try:
                version = await self._link.version(self.file)
                if not self._is_news(version):
                    self._link.recovered()
                    return False
                snapshot = await self._link.snapshot()
            except Exception as exc:  # noqa: BLE001 - Rule 3: any failure of the store
                self._link.failed(exc, self._serving_version())
                return False
            self._link.recovered()
            try:
                fresh = self._build(self.file, snapshot)
            except ConfigError as exc:
                self._refuse(snapshot.version, exc)
                return False
            self._snapshot = snapshot
            await self._install(fresh)
            return True

    async def reload_file(self) -> ServedProjects:
        """Rule 5: SIGHUP: read the file again, bring it into the store, rebuild and serve
        (through `swap` once started; the store's part bounded by `Store.run`). A store that
        cannot be reached serves the new file over the snapshot loaded last. Raises
        `ConfigError` or `OSError` for a bad file, and the store's errors other than
        unreachable."""
        file = self._reload_file() if self._reload_file is not None else self.file
        async with self._lock:
            snapshot = await self._link.synced(file, self._serving_version())
            fresh = self._build(file, self._snapshot if snapshot is None else snapshot)
            self.file = file
            if snapshot is not None:
                self._snapshot = snapshot
            else:
                self._link.prepared = False  # the next refresh that reaches the store syncs
                logger.warning(
                    "the store is unreachable (%s): the reloaded file's project is served over"
                    " store version %d, and the file is brought into the store when it answers",
                    self.store.calls.failure or "not prepared yet",
                    self._snapshot.version,
                )
            await self._install(fresh)
            return fresh

    def _build(self, file: FileConfig, snapshot: StoreSnapshot) -> ServedProjects:
        """The runtimes of `snapshot` served with `file`, over those served now."""
        return self._build_served(file, snapshot, previous=self._served)

    def _serving_version(self) -> int | None:
        return None if self._served is None else self._served.version

    def _is_news(self, version: int) -> bool:
        """Whether store `version` is neither served nor refused already."""
        served, refused = self._served, self.status.refused
        if served is not None and served.version == version:
            return False
        return refused is None or refused.version != version

    def _refuse(self, version: int, exc: ConfigError) -> None:
        """Rule 4: a store version that cannot be served, reported once."""
        if self.status.refuse(version, str(exc)):
            logger.error(
                "store version %d is refused, still serving store version %s: %s",
                version,
                self._serving_version(),
                exc,
            )

    async def _install(self, fresh: ServedProjects) -> None:
        await fresh.start()  # new runtimes share health before they serve
        self._served = fresh
        self.status.serving(fresh.version)
        if self._swap is not None:
            self._swap(fresh)
        logger.info(
            "store version %s: serving %d project%s",
            fresh.version,
            len(fresh.runtimes),
            "" if len(fresh.runtimes) == 1 else "s",
        )

    async def _poll(self) -> None:
        feed = self.feed
        while True:
            try:
                await feed.wait()
            except Exception:  # a feed that fails never stops refreshing: poll instead
                logger.exception("the change feed failed; reading the store's version every 1 s")
                feed = PollFeed(clock=self._clock)
            await self.refresh()

    async def aclose(self) -> None:
        """Stop refreshing; close the feed, the shared state store and the store's pool."""
        poller, self._poller = self._poller, None
        if poller is not None:
            poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await poller
        await self.feed.aclose()
        await self.state.close()
        await asyncio.to_thread(self.store.close)
