"""The audit writer: every finished request becomes an audit row (with its attempt rows) and,
when it used tokens, a usage entry, written to the store in batches off the request path.

Rule 1: `submit` runs on the event loop, does no I/O and takes constant time: it queues the
request and, once `batch_size` are queued, wakes the worker. A slow or failing store never
blocks or fails a request.
Rule 2: the worker writes a batch (up to `batch_size` requests) in one transaction on a thread
(`asyncio.to_thread`), every `flush_seconds` or as soon as a batch is full; one batch at a time.
Rule 3: audit rows wait in a bounded queue (`max_queue` requests, including those waiting to be
written again). Only when it is full is a request's audit row dropped: `dropped` counts them.
A burst of drops has two WARNING lines: one at its first drop, and one when the queue has drained
to half its bound again, with how many audit rows the burst dropped over how many seconds; a
queue that only dips below its bound between batches (a store that takes a batch now and then
during an outage) is still the same burst.
Rule 4: usage entries are never dropped. A request whose audit row is dropped keeps its usage
entry; a batch the store refuses has its usage entries appended to the spill file (fsync'd) and
its audit rows queued again; the spill is written to the store (idempotently) at start-up and
after each batch the store takes.
Rule 5: about every `cleanup_seconds` (default hourly), and at the first flush, audit rows older
than `retention_days` are deleted (the usage ledger is kept) and the remembered project and key
ids are forgotten, so renamed or re-created objects are looked up again.
Rule 6: `aclose` writes what is queued; what the store then refuses is spilled (usage) or
counted and logged (audit rows).
Rule 7: a batch the store rejects for its data (an integrity or data error, not an outage)
would be rejected again: its usage entries are spilled (Rule 4) and its requests' audit rows
written one request at a time; those rejected again are dropped, counted in `rejected` and
logged, so one bad row never holds up the rest.
Rule 8: a spilled usage entry the store rejects for its data (or of the wrong shape) is moved
to a file of rejected entries in the spill folder (`rejected-….jsonl`, never replayed or
deleted: for an operator) and logged as an ERROR; it never blocks the spill.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import DataError, IntegrityError

from turnout.store.audit_policy import DEFAULT_POLICY, AuditPolicy
from turnout.store.audit_rows import (
    AUDIT_FIELDS,
    FinishedRequest,
    IdMint,
    attempt_rows,
    audit_row,
    record_of,
    tokens_of,
    usage_dict,
    usage_entry,
    usage_tuple,
)
from turnout.store.audit_writes import (
    IdsByName,
    delete_expired_audit,
    write_request,
    write_requests,
    write_usage,
)
from turnout.store.spill import SpillFile, orphan_spills, read_spill, set_aside

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from turnout.store.audit_rows import AttemptRow, AuditRow, UsageRow
    from turnout.store.engine import Store

__all__ = ["AuditWriter", "audit_sink"]

logger = logging.getLogger("turnout.store")

_AuditRows = tuple["AuditRow", list["AttemptRow"]]
"""One request's audit row and its attempt rows."""
_REQUEST_ID = AUDIT_FIELDS.index("request_id")
_REJECTED = (DataError, IntegrityError)
"""What the store says of a row it will never take (Rules 7 and 8)."""
_MALFORMED = (KeyError, TypeError, ValueError)
"""What a spilled line of the wrong shape raises before it reaches the store (Rule 8)."""


@dataclass(slots=True)
class _Batch:
    requests: list[FinishedRequest] = field(default_factory=list)
    retries: list[_AuditRows] = field(default_factory=list)
    usage: list[UsageRow] = field(default_factory=list)


@dataclass(slots=True)
class _Written:
    """What a batch came to: the audit rows to queue again when the store refused it."""

    failed: bool = False
    retries: list[_AuditRows] = field(default_factory=list)
    rejected: int = 0


class AuditWriter:
    """Writes the request audit and the usage ledger of `store` off the request path.

    `spill_dir`: the folder of the usage spill files. `policy`: its bounds and pace (the
    defaults of `AuditPolicy`). `clock` (`time.time`): epoch seconds, for retention.
    """

    def __init__(
        self,
        store: Store,
        *,
        spill_dir: Path,
        policy: AuditPolicy = DEFAULT_POLICY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.policy = policy
        self.clock = clock
        self.dropped = 0
        """Audit rows dropped because the queue was full (Rule 3)."""
        self.rejected = 0
        """Audit rows dropped because the store rejected their batch's data (Rule 7)."""
        self._pending: deque[FinishedRequest] = deque()
        self._retries: deque[_AuditRows] = deque()
        self._usage: list[UsageRow] = []
        self._mint = IdMint()
        self._spill = SpillFile(spill_dir)
        self._ids = IdsByName()
        self._wake = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._closing = False
        self._dropping = False
        self._burst = (0, 0.0)
        """`dropped` before the burst of drops under way, and when it began (Rule 3)."""
        self._failing = False
        self._next_cleanup = 0.0

    @property
    def queued(self) -> int:
        """Requests whose audit row waits to be written."""
        return len(self._pending) + len(self._retries)

    @property
    def spilled(self) -> int:
        """Usage entries in this writer's spill file, waiting for the store."""
        return self._spill.count

    def submit(self, done: FinishedRequest) -> None:
        """Rule 1: queue one finished request (its routing record the object itself or plain
        JSON, made plain on the worker thread; its usage id minted already, or not)."""
        pending = self._pending
        if len(pending) + len(self._retries) >= self.policy.max_queue:
            self._drop_keeping_usage(done)
            return
        pending.append(done)
        if len(pending) >= self.policy.batch_size:
            self._wake.set()

    def submit_all(self, requests: list[FinishedRequest]) -> None:
        """Rule 1: `submit` of each of `requests`, in order, at once."""
        pending = self._pending
        room = max(0, self.policy.max_queue - len(pending) - len(self._retries))
        pending.extend(requests[:room] if room < len(requests) else requests)
        for done in requests[room:]:  # the queue is full
            self._drop_keeping_usage(done)
        if len(pending) >= self.policy.batch_size:
            self._wake.set()

    def _drop_keeping_usage(self, done: FinishedRequest) -> None:
        """Rule 3: drop `done`'s audit rows (the queue is full); Rule 4: keep its usage."""
        entry = usage_entry(done, record_of(done), self._mint)
        if entry is not None:
            self._usage.append(entry)
        self._drop(1)

    async def start(self) -> None:
        """Write what earlier writers spilled (Rule 4), then start the worker."""
        await self.recover()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def recover(self) -> None:
        """Rule 4: adopt the spill files of writers that ended, and write what they spilled
        (the first part of `start`, for a caller that runs `flush` itself)."""
        async with self._lock:
            await asyncio.to_thread(self._recover)

    async def aclose(self) -> None:
        """Rule 6: stop the worker and write what is queued."""
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await self._task
            self._task = None
        else:
            await self.flush()
        if self.queued:
            logger.warning("audit: %d audit rows not written at shutdown", self.queued)
        self._spill.close()

    async def flush(self) -> None:
        """Rule 2: write everything queued now, a batch at a time, stopping at the first batch
        the store refuses; then run retention when it is due (Rule 5)."""
        async with self._lock:
            while self.queued or self._usage or self._spill.count:
                written = await asyncio.to_thread(self._write_batch, self._take())
                self._settle(written)
                if written.failed:
                    break
            if not self._failing and self.clock() >= self._next_cleanup:
                self._next_cleanup = self.clock() + self.policy.cleanup_seconds
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

    def _drop(self, count: int) -> None:
        self.dropped += count
        if not self._dropping:
            self._dropping = True
            self._burst = (self.dropped - count, self.clock())
            logger.warning(
                "audit: the queue is full (%d requests); dropping audit rows until it drains "
                "(usage is kept)",
                self.policy.max_queue,
            )

    def _drained(self) -> None:
        """Rule 3: end a burst of drops once the queue is down to half its bound."""
        if self._dropping and self.queued <= self.policy.max_queue // 2:
            self._dropping = False
            before, since = self._burst
            logger.warning(
                "audit: the queue drained; %d audit rows were dropped over %.1f s (usage was kept)",
                self.dropped - before,
                self.clock() - since,
            )

    def _take(self) -> _Batch:
        """The next batch: audit rows to write again first, then new requests; all usage
        entries of dropped audit rows."""
        batch = _Batch(usage=self._usage)
        self._usage = []
        room = self.policy.batch_size
        while self._retries and room:
            batch.retries.append(self._retries.popleft())
            room -= 1
        pending = self._pending
        if len(pending) <= room:
            batch.requests = list(pending)
            pending.clear()
        else:
            batch.requests = [pending.popleft() for _ in range(room)]
        return batch

    def _settle(self, written: _Written) -> None:
        """On the loop: queue a refused batch's audit rows again (within the bound)."""
        if written.failed and not self._failing:
            logger.warning("audit: the store refused a batch; usage spilled, audit rows queued")
        elif not written.failed and self._failing:
            logger.warning("audit: the store answers again")
        self._failing = written.failed
        self.rejected += written.rejected
        room = self.policy.max_queue - self.queued
        kept = written.retries[:room] if room > 0 else []
        if len(kept) < len(written.retries):
            self._drop(len(written.retries) - len(kept))
        self._retries.extendleft(reversed(kept))
        self._drained()

    def _write_batch(self, batch: _Batch) -> _Written:
        """On the worker thread: the batch in one transaction, then the spill."""
        rows = list(batch.retries)
        usage = list(batch.usage)
        seen = {audit[_REQUEST_ID] for audit, _ in rows}
        mint = self._mint
        for finished in batch.requests:
            record = record_of(finished)
            tokens = tokens_of(record)
            entry = usage_entry(finished, record, mint, tokens)
            if entry is not None:
                usage.append(entry)
            request_id = record["request_id"]
            if request_id not in seen:
                seen.add(request_id)
                rows.append((audit_row(finished, record, tokens), attempt_rows(record)))
        audits = [audit for audit, _ in rows]
        attempts = [attempt for _, some in rows for attempt in some]
        try:
            write_requests(self.store, audits, attempts, usage, self._ids)
        except _REJECTED:
            # Rule 7: the store is up but refuses this batch: spill its usage (replayed one by
            # one if need be) and write its requests' audit rows one at a time.
            self._spill.append([usage_dict(entry) for entry in usage])
            written = self._write_each_request(rows)
        except Exception:  # Rule 4: whatever the store says, usage is kept
            logger.debug("audit: the store refused a batch", exc_info=True)
            self._spill.append([usage_dict(entry) for entry in usage])
            return _Written(failed=True, retries=rows)
        else:
            written = _Written()
        try:  # after the batch: while the store is down, the spill is not even read
            self._write_spill()
        except Exception:  # the store stopped answering: replayed later
            logger.debug("audit: the store refused the spill", exc_info=True)
            written.failed = True
        return written

    def _write_each_request(self, rows: list[_AuditRows]) -> _Written:
        """Rule 7: each request's audit rows in a transaction of their own; those the store
        rejects are dropped; if the store stops answering, the rest wait for the next batch."""
        rejected = 0
        for number, (audit, attempts) in enumerate(rows):
            try:
                write_request(self.store, audit, attempts, self._ids)
            except _REJECTED:
                rejected += 1
            except Exception:  # noqa: BLE001 - an outage now: the rest are written later
                return _Written(failed=True, retries=rows[number:], rejected=rejected)
        if rejected:
            logger.warning("audit: the store rejected %d audit rows for their data; dropped",
                           rejected)  # fmt: skip
        return _Written(rejected=rejected)

    def _write_spill(self) -> None:
        """Rule 4: write the spilled usage entries, then empty the spill file."""
        if self._spill.count:
            entries = self._spill.entries()
            step = self.policy.batch_size * 10
            for start in range(0, len(entries), step):
                chunk = entries[start : start + step]
                try:
                    write_usage(self.store, [usage_tuple(e) for e in chunk], self._ids)
                except (*_REJECTED, *_MALFORMED):
                    self._set_aside(chunk)
            self._spill.clear()

    def _set_aside(self, chunk: list[dict[str, Any]]) -> None:
        """Rule 8: write `chunk` one entry at a time; keep the entries the store rejects."""
        rejected = []
        for entry in chunk:
            try:
                write_usage(self.store, [usage_tuple(entry)], self._ids)
            except (*_REJECTED, *_MALFORMED):
                rejected.append(entry)
        if rejected:
            path = set_aside(self._spill.folder, rejected)
            logger.error("audit: the store rejected %d usage entries; they are kept in %s",
                         len(rejected), path)  # fmt: skip

    def _recover(self) -> None:
        """On a thread at start: adopt orphaned spill files into this writer's own, then try
        to write them."""
        folder = self._spill.folder
        if folder.is_dir():
            for path, file in orphan_spills(folder, own=self._spill.path):
                with file:
                    self._spill.append(read_spill(path))
                    path.unlink()
        try:
            self._write_spill()
        except Exception as exc:  # noqa: BLE001 - the store may be down at start; retried later
            logger.warning("audit: %d spilled usage entries wait for the store: %s",
                           self._spill.count, type(exc).__name__)  # fmt: skip
            self._failing = True

    def _delete_expired(self) -> None:
        self._ids = IdsByName()  # forget ids of objects since deleted or renamed
        try:
            deleted = delete_expired_audit(
                self.store, retention_days=self.policy.retention_days, now=self.clock()
            )
        except Exception:
            logger.exception("audit: deleting expired audit rows failed")
            return
        if deleted:
            logger.info("audit: deleted %d audit rows past retention", deleted)


def audit_sink(store: Store, *, spill_dir: Path, retention_days: float = 30) -> AuditWriter:
    """The audit writer of `store` with its defaults (see `AuditWriter`), for the gateway's
    observer: `Observer(sink=writer)`; `await writer.start()` before serving and
    `await writer.aclose()` after."""
    return AuditWriter(
        store, spill_dir=spill_dir, policy=AuditPolicy(retention_days=retention_days)
    )
