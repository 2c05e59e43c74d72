"""The audit path's shortcuts, in one place: each does what a plainer line would, for less CPU,
and names the line of `bench/README.md` that pays for it ("The audit process, shaved": the
audit process's instructions per request under callgrind, `bench/audit_child_callgrind.py`;
"submit" and "pipe": `bench/audit.py`). A shortcut whose line no longer pays goes.

Lifted here whole:
- `finished_row`: decoded requests made as plain tuples (279,000 → 272,000);
- `dict_maker`: each plain record and entry made by one dict display (297,000 → 285,000);
- `quiet_collector`, `collect`: the collector runs once after each write (341,000 → 331,000);
- `bind_none_fast`: `None` binds through an adapter found at once (312,000 → 297,000).

Kept where their logic is, each marked with its line there:
- the plain JSON made straight from the values, no objects built (`audit_frames.
  plain_from_values`: 402,000 → 341,000);
- times as text from a memo of whole seconds (`record.epoch_parts`, `audit_writes.
  _stored_time`: 331,000 → 312,000);
- SQLite: a count of the audit rows a batch added, not every request id read back
  (`audit_writes._write_rows_sqlite`: 285,000 → 279,000);
- a request's tokens read once (`ledger.AuditWriter._write_batch`, 279,000 → 272,000);
- a frame's requests handed to the writer at once (`AuditWriter.submit_all`: 272,000 →
  269,000);
- one `executemany` per table on SQLite, one JSON array per table on PostgreSQL
  (`audit_writes`, its Rule 6), and requests framed in batches of `frame_size`, sent every
  `send_seconds` (`audit_outbox`, `audit_pipe`): the "flush 1,000" and "through the audit
  process" lines of `bench/audit.py`.
"""

from __future__ import annotations

import gc
import sqlite3
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from turnout.record import FinishedRequest

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["bind_none_fast", "collect", "dict_maker", "finished_row", "quiet_collector"]


def finished_row(fields: list[Any]) -> FinishedRequest:
    """A decoded request's fields (in `FinishedRequest`'s order) as one, made as a plain tuple:
    the named tuple's generated constructor costs more ("decoded requests made as plain
    tuples")."""
    return tuple.__new__(FinishedRequest, fields)


def dict_maker(
    shape: tuple[tuple[str, ...], tuple[int, ...]],
) -> Callable[[list[Any]], dict[str, Any]]:
    """A function making the object of `shape`'s keys (in order), each the value at its place
    in a list of values: one dict display, several times faster than `dict(zip(...))` ("each
    plain record and entry made by one dict display")."""
    keys, places = shape
    items = ", ".join(f"{key!r}: values[{place}]" for key, place in zip(keys, places, strict=True))
    # Of the record's own field names and positions, known at import: no value is part of it.
    return eval(f"lambda values: {{{items}}}")  # type: ignore[no-any-return]  # noqa: S307


@contextmanager
def quiet_collector() -> Iterator[None]:
    """The audit process's life with the cyclic collector run only by `collect` ("the
    collector runs once after each write"): what start-up made is frozen out of its way, and
    the many short-lived objects of a waiting batch, which hold no cycle, no longer make it run
    again and again."""
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def collect() -> None:
    """Run the collector once (after a write, inside `quiet_collector`)."""
    gc.collect()


def bind_none_fast() -> None:
    """`sqlite3` binds `None` only after asking whether it adapts itself (two failed attribute
    lookups, their error messages formatted), more than the rest of the value's binding; an
    adapter of `None` found at once (`{}.get(None)` is None) binds the same NULL ("`None` binds
    through an adapter of `None` found at once"). Global to the process: only the audit
    process, whose process is the writer's, sets it."""
    sqlite3.register_adapter(type(None), cast("Callable[[None], None]", {}.get))
