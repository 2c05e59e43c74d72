"""Instructions per request of the bare gateway: every part off, counted by callgrind.

Run: ``python bench/core_callgrind.py [--requests N] [--warm N] [--idle S] [--concurrency 64 1]
[--keep DIR]`` (needs ``valgrind``; about a minute and a half per concurrency, most of it the
interpreter starting).

Wall-clock and CPU-time numbers move with whatever else the machine runs; an instruction count
barely does. For each concurrency, ``turnout serve`` runs under ``valgrind --tool=callgrind``
(the gateway process only: ``--trace-children=no``) with every part off as in ``gateway.py``'s
bare row (no access lines, the per-request metrics count a no-op, no audit, ``state: memory``),
in front of ``turnout mock-upstream``. Callgrind starts with its counting off, so start-up
costs nothing. A load generator in this process sends ``--warm`` non-streaming chat completions
over ``--concurrency`` keep-alive connections (the connections to the upstream open, the
interpreter's caches fill); then ``callgrind_control`` turns counting on, exactly
``--requests`` more are sent and the counts are dumped; then ``--idle`` seconds without a
request are counted and dumped. The gateway does some work on a timer (it polls its store each
second), which a window of requests counts in proportion to the seconds it took: the idle
window's rate over those seconds is subtracted. What is left, over ``--requests``, is the
gateway's user-space work per request (the kernel's side of its system calls is not counted).
The interpreter's hash seed is fixed; two runs of the same code agree within about 1%.

The dumps are kept in ``--keep`` (a temporary folder by default, named in the output):
``callgrind_annotate --inclusive=yes <dump>`` ranks the C functions by their cost.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _gateway_procs import (
    BODY,
    PATH,
    SERVE_PARTS,
    Parts,
    free_port,
    serve_args,
    start_upstream,
    stop,
    write_config,
)

REQUEST = (
    f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    f"Content-Length: {len(BODY)}\r\n\r\n"
).encode() + BODY
START_LIMIT = 300.0  # seconds: the interpreter starts far slower under valgrind
CALLGRIND_CONTROL = shutil.which("callgrind_control") or "callgrind_control"


async def _connection(port: int, count: int) -> int:
    """Send `count` requests one after the other on one keep-alive connection; the 200s."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    ok = 0
    try:
        for _ in range(count):
            writer.write(REQUEST)
            status = await reader.readline()
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            await reader.readexactly(length)
            ok += status.split(b" ", 2)[1] == b"200"
    finally:
        writer.close()
    return ok


async def load(port: int, requests: int, concurrency: int) -> int:
    """Exactly `requests` requests over `concurrency` connections; how many answered 200."""
    shares = [requests // concurrency + (i < requests % concurrency) for i in range(concurrency)]
    return sum(await asyncio.gather(*(_connection(port, n) for n in shares if n)))


def instructions(out: Path) -> int:
    """The total instructions (Ir) of a callgrind output file."""
    match = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
    if match is None:
        raise RuntimeError(f"no totals in {out}")
    return int(match.group(1))


def wait_listening(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    """Poll until `port` accepts a connection (no request is sent: requests are counted)."""
    deadline = time.monotonic() + START_LIMIT
    while time.monotonic() < deadline and process.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            time.sleep(0.2)
        else:
            return
    stop(process)
    raise RuntimeError(f"the gateway did not listen on {port}; its output:\n{log.read_text()}")


def finish(process: subprocess.Popen[bytes]) -> None:
    """Stop the gateway and wait for callgrind to write its totals (it takes a while)."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(120)
    except subprocess.TimeoutExpired:
        stop(process)
        raise


def control(process: subprocess.Popen[bytes], *option: str) -> None:
    """Send `option` to the callgrind of `process` (through valgrind's gdbserver)."""
    subprocess.run(  # noqa: S603 - fixed argv
        [CALLGRIND_CONTROL, *option, str(process.pid)], check=True, capture_output=True
    )


def counted_run(
    folder: Path, upstream: int, concurrency: int, *, requests: int, warm: int, idle: float
) -> tuple[float, Path]:
    """One bare gateway under callgrind: `warm` requests uncounted, then `requests` counted
    and dumped, then `idle` seconds of no requests counted and dumped. Instructions per
    request (the counted ones less the idle rate over their seconds) and the requests' dump."""
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = write_config(folder, upstream, "memory")
    out = folder / f"callgrind.c{concurrency}.out"
    command = [
        "valgrind", "--tool=callgrind", "--trace-children=no", "--instr-atstart=no",
        f"--callgrind-out-file={out}",
        sys.executable, "-c", SERVE_PARTS, "metrics,audit",
        *serve_args(config, port, Parts.only(None)),
    ]  # fmt: skip
    log = folder / "gateway.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(  # noqa: S603 - fixed argv
            command,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
    try:
        wait_listening(process, port, log)
        answered = asyncio.run(load(port, warm, concurrency))
        control(process, "--instr=on")
        begun = time.monotonic()
        answered += asyncio.run(load(port, requests, concurrency))
        control(process, "--dump")
        loaded = time.monotonic() - begun
        time.sleep(idle)
        control(process, "--dump")
        idled = time.monotonic() - begun - loaded
    finally:
        finish(process)
    if answered != warm + requests:
        raise RuntimeError(f"{warm + requests - answered} requests did not answer 200; see {log}")
    served, rested = (folder / f"{out.name}.{n}" for n in (1, 2))
    background = instructions(rested) / idled * loaded
    return (instructions(served) - background) / requests, served


def main() -> None:
    """Parse the options, count, print instructions per request per concurrency."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests counted")
    parser.add_argument("--warm", type=int, default=200, help="requests before counting")
    parser.add_argument("--idle", type=float, default=10.0, help="idle seconds counted")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[64, 1])
    parser.add_argument("--keep", type=Path, help="folder for the callgrind outputs")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not on the PATH")
    folder = args.keep or Path(tempfile.mkdtemp(prefix="core-callgrind-"))
    folder.mkdir(parents=True, exist_ok=True)
    upstream, upstream_port = start_upstream(folder)
    try:
        for concurrency in args.concurrency:
            per, out = counted_run(
                folder / f"c{concurrency}",
                upstream_port,
                concurrency,
                requests=args.requests,
                warm=args.warm,
                idle=args.idle,
            )
            print(f"c{concurrency}: {per:,.0f} instructions per request ({out})", flush=True)
    finally:
        stop(upstream)
    print(f"callgrind outputs: {folder}")


if __name__ == "__main__":
    main()
