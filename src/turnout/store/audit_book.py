"""The audit book: every finished request becomes an audit row (with its attempt rows) and,
when it used tokens, a usage entry, queued and written to the store in batches.

This is the writer without its pace: no event loop and no database library of its own. It
writes through an `AuditDb` (the store's engine, `audit_writes.StoreAudit`; an SQLite file over
the standard library's driver, `audit_sqlite.SqliteAudit`). The serving process drives it from
its event loop (`ledger.AuditWriter`), the audit process from its own loop (`audit_child`).

Rule 1: `submit` does no I/O and takes constant time: it queues the request and, once
`batch_size` are queued, wakes the writer (`_woken`). A slow or failing store never blocks or
fails a request.
Rule 2: a batch (up to `batch_size` requests) is written in one transaction; one batch at a time.
Queueing (`submit`, `_take`, `_settle`) happens on one side (the event loop, or under one lock)
and writing (`_write_batch`) on another, which touches only the batch, the spill and the ids.
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
Rule 5: about every `cleanup_seconds` (default hourly), and at the first write, audit rows older
than `retention_days` are deleted (the usage ledger is kept) and the remembered project and key
ids are forgotten, so renamed or re-created objects are looked up again.
Rule 6: a batch the store rejects for its data (an integrity or data error, not an outage)
would be rejected again: its usage entries are spilled (Rule 4) and its requests' audit rows
written one request at a time; those rejected again are dropped, counted in `rejected` and
logged, so one bad row never holds up the rest.
Rule 7: a spilled usage entry the store rejects for its data (or of the wrong shape) is moved
to a file of rejected entries in the spill folder (`rejected-….jsonl`, never replayed or
deleted: for an operator) and logged as an ERROR; it never blocks the spill.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from turnout.store.audit_ids import IdsByName
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
from turnout.store.spill import SpillFile, orphan_spills, read_spill, set_aside

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from contextlib import AbstractContextManager
    from pathlib import Path

    from turnout.store.audit_rows import AttemptRow, AuditRow, UsageRow

__all__ = ["AuditBook", "AuditDb"]

logger = logging.getLogger("turnout.store")

_AuditRows = tuple["AuditRow", list["AttemptRow"]]
"""One request's audit row and its attempt rows."""
_REQUEST_ID = AUDIT_FIELDS.index("request_id")
_MALFORMED = (KeyError, TypeError, ValueError)
"""What a spilled line of the wrong shape raises before it reaches the store (Rule 7)."""


@runtime_checkable
class AuditDb(Protocol):
    """Where the book writes: a batch in one transaction (rows in `audit_rows`' field order,
    their texts fitted here), the deletion of expired audit rows, and the errors by which the
    store rejects a batch's data (Rule 6; any other error is an outage)."""

    @property
    def rejected(self) -> tuple[type[Exception], ...]: ...

    def write(
        self,
        audits: Sequence[AuditRow],
        attempts: Sequence[AttemptRow],
        usage: Sequence[UsageRow],
        ids: IdsByName,
    ) -> None: ...

    def delete_expired(self, *, retention_days: float, now: float) -> int: ...

    def close(self) -> None: ...


@dataclass(slots=True)
class Batch:
    """What one write takes: audit rows to write again, new requests, usage entries."""

    requests: list[FinishedRequest] = field(default_factory=list)
    retries: list[_AuditRows] = field(default_factory=list)
    usage: list[UsageRow] = field(default_factory=list)


@dataclass(slots=True)
class Written:
    """What a batch came to: the audit rows to queue again when the store refused it."""

    failed: bool = False
    retries: list[_AuditRows] = field(default_factory=list)
    rejected: int = 0


class AuditBook:
    """The queue of finished requests of `db` and their writing (see the module's rules).

    `spill_dir`: the folder of the usage spill files. `policy`: its bounds and pace (the
    defaults of `AuditPolicy`). `clock` (`time.time`): epoch seconds, for retention.
    """

    def __init__(
        self,
        db: AuditDb,
        *,
        spill_dir: Path,
        policy: AuditPolicy = DEFAULT_POLICY,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.db = db
        self.policy = policy
        self.clock = clock
        self.dropped = 0
        """Audit rows dropped because the queue was full (Rule 3)."""
        self.rejected = 0
        """Audit rows dropped because the store rejected their batch's data (Rule 6)."""
        self._pending: deque[FinishedRequest] = deque()
        self._retries: deque[_AuditRows] = deque()
        self._usage: list[UsageRow] = []
        self._mint = IdMint()
        self._spill = SpillFile(spill_dir)
        self._ids = IdsByName()
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

    @property
    def has_work(self) -> bool:
        """Whether anything waits to be written: audit rows, usage entries, the spill."""
        return bool(self._pending or self._retries or self._usage or self._spill.count)

    def _woken(self) -> None:
        """A full batch waits (Rule 1): the writer's driver hears of it here."""

    def submit(self, done: FinishedRequest) -> None:
        """Rule 1: queue one finished request (its routing record the object itself or plain
        JSON, made plain when written; its usage id minted already, or not)."""
        pending = self._pending
        if len(pending) + len(self._retries) >= self.policy.max_queue:
            self._drop_keeping_usage(done)
            return
        pending.append(done)
        if len(pending) >= self.policy.batch_size:
            self._woken()

    def submit_all(self, requests: list[FinishedRequest]) -> None:
        """Rule 1: `submit` of each of `requests`, in order, at once."""
        pending = self._pending
        room = max(0, self.policy.max_queue - len(pending) - len(self._retries))
        pending.extend(requests[:room] if room < len(requests) else requests)
        for done in requests[room:]:  # the queue is full
            self._drop_keeping_usage(done)
        if len(pending) >= self.policy.batch_size:
            self._woken()

    def write_queued(self, guard: AbstractContextManager[Any] | None = None) -> None:
        """Rule 2 on the caller's thread: write everything queued now, a batch at a time,
        stopping at the first batch the store refuses; then run retention when it is due
        (Rule 5). `guard` is held around the queueing steps (not the writes), for a book that
        another thread submits to."""
        held = guard if guard is not None else contextlib.nullcontext()
        while True:
            with held:
                if not self.has_work:
                    break
                batch = self._take()
            written = self._write_batch(batch)
            with held:
                self._settle(written)
            if written.failed:
                break
        if self._cleanup_due():
            self._delete_expired()

    def _cleanup_due(self) -> bool:
        """Rule 5: whether retention runs now (and when it runs next, if so)."""
        if self._failing or self.clock() < self._next_cleanup:
            return False
        self._next_cleanup = self.clock() + self.policy.cleanup_seconds
        return True

    def _drop_keeping_usage(self, done: FinishedRequest) -> None:
        """Rule 3: drop `done`'s audit rows (the queue is full); Rule 4: keep its usage."""
        entry = usage_entry(done, record_of(done), self._mint)
        if entry is not None:
            self._usage.append(entry)
        self._drop(1)

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

    def _take(self) -> Batch:
        """The next batch: audit rows to write again first, then new requests; all usage
        entries of dropped audit rows."""
        batch = Batch(usage=self._usage)
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

    def _settle(self, written: Written) -> None:
        """Queue a refused batch's audit rows again (within the bound)."""
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

    def _write_batch(self, batch: Batch) -> Written:
        """The writing side: the batch in one transaction, then the spill."""
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
            self.db.write(audits, attempts, usage, self._ids)
        except self.db.rejected:
            # Rule 6: the store is up but refuses this batch: spill its usage (replayed one by
            # one if need be) and write its requests' audit rows one at a time.
            self._spill.append([usage_dict(entry) for entry in usage])
            written = self._write_each_request(rows)
        except Exception:  # Rule 4: whatever the store says, usage is kept
            logger.debug("audit: the store refused a batch", exc_info=True)
            self._spill.append([usage_dict(entry) for entry in usage])
            return Written(failed=True, retries=rows)
        else:
            written = Written()
        try:  # after the batch: while the store is down, the spill is not even read
            self._write_spill()
        except Exception:  # the store stopped answering: replayed later
            logger.debug("audit: the store refused the spill", exc_info=True)
            written.failed = True
        return written

    def _write_each_request(self, rows: list[_AuditRows]) -> Written:
        """Rule 6: each request's audit rows in a transaction of their own; those the store
        rejects are dropped; if the store stops answering, the rest wait for the next batch."""
        rejected = 0
        for number, (audit, attempts) in enumerate(rows):
            try:
                self.db.write([audit], attempts, [], self._ids)
            except self.db.rejected:
                rejected += 1
            except Exception:  # noqa: BLE001 - an outage now: the rest are written later
                return Written(failed=True, retries=rows[number:], rejected=rejected)
        if rejected:
            logger.warning("audit: the store rejected %d audit rows for their data; dropped",
                           rejected)  # fmt: skip
        return Written(rejected=rejected)

    def _write_spill(self) -> None:
        """Rule 4: write the spilled usage entries, then empty the spill file."""
        if self._spill.count:
            entries = self._spill.entries()
            step = self.policy.batch_size * 10
            rejected: tuple[type[Exception], ...] = (*self.db.rejected, *_MALFORMED)
            for start in range(0, len(entries), step):
                chunk = entries[start : start + step]
                try:
                    self.db.write([], [], [usage_tuple(e) for e in chunk], self._ids)
                except rejected:
                    self._set_aside(chunk)
            self._spill.clear()

    def _set_aside(self, chunk: list[dict[str, Any]]) -> None:
        """Rule 7: write `chunk` one entry at a time; keep the entries the store rejects."""
        refused: tuple[type[Exception], ...] = (*self.db.rejected, *_MALFORMED)
        rejected = []
        for entry in chunk:
            try:
                self.db.write([], [], [usage_tuple(entry)], self._ids)
            except refused:
                rejected.append(entry)
        if rejected:
            path = set_aside(self._spill.folder, rejected)
            logger.error("audit: the store rejected %d usage entries; they are kept in %s",
                         len(rejected), path)  # fmt: skip

    def recover_spill(self) -> None:
        """Rule 4, at start: adopt orphaned spill files into this writer's own, then try to
        write them."""
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
            deleted = self.db.delete_expired(
                retention_days=self.policy.retention_days, now=self.clock()
            )
        except Exception:
            logger.exception("audit: deleting expired audit rows failed")
            return
        if deleted:
            logger.info("audit: deleted %d audit rows past retention", deleted)

    def close_spill(self) -> None:
        """Close the spill file (at the end: what is in it stays for the next writer)."""
        self._spill.close()
