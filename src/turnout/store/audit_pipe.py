"""The serving process's side of the audit writer process: finished requests go, in batches
down a pipe, to a child process (`audit_child`) that writes them to the store, so the serving
process's event loop never shares its interpreter lock with the store's writes.

Rule 1: `submit` runs on the event loop, does no I/O and takes constant time: it appends the
request. Every `send_seconds` (0.05), or once `frame_size` requests wait, they are made plain
(the routing record as plain JSON, the usage entry's id minted here) and sent as one frame; the
write never blocks the loop (past 16 MiB waiting in the pipe, frames wait here instead).
Rule 2: the child starts beside serving (`start` returns at once); requests submitted before it
is up wait here. It gets the store's URL and the writer's options in its first frame, on its
standard input. Each serving process (each pre-forked worker) has a child of its own.
Rule 3: a frame is kept here until the child reports it written (every request written,
rejected for its data, or dropped with its usage spilled, by the writer's rules). Past
`max_queue` requests kept, the oldest frames the child has received already are let go
(`unprotected` counts their requests; the child still writes them, unless it dies).
Rule 4: when the child dies, an ERROR line says so, a new child is started and every frame
kept is sent to it again. Sending twice bills once: a usage entry's id was minted here, and
the store skips an audit row or a usage entry it holds already.
Rule 5: when no child can be started (or one exits before it is ready), or the store lives in
this process's memory (`:memory:`, which no other process can open), the requests are written
by an `AuditWriter` in this process instead (on a thread), from the frames kept on; one line
says why.
Rule 6: `flush` sends what waits and returns once the child has gone through it (written, or
refused by the store and kept for later as the writer's rules say). `aclose` sends what waits,
closes the child's input and waits up to `close_seconds` for it to write everything and exit;
then it kills it, and an ERROR line counts the requests not confirmed written.
Rule 7: `dropped`, `rejected`, `spilled` are the child's counters as last reported (summed
over the children this process started), so the metric of dropped audit rows stays right.
Rule 8: a child that reads nothing while frames wait (the pipe stays past its limit for
`stuck_seconds`: stopped, or its loop blocked) is killed with an ERROR line, and replaced as by
Rule 4, so the frames waiting here stay bounded by what arrives in that time. A child whose
store is merely slow goes on reading (its own writer's queue is bounded) and is never taken
for stuck.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from typing import TYPE_CHECKING, Any, Final

import orjson

from turnout.store.audit_frames import HEADER, Settings, frame
from turnout.store.audit_outbox import Outbox
from turnout.store.audit_policy import DEFAULT_POLICY, AuditPolicy
from turnout.store.ledger import AuditWriter

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from turnout.store.audit_rows import FinishedRequest
    from turnout.store.engine import Store

__all__ = ["CHILD_COMMAND", "AuditPipe", "read_frame"]

logger = logging.getLogger("turnout.store")

CHILD_COMMAND: Final = (sys.executable, "-m", "turnout.store.audit_child")
"""The child process's command line (it holds no setting)."""


async def read_frame(reader: asyncio.StreamReader) -> bytes | None:
    """The next frame's body from the child; None at the end of its output (a cut frame is
    dropped: the child died while reporting)."""
    try:
        header = await reader.readexactly(HEADER.size)
        (size,) = HEADER.unpack(header)
        return await reader.readexactly(size)
    except asyncio.IncompleteReadError:
        return None


_RESTART_SECONDS: Final = 0.5
"""The pause before a child that died is replaced, so a child that keeps dying does not
take a CPU (Rule 4)."""


class AuditPipe:
    """The audit writer of `store`, in a child process (see the module's rules).

    `spill_dir` as for `AuditWriter`; `policy` (the defaults of `AuditPolicy`): the child's
    writer's bounds and pace, and this side's (`max_queue` also bounds the requests kept here,
    Rule 3; `send_seconds`, `frame_size`, `close_seconds`, `stuck_seconds`, `pipe_limit`,
    Rules 1, 6 and 8). `command`: the child's command line. `clock` (`time.monotonic`)
    measures how long the child has been stuck (Rule 8).
    """

    def __init__(
        self,
        store: Store,
        *,
        spill_dir: Path,
        policy: AuditPolicy = DEFAULT_POLICY,
        command: Sequence[str] = CHILD_COMMAND,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.spill_dir = spill_dir
        self.policy = policy
        self.settings: Settings = {
            "url": store.engine.url.render_as_string(hide_password=False),
            "sqlite": None if store.is_postgres else store.engine.url.database,
            "spill_dir": str(spill_dir),
            "policy": policy.as_dict(),
        }
        self.command = tuple(command)
        self.clock = clock
        self._full_since: float | None = None
        self.fallback: AuditWriter | None = None
        """The writer in this process, once requests are written here (Rule 5)."""
        self._report: dict[str, Any] = {}
        self._ended = {"dropped": 0, "rejected": 0}
        self._outbox = Outbox(policy)
        self._process: asyncio.subprocess.Process | None = None
        self._stdin: asyncio.StreamWriter | None = None
        self._wake = asyncio.Event()
        self._progress = asyncio.Event()
        self._sender: asyncio.Task[None] | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._closing = False

    @property
    def dropped(self) -> int:
        """Audit rows the writers dropped because their queue was full (Rule 7)."""
        fallback = 0 if self.fallback is None else self.fallback.dropped
        return self._ended["dropped"] + int(self._report.get("dropped", 0)) + fallback

    @property
    def rejected(self) -> int:
        """Audit rows the writers dropped because the store rejected their data (Rule 7)."""
        fallback = 0 if self.fallback is None else self.fallback.rejected
        return self._ended["rejected"] + int(self._report.get("rejected", 0)) + fallback

    @property
    def spilled(self) -> int:
        """Usage entries in the current writer's spill file, as last reported."""
        if self.fallback is not None:
            return self.fallback.spilled
        return int(self._report.get("spilled", 0))

    @property
    def queued(self) -> int:
        """Requests not confirmed written yet."""
        fallback = 0 if self.fallback is None else self.fallback.queued
        return self._outbox.waiting + fallback

    @property
    def unprotected(self) -> int:
        """Requests let go while the child had not reported them written (Rule 3)."""
        return self._outbox.unprotected

    @property
    def child_pid(self) -> int | None:
        """The current child process's id (None when there is none)."""
        return None if self._process is None else self._process.pid

    def submit(self, done: FinishedRequest) -> None:
        """Rule 1: take one finished request (as `AuditWriter.submit`)."""
        if self.fallback is not None:
            self.fallback.submit(done)
            return
        if self._outbox.add(done):
            self._wake.set()

    async def start(self) -> None:
        """Rule 2: start the child (or Rule 5: the writer in this process) and return."""
        if self._supervisor is not None or self.fallback is not None:
            return
        database = self.store.engine.url.database
        if not self.store.is_postgres and (not database or database == ":memory:"):
            await self._fall_back("the store is in this process's memory", level=logging.INFO)
            return
        loop = asyncio.get_running_loop()
        self._supervisor = loop.create_task(self._supervise())
        self._sender = loop.create_task(self._send_often())

    async def flush(self) -> None:
        """Rule 6: send what waits; return once the child went through it."""
        if self._supervisor is None and self.fallback is None:
            await self.start()
        if self.fallback is None:
            seq = self._outbox.pack(flush=True)
            self._push()
            while self._outbox.flushed < seq and self.fallback is None and self._is_supervised():
                self._progress.clear()
                await self._progress.wait()
        if self.fallback is not None:
            await self.fallback.flush()

    async def aclose(self) -> None:
        """Rule 6: send what waits, then let the child write it and exit."""
        self._closing = True
        if self._sender is not None:
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
        if self.fallback is None and self._supervisor is not None:
            self._outbox.pack(flush=True)
            self._push(everything=True)
            self._end_input()
            await self._await_child()
            held = self._outbox.waiting
            if held:
                logger.error("audit: %d requests not confirmed written at shutdown", held)
        if self.fallback is not None:
            await self.fallback.aclose()

    def _is_supervised(self) -> bool:
        return self._supervisor is not None and not self._supervisor.done()

    async def _await_child(self) -> None:
        supervisor = self._supervisor
        assert supervisor is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(supervisor), self.policy.close_seconds)
        if not supervisor.done():
            logger.error("audit: the audit process did not finish in %s s; stopped",
                         self.policy.close_seconds)  # fmt: skip
            if self._process is not None and self._process.returncode is None:
                self._process.kill()
            await supervisor

    async def _send_often(self) -> None:
        """Rule 1: every `send_seconds`, or when a frame's worth waits, send a frame."""
        while not self._closing and self.fallback is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.policy.send_seconds)
            self._wake.clear()
            if self._outbox.pending:
                self._outbox.pack(flush=False)
            self._push()

    def _push(self, *, everything: bool = False) -> None:
        """Write the frames the child has not received yet, without blocking (Rule 1)."""
        stdin = self._stdin
        outbox = self._outbox
        if stdin is None or stdin.is_closing() or not outbox.frames:
            return
        transport = stdin.transport
        waiting = False
        for kept in outbox.unsent():
            if not everything and transport.get_write_buffer_size() > self.policy.pipe_limit:
                waiting = True
                break
            stdin.write(kept.data)
            outbox.sent(kept)
        self._watch(waiting=waiting)

    def _watch(self, *, waiting: bool) -> None:
        """Rule 8: kill a child that has read nothing for `stuck_seconds` while frames wait."""
        if not waiting:
            self._full_since = None
            return
        now = self.clock()
        if self._full_since is None:
            self._full_since = now
            return
        process = self._process
        if now - self._full_since >= self.policy.stuck_seconds and process is not None:
            self._full_since = None
            if process.returncode is None:
                logger.error(
                    "audit: the audit process read nothing for %s s while %d requests wait; "
                    "stopping it",
                    self.policy.stuck_seconds,
                    self._outbox.held,
                )
                process.kill()

    def _end_input(self) -> None:
        if self._stdin is not None and not self._stdin.is_closing():
            self._stdin.close()

    def _take(self, report: dict[str, Any]) -> None:
        """A report from the child (Rules 3 and 7)."""
        self._report = report
        self._outbox.confirm(report["written"], report["flushed"])
        self._progress.set()

    async def _supervise(self) -> None:
        """Rules 2, 4 and 5: run a child; start another when it dies."""
        while True:
            try:
                process = await asyncio.create_subprocess_exec(
                    *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
                )
            except OSError as exc:
                await self._fall_back(f"the audit process could not start ({exc})")
                return
            ready, code = await self._run_child(process)
            if self._closing:
                return
            if not ready:
                await self._fall_back(f"the audit process exited (status {code}) before it "
                                      "was ready")  # fmt: skip
                return
            logger.error(
                "audit: the audit process exited (status %s); starting another and sending it "
                "the %d requests not confirmed written",
                code,
                self._outbox.held,
            )
            await asyncio.sleep(_RESTART_SECONDS)

    async def _run_child(self, process: asyncio.subprocess.Process) -> tuple[bool, int]:
        """Feed one child and read its reports until it exits: whether it was ready, its
        exit status."""
        assert process.stdin is not None
        assert process.stdout is not None
        self._process = process
        self._full_since = None
        process.stdin.write(frame(orjson.dumps(self.settings)))
        self._stdin = process.stdin
        self._outbox.restart()
        self._push(everything=self._closing)
        if self._closing:
            self._end_input()
        ready = False
        try:
            while (body := await read_frame(process.stdout)) is not None:
                ready = True
                self._take(orjson.loads(body))
        finally:
            self._stdin = None
            code = await process.wait()
            for name in self._ended:
                self._ended[name] += int(self._report.get(name, 0))
            self._report = {}
            self._outbox.lost()
            self._progress.set()
        return ready, code

    async def _fall_back(self, why: str, *, level: int = logging.WARNING) -> None:
        """Rule 5: write in this process from now on, beginning with the requests kept."""
        logger.log(level, "audit: writing the audit in this process: %s", why)
        writer = AuditWriter(self.store, spill_dir=self.spill_dir, policy=self.policy)
        kept = self._outbox.take_all()
        self.fallback = writer
        self._progress.set()
        for done in kept:
            writer.submit(done)
        if self._closing:
            return
        try:
            await writer.start()
        except Exception:  # serving goes on: the writer's flush retries
            logger.exception("audit: the audit writer could not start")
