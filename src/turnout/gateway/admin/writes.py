"""How the admin API calls the store: every service function in a worker thread (the store is
synchronous; the event loop keeps serving chat meanwhile), bounded (`Store.run`: a store that
does not answer is a 503 `store_unavailable` within seconds), and every write checked, audited
and served before it is answered.

Rule 1: a write passes `actor=` (the admin key's id) and `validate=`, which runs the one
validator over the project as it would be served after the write (`project_problems`: the
config file's objects and the store's together); any problem rolls the write back as a 400
`VALIDATION_FAILED` listing each problem with its path.
Rule 2: after a write commits, `context.committed()` is awaited, so the answer goes out only
once the new configuration is served. A reload that fails does not undo the write: the write is
answered as done, and the failure is logged as an error (serving keeps its last configuration
until a reload succeeds).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, TypeVar

from turnout.config.stored import project_problems
from turnout.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable

    from turnout.gateway.admin.dispatch import AdminCall
    from turnout.schema import FileConfig
    from turnout.store.snapshot import ProjectSnapshot

__all__ = ["read", "validator", "write"]

logger = logging.getLogger("turnout.admin")

_T = TypeVar("_T")


async def read(call: AdminCall, function: Callable[..., _T], *args: Any) -> _T:
    """`function(store, *args)` in a worker thread, bounded."""
    return await call.context.store.run(function, *args)


async def write(call: AdminCall, function: Callable[..., _T], *args: Any, what: str) -> _T:
    """Rules 1 and 2: `function(store, *args, actor=…, validate=…)` in a worker thread, then
    the reload. `what` names the write in the line of a failed reload (never a secret); the
    write's own line is the admin API's (`write_log`)."""
    context = call.context
    check = validator(context.file_config())
    result = await context.store.run(function, *args, actor=call.actor, validate=check)
    try:
        await context.committed()
    except Exception:
        logger.exception(
            "admin %s: %s is stored, but reloading the configuration failed", call.actor, what
        )
    return result


def validator(file: FileConfig | None) -> Callable[[ProjectSnapshot], None]:
    """Rule 1: the check a write runs on its project's snapshot before it commits."""

    def validate(snapshot: ProjectSnapshot) -> None:
        problems = project_problems(file, snapshot)
        if problems:
            listed = "; ".join(f"{path}: {message}" for path, message in problems)
            raise ConfigError(f"the project's configuration would be invalid: {listed}", problems)

    return validate
