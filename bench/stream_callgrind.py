"""Instructions per streamed event of the bare gateway, when each event arrives on its own.

Run: ``python bench/stream_callgrind.py [--streams N] [--concurrency C] [--keep DIR]`` (needs
``valgrind``; about two minutes).

A stream whose events come 10 ms apart costs the gateway far more per event than one whose
events arrive together: each event is then its own read, its own wake-up of the request's task
and its own pass through the stream's layers. This counts that pass. ``turnout serve`` runs under
``valgrind --tool=callgrind`` with every part off (as in ``core_callgrind.py``) before
``turnout mock-upstream``, with three routes whose target streams 1, 10 and 20 content events
10 ms apart (the mock's ``chunks=N;chunk_delay=0.01``; under callgrind the gateway takes about a
millisecond per event, so each event is its own read). A client in this process sends ``--warm``
streams of each kind uncounted, then ``--streams`` streams of each kind, each batch counted on
its own (callgrind's counters zeroed before and dumped after). Per stream: the 1-event stream is
the fixed cost (the request, the answer's head, the finish and usage events, the record); the
instructions per event are the 20-event stream's less the 10-event stream's, over 10. The
gateway's work on a timer (its store poll) is counted in an idle window and subtracted in
proportion to each batch's seconds. Two runs of the same code agree within about 2%.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _gateway_procs import SERVE_PARTS, Parts, free_port, serve_args, start_upstream, stop
from core_callgrind import control, finish, instructions, wait_listening

KINDS = {"one": 1, "ten": 10, "twenty": 20}
"""Route (and model) name: content events in its stream."""
BODY = (
    '{{"model": "{model}", "stream": true, "stream_options": {{"include_usage": true}}, '
    '"messages": [{{"role": "user", "content": "Why is checkout failing? Answer in one '
    'sentence."}}], "max_tokens": 64}}'
)


def write_config(folder: Path, upstream: int) -> Path:
    """Three routes at the mock upstream, one per entry of KINDS; `server.auth: open`."""
    lines = [
        "server: {auth: open}",
        "state: memory",
        "providers:",
        f"  - {{name: up, kind: openai, api_key: sk-bench, base_url: 'http://127.0.0.1:{upstream}/v1'}}",
        "routes:",
    ]
    lines += [
        f"  - {{name: {name}, models: [{name}], targets: [{{provider: up,"
        f" model: 'gpt-4o-mini/fault:chunks={count};chunk_delay=0.01'}}]}}"
        for name, count in KINDS.items()
    ]
    path = folder / "turnout.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


async def _connection(port: int, model: str, count: int) -> int:
    """`count` streams one after the other on one keep-alive connection; the 200s."""
    body = BODY.format(model=model).encode()
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    ok = 0
    try:
        for _ in range(count):
            writer.write(request)
            status = await reader.readline()
            while await reader.readline() not in (b"\r\n", b""):
                pass
            while size := int((await reader.readline()).strip(), 16):  # chunked framing
                await reader.readexactly(size + 2)
            await reader.readexactly(2)
            ok += status.split(b" ", 2)[1] == b"200"
    finally:
        writer.close()
    return ok


async def load(port: int, model: str, streams: int, concurrency: int) -> int:
    """Exactly `streams` streams of `model` over `concurrency` connections; the 200s."""
    shares = [streams // concurrency + (i < streams % concurrency) for i in range(concurrency)]
    return sum(await asyncio.gather(*(_connection(port, model, n) for n in shares if n)))


def count(
    command: list[str], port: int, folder: Path, out: Path, args: argparse.Namespace
) -> dict[str, tuple[int, float]]:
    """Run the gateway under callgrind and count each batch of streams, then an idle window:
    the instructions and seconds of each (by model name; "idle" for the window)."""
    log = folder / "gateway.log"
    counted: dict[str, tuple[int, float]] = {}
    with log.open("wb") as sink:
        process = subprocess.Popen(  # noqa: S603 - fixed argv
            command, stdout=sink, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )  # fmt: skip
    try:
        wait_listening(process, port, log)
        for model in KINDS:
            asyncio.run(load(port, model, args.warm, args.concurrency))
        control(process, "--instr=on")
        for dump, model in enumerate([*KINDS, "idle"], start=1):
            control(process, "--zero")
            begun = time.monotonic()
            if model == "idle":
                time.sleep(args.idle)
            else:
                answered = asyncio.run(load(port, model, args.streams, args.concurrency))
                if answered != args.streams:
                    raise RuntimeError(f"{args.streams - answered} {model} streams failed")
            control(process, "--dump")
            seconds = time.monotonic() - begun
            counted[model] = (instructions(folder / f"{out.name}.{dump}"), seconds)
    finally:
        finish(process)
    return counted


def main() -> None:
    """Count and print the fixed instructions per stream and the instructions per event."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=100, help="streams counted per kind")
    parser.add_argument("--warm", type=int, default=20, help="streams per kind before counting")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--idle", type=float, default=5.0, help="idle seconds counted")
    parser.add_argument("--keep", type=Path, help="folder for the callgrind outputs")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not on the PATH")
    folder = args.keep or Path(tempfile.mkdtemp(prefix="stream-callgrind-"))
    folder.mkdir(parents=True, exist_ok=True)
    upstream, upstream_port = start_upstream(folder)
    port = free_port()
    out = folder / "callgrind.out"
    command = [
        "valgrind", "--tool=callgrind", "--trace-children=no", "--instr-atstart=no",
        f"--callgrind-out-file={out}",
        sys.executable, "-c", SERVE_PARTS, "metrics,audit",
        *serve_args(write_config(folder, upstream_port), port, Parts.only(None)),
    ]  # fmt: skip
    try:
        counted = count(command, port, folder, out, args)
    finally:
        stop(upstream)
    idle_count, idle_seconds = counted.pop("idle")
    rate = idle_count / idle_seconds
    per = {m: (n - rate * s) / args.streams for m, (n, s) in counted.items()}
    print(f"fixed (a 1-event stream): {per['one']:,.0f} instructions per stream")
    print(f"10-event stream: {per['ten']:,.0f} instructions per stream")
    print(f"per event, each on its own: {(per['twenty'] - per['ten']) / 10:,.0f} instructions")
    print(f"callgrind outputs: {folder}")


if __name__ == "__main__":
    main()
