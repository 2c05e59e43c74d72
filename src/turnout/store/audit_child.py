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
the writer at once, whose bound drops audit rows (never usage).
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
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from turnout.store.audit_frames import HEADER, Report, Settings, decode_batch, frame
from turnout.store.audit_policy import AuditPolicy
from turnout.store.audit_speed import bind_none_fast, collect, quiet_collector
from turnout.store.engine import open_store
from turnout.store.ledger import AuditWriter

if TYPE_CHECKING:
    from turnout.store.audit_rows import FinishedRequest

__all__ = ["main", "serve"]

logger = logging.getLogger("turnout.store")


async def read_frame(reader: asyncio.StreamReader) -> bytes | None:
    """The next frame's body; None at the end of the input (a cut frame is dropped)."""
    try:
        header = await reader.readexactly(HEADER.size)
        (size,) = HEADER.unpack(header)
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            logger.warning("audit: the input ended inside a frame; its requests are sent again")
        return None


class _Child:
    """Rules 2 to 4: the batches read, the writer, and the reports."""

    def __init__(self, writer: AuditWriter, out: int) -> None:
        self.writer = writer
        self.out = out
        self.waiting: list[FinishedRequest] = []
        self.received = -1
        self.flush_asked = -1
        self.flushed = -1
        self.written = -1
        self.ended = False
        self.wake = asyncio.Event()

    def report(self, *, ready: bool = False) -> None:
        writer = self.writer
        report: Report = {
            "ready": ready,
            "written": self.written,
            "flushed": self.flushed,
            "dropped": writer.dropped,
            "rejected": writer.rejected,
            "queued": writer.queued + len(self.waiting),
            "spilled": writer.spilled,
        }
        data = frame(orjson.dumps(report))
        try:
            while data:
                data = data[os.write(self.out, data) :]
        except OSError:  # the serving process is gone: keep writing until the input ends
            self.out = -1

    async def read(self, reader: asyncio.StreamReader) -> None:
        while (body := await read_frame(reader)) is not None:
            seq, flush, requests = decode_batch(body)
            if len(self.waiting) >= self.writer.policy.max_queue:
                self.writer.submit_all(requests)  # Rule 2: the writer's bound applies
            else:
                self.waiting.extend(requests)
            self.received = seq
            if flush:
                self.flush_asked = seq
            if flush or len(self.waiting) >= self.writer.policy.batch_size:
                self.wake.set()
        self.ended = True
        self.wake.set()

    async def write(self) -> None:
        writer = self.writer
        while True:
            if not self.ended:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), writer.policy.flush_seconds)
            self.wake.clear()
            taken, upto, asked = self.waiting, self.received, self.flush_asked
            self.waiting = []
            writer.submit_all(taken)
            try:
                await writer.flush()
            except Exception:
                logger.exception("audit: writing a batch failed")
            if writer.queued == 0:
                self.written = max(self.written, upto)
            self.flushed = asked
            self.report()
            collect()  # the collector runs here only: see `serve`
            if self.ended and not self.waiting:
                return


async def serve(stdin: int = 0, stdout: int = 1) -> None:
    """Rules 1 to 4, on the file descriptors `stdin` and `stdout`."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    pipe = os.fdopen(stdin, "rb", buffering=0, closefd=False)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    try:
        first = await read_frame(reader)
        if first is None:
            return
        settings: Settings = orjson.loads(first)
        store = open_store(settings["url"])
        writer = AuditWriter(
            store,
            spill_dir=Path(settings["spill_dir"]),
            policy=AuditPolicy(**settings["policy"]),
        )
        with quiet_collector():
            child = _Child(writer, stdout)
            child.report(ready=True)
            await writer.recover()
            reading = loop.create_task(child.read(reader))
            await child.write()
            await reading
            await writer.aclose()
            child.report()
            store.close()
    finally:
        transport.close()


def main() -> None:
    """Rules 4 and 5: the process's entry point."""
    bind_none_fast()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    asyncio.run(serve(0, out))


if __name__ == "__main__":
    main()
