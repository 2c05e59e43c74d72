"""The settings a reload of the config file cannot change: a serving process reads them once,
at its start (the listening socket, tracing, the store, the shared state store, the audit
writer), so a reload that changes one serves everything else of the new file and keeps the old
value of that one until the next start.

Rule 1: `restart_required(before, after)` names each such setting whose value differs, in the
order of `RESTART_FIELDS`, by its dotted path; it never shows a value (a store or state URL may
hold a password).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from turnout.schema import FileConfig

__all__ = ["RESTART_FIELDS", "restart_required"]

RESTART_FIELDS: Final = (
    "server.host",
    "server.port",
    "server.tracing",
    "store",
    "state",
    "audit_retention_days",
    "audit_spill_dir",
)
"""The dotted paths of the settings that take effect at the next start only."""


def restart_required(before: FileConfig, after: FileConfig) -> tuple[str, ...]:
    """Rule 1: the settings of `RESTART_FIELDS` that differ between `before` and `after`."""
    return tuple(path for path in RESTART_FIELDS if _value(before, path) != _value(after, path))


def _value(config: FileConfig, path: str) -> Any:
    found: Any = config
    for part in path.split("."):
        found = getattr(found, part)
    return found
