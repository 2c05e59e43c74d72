"""The handler behind the gateway's log lines: it formats each line at once and writes the lines
out together, a few times a second, instead of one write per line.

Rule 1: lines reach the stream in the order they were handed over, whichever thread handed
them over; a line is written out at most `interval` seconds (0.2) after it was handed over.
Rule 2: a WARNING or worse line is written out at once, with every line before it; so is a
buffer past `limit` characters (64 KiB); `flush()` (also on close, at interpreter exit and
before a fork) writes out everything.
Rule 3: with `interval` 0, or a stream that is a terminal, each line is written at once.
Rule 4: a writer thread, started by the first line that finds the buffer empty, writes out
the buffer `interval` seconds later; it sleeps while nothing is buffered. A forked child
starts with an empty buffer (the parent wrote it out before forking) and no writer thread.
Rule 5: `add` takes an already formatted line: the gateway's access line is built without a
log record (`turnout.gateway.observe.logs`); everything else goes through `emit`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
import weakref
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TextIO

__all__ = ["INTERVAL", "LIMIT", "LogWriter"]

INTERVAL: Final = 0.2
"""Seconds a line may wait in the buffer."""
LIMIT: Final = 65536
"""Characters buffered before they are written out without waiting."""

_WRITERS: weakref.WeakSet[LogWriter] = weakref.WeakSet()


class LogWriter(logging.Handler):
    """A `logging` handler that writes `stream` in batches (see the module rules). `interval`
    seconds (default 0.2; 0 writes each line at once), `limit` characters (default 64 KiB);
    the writer thread waits with `sleep` (default `time.sleep`)."""

    def __init__(
        self,
        stream: TextIO,
        *,
        interval: float = INTERVAL,
        limit: int = LIMIT,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        super().__init__()
        self.stream = stream
        self.interval = 0.0 if _is_terminal(stream) else interval
        self.limit = limit
        self._sleep = sleep
        self._reset()
        _WRITERS.add(self)

    def _reset(self) -> None:
        # `_writing` orders the writes to the stream; `_pending` guards the buffer alone, so
        # handing a line over never waits for a write.
        self._writing = threading.Lock()
        self._pending = threading.Lock()
        self._lines: list[str] = []
        self._size = 0
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False

    def emit(self, record: logging.LogRecord) -> None:
        """Format `record` and hand its line over (Rule 2 for WARNING and worse)."""
        try:
            line = self.format(record)
        except Exception:  # noqa: BLE001 - a line that cannot be formatted is reported, not raised
            self.handleError(record)
            return
        self.add(line, urgent=record.levelno >= logging.WARNING)

    def add(self, line: str, *, urgent: bool = False) -> None:
        """Hand over one formatted line (no newline at its end)."""
        with self._pending:
            lines = self._lines
            lines.append(line)
            self._size += len(line)
            first = len(lines) == 1
            full = self._size >= self.limit
        if urgent or full or not self.interval:
            self.flush()
        elif first:
            self._wake_writer()

    def flush(self) -> None:
        """Write out every line handed over so far."""
        with self._writing:
            with self._pending:
                lines = self._lines
                if not lines:
                    return
                self._lines = []
                self._size = 0
            lines.append("")
            try:
                self.stream.write("\n".join(lines))
                self.stream.flush()
            except Exception:  # noqa: BLE001 - a stream that fails must not fail the gateway
                # Reported as `logging` reports a failed write; when that fails too (stderr
                # closed as well), the lines are dropped: there is nowhere left to say so.
                with contextlib.suppress(Exception):
                    self.handleError(_failed_write(len(lines) - 1))

    def close(self) -> None:
        """Write out what is buffered and stop the writer thread (the stream stays open)."""
        self._closed = True
        self._wake.set()
        self.flush()
        super().close()

    def _wake_writer(self) -> None:
        if self._closed:
            self.flush()
            return
        if self._thread is None:
            with self._pending:  # two threads may both find the buffer empty
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._write_later, name="turnout-log-writer", daemon=True
                    )
                    self._thread.start()
        self._wake.set()

    def _write_later(self) -> None:
        wake = self._wake
        while True:
            wake.wait()
            if self._closed:
                return
            # A line handed over while this sleeps joins the batch; one that finds the buffer
            # empty after the clear below wakes the next round.
            self._sleep(self.interval)
            wake.clear()
            self.flush()

    def _after_fork_in_child(self) -> None:
        self._reset()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def _failed_write(count: int) -> logging.LogRecord:
    message = "writing %d log lines failed"
    failure = sys.exc_info()
    return logging.LogRecord("turnout", logging.ERROR, __file__, 0, message, (count,), failure)


def _flush_all() -> None:
    for writer in list(_WRITERS):
        writer.flush()


def _reset_all_in_child() -> None:
    for writer in list(_WRITERS):
        writer._after_fork_in_child()


os.register_at_fork(before=_flush_all, after_in_child=_reset_all_in_child)
