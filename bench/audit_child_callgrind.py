"""Instructions per request of the audit writer process (`store/audit_child.py`), counted by
callgrind.

Run: ``python bench/audit_child_callgrind.py [--requests N] [--per-frame N] [--keep DIR]``
(needs ``valgrind``; a few minutes, most of it the interpreter starting twice).

The frames are made here, outside valgrind, as a serving process makes them (routing record
objects of one attempt entry each, as the gateway's usual request, `encode_batch`,
``--per-frame`` requests a frame). Then ``python -m turnout.store.audit_child`` runs twice
under ``valgrind --tool=callgrind``, its standard input a pipe this process fills: once with
``--requests`` requests and once with none, into an SQLite file (migrated here first), its
writer set to write only when its input ends, so that every request goes in one batch. The
difference over ``--requests`` is the child's user-space work per request: reading the frames,
making the records plain JSON, the rows, SQLite. The interpreter's hash seed is fixed.

The dumps are kept in ``--keep`` (a temporary folder by default, named in the output):
``callgrind_annotate --inclusive=yes <dump>`` ranks the C functions by their cost.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from turnout.record import AttemptEntry, RoutingRecord, Usage
from turnout.store import migrate, open_store
from turnout.store.audit_frames import Settings, encode_batch, frame
from turnout.store.audit_policy import AuditPolicy
from turnout.store.audit_rows import FinishedRequest, IdMint

VALGRIND = shutil.which("valgrind") or "valgrind"


def _record(number: int) -> RoutingRecord:
    record = RoutingRecord(f"req-{number:08d}", "main", "route_1", "failover", "first target")
    record.requested_model = "gpt-4o-mini"
    entry = record.add(AttemptEntry(0, "t0", 0, "answered", "openai", "gpt-4o-mini"))
    entry.started_wall, entry.duration_ms = 1_790_000_000.0 + number / 1000, 40
    entry.call_id, entry.endpoint, entry.committed = f"call-{number}", "/v1/chat/completions", True
    entry.usage = Usage(120, 30)
    record.answered, record.served_provider, record.served_model = "t0", "openai", "gpt-4o-mini"
    record.served_provider_id, record.target_index = "prov_1", 0
    record.remaining_attempts, record.visited_models = 2, ["gpt-4o-mini"]
    record.usage, record.cost = Usage(120, 30), 0.0004
    return record


def frames(requests: int, per_frame: int, folder: Path) -> bytes:
    """The child's whole input: its settings, then the batches of `requests` requests."""
    settings: Settings = {
        "url": f"sqlite:///{folder}/turnout.db",
        "sqlite": f"{folder}/turnout.db",
        "spill_dir": str(folder / "spill"),
        "policy": AuditPolicy(
            retention_days=30.0, batch_size=10**9, flush_seconds=3600.0, max_queue=10**9
        ).as_dict(),
    }
    data = [frame(orjson.dumps(settings))]
    mint, now = IdMint(), float(int(time.time()))  # recent: retention keeps the rows
    for seq, start in enumerate(range(0, requests, per_frame), 1):
        batch = [
            FinishedRequest(_record(number), now + number / 1000, "default", "app",
                            "/v1/chat/completions", 200, "answered", 50)
            for number in range(start, min(start + per_frame, requests))
        ]  # fmt: skip
        data.append(encode_batch(seq, False, batch, mint))
    return b"".join(data)


def instructions(out: Path) -> int:
    """The total instructions (Ir) of a callgrind output file."""
    match = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"no totals in {out}")
    return int(match.group(1))


def run(requests: int, per_frame: int, keep: Path) -> int:
    """The child's instructions writing `requests` requests (a fresh SQLite file)."""
    folder = Path(tempfile.mkdtemp(prefix="audit-child-"))
    store = open_store(f"sqlite:///{folder}/turnout.db")
    migrate(store)
    store.close()
    data = frames(requests, per_frame, folder)
    out = keep / f"callgrind.{requests}.out"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    process = subprocess.Popen(  # noqa: S603 - fixed argv
        [VALGRIND, "--tool=callgrind", f"--callgrind-out-file={out}",
         sys.executable, "-m", "turnout.store.audit_child"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
    )  # fmt: skip
    _, errors = process.communicate(data)
    if process.returncode:
        raise RuntimeError(errors.decode())
    check = open_store(f"sqlite:///{folder}/turnout.db")
    with check.engine.connect() as connection:
        stored = connection.exec_driver_sql("SELECT count(*) FROM request_audit").scalar_one()
    check.close()
    if stored != requests:
        raise RuntimeError(f"{stored} audit rows stored, not {requests}")
    return instructions(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--per-frame", type=int, default=50)
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    keep = args.keep or Path(tempfile.mkdtemp(prefix="audit-child-callgrind-"))
    keep.mkdir(parents=True, exist_ok=True)
    empty = run(0, args.per_frame, keep)
    full = run(args.requests, args.per_frame, keep)
    print(f"audit process: {(full - empty) / args.requests:,.0f} instructions per request "
          f"({args.requests} requests, {args.per_frame} a frame; dumps in {keep})")  # fmt: skip


if __name__ == "__main__":
    main()
