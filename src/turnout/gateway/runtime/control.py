"""The control plane of one serving process: the store, the config file, and the runtimes built
from both, kept current as the store changes.

Rule 1: requests never touch the database: they are served from `served`, built from one
snapshot of the store (`load_snapshot`) and the config file (`project_config`, one `Runtime`
per project, every one on the file's state store settings and one shared state store).
Rule 2: a change reaches serving through `refresh`: the store's version is read, and only when
it moved is a new snapshot loaded, built and swapped in (`swap`, as a SIGHUP reload swaps:
requests in flight finish on the old runtimes). `committed()` refreshes at once (a write by this
process) and announces it; a `ChangeFeed` wakes `refresh` otherwise (`change_feed`): with
`state: redis://…` announcements through Redis (`StateFeed`), else on PostgreSQL the store's
own notifications (`PostgresFeed`), else `PollFeed` every second (the only way with SQLite);
the first two wake at once and fall back to the same 1 s poll.
Rule 3: a project whose configuration did not change keeps its runtime object (pools, caches,
health); a changed one is rebuilt on the previous one's health registry (its breakers,
cooldowns and parks carry over) unless the health policy changed.
Rule 4: a consumer whose route or provider left the config file is served apart from the
validator (it meets 503 NO_ROUTE) instead of refusing its whole project.
Rule 5: a store that fails during a refresh never fails serving: the last snapshot keeps
serving, one WARNING line says so per outage and one INFO line when the store answers again;
every store call is bounded (`Store.run`), and `status` says whether the store answers. A
store that cannot be reached at start is no start-up error either: the config file's project
is served from the file alone (store version 0) and the store is prepared (migrated, the file
synced) and loaded by the first refresh that reaches it.
A project the validator refuses keeps its previous runtime (or is not served), with an ERROR
line; at start, a refused file project is a start-up error. A store version that cannot be
served at all (the file's project missing from it) keeps the last one serving and is an alarm:
one ERROR line per version, and `status.refused` (`/readyz`, a metric) until a newer version
is served.
Rule 6: refreshes and SIGHUP reloads of the file run one at a time, each swapping in its
result before the next starts. A reload's store work (syncing the file, reading the store back)
is a bounded store call like any other; a store that cannot be reached (or that was never
prepared) does not refuse the reload: the new file's project is served over the snapshot
loaded last, and the first refresh that reaches the store brings the file into it.
Rule 7: without `TURNOUT_SECRET_KEY`, a store holding encrypted provider secrets is a start-up
error naming the variable; a store without any starts, with one WARNING line when the admin API
is on (a provider secret sent to it is then refused with 503 `SECRET_KEY_MISSING`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol

from turnout.access.keys import Caller, KeyRing
from turnout.config.stored import project_config, project_problems
from turnout.errors import ConfigError, NameTaken, StoreUnavailable
from turnout.gateway.runtime.admin_keys import admin_key_hashes
from turnout.gateway.runtime.live import Runtime, StoredFacts, open_state_store
from turnout.gateway.runtime.served import ServedProjects
from turnout.gateway.runtime.status import ControlStatus
from turnout.routing.clock import LoopClock
from turnout.state.config_feed import StateFeed
from turnout.store.calls import is_unreachable
from turnout.store.engine import migrate, start_lock
from turnout.store.file_sync import sync_file
from turnout.store.notify import PostgresFeed
from turnout.store.secret_box import SECRET_KEY_VARIABLE
from turnout.store.service import check_secret_key, current_version
from turnout.store.snapshot import ProjectSnapshot, StoreSnapshot, load_snapshot

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from turnout.routing.clock import Clock
    from turnout.schema import ConsumerConfig, FileConfig
    from turnout.state.base import StateStore
    from turnout.store.engine import Store

__all__ = [
    "POLL_SECONDS",
    "ChangeFeed",
    "ControlPlane",
    "PollFeed",
    "build_served",
    "change_feed",
]

logger = logging.getLogger("turnout.gateway")

POLL_SECONDS = 1.0
"""Seconds between two reads of the store's version by `PollFeed`."""
PREPARE_SECONDS = 60.0
"""The bound on preparing a store that could not be reached at start (migrating it may take
longer than a store call of serving is allowed)."""


class ChangeFeed(Protocol):
    """How a serving process learns that the store may have changed."""

    async def wait(self) -> None:
        """Return when the store may have changed (a poll feed: after its interval)."""
        ...

    async def announce(self, version: int) -> None:
        """Tell the other replicas that this one committed `version` (a poll feed: nothing)."""
        ...

    async def aclose(self) -> None:
        """Stop listening."""
        ...


class PollFeed:
    """A `ChangeFeed` that says "maybe" every `interval` seconds (default 1) on `clock`."""

    def __init__(self, interval: float = POLL_SECONDS, *, clock: Clock | None = None) -> None:
        self.interval = interval
        self._clock: Clock = clock if clock is not None else LoopClock()

    async def wait(self) -> None:
        """Sleep one interval."""
        await self._clock.sleep(self.interval)

    async def announce(self, version: int) -> None:
        """Nothing to tell: every replica polls."""
        del version

    async def aclose(self) -> None:
        """Nothing to close."""


def change_feed(
    store: Store, state: StateStore, state_url: str, clock: Clock | None = None
) -> ChangeFeed:
    """Rule 2: the change feed of a process on `store` sharing `state` (configured as
    `state_url`): Redis announcements, else PostgreSQL notifications, else the poll."""
    if state_url.startswith(("redis://", "rediss://")):
        return StateFeed(state, interval=POLL_SECONDS, clock=clock)
    if store.is_postgres:
        return PostgresFeed(store, interval=POLL_SECONDS, clock=clock)
    return PollFeed(clock=clock)


def build_served(
    file: FileConfig,
    snapshot: StoreSnapshot,
    *,
    embedded: bool = False,
    clock: Clock | None = None,
    previous: ServedProjects | None = None,
    state: StateStore | None = None,
) -> ServedProjects:
    """Rules 1, 3, 4 and 5: the runtimes of every project of `snapshot` served with `file` (the
    embedded defaults when `embedded`). Raises `ConfigError` when the file's project is
    refused and there is no previous runtime of it."""
    consumer_projects = MappingProxyType(
        {
            object_id: name
            for name, project in snapshot.projects.items()
            for (kind, _), object_id in project.ids.items()
            if kind == "consumer"
        }
    )
    runtimes: dict[str, Runtime] = {}
    warnings: list[str] = []
    for name, project in snapshot.projects.items():
        primary = name == file.project
        config, dangling = _split_dangling(project_config(file, project))
        stored = StoredFacts(
            project.ids, project.id or None, project.default_route, consumer_projects, dangling
        )
        before = previous.runtimes.get(name) if previous is not None else None
        if before is not None and before.config == config and before.stored == stored:
            runtimes[name] = before
            continue
        try:
            runtime = Runtime.from_config(
                config,
                clock=clock,
                stored=stored,
                health=before.health if before is not None else None,
                state=state,
            )
        except ConfigError as exc:
            if primary and before is None:
                raise
            problems = "; ".join(f"{path}: {message}" for path, message in exc.errors)
            logger.error(  # noqa: TRY400 - the problems are the message
                'project "%s" at store version %d is refused, %s: %s',
                name,
                snapshot.version,
                "still serving its previous configuration" if before else "not served",
                problems or str(exc),
            )
            if before is not None:
                runtimes[name] = before
            continue
        if primary and embedded:
            runtime = runtime.with_mock_messages()
        runtimes[name] = runtime
        if name != file.project:
            warnings.extend(f'project "{name}": {text}' for text in runtime.warnings)
    if file.project not in runtimes:
        raise ConfigError(f"project {file.project!r} is not in the store")
    return ServedProjects(
        runtimes,
        file.project,
        version=snapshot.version,
        warnings=tuple(warnings),
        revoked=_revoked_keys(snapshot),
    )


def _revoked_keys(snapshot: StoreSnapshot) -> KeyRing:
    """The store's revoked keys by hash, each as the caller it stood for (its name and
    project), to log and audit the requests that still present it."""
    return KeyRing(
        (digest, Caller(name, key))
        for name, project in snapshot.projects.items()
        for key, digest in project.revoked_keys
    )


class ControlPlane:
    """The store and the runtimes of one serving process (see the module rules); the admin API
    reaches serving through it.

    `store` is open and migrated; `file` the configuration file's contents (the embedded
    defaults when `embedded`); `reload_file` (optional) reads the file again for SIGHUP; `clock`
    times runtimes and the poll; `feed` (default: `change_feed`'s choice) wakes refreshes;
    `prepared` False when the store could not be migrated and synced at start (Rule 5).
    """

    def __init__(
        self,
        store: Store,
        file: FileConfig,
        *,
        embedded: bool = False,
        reload_file: Callable[[], FileConfig] | None = None,
        clock: Clock | None = None,
        feed: ChangeFeed | None = None,
        prepared: bool = True,
    ) -> None:
        self.store = store
        self.prepared = prepared
        self.status = ControlStatus(store.calls, store.backend)
        self.file = file
        self.embedded = embedded
        self._reload_file = reload_file
        self._clock = clock
        self.state: StateStore = open_state_store(file.state, clock)
        self.feed: ChangeFeed = (
            feed if feed is not None else change_feed(store, self.state, file.state, clock)
        )
        self._served: ServedProjects | None = None
        self._swap: Callable[[ServedProjects], object] | None = None
        self._lock = asyncio.Lock()
        self._poller: asyncio.Task[None] | None = None
        self._snapshot = _file_alone(file)
        self._outage = False

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

    # -- serving

    @property
    def served(self) -> ServedProjects:
        """What is served now (`load` or `start` first)."""
        if self._served is None:
            raise RuntimeError("the control plane has not loaded the store yet")
        return self._served

    def load(self) -> ServedProjects:
        """Load the store and build every runtime (start-up; blocking I/O); the file alone
        when the store cannot be reached (Rule 5). `SecretKeyMissing` when the store holds
        provider secrets and `TURNOUT_SECRET_KEY` is not set (Rule 7)."""
        try:
            self.prepare()
            self._check_secret_key()
            snapshot = load_snapshot(self.store)
        except Exception as exc:
            if not is_unreachable(exc):
                raise
            snapshot = self._unreachable_at_start(exc)
        self._snapshot = snapshot
        self._served = build_served(
            self.file,
            snapshot,
            embedded=self.embedded,
            clock=self._clock,
            previous=self._served,
            state=self.state,
        )
        return self._served

    async def start(self, swap: Callable[[ServedProjects], object]) -> ServedProjects:
        """Load (unless loaded), then keep `served` current, swapping through `swap`."""
        if self._served is None:
            try:
                await self.store.calls.run(self.prepare, within=PREPARE_SECONDS)
                await self.store.calls.run(self._check_secret_key)
                snapshot = await self.store.run(load_snapshot)
            except Exception as exc:
                if not is_unreachable(exc):
                    raise
                snapshot = self._unreachable_at_start(exc)
            self._snapshot = snapshot
            self._served = build_served(
                self.file, snapshot, embedded=self.embedded, clock=self._clock, state=self.state
            )
        self._swap = swap
        self._poller = asyncio.get_running_loop().create_task(self._poll())
        return self._served

    def _check_secret_key(self) -> None:
        """Rule 7."""
        check_secret_key(self.store)
        if self.file.admin_keys and not self.store.secrets.has_key:
            logger.warning(
                "the admin API is on and %s is not set: a provider secret sent to it is"
                " refused with 503 SECRET_KEY_MISSING until the variable is set",
                SECRET_KEY_VARIABLE,
            )

    async def refresh(self) -> bool:
        """Rule 2: swap in the store's newest state if its version moved (True when swapped)."""
        async with self._lock:
            try:
                if not self.prepared:
                    await self.store.calls.run(self.prepare, within=PREPARE_SECONDS)
                version = await self.store.run(current_version)
                if not self._is_news(version):
                    self._recovered()
                    return False
                snapshot = await self.store.run(load_snapshot)
            except Exception as exc:  # noqa: BLE001 - Rule 5: any failure of the store
                self._failed(exc)
                return False
            self._recovered()
            try:
                fresh = build_served(
                    self.file,
                    snapshot,
                    embedded=self.embedded,
                    clock=self._clock,
                    previous=self._served,
                    state=self.state,
                )
            except ConfigError as exc:
                self._refuse(snapshot.version, exc)
                return False
            self._snapshot = snapshot
            await fresh.start()  # new runtimes share health before they serve
            self._install(fresh)
            return True

    async def reload_file(self) -> ServedProjects:
        """Rule 6: SIGHUP: read the file again, bring it into the store, rebuild and serve
        (through `swap` once started; the store's part bounded by `Store.run`). A store that
        cannot be reached serves the new file over the snapshot loaded last. Raises
        `ConfigError` or `OSError` for a bad file, and the store's errors other than
        unreachable."""
        file = self._reload_file() if self._reload_file is not None else self.file
        async with self._lock:
            snapshot = await self._synced_snapshot(file)
            fresh = build_served(
                file,
                self._snapshot if snapshot is None else snapshot,
                embedded=self.embedded,
                clock=self._clock,
                previous=self._served,
                state=self.state,
            )
            self.file = file
            if snapshot is not None:
                self._snapshot = snapshot
            else:
                self.prepared = False  # the next refresh that reaches the store syncs the file
                logger.warning(
                    "the store is unreachable (%s): the reloaded file's project is served over"
                    " store version %d, and the file is brought into the store when it answers",
                    self.store.calls.failure or "not prepared yet",
                    self._snapshot.version,
                )
            await fresh.start()  # new runtimes share health before they serve
            self._install(fresh)
            return fresh

    async def _synced_snapshot(self, file: FileConfig) -> StoreSnapshot | None:
        """The store's snapshot once `file` is brought into it (None: the store cannot be
        reached, or was not prepared yet, which the next refresh does)."""
        if not self.prepared:
            return None
        try:
            snapshot = await self.store.run(_sync_and_load, file)
        except Exception as exc:
            if not is_unreachable(exc):
                raise
            self._failed(exc)
            return None
        self._recovered()
        return snapshot

    def _is_news(self, version: int) -> bool:
        """Whether store `version` is neither served nor refused already."""
        served, refused = self._served, self.status.refused
        if served is not None and served.version == version:
            return False
        return refused is None or refused.version != version

    def _refuse(self, version: int, exc: ConfigError) -> None:
        """Rule 5: a store version that cannot be served, reported once."""
        if self.status.refuse(version, str(exc)):
            logger.error(
                "store version %d is refused, still serving store version %s: %s",
                version,
                None if self._served is None else self._served.version,
                exc,
            )

    def prepare(self) -> None:
        """Migrate the store and bring the file's objects into it, once (blocking I/O; raises
        the store's errors)."""
        if self.prepared:
            return
        migrate(self.store)
        with start_lock(self.store):
            try:
                sync_file(self.store, self.file)
            except NameTaken:  # another replica synced the same file at the same moment
                sync_file(self.store, self.file)
        self.prepared = True

    def _unreachable_at_start(self, exc: Exception) -> StoreSnapshot:
        """Rule 5: the snapshot of the file alone, for a store that cannot be reached."""
        if not isinstance(exc, StoreUnavailable):
            self.store.calls.mark(type(exc).__name__)
        self._outage = True
        logger.warning(
            "the store is unreachable (%s): serving the config file's project from the file"
            " alone, and trying the store again every %g s",
            self.store.calls.failure,
            POLL_SECONDS,
        )
        return _file_alone(self.file)

    def _install(self, fresh: ServedProjects) -> None:
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

    def _failed(self, exc: Exception) -> None:
        if not self._outage:
            self._outage = True
            logger.warning(
                "the store cannot be read (%s); still serving store version %s",
                self.store.calls.failure or type(exc).__name__,
                None if self._served is None else self._served.version,
            )

    def _recovered(self) -> None:
        if self._outage:
            self._outage = False
            logger.info("the store answers again")

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


def _file_alone(file: FileConfig) -> StoreSnapshot:
    """Rule 5: the snapshot that serves the config file's project from the file alone."""
    project = ProjectSnapshot(id="", name=file.project)
    return StoreSnapshot(version=0, projects={file.project: project})


def _sync_and_load(store: Store, file: FileConfig) -> StoreSnapshot:
    """Rule 6: bring `file` into `store` and read the store back (blocking I/O)."""
    try:
        sync_file(store, file)
    except NameTaken:  # another worker synced the same file at the same moment
        sync_file(store, file)
    return load_snapshot(store)


def _split_dangling(config: FileConfig) -> tuple[FileConfig, tuple[ConsumerConfig, ...]]:
    """The configuration without the consumers whose route or provider left the config file
    (their rows are kept for them), and those consumers: they are served, and meet NO_ROUTE,
    rather than failing their whole project. A consumer whose agent is one of them is too."""
    routes = {route.name for route in config.routes}
    providers = {provider.name for provider in config.providers}
    dangling: dict[str, ConsumerConfig] = {}
    changed = True
    while changed:
        changed = False
        for consumer in config.consumers:
            if consumer.name in dangling:
                continue
            if (
                (consumer.model_route is not None and consumer.model_route not in routes)
                or (consumer.provider is not None and consumer.provider not in providers)
                or (consumer.agent is not None and consumer.agent in dangling)
            ):
                dangling[consumer.name] = consumer
                changed = True
    if not dangling:
        return config, ()
    kept = tuple(consumer for consumer in config.consumers if consumer.name not in dangling)
    return config.model_copy(update={"consumers": kept}), tuple(dangling.values())
