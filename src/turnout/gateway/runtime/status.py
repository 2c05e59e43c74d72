"""What an operator sees of a serving process's control plane beyond what it serves
(`/readyz`, metrics): whether the store answers, the outcome of the last reload of the config
file, and the newest store version it could not serve.

Rule 1: each of the three is one value, replaced as a whole when it changes; `problems()` lists
what makes the process degraded (it still serves every request: readiness stays 200).
Rule 2: a refused store version stays refused until a newer version is served; a reload's
outcome stays until the next reload.
Rule 3: every change is told to the watchers (the metrics) as it happens, and a new watcher
is told the present state at once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Callable

    from turnout.store.calls import StoreCalls

__all__ = ["ControlStatus", "RefusedVersion", "ReloadOutcome", "StatusWatcher"]


@dataclass(frozen=True, slots=True)
class ReloadOutcome:
    """A reload of the config file: whether it is served (`ok`), when (`at`, Unix seconds),
    the problems that refused it, and the changed fields that need a restart to apply."""

    ok: bool
    at: float
    problems: tuple[str, ...] = ()
    restart_required: tuple[str, ...] = ()

    def describe(self) -> dict[str, Any]:
        """The outcome as `/readyz` shows it."""
        return {
            "outcome": "ok" if self.ok else "refused",
            "at": round(self.at, 3),
            "problems": list(self.problems),
            "restart_required": list(self.restart_required),
        }


@dataclass(frozen=True, slots=True)
class RefusedVersion:
    """A store version that could not be served, and why."""

    version: int
    reason: str


class StatusWatcher(Protocol):
    """What follows the status (the metrics)."""

    def set_store_up(self, backend: str, up: bool) -> None:
        """Say whether the store `backend` answers."""

    def count_reload(self, ok: bool) -> None:
        """Count one reload of the config file, served (`ok`) or refused."""

    def set_refused_version(self, version: int) -> None:
        """Say which store version is refused (0: none)."""


class ControlStatus:
    """The control plane's state for operators (see the module rules). `store` is the store's
    bounded calls and `backend` its name (None for both: served without a store); `wall`
    tells Unix time."""

    def __init__(
        self,
        store: StoreCalls | None = None,
        backend: str | None = None,
        *,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._backend = backend
        self._wall = wall
        self.reload: ReloadOutcome | None = None
        self.refused: RefusedVersion | None = None
        self._watchers: list[StatusWatcher] = []

    @property
    def store_up(self) -> bool | None:
        """Whether the store answered its last call (None: no store)."""
        return None if self._store is None else self._store.answering

    def watch(self, watcher: StatusWatcher) -> None:
        """Rule 3: tell `watcher` the present state, then every change."""
        self._watchers.append(watcher)
        if self._store is not None:
            backend = self._backend or "store"
            self._store.watch(lambda up: watcher.set_store_up(backend, up))
        watcher.set_refused_version(0 if self.refused is None else self.refused.version)

    def reloaded(
        self, ok: bool, problems: tuple[str, ...] = (), restart: tuple[str, ...] = ()
    ) -> None:
        """Rule 2: record a reload's outcome now."""
        self.reload = ReloadOutcome(ok, self._wall(), problems, restart)
        for watcher in self._watchers:
            watcher.count_reload(ok)

    def refuse(self, version: int, reason: str) -> bool:
        """Record that store `version` cannot be served; True when it was not refused yet."""
        if self.refused is not None and self.refused.version == version:
            return False
        self.refused = RefusedVersion(version, reason)
        for watcher in self._watchers:
            watcher.set_refused_version(version)
        return True

    def serving(self, version: int | None) -> None:
        """Rule 2: store `version` is served: a refused version up to it is no longer news."""
        refused = self.refused
        if refused is None or version is None or version < refused.version:
            return
        self.refused = None
        for watcher in self._watchers:
            watcher.set_refused_version(0)

    def problems(self) -> list[str]:
        """Rule 1: what makes the process degraded, in words."""
        found = []
        if self.store_up is False:
            why = self._store.failure if self._store is not None else None
            found.append(f"store: unreachable ({why}); serving the configuration loaded last")
        if self.refused is not None:
            refused = self.refused
            found.append(f"store version {refused.version} is refused: {refused.reason}")
        if self.reload is not None and not self.reload.ok:
            found.append("the last reload of the config file was refused")
        return found

    def describe(self) -> dict[str, Any]:
        """The `/readyz` fields: `store`, `reload` and `refused_version`."""
        store: dict[str, Any] | None = None
        if self._store is not None:
            up = self._store.answering
            store = {"backend": self._backend, "up": up}
            if not up:
                store["detail"] = self._store.failure
        refused = self.refused
        return {
            "store": store,
            "reload": None if self.reload is None else self.reload.describe(),
            "refused_version": None
            if refused is None
            else {"version": refused.version, "reason": refused.reason},
        }
