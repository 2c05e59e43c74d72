"""What the admin API needs from the process that serves it (`AdminContext`).

Rule 1: the admin API reads and writes the store only through its service functions, reads
the config file's objects and the live runtimes, and never builds or swaps a runtime itself:
after a write commits it awaits `committed()`, which returns once the new configuration is
served, so the next request (admin or chat) sees the write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.gateway.runtime.live import Runtime
    from turnout.schema import FileConfig
    from turnout.store import Store

__all__ = ["AdminContext"]


class AdminContext(Protocol):
    """The seam between the admin API and serving."""

    store: Store

    def admin_key_hashes(self) -> frozenset[str]:
        """`sha256:<hex>` of each admin key."""
        ...

    def file_config(self) -> FileConfig | None:
        """The config file's objects (read-only), None without a file."""
        ...

    def runtime_for(self, project_name: str) -> Runtime | None:
        """The live runtime of a project, None when it serves none."""
        ...

    def served_runtimes(self) -> Mapping[str, Runtime]:
        """The live runtime of every served project, by name."""
        ...

    async def committed(self) -> None:
        """A write committed: reload, and return once the new runtimes are swapped in."""
        ...
