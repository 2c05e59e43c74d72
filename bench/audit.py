"""What the request audit costs: the hand-off on the request path, and a batch write.

Run: ``python bench/audit.py [--postgres URL] [--rounds N]``. In-process:

- ``as_dict``: turning a finished routing record (three attempt entries) into plain JSON, which
  the observer does once per request;
- ``submit``: `AuditWriter.submit`, the only work of the writer in the serving process on the
  event loop;
- ``pipe``: what the serving process does per request when the writer runs in a process of its
  own (`AuditPipe`): `submit`, then making the request plain JSON and framing it
  (`encode_batch`), all on the event loop; and the frame's bytes per request;
- ``flush 1,000``: writing 1,000 requests (1,000 audit rows, 3,000 attempt rows, 1,000 usage
  entries) in the writer's default batches, on SQLite (a temporary file) and, with
  ``--postgres``, PostgreSQL (a temporary schema, dropped at the end): the wall time, and the
  CPU the gateway's process spends per request on it (process CPU time over the flush, while
  the event loop only waits, divided by the requests). Requests are submitted as the gateway
  submits them, as routing record objects, so the writer's CPU includes making them plain JSON.
  The database server's own CPU (PostgreSQL) is not counted: it is not the gateway's.
- ``through the audit process``: the same 1,000 requests through an `AuditPipe` (its child
  process started and ready first), until `flush` returns: this process's CPU per request
  (submit, plain JSON, frames, reading the reports) and the child's (utime + stime of
  /proc/<pid>/stat), each given alone.

Medians over ``--rounds``. Wall times mean little on a loaded machine; CPU times much more.
Nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from cryptography.fernet import Fernet
from sqlalchemy import text
from sqlalchemy.engine import make_url

from turnout.record import AttemptEntry, FinishedRequest, RoutingRecord, Usage
from turnout.store import SecretBox, Store, migrate, open_store
from turnout.store.audit_frames import encode_batch
from turnout.store.audit_pipe import AuditPipe
from turnout.store.audit_policy import AuditPolicy
from turnout.store.audit_rows import IdMint
from turnout.store.ledger import AuditWriter


def _record(number: int) -> RoutingRecord:
    record = RoutingRecord(f"req-{number}", "main", "route_1", "failover", "first target")
    record.requested_model = "gpt-4o-mini"
    for index, outcome in enumerate(("failed", "answered", "not_tried")):
        entry = record.add(AttemptEntry(0, f"t{index}", index, outcome, "openai", "gpt-4o-mini"))
        entry.started_wall, entry.duration_ms = time.time(), 40
        if outcome == "failed":
            entry.error_class, entry.status, entry.reason = "rate_limited", 429, "429"
    record.answered, record.served_provider, record.served_model = "t1", "openai", "gpt-4o-mini"
    record.usage, record.cost = Usage(120, 30), 0.0004
    return record


def _submit(writer: AuditWriter, record: RoutingRecord | dict[str, object]) -> None:
    writer.submit(
        FinishedRequest(
            record,
            at=time.time(),
            project="default",
            key_name="app",
            endpoint="/v1/chat/completions",
            status=200,
            outcome="answered",
            latency_ms=50,
        )
    )


def _per_call_us(function: object, count: int) -> float:
    began = time.perf_counter()
    for _ in range(count):
        function()  # type: ignore[operator]
    return (time.perf_counter() - began) / count * 1e6


def hand_off(rounds: int, spill: Path, store: Store) -> None:
    """The per-request cost on the event loop."""
    record = _record(0)
    as_dict = [_per_call_us(record.as_dict, 10_000) for _ in range(rounds)]
    plain = record.as_dict()
    submits = []
    for _ in range(rounds):
        writer = AuditWriter(
            store, spill_dir=spill, policy=AuditPolicy(max_queue=1_000_000, batch_size=10**9)
        )
        submits.append(_per_call_us(lambda w=writer: _submit(w, plain), 10_000))
    framed, size = [], 0
    for _ in range(rounds):
        pipe = AuditPipe(store, spill_dir=spill)
        mint = IdMint()
        began = time.process_time()
        for number in range(10):
            for _ in range(1000):
                _submit(pipe, record)  # type: ignore[arg-type]
            size = len(encode_batch(number, False, pipe._outbox.pending, mint))
            pipe._outbox.pending = []
        framed.append((time.process_time() - began) / 10_000 * 1e6)
    print(f"as_dict (3 attempt entries): {statistics.median(as_dict):.2f} µs per request")
    print(f"submit:                      {statistics.median(submits):.2f} µs per request")
    print(f"pipe (submit, plain, frame): {statistics.median(framed):.2f} µs per request, "
          f"{size / 1000:.0f} bytes")  # fmt: skip


def _child_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def child_cost(store: Store, spill: Path, rounds: int, label: str) -> None:
    """Print the CPU per request of this process and of the audit process, through a pipe."""
    own, child = [], []
    for round_ in range(rounds):
        pipe = AuditPipe(store, spill_dir=spill)
        await pipe.start()
        await pipe.flush()  # the child is up, and its first flush ran retention
        pid = pipe.child_pid
        assert pid is not None
        records = [_record(10_000 + round_ * 1000 + number) for number in range(1000)]
        began, began_child = time.process_time(), _child_cpu(pid)
        for record in records:
            _submit(pipe, record)  # type: ignore[arg-type]
        await pipe.flush()
        own.append((time.process_time() - began) * 1e6 / 1000)
        child.append((_child_cpu(pid) - began_child) * 1e6 / 1000)
        if pipe.spilled or pipe.queued:
            raise RuntimeError("the store refused a batch; the number would not be a write")
        await pipe.aclose()
    print(f"through the audit process, {label + ':':<12} this process "
          f"{statistics.median(own):5.1f} µs, the audit process {statistics.median(child):6.1f} "
          "µs per request")  # fmt: skip


async def flush_cost(store: Store, spill: Path, rounds: int, label: str) -> None:
    """Print the median milliseconds to write 1,000 requests and the process CPU per request."""
    times, cpu = [], []
    for round_ in range(rounds):
        writer = AuditWriter(store, spill_dir=spill)
        await writer.flush()  # the first flush runs retention: not part of the figure
        for number in range(1000):
            _submit(writer, _record(round_ * 1000 + number))
        began, began_cpu = time.perf_counter(), time.process_time()
        await writer.flush()
        cpu.append((time.process_time() - began_cpu) * 1e6 / 1000)
        times.append((time.perf_counter() - began) * 1000)
        if writer.spilled or writer.queued:
            raise RuntimeError("the store refused a batch; the number would not be a write")
        await writer.aclose()
    print(f"flush 1,000 requests, {label + ':':<12} {statistics.median(times):7.1f} ms, "
          f"CPU {statistics.median(cpu):6.1f} µs per request")  # fmt: skip


def _postgres(url: str, box: SecretBox) -> tuple[Store, Store, str]:
    schema = f"bench_{uuid.uuid4().hex[:10]}"
    admin = open_store(url, secrets=box)
    with admin.engine.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    # In the URL itself, so that the audit process, which gets the URL alone, writes there too.
    scoped = make_url(url).update_query_dict({"options": f"-csearch_path={schema}"})
    store = open_store(scoped.render_as_string(hide_password=False), secrets=box)
    return admin, store, schema


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", help="a PostgreSQL URL (a temporary schema is used)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    box = SecretBox(Fernet.generate_key().decode())
    with tempfile.TemporaryDirectory() as folder:
        spill = Path(folder) / "spill"
        sqlite = open_store(f"sqlite:///{folder}/turnout.db", secrets=box)
        migrate(sqlite)
        hand_off(args.rounds, spill, sqlite)
        await flush_cost(sqlite, spill, args.rounds, "SQLite")
        await child_cost(sqlite, spill, args.rounds, "SQLite")
        sqlite.close()
        if args.postgres:
            admin, store, schema = _postgres(args.postgres, box)
            try:
                migrate(store)
                await flush_cost(store, spill, args.rounds, "PostgreSQL")
                await child_cost(store, spill, args.rounds, "PostgreSQL")
            finally:
                store.close()
                with admin.engine.begin() as connection:
                    connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
                admin.close()


if __name__ == "__main__":
    asyncio.run(main())
