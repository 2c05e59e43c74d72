"""The audit writer in a child process, on both backends, with real child processes: the rows it
writes, flush and close, a child that dies (killed, or between writing and reporting), a store
that refuses, the fallback to a writer in this process, and the counters."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import signal
import sys
import time
import uuid
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from sqlalchemy import delete, text

from tests.store.audit._support import counts, finished, record, submit
from tests.store.audit.test_audit_frames import _every_field_set, _odd_values
from tests.store.conftest import SECRET_KEY
from turnout.store import SecretBox, Store, migrate, open_store
from turnout.store.audit_frames import encode_batch, frame
from turnout.store.audit_pipe import AuditPipe, read_frame
from turnout.store.audit_policy import AuditPolicy
from turnout.store.audit_rows import IdMint
from turnout.store.ledger import AuditWriter
from turnout.store.models import RequestAttempt, RequestAudit, UsageEntry

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator
    from pathlib import Path

# A child that dies once (the first one to run, which leaves the marker file) right after its
# first write, before it reports it: as if it were killed between the two.
_DIES_AFTER_WRITING = """
import os, sys
from turnout.gateway.server import audit_process
marker = sys.argv[1]
first = not os.path.exists(marker)
open(marker, "a").close()
report = audit_child._Child.report
def dying(self, *, ready=False):
    if first and not ready:
        os._exit(9)
    report(self, ready=ready)
audit_child._Child.report = dying
audit_process.run()
"""


@pytest.fixture(params=["sqlite", "postgresql"])
def url_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A store without tables whose URL alone opens it again (a child process gets the URL
    only): an SQLite file, or a PostgreSQL schema named in the URL's options."""
    box = SecretBox(SECRET_KEY)
    if request.param == "sqlite":
        store = open_store(f"sqlite:///{tmp_path}/db/turnout.db", secrets=box)
        yield store
        store.close()
        return
    base: str = request.getfixturevalue("postgres_url")
    schema = f"p_{uuid.uuid4().hex[:12]}"
    setup = open_store(base)
    with setup.engine.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    store = open_store(f"{base}?options=-csearch_path%3D{schema}", secrets=box)
    yield store
    store.close()
    with setup.engine.begin() as connection:
        connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
    setup.close()


@pytest.fixture
def store(url_store: Store) -> Store:
    """The store of `url_store`, migrated."""
    migrate(url_store)
    return url_store


_MADE: list[AuditPipe] = []


@pytest.fixture(autouse=True)
async def _closed_pipes() -> AsyncIterator[None]:
    """Every pipe a test made is closed after it, so a test that fails leaves no child."""
    yield
    while _MADE:
        pipe = _MADE.pop()
        if not pipe._closing:
            pipe.policy = dataclasses.replace(pipe.policy, close_seconds=5.0)
            await pipe.aclose()


def _pipe(store: Store, tmp_path: Path, **options: Any) -> AuditPipe:
    taken = {name: options.pop(name) for name in ("command", "clock") if name in options}
    policy = AuditPolicy(**options)
    pipe = AuditPipe(store, spill_dir=tmp_path / "spill", policy=policy, **taken)
    _MADE.append(pipe)
    return pipe


def _submit_many(sink: AuditPipe | AuditWriter, prefix: str, count: int) -> None:
    for number in range(count):  # now: the child's retention must not delete them
        submit(sink, f"{prefix}{number}", at=time.time(), tokens=(10 + number, 2))


def _rows(store: Store) -> list[list[tuple[Any, ...]]]:
    """Every audit, attempt and usage row, without the columns the writer makes up (row
    numbers, usage ids), sorted."""
    tables = []
    with store.engine.connect() as connection:
        for model in (RequestAudit, RequestAttempt, UsageEntry):
            columns = [c for c in model.__table__.columns if c.name != "id"]
            rows = connection.execute(model.__table__.select().with_only_columns(*columns))
            tables.append(sorted((tuple(row) for row in rows), key=repr))
    return tables


def _empty(store: Store) -> None:
    with store.engine.begin() as connection:
        for model in (RequestAttempt, RequestAudit, UsageEntry):
            connection.execute(delete(model))


async def test_the_child_writes_the_rows_the_thread_writer_writes(
    store: Store, tmp_path: Path
) -> None:
    """The same requests, written once by a writer in this process and once through the
    child, leave the same audit, attempt and usage rows."""
    at = time.time()
    writer = AuditWriter(store, spill_dir=tmp_path / "spill")
    for number in range(30):
        submit(writer, f"r{number}", at=at + number, tokens=(number % 3, 5 * (number % 2)))
    await writer.aclose()
    by_thread = _rows(store)
    _empty(store)
    pipe = _pipe(store, tmp_path)
    await pipe.start()
    for number in range(30):
        submit(pipe, f"r{number}", at=at + number, tokens=(number % 3, 5 * (number % 2)))
    await pipe.aclose()
    assert [len(rows) for rows in by_thread] == [30, 60, 25]
    assert _rows(store) == by_thread


def _record_texts(store: Store) -> list[tuple[str, str]]:
    with store.engine.connect() as connection:
        rows = connection.exec_driver_sql(
            "SELECT request_id, CAST(record AS TEXT) FROM request_audit ORDER BY request_id"
        )
        return [tuple(row) for row in rows]


async def test_the_child_stores_the_record_text_the_thread_writer_stores(
    store: Store, tmp_path: Path
) -> None:
    """A routing record with every field set and one of odd values (unicode, 64-bit integers,
    an entry never reached), written by a writer in this process and through the child, are
    stored as the same JSON text, character for character."""
    texts = []
    for sink in (AuditWriter(store, spill_dir=tmp_path / "spill"), _pipe(store, tmp_path)):
        await sink.start()
        for made in (_every_field_set(), _odd_values()):
            sink.submit(finished(made, at=time.time()))
        await sink.aclose()
        texts.append(_record_texts(store))
        _empty(store)
    assert len(texts[0]) == 2
    assert texts[1] == texts[0]


async def test_flush_returns_once_the_child_wrote(store: Store, tmp_path: Path) -> None:
    """flush sends what waits and returns after the child wrote it (its own timer would
    wait an hour), with nothing kept and the counters reported."""
    pipe = _pipe(store, tmp_path, flush_seconds=3600.0, send_seconds=3600.0)
    await pipe.start()
    _submit_many(pipe, "r", 25)
    await pipe.flush()
    assert counts(store) == (25, 50, 25)
    assert (pipe.queued, pipe.dropped, pipe.spilled, pipe.rejected) == (0, 0, 0, 0)
    assert pipe.child_pid is not None
    assert pipe.fallback is None
    await pipe.aclose()


async def test_a_killed_child_is_replaced_and_nothing_is_lost(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """SIGKILL to the child while requests flow: an ERROR line, a new child, every request
    written once, every usage entry once."""
    pipe = _pipe(store, tmp_path, send_seconds=0.01)
    await pipe.start()
    _submit_many(pipe, "a", 200)
    await pipe.flush()
    first = pipe.child_pid
    assert first is not None
    _submit_many(pipe, "b", 300)
    await asyncio.sleep(0.05)  # let some of them go down the pipe
    os.kill(first, signal.SIGKILL)
    _submit_many(pipe, "c", 300)
    with caplog.at_level(logging.ERROR, logger="turnout.store"):
        await pipe.flush()
    assert counts(store) == (800, 1600, 800)
    assert pipe.child_pid not in (None, first)
    assert "the audit process exited" in caplog.text
    await pipe.aclose()


async def test_a_child_that_reads_nothing_is_replaced_after_stuck_seconds(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A stopped child (SIGSTOP) reads nothing: once the pipe stays past its limit while
    frames wait, it is left alone until `stuck_seconds` pass on the clock, then killed with an
    ERROR line and replaced, and every request is written once."""
    now = [0.0]
    pipe = _pipe(store, tmp_path, send_seconds=0.01, pipe_limit=4096, stuck_seconds=30.0,
                 clock=lambda: now[0])  # fmt: skip
    await pipe.start()
    _submit_many(pipe, "a", 10)
    await pipe.flush()
    first = pipe.child_pid
    assert first is not None
    os.kill(first, signal.SIGSTOP)
    for burst in range(100):  # until the pipe is full and frames wait here
        _submit_many(pipe, f"b{burst}-", 20)
        await asyncio.sleep(0.02)
        if pipe._full_since is not None:
            break
    assert pipe._full_since is not None
    now[0] += 29.0
    await asyncio.sleep(0.05)  # several sends: not stuck for long enough yet
    assert pipe.child_pid == first
    assert pipe._process is not None
    assert pipe._process.returncode is None
    now[0] += 1.0
    with caplog.at_level(logging.ERROR, logger="turnout.store"):
        await asyncio.wait_for(pipe.flush(), 60)  # without the watch: stuck for good
    written = 10 + 20 * (burst + 1)
    assert counts(store) == (written, 2 * written, written)
    assert pipe.child_pid not in (None, first)
    assert "read nothing for 30.0 s" in caplog.text
    await pipe.aclose()


async def test_a_batch_sent_again_bills_once(store: Store, tmp_path: Path) -> None:
    """A child that dies after writing a batch but before reporting it: the next child gets
    the batch again and writes nothing twice (the usage ids were minted here)."""
    marker = tmp_path / "died-once"
    command = (sys.executable, "-c", _DIES_AFTER_WRITING, str(marker))
    pipe = _pipe(store, tmp_path, command=command)
    await pipe.start()
    _submit_many(pipe, "r", 40)
    await pipe.flush()
    assert marker.exists()
    assert counts(store) == (40, 80, 40)
    assert pipe.queued == 0
    await pipe.aclose()


async def test_a_refusing_store_has_usage_spilled_by_the_child(
    url_store: Store, tmp_path: Path
) -> None:
    """Against a store without its tables the child spills the usage and reports nothing
    written (the requests stay kept here); once the store takes writes, a flush writes all."""
    pipe = _pipe(url_store, tmp_path)
    await pipe.start()
    _submit_many(pipe, "r", 5)
    await pipe.flush()
    assert (pipe.queued, pipe.spilled) == (5, 5)
    assert len(list((tmp_path / "spill").glob("usage-*.jsonl"))) == 1
    migrate(url_store)
    await pipe.flush()
    assert counts(url_store) == (5, 10, 5)
    assert (pipe.queued, pipe.spilled) == (0, 0)
    await pipe.aclose()


async def test_aclose_writes_what_waits_and_the_child_exits(store: Store, tmp_path: Path) -> None:
    """Closing sends what waits, and the child writes it and exits on its own."""
    pipe = _pipe(store, tmp_path, flush_seconds=3600.0, send_seconds=3600.0)
    await pipe.start()
    _submit_many(pipe, "r", 12)
    await pipe.aclose()
    process = pipe._process
    assert counts(store) == (12, 24, 12)
    assert process is not None
    assert process.returncode == 0
    assert pipe.queued == 0


async def test_the_child_ends_when_its_input_ends(store: Store, tmp_path: Path) -> None:
    """A child whose input closes (its serving process gone) writes what it read, reports
    it written, and exits with status 0."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "turnout.store.audit_child",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdin is not None
    assert process.stdout is not None
    pipe = _pipe(store, tmp_path)  # only for its settings
    process.stdin.write(frame(orjson.dumps(pipe.settings)))
    done = [
        finished(record, at=time.time(), endpoint="/v1/messages", latency_ms=9)
        for record in [record(f"r{number}") for number in range(3)]
    ]
    process.stdin.write(encode_batch(1, False, done, IdMint()))
    process.stdin.close()
    reports = []
    while (body := await read_frame(process.stdout)) is not None:
        reports.append(orjson.loads(body))
    assert await process.wait() == 0
    assert reports[0]["ready"]
    assert reports[-1]["written"] == 1
    assert counts(store) == (3, 6, 3)


# The child as the gateway runs it, which then writes the names of the top-level packages it
# loaded to the file named by its first argument.
_LOADED = """
import atexit, sys
from turnout.gateway.server import audit_process
atexit.register(lambda: open(sys.argv[1], "w").write(
    " ".join(sorted({name.split(".")[0] for name in sys.modules}))))
audit_process.run()
"""


async def test_the_child_of_an_sqlite_store_stays_small(store: Store, tmp_path: Path) -> None:
    """Writing an SQLite store, the child loads neither the database toolkit nor an event
    loop; writing PostgreSQL, it loads the toolkit (its driver is the store's engine's)."""
    loaded = tmp_path / "loaded.txt"
    pipe = _pipe(store, tmp_path, command=(sys.executable, "-c", _LOADED, str(loaded)))
    await pipe.start()
    _submit_many(pipe, "r", 5)
    await pipe.aclose()
    assert counts(store) == (5, 10, 5)
    names = set(loaded.read_text().split())
    assert {"turnout", "sqlite3", "orjson"} <= names
    assert ("sqlalchemy" in names) == store.is_postgres
    if not store.is_postgres:
        assert "asyncio" not in names


async def test_an_in_memory_store_is_written_in_this_process(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """No child can open `:memory:`: the requests go to a writer in this process, and one
    line says why."""
    store = open_store("sqlite:///:memory:")
    pipe = _pipe(store, tmp_path)
    with caplog.at_level(logging.INFO, logger="turnout.store"):
        await pipe.start()
    assert pipe.child_pid is None
    assert pipe.fallback is not None
    submit(pipe, "r1")
    assert pipe.fallback.queued == 1
    assert "in this process's memory" in caplog.text
    await pipe.aclose()
    store.close()


@pytest.mark.parametrize(
    "command", [("/nonexistent/python",), (sys.executable, "-c", "pass")], ids=["spawn", "exit"]
)
async def test_a_child_that_cannot_start_leaves_the_writing_here(
    store: Store, tmp_path: Path, command: tuple[str, ...], caplog: pytest.LogCaptureFixture
) -> None:
    """A child that cannot be started, or exits before it is ready: the requests kept so far
    and those after are written by a writer in this process."""
    pipe = _pipe(store, tmp_path, command=command)
    _submit_many(pipe, "a", 4)
    with caplog.at_level(logging.WARNING, logger="turnout.store"):
        await pipe.start()
        await pipe.flush()
    _submit_many(pipe, "b", 3)
    await pipe.flush()
    assert pipe.fallback is not None
    assert counts(store) == (7, 14, 7)
    assert "writing the audit in this process" in caplog.text
    await pipe.aclose()


async def test_audit_rows_the_child_drops_are_counted_here(store: Store, tmp_path: Path) -> None:
    """Eight requests reach a child whose writer holds five at most: three audit rows are
    dropped (their usage is kept) and `dropped` here says three."""
    pipe = _pipe(store, tmp_path, max_queue=5, flush_seconds=3600.0, send_seconds=3600.0)
    await pipe.start()
    _submit_many(pipe, "r", 8)
    await pipe.flush()
    assert counts(store) == (5, 10, 8)
    assert pipe.dropped == 3
    await pipe.aclose()
    assert pipe.dropped == 3
