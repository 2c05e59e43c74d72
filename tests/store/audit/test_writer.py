"""The audit writer on both backends: batches, a store that refuses writes (usage spilled and
replayed once, audit rows queued again), a full queue, retention, start-up replay. On SQLite
each test runs twice: through the store's engine (the serving process's writer) and through
the standard library's driver alone (the audit process's)."""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from tests.store.audit._support import DAY, NOW, counts, finished, record, submit
from turnout.store import migrate
from turnout.store.audit_policy import AuditPolicy
from turnout.store.audit_sqlite import SqliteAudit
from turnout.store.audit_writes import write_requests
from turnout.store.ledger import AuditWriter, audit_sink
from turnout.store.spill import read_spill
from turnout.store.usage import get_request, usage_report

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from turnout.store import Store


class FakeClock:
    """Epoch seconds that move only when told."""

    def __init__(self, now: float = NOW) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


_THROUGH = {"driver": False}
"""Whether `_writer` writes through the standard library's driver (`_through`)."""


@pytest.fixture(autouse=True, params=["engine", "driver"])
def _through(request: pytest.FixtureRequest) -> Iterator[None]:
    _THROUGH["driver"] = request.param == "driver"
    yield
    _THROUGH["driver"] = False


def _writer(
    store: Store, tmp_path: Path, clock: FakeClock | None = None, **options: Any
) -> AuditWriter:
    policy = AuditPolicy(**options)
    clock = clock if clock is not None else FakeClock()
    if not _THROUGH["driver"]:
        return AuditWriter(store, spill_dir=tmp_path / "spill", policy=policy, clock=clock)
    if store.is_postgres:
        pytest.skip("the driver of its own is SQLite's")
    database = store.engine.url.database
    assert database is not None
    db = SqliteAudit(database)
    return AuditWriter(db, spill_dir=tmp_path / "spill", policy=policy, clock=clock)


async def test_submits_become_rows_in_batches(store: Store, tmp_path: Path) -> None:
    """Seven requests (one without usage), batches of three: seven audit rows, fourteen
    attempt rows, six usage entries, and nothing left queued."""
    writer = _writer(store, tmp_path, batch_size=3)
    for number in range(6):
        submit(writer, f"r{number}")
    submit(writer, "r6", tokens=(0, 0))
    assert counts(store) == (0, 0, 0)  # submit does no I/O
    await writer.flush()
    assert counts(store) == (7, 14, 6)
    assert (writer.queued, writer.spilled, writer.dropped) == (0, 0, 0)
    await writer.aclose()


async def test_a_full_batch_wakes_the_worker_and_aclose_flushes(
    store: Store, tmp_path: Path
) -> None:
    """The worker is woken once `batch_size` requests wait (not before); closing the writer
    writes what is queued."""
    writer = _writer(store, tmp_path, batch_size=3, flush_seconds=3600.0)
    await writer.start()
    submit(writer, "r1")
    submit(writer, "r2")
    assert not writer._wake.is_set()
    submit(writer, "r3")
    assert writer._wake.is_set()
    submit(writer, "r4")
    await writer.aclose()
    assert counts(store) == (4, 8, 4)


async def test_a_refusing_store_spills_usage_then_replays_it_once(
    empty_store: Store, tmp_path: Path
) -> None:
    """Against a store without its tables, submit stays instant and a flush fails: usage goes
    to the spill file (on disk) and audit rows wait. Once the store is migrated the next flush
    writes everything; writing the same spill again adds nothing."""
    writer = _writer(empty_store, tmp_path, batch_size=10)
    began = time.perf_counter()
    for number in range(5):
        submit(writer, f"r{number}")
    assert time.perf_counter() - began < 1.0  # no store round trip per submit
    await writer.flush()
    assert (writer.queued, writer.spilled) == (5, 5)
    spilled = read_spill(writer._spill.path)
    assert sorted(entry["request_id"] for entry in spilled) == [f"r{n}" for n in range(5)]
    submit(writer, "r5")
    await writer.flush()  # still refused: the new usage joins the spill
    assert (writer.queued, writer.spilled) == (6, 6)

    migrate(empty_store)
    await writer.flush()
    assert counts(empty_store) == (6, 12, 6)
    assert (writer.queued, writer.spilled) == (0, 0)
    writer._spill.append(spilled)  # as if the file had not been emptied after the write
    await writer.flush()
    assert counts(empty_store) == (6, 12, 6)
    await writer.aclose()


async def test_spill_of_an_ended_writer_is_replayed_at_start(
    empty_store: Store, tmp_path: Path
) -> None:
    """A writer that closes with usage spilled leaves its file; the next writer to start
    writes it and removes it, and a copy of it written again adds no row."""
    first = _writer(empty_store, tmp_path)
    for number in range(3):
        submit(first, f"r{number}")
    await first.aclose()  # the store refuses: usage stays spilled
    (left,) = (tmp_path / "spill").glob("usage-*.jsonl")
    saved = left.read_bytes()

    migrate(empty_store)
    second = _writer(empty_store, tmp_path)
    await second.start()
    assert counts(empty_store) == (0, 0, 3)  # audit rows of a closed writer are gone
    assert not left.exists()
    await second.aclose()

    left.write_bytes(saved)  # as if the file had survived its replay
    third = _writer(empty_store, tmp_path)
    await third.start()
    await third.aclose()
    assert counts(empty_store) == (0, 0, 3)
    assert list((tmp_path / "spill").glob("usage-*.jsonl")) == []


async def test_a_full_queue_drops_audit_rows_but_keeps_usage(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With room for two, five requests: three audit rows are dropped and counted, one WARNING
    marks the burst, and all five usage entries are written."""
    caplog.set_level(logging.WARNING, logger="turnout.store")
    writer = _writer(store, tmp_path, max_queue=2)
    for number in range(5):
        submit(writer, f"r{number}")
    assert writer.dropped == 3
    await writer.flush()
    assert counts(store) == (2, 4, 5)
    warnings = [r for r in caplog.records if "queue is full" in r.getMessage()]
    assert len(warnings) == 1
    await writer.aclose()


async def test_requests_submitted_at_once_keep_the_queue_bound(
    store: Store, tmp_path: Path
) -> None:
    """With room for three, one request then four at once, then two more at once: the queue
    takes two of the four and none of the two; four audit rows are dropped, every usage entry
    is written, and a full batch wakes the worker."""
    writer = _writer(store, tmp_path, max_queue=3, batch_size=3)
    submit(writer, "r0")
    made = [
        finished(record(f"r{n}"))
        for n in range(1, 7)
    ]  # fmt: skip
    writer.submit_all(made[:4])
    assert (writer.queued, writer.dropped, writer._wake.is_set()) == (3, 2, True)
    writer.submit_all(made[4:])
    assert (writer.queued, writer.dropped) == (3, 4)
    await writer.flush()
    assert counts(store) == (3, 6, 7)
    await writer.aclose()


async def test_a_reused_request_id_keeps_the_first_audit_row(store: Store, tmp_path: Path) -> None:
    """Two requests with one `x-request-id` (in one batch, then in the next): one audit row and
    its own attempt rows; both requests' usage is billed."""
    writer = _writer(store, tmp_path)
    submit(writer, "same")
    submit(writer, "same")
    await writer.flush()
    submit(writer, "same")
    await writer.flush()
    assert counts(store) == (1, 2, 3)
    await writer.aclose()


async def test_a_reused_request_id_adds_no_attempt_row_of_its_own(
    store: Store, tmp_path: Path
) -> None:
    """A later request reusing an `x-request-id`, with more attempt entries than the first,
    beside a new request in its batch: the first request keeps its two attempt rows alone."""
    writer = _writer(store, tmp_path)
    submit(writer, "same")
    await writer.flush()
    longer = record("same")
    longer["attempts"].append({**longer["attempts"][-1], "index": 3})
    writer.submit(finished(longer))
    submit(writer, "new")
    await writer.flush()
    assert counts(store) == (2, 4, 3)
    await writer.aclose()


async def test_retention_deletes_only_old_audit_rows_about_hourly(
    store: Store, tmp_path: Path
) -> None:
    """With 30 days' retention, the first flush deletes audit rows (and attempt rows) older
    than 30 days; the usage ledger keeps every entry. The next cleanup waits an hour."""
    clock = FakeClock()
    writer = AuditWriter(
        store, spill_dir=tmp_path, policy=AuditPolicy(retention_days=30), clock=clock
    )
    submit(writer, "old", at=NOW - 31 * DAY)
    submit(writer, "recent", at=NOW - 29 * DAY)
    await writer.flush()
    assert counts(store) == (1, 2, 2)

    submit(writer, "older", at=NOW - 40 * DAY)
    clock.now += 1800
    await writer.flush()
    assert counts(store) == (2, 4, 3)  # not due yet
    clock.now += 1800
    await writer.flush()
    assert counts(store) == (1, 2, 3)
    await writer.aclose()


async def test_delete_expired_audit_counts_what_it_deleted(store: Store, tmp_path: Path) -> None:
    """Retention as a function: a row exactly at the cutoff is kept, one a second older goes,
    and the count says so."""
    writer = _writer(store, tmp_path, clock=FakeClock(NOW - 365 * DAY))
    submit(writer, "at-cutoff", at=NOW - 30 * DAY)
    submit(writer, "past-cutoff", at=NOW - 30 * DAY - 1)
    await writer.flush()
    assert writer.db.delete_expired(retention_days=30, now=NOW) == 1
    assert writer.db.delete_expired(retention_days=30, now=NOW) == 0
    assert counts(store) == (1, 2, 2)
    assert counts(store) == (1, 2, 2)
    await writer.aclose()


async def test_audit_sink_is_a_writer_with_the_defaults(store: Store, tmp_path: Path) -> None:
    """`audit_sink` gives a writer with the retention asked for and the documented defaults."""
    writer = audit_sink(store, spill_dir=tmp_path, retention_days=7)
    policy = writer.policy
    assert (policy.retention_days, policy.batch_size, policy.max_queue) == (7, 500, 10_000)
    await writer.aclose()


async def test_rows_the_store_rejects_hold_up_nothing(store: Store, tmp_path: Path) -> None:
    """A request whose attempt entry breaks a column rule (no target) makes the store reject
    its batch: that request's audit row alone is dropped and counted, the other request's rows
    are written, and both usage entries are billed."""
    writer = _writer(store, tmp_path)
    submit(writer, "good")
    broken = record("broken")
    broken["attempts"][0]["target"] = None
    writer.submit(finished(broken, endpoint="/v1/messages"))
    await writer.flush()
    assert counts(store) == (1, 2, 2)
    assert (writer.rejected, writer.dropped, writer.queued, writer.spilled) == (1, 0, 0, 0)
    await writer.aclose()


async def test_a_spilled_entry_the_store_rejects_is_set_aside(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Spilled usage entries the store rejects (no request id) or of the wrong shape go to a
    `rejected-` file with an ERROR line; the others are written and the spill is emptied."""
    writer = _writer(store, tmp_path)
    good = {"id": "u1", "at": NOW, "request_id": "r1", "project": None, "key_name": None,
            "provider": "openai", "model": "m", "input_tokens": 1, "output_tokens": 1,
            "cache_read_tokens": 0, "cache_write_tokens": 0, "cost": None}  # fmt: skip
    malformed = {"id": "u3", "at": "yesterday"}
    writer._spill.append([good, {**good, "id": "u2", "request_id": None}, malformed])
    await writer.flush()
    assert counts(store) == (0, 0, 1)
    assert writer.spilled == 0
    (aside,) = (tmp_path / "spill").glob("rejected-*.jsonl")
    assert [entry["id"] for entry in read_spill(aside)] == ["u2", "u3"]
    assert any(r.levelno == logging.ERROR and "rejected 2 usage" in r.getMessage()
               for r in caplog.records)  # fmt: skip
    await writer.aclose()


async def test_long_and_nul_texts_are_cut_to_fit(store: Store, tmp_path: Path) -> None:
    """A requested model longer than its column, with a NUL character, is stored cut to the
    column's 256 characters without the NUL, instead of making the store refuse the batch."""
    writer = _writer(store, tmp_path)
    long = record("long")
    long["requested_model"] = "m\x00" + "x" * 400
    writer.submit(finished(long, endpoint="/v1/messages"))
    await writer.flush()
    found = get_request(store, "long")
    assert found is not None
    assert found["requested_model"] == "m" + "x" * 255
    await writer.aclose()


async def test_times_and_flags_read_back_as_written(store: Store, tmp_path: Path) -> None:
    """A time with microseconds is stored so that a query from that very instant finds it and
    one until it does not; the cache flag and an attempt's hedge flag read back as booleans."""
    writer = _writer(store, tmp_path)
    at = NOW + 0.123456
    cached = record("cached")
    cached["cache"] = "hit"
    writer.submit(finished(cached, at=at, endpoint="/v1/messages"))
    await writer.flush()
    moment = datetime.fromtimestamp(at, UTC)
    assert [g["requests"] for g in usage_report(store, group_by="day", since=moment)] == [1]
    assert usage_report(store, group_by="day", until=moment) == []
    found = get_request(store, "cached")
    assert found is not None
    assert found["at"] == moment.isoformat().replace("+00:00", "Z")
    assert found["cached"] is True
    assert [attempt["hedge"] for attempt in found["attempts"]] == [False, False]
    await writer.aclose()


async def test_a_long_burst_of_drops_has_one_line_at_its_start_and_one_at_its_end(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store that takes a batch now and then during an outage: the queue dips below its
    bound between batches but the burst goes on (one WARNING); once the queue has drained to
    half its bound, one more WARNING counts the audit rows dropped and the seconds it lasted."""
    caplog.set_level(logging.WARNING, logger="turnout.store")
    answers = iter([True, False])  # the first batch is taken, the second refused; then all

    def flaky(*args: Any) -> None:
        if not next(answers, True):
            raise OSError("the store is down")
        write_requests(store, *args)

    writer = _writer(store, tmp_path, max_queue=6, batch_size=2)
    monkeypatch.setattr(writer.db, "write", flaky)
    clock = writer.clock
    assert isinstance(clock, FakeClock)
    for number in range(8):
        submit(writer, f"r{number}")
    await writer.flush()  # two written, two refused and queued again: four of six queued
    for number in range(8, 12):
        submit(writer, f"r{number}")
    assert writer.dropped == 4
    clock.now += 30
    await writer.flush()
    lines = [r.getMessage() for r in caplog.records if "the queue" in r.getMessage()]
    full = "audit: the queue is full (6 requests); dropping audit rows until it drains"
    assert lines == [
        f"{full} (usage is kept)",
        "audit: the queue drained; 4 audit rows were dropped over 30.0 s (usage was kept)",
    ]
    assert counts(store) == (8, 16, 12)
    await writer.aclose()
