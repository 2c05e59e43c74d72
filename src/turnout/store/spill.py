"""The usage spill: usage entries the store could not take, kept in a local append-only file
until it can.

Blocking (file I/O): called from a worker thread, never from the event loop.

Rule 1: one writer, one file: `usage-<pid>-<random>.jsonl` in the spill folder, held under an
exclusive lock (`flock`) while its writer lives, so writers of several processes never share a
file.
Rule 2: entries are appended as JSON lines and the file is fsync'd before `append` returns: an
entry appended is on disk.
Rule 3: a file is emptied (or removed) only after its entries were written to the store, so a
crash in between writes them again later, which the ledger's idempotent write absorbs.
Rule 4: a file in the folder that no live writer holds (its process ended) is an orphan; the next
writer to start replays it and removes it.
Rule 5: a line that does not parse (a crash in the middle of an append) is skipped with a
WARNING; every whole line is kept.
"""

from __future__ import annotations

import fcntl
import logging
import os
import secrets
from typing import IO, TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

__all__ = ["SpillFile", "orphan_spills", "read_spill", "set_aside"]

logger = logging.getLogger("turnout.store")

_PATTERN = "usage-*.jsonl"


def read_spill(path: Path) -> list[dict[str, Any]]:
    """Rule 5: every whole entry of the spill file at `path`."""
    entries: list[dict[str, Any]] = []
    with path.open("rb") as file:
        for number, line in enumerate(file, start=1):
            if not line.strip():
                continue
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                logger.warning("usage spill %s: line %d is not whole JSON; skipped", path, number)
                continue
            if isinstance(entry, dict):
                entries.append(entry)
    return entries


def set_aside(folder: Path, entries: list[dict[str, Any]]) -> Path:
    """Keep `entries` the store rejected in a new `rejected-<pid>-<random>.jsonl` in `folder`
    (fsync'd); the name does not match a spill file's, so it is never replayed."""
    path = folder / f"rejected-{os.getpid()}-{secrets.token_hex(4)}.jsonl"
    with path.open("ab") as file:
        file.write(b"".join(orjson.dumps(entry) + b"\n" for entry in entries))
        file.flush()
        os.fsync(file.fileno())
    return path


def _try_lock(file: IO[bytes]) -> bool:
    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def orphan_spills(folder: Path, *, own: Path | None = None) -> Iterator[tuple[Path, IO[bytes]]]:
    """Rule 4: each spill file in `folder` that no writer holds (but `own`), locked and open,
    for the caller to replay and then remove; its lock ends when the file is closed."""
    for path in sorted(folder.glob(_PATTERN)):
        if path == own:
            continue
        try:
            file = path.open("rb+")
        except FileNotFoundError:  # another writer replayed and removed it meanwhile
            continue
        if not _try_lock(file):
            file.close()
            continue
        if not path.exists():  # removed between our open and our lock
            file.close()
            continue
        yield path, file


class SpillFile:
    """This writer's spill file in `folder` (created, with the folder, at the first append)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / f"usage-{os.getpid()}-{secrets.token_hex(4)}.jsonl"
        self._file: IO[bytes] | None = None
        self.count = 0
        """Entries in the file now."""

    def append(self, entries: list[dict[str, Any]]) -> None:
        """Rule 2: append `entries`, one JSON line each, and fsync."""
        if not entries:
            return
        file = self._open()
        file.write(b"".join(orjson.dumps(entry) + b"\n" for entry in entries))
        file.flush()
        os.fsync(file.fileno())
        self.count += len(entries)

    def entries(self) -> list[dict[str, Any]]:
        """Every entry in the file now."""
        if self._file is None or self.count == 0:
            return []
        return read_spill(self.path)

    def clear(self) -> None:
        """Rule 3: empty the file (its entries are in the store)."""
        if self._file is not None:
            self._file.truncate(0)
            self._file.flush()
            os.fsync(self._file.fileno())
        self.count = 0

    def close(self) -> None:
        """Release the file: removed when empty, else left for the next writer (Rule 4)."""
        file, self._file = self._file, None
        if file is None:
            return
        if self.count == 0:
            self.path.unlink(missing_ok=True)
        file.close()

    def _open(self) -> IO[bytes]:
        if self._file is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            file = self.path.open("ab")
            fcntl.flock(file.fileno(), fcntl.LOCK_EX)
            self._file = file
        return self._file
