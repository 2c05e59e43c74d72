"""The audit writer's own process: it reads finished requests from its standard input and
writes them with an `AuditWriter` over its own connection to the store, so the serving process
spends none of its CPU (nor its interpreter lock) on the store.

Run as `python -m turnout.store.audit_child` by `AuditPipe`; frames as in `audit_frames`.

Rule 1: the first frame holds the settings (the store's URL among them). The child opens the
store (no migration: the serving process did), reports ready, then writes what earlier writers
spilled (the writer's start-up rule).
Rule 2: batches read while a write is under way wait in the child; they go to the writer at
the next write, which starts `flush_seconds` after the last, as soon as `batch_size` requests
wait, or at once for a batch marked `flush`. Past `max_queue` waiting requests, a batch goes to
the writer at once, whose bound drops audit rows (never usage). The reading thread and the
writing thread share one lock, held around every step but a batch's write.
Rule 3: after each write the child reports its counters; when the writer holds no request any
more (each was written, rejected, or dropped with its usage spilled), the report names the last
batch taken in as written. While the store refuses, nothing is reported written: the serving
process keeps those batches, to send again should this process die.
Rule 4: the end of its standard input (the serving process closed it, or died) ends the child:
it writes what it holds (the writer's shutdown rule), reports, and exits. It ignores SIGINT and
SIGTERM, which a terminal or a service manager sends the whole process group: the serving
process decides when it ends.
Rule 5: its standard output carries frames only: anything else printing to it would go to its
standard error instead, with its log lines.
Rule 6: it stays small. One thread reads and decodes the frames, the main thread writes; no
event loop is loaded, and an SQLite store is written through the standard library's driver
(`audit_sqlite`), so the store's database toolkit is loaded only for PostgreSQL.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import IO, TYPE_CHECKING

import orjson

from turnout.store.audit_book import AuditBook
from turnout.store.audit_frames import HEADER, Report, Settings, decode_batch, frame
from turnout.store.audit_policy import AuditPolicy
from turnout.store.audit_speed import bind_none_fast, collect, quiet_collector

if TYPE_CHECKING:
    from turnout.store.audit_book import AuditDb
    from turnout.store.audit_rows import FinishedRequest

__all__ = ["main", "read_frame", "serve"]

logger = logging.getLogger("turnout.store")


def read_frame(stream: IO[bytes]) -> bytes | None:
    """The next frame's body; None at the end of the input (a cut frame is dropped)."""
    header = stream.read(HEADER.size)
    if len(header) == HEADER.size:
        (size,) = HEADER.unpack(header)
        body = stream.read(size)
        if len(body) == size:
            return body
    if header:
        logger.warning("audit: the input ended inside a frame; its requests are sent again")
    return None


class _Child:
    """Rules 2 to 4: the batches read, the book, and the reports."""

    def __init__(self, book: AuditBook, out: int) -> None:
        self.book = book
        self.out = out
        self.waiting: list[FinishedRequest] = []
        self.received = -1
        self.flush_asked = -1
        self.flushed = -1
        self.written = -1
        self.ended = False
        self.woken = False
        self.lock = threading.Lock()
        self.wake = threading.Condition(self.lock)

    def report(self, *, ready: bool = False) -> None:
        book = self.book
        report: Report = {
            "ready": ready,
            "written": self.written,
            "flushed": self.flushed,
            "dropped": book.dropped,
            "rejected": book.rejected,
            "queued": book.queued + len(self.waiting),
            "spilled": book.spilled,
        }
        data = frame(orjson.dumps(report))
        try:
            while data:
                data = data[os.write(self.out, data) :]
        except OSError:  # the serving process is gone: keep writing until the input ends
            self.out = -1

    def read(self, stream: IO[bytes]) -> None:
        """On the reading thread: every batch until the input ends."""
        try:
            while (body := read_frame(stream)) is not None:
                seq, flush, requests = decode_batch(body)
                with self.lock:
                    if len(self.waiting) >= self.book.policy.max_queue:
                        self.book.submit_all(requests)  # Rule 2: the writer's bound applies
                    else:
                        self.waiting.extend(requests)
                    self.received = seq
                    if flush:
                        self.flush_asked = seq
                    if flush or len(self.waiting) >= self.book.policy.batch_size:
                        self.woken = True
                        self.wake.notify()
        finally:
            with self.lock:
                self.ended = True
                self.woken = True
                self.wake.notify()

    def write(self) -> None:
        """On the main thread: a write each time one is due, until the input ends."""
        book = self.book
        while True:
            with self.lock:
                if not self.ended:
                    self.wake.wait_for(lambda: self.woken, book.policy.flush_seconds)
                self.woken = False
                taken, upto, asked = self.waiting, self.received, self.flush_asked
                self.waiting = []
                book.submit_all(taken)
            try:
                book.write_queued(self.lock)
            except Exception:
                logger.exception("audit: writing a batch failed")
            with self.lock:
                if book.queued == 0:
                    self.written = max(self.written, upto)
                self.flushed = asked
                self.report()
                done = self.ended and not self.waiting
            collect()  # the collector runs here only: see `serve`
            if done:
                return


def _database(settings: Settings) -> AuditDb:
    """Rule 6: the standard library's driver for an SQLite file, else the store's engine."""
    path = settings.get("sqlite")
    if path:
        from turnout.store.audit_sqlite import SqliteAudit  # noqa: PLC0415 - Rule 6

        return SqliteAudit(path)
    from turnout.store.audit_writes import StoreAudit  # noqa: PLC0415 - Rule 6
    from turnout.store.engine import open_store  # noqa: PLC0415 - Rule 6

    return StoreAudit(open_store(settings["url"]))


def serve(stdin: int = 0, stdout: int = 1) -> None:
    """Rules 1 to 4, on the file descriptors `stdin` and `stdout`."""
    with open(stdin, "rb", closefd=False) as stream:
        first = read_frame(stream)
        if first is None:
            return
        settings: Settings = orjson.loads(first)
        db = _database(settings)
        book = AuditBook(
            db, spill_dir=Path(settings["spill_dir"]), policy=AuditPolicy(**settings["policy"])
        )
        with quiet_collector():
            child = _Child(book, stdout)
            child.report(ready=True)
            with child.lock:
                book.recover_spill()
            reading = threading.Thread(target=child.read, args=(stream,), daemon=True)
            reading.start()
            child.write()
            reading.join()
            book.write_queued()
            if book.queued:
                logger.warning("audit: %d audit rows not written at shutdown", book.queued)
            book.close_spill()
            child.report()
            db.close()


def main() -> None:
    """Rules 4 and 5: the process's entry point."""
    bind_none_fast()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    serve(0, out)


if __name__ == "__main__":
    main()
