"""The audit writer of the serving process: the audit book (`audit_book`: what is queued,
written, spilled, dropped and deleted, by its rules) driven from the event loop.

Rule 1: `submit` runs on the event loop, does no I/O and takes constant time (the book's
Rule 1); a full batch wakes the worker.
Rule 2: the worker writes a batch in one transaction on a thread (`asyncio.to_thread`), every
`flush_seconds` or as soon as a batch is full; one batch at a time. The queue is the event
loop's: batches are taken and settled there, only their writing runs on the thread.
Rule 3: `aclose` writes what is queued; what the store then refuses is spilled (usage) or
counted and logged (audit rows).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING

from turnout.store.audit_book import AuditBook, AuditDb
from turnout.store.audit_policy import DEFAULT_POLICY, AuditPolicy
from turnout.store.audit_writes import StoreAudit

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from turnout.store.engine import Store

__all__ = ["AuditWriter", "audit_sink"]

logger = logging.getLogger("turnout.store")


class AuditWriter(AuditBook):
    """Writes the request audit and the usage ledger of `store` off the request path.

    `store`: the store (written through its engine), or any `AuditDb`. `spill_dir`: the
    folder of the usage spill files. `policy`: its bounds and pace (the defaults of
    `AuditPolicy`). `clock` (`time.time`): epoch seconds, for retention.
    """

    def __init__(
        self,
        store: Store | AuditDb,
        *,
        spill_dir: Path,
        policy: AuditPolicy = DEFAULT_POLICY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        db = store if isinstance(store, AuditDb) else StoreAudit(store)
        super().__init__(db, spill_dir=spill_dir, policy=policy, clock=clock)
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._closing = False

    def _woken(self) -> None:
        self._wake.set()

    async def start(self) -> None:
        """Write what earlier writers spilled, then start the worker."""
        await self.recover()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def recover(self) -> None:
        """Adopt the spill files of writers that ended, and write what they spilled (the
        first part of `start`, for a caller that runs `flush` itself)."""
        async with self._lock:
            await asyncio.to_thread(self.recover_spill)

    async def aclose(self) -> None:
        """Rule 3: stop the worker and write what is queued."""
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await self._task
            self._task = None
        else:
            await self.flush()
        if self.queued:
            logger.warning("audit: %d audit rows not written at shutdown", self.queued)
        self.close_spill()

    async def flush(self) -> None:
        """Rule 2: write everything queued now, a batch at a time, stopping at the first batch
        the store refuses; then run retention when it is due."""
        async with self._lock:
            while self.has_work:
                written = await asyncio.to_thread(self._write_batch, self._take())
                self._settle(written)
                if written.failed:
                    break
            if self._cleanup_due():
                await asyncio.to_thread(self._delete_expired)

    async def _run(self) -> None:
        while not self._closing:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.policy.flush_seconds)
            self._wake.clear()
            await self._flush_safely()
        await self._flush_safely()

    async def _flush_safely(self) -> None:
        try:
            await self.flush()
        except Exception:
            logger.exception("audit: writing a batch failed")


def audit_sink(store: Store, *, spill_dir: Path, retention_days: float = 30) -> AuditWriter:
    """The audit writer of `store` with its defaults (see `AuditWriter`), for the gateway's
    observer: `Observer(sink=writer)`; `await writer.start()` before serving and
    `await writer.aclose()` after."""
    return AuditWriter(
        store, spill_dir=spill_dir, policy=AuditPolicy(retention_days=retention_days)
    )
