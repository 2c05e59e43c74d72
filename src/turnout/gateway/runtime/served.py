"""Every project one gateway serves at one moment: a `Runtime` per project and one key lookup
across them.

Rule 1: the config file's project is the primary one: it answers `auth: open` callers (all
anonymous in it), and its server settings are the gateway's.
Rule 2: one key ring holds the keys of every project, each caller carrying its project; a
caller's key picks its project's runtime. A hash two projects hold stays with the first
(the file's project first), and the other is dropped with a warning.
Rule 3: the store's revoked keys are held apart (`revoked`), by hash, never to serve a request:
a refused request is logged and audited under the revoked key it presented.
Rule 4: never changed once built: a reload builds another `ServedProjects`; runtimes whose
project did not change are carried into it as they are (their pools, caches and health).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from turnout.access.keys import KeyRing

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.access.keys import Caller
    from turnout.gateway.runtime.live import Runtime

__all__ = ["ServedProjects"]


class ServedProjects:
    """The runtimes of every served project by name (`runtimes`), the `primary` one (Rule 1),
    the key ring across them (`keys`; None under `auth: open`), the store's `version` they were
    built from (None without a store), the store's `revoked` keys (Rule 3; empty by default)
    and load `warnings`."""

    __slots__ = ("is_single", "keys", "primary", "revoked", "runtimes", "version", "warnings")

    def __init__(
        self,
        runtimes: Mapping[str, Runtime],
        primary: str,
        *,
        version: int | None = None,
        warnings: tuple[str, ...] = (),
        revoked: KeyRing | None = None,
    ) -> None:
        self.revoked = revoked if revoked is not None else KeyRing()
        self.runtimes: Mapping[str, Runtime] = MappingProxyType(dict(runtimes))
        self.primary = self.runtimes[primary]
        self.version = version
        self.is_single = len(self.runtimes) == 1
        found = list(warnings)
        if self.primary.keys is None or self.is_single:
            self.keys = self.primary.keys
        else:
            others = [r.keys for name, r in self.runtimes.items() if name != primary and r.keys]
            self.keys, dropped = KeyRing.merged([self.primary.keys, *others])
            found.extend(
                f'project "{caller.project}": {caller.label} has the same key as a key of '
                "another project; it is ignored"
                for caller in dropped
            )
        self.warnings = tuple(found)

    @classmethod
    def of(cls, runtime: Runtime) -> ServedProjects:
        """One runtime served alone (a file without a store, the library's tests)."""
        return cls({runtime.project: runtime}, runtime.project)

    async def start(self) -> None:
        """Start every runtime (health shared with other replicas; idempotent: a runtime
        carried over from an earlier set is started already)."""
        for runtime in self.runtimes.values():
            await runtime.start()

    def runtime_for(self, caller: Caller) -> Runtime:
        """Rule 2: the runtime of the caller's project."""
        if self.is_single:
            return self.primary
        return self.runtimes[caller.project]  # the ring holds only served projects' keys

    def __repr__(self) -> str:
        return f"ServedProjects({len(self.runtimes)} projects, version={self.version})"
