"""The floor of serving one request: what the HTTP server alone costs, for the gateway's own
server and for the servers it could move to.

Run: ``python bench/server_floor.py [--seconds 5] [--rounds 3] [--no-upstream]``.

Each server runs the same trivial handler (`_server_floor_apps.py`): it reads the whole body
of a POST of about 400 bytes (a JSON chat request and its head) and answers 200 with a fixed
JSON body of 334 bytes. One process (one worker) each, pinned to CPU 0; wrk (one thread,
keep-alive) on CPU 1, at 64 connections and at 1.

- ``ours``: the gateway's server (uvloop, httptools), the handler plugged in as the gateway's
  endpoints are (`serve_cycle`, no ASGI messages);
- ``ours-asgi``: the same server with a raw ASGI app (what the dashboard and admin API get);
- ``granian-rsgi``: granian, RSGI app, ``--workers 1 --runtime-threads 1 --loop uvloop``;
- ``granian-asgi``: granian, the raw ASGI app, same options;
- ``uvicorn``: uvicorn with ``--loop uvloop --http httptools``, the raw ASGI app.

Then the upstream table: the same handlers each making one POST to ``turnout mock-upstream``
(on CPU 1 with wrk) through the providers' client (`Http1Transport`) per request, on our server
and on granian RSGI. granian is not a dependency of turnout: ``pip install granian`` to compare
it; a server whose package is missing is skipped with a line saying so.

Measured per run: requests and req/s from wrk; the server's CPU time (utime + stime of
/proc/<pid>/stat, every thread, summed over the process and all its descendants: granian runs
its worker as a child process) divided by the requests; context switches per request (every
thread's, from /proc/<pid>/task/*/status); and how much of CPU 0 other processes took during
the run (CPU 0's busy time from /proc/stat less the server's). The servers take turns: each
round runs every server once at each concurrency, in a rotated order, and the tables give the
median over the rounds. Each run lasts ``--seconds`` or longer, so that it measures at least
``--min-requests`` requests (from the rate of a warm-up run), up to ``--max-seconds``.
Every loop is bounded; all traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import importlib.util
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from _gateway_procs import (
    GATEWAY_CPU,
    START_LIMIT,
    busy_share,
    can_pin,
    free_port,
    pinned,
    post,
    start_upstream,
    stop,
    wrk,
)

import turnout

BENCH = Path(__file__).resolve().parent
APPS = BENCH / "_server_floor_apps.py"
REQUEST_BODY = (
    '{"model": "gpt-4o-mini", "messages": [{"role": "system", "content": "You are a support '
    'assistant."}, {"role": "user", "content": "Why is checkout failing for order 18213? '
    'Answer in one sentence."}], "max_tokens": 64, "temperature": 0.2, "user": '
    '"bench-user-0001"}'
)
CONNECTIONS = (64, 1)
_GRANIAN = [
    "-m", "granian", "--workers", "1", "--runtime-threads", "1", "--loop", "uvloop",
    "--no-access-log", "--log-level", "warning", "--host", "127.0.0.1",
]  # fmt: skip


@dataclass(frozen=True)
class Server:
    """One server to measure: its name, the package it needs and its command for a port."""

    name: str
    package: str | None
    args: tuple[str, ...]
    note: str

    def command(self, port: int) -> list[str]:
        """The command that serves on 127.0.0.1:`port`, pinned to the server CPU."""
        args = [a.replace("{port}", str(port)) for a in self.args]
        return [*pinned(GATEWAY_CPU), sys.executable, *args]

    def missing(self) -> bool:
        """Whether its package is not installed."""
        return self.package is not None and importlib.util.find_spec(self.package) is None


SERVERS = (
    Server("ours", None, (str(APPS), "ours", "{port}"), "serve_cycle, no ASGI messages"),
    Server("ours-asgi", None, (str(APPS), "ours-asgi", "{port}"), "raw ASGI app"),
    Server(
        "granian-rsgi",
        "granian",
        (*_GRANIAN, "--interface", "rsgi", "--port", "{port}", "_server_floor_apps:rsgi_app"),
        "RSGI app",
    ),
    Server(
        "granian-asgi",
        "granian",
        (*_GRANIAN, "--interface", "asgi", "--port", "{port}", "_server_floor_apps:asgi_app"),
        "raw ASGI app",
    ),
    Server(
        "uvicorn",
        "uvicorn",
        (
            "-m", "uvicorn", "--loop", "uvloop", "--http", "httptools", "--no-access-log",
            "--log-level", "warning", "--host", "127.0.0.1", "--port", "{port}",
            "_server_floor_apps:asgi_app",
        ),
        "raw ASGI app",
    ),
)  # fmt: skip
UPSTREAM_SERVERS = ("ours", "granian-rsgi")


# -- what a process tree spends ----------------------------------------------------------------


def _tree(pid: int) -> list[int]:
    """`pid` and every live descendant."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        one = todo.pop()
        found.append(one)
        todo.extend(parents.get(one, ()))
    return found


@dataclass(frozen=True)
class Usage:
    """CPU seconds and context switches of a process tree, and CPU 0's busy seconds, at a
    moment."""

    cpu: float
    switches: int
    cpu0_busy: float

    @classmethod
    def of(cls, pid: int) -> Usage:
        """Now, for the tree of `pid`."""
        ticks = switches = 0
        for one in _tree(pid):
            with contextlib.suppress(OSError):
                fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
                ticks += int(fields[11]) + int(fields[12])
                for task in Path(f"/proc/{one}/task").iterdir():
                    for line in (task / "status").read_text().splitlines():
                        if "ctxt_switches:" in line:  # voluntary and not
                            switches += int(line.split()[1])
        return cls(ticks / _HZ, switches, _cpu0_busy())


_HZ = os.sysconf("SC_CLK_TCK")


def _cpu0_busy() -> float:
    """CPU 0's busy seconds so far (all but idle and iowait), from /proc/stat."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith(f"cpu{GATEWAY_CPU} "):
            values = [int(v) for v in line.split()[1:]]
            return (sum(values) - values[3] - values[4]) / _HZ
    return 0.0


# -- runs --------------------------------------------------------------------------------------


@dataclass
class Measured:
    """One run of one server at one concurrency."""

    requests: int
    seconds: float
    cpu: float
    switches: int
    others: float  # CPU 0 seconds other processes took
    errors: int

    @property
    def rps(self) -> float:
        """Requests per second."""
        return self.requests / self.seconds

    @property
    def us(self) -> float:
        """Server CPU microseconds per request."""
        return self.cpu / self.requests * 1e6


@dataclass
class Cell:
    """The runs of one server at one concurrency, and the length they run."""

    seconds: float = 0.0
    runs: list[Measured] = field(default_factory=list)

    def fit(self, run: Measured, args: argparse.Namespace) -> None:
        """Lengthen the next runs when `run`'s rate would give fewer than `--min-requests`."""
        wanted = math.ceil(args.min_requests / max(run.rps, 1.0) * 1.2)
        self.seconds = float(min(args.max_seconds, max(self.seconds, wanted)))

    def median(self, value: str) -> float:
        """The median over the runs of one of `Measured`'s numbers."""
        return float(statistics.median(getattr(run, value) for run in self.runs))


def measure(pid: int, port: int, connections: int, seconds: float, script: Path) -> Measured:
    """One wrk run against the server `pid` on `port`."""
    before = Usage.of(pid)
    run = wrk(port, connections, seconds, script)
    after = Usage.of(pid)
    cpu = after.cpu - before.cpu
    return Measured(
        run.requests,
        run.seconds,
        cpu,
        after.switches - before.switches,
        max(0.0, after.cpu0_busy - before.cpu0_busy - cpu),
        run.errors,
    )


def compare(
    servers: list[Server],
    args: argparse.Namespace,
    directory: Path,
    script: Path,
    env: dict[str, str],
) -> dict[tuple[str, int], Cell]:
    """Start every server, then run the rounds; every server is stopped at the end."""
    running: dict[str, tuple[subprocess.Popen[bytes], int]] = {}
    cells: dict[tuple[str, int], Cell] = {}
    try:
        for server in servers:
            port = free_port()
            log = directory / f"{server.name}-{port}.log"
            process, _ = _spawn(server.command(port), port, log, env)
            running[server.name] = (process, port)
        for server in servers:  # warm-up: pools filled, code paths run, the rate for the length
            process, port = running[server.name]
            for connections in CONNECTIONS:
                warm = measure(process.pid, port, connections, args.warmup, script)
                cell = cells[server.name, connections] = Cell(args.seconds)
                cell.fit(warm, args)
        for round_ in range(args.rounds):
            shift = round_ % len(servers)
            for server in servers[shift:] + servers[:shift]:
                process, port = running[server.name]
                for connections in CONNECTIONS:
                    cell = cells[server.name, connections]
                    run = measure(process.pid, port, connections, cell.seconds, script)
                    cell.runs.append(run)
                    cell.fit(run, args)
                    print(
                        f"  round {round_ + 1} {server.name:<13} c{connections:<3}"
                        f" {run.requests:>7} requests {run.rps:>8,.0f} req/s"
                        f" {run.us:>6.1f} µs CPU/req {run.switches / run.requests:5.2f} cs/req"
                        f"  others on CPU 0: {run.others / run.seconds:4.0%}"
                        + (f"  {run.errors} errors" if run.errors else ""),
                        flush=True,
                    )
    finally:
        for process, _ in running.values():
            stop(process)
    return cells


def _spawn(
    command: list[str], port: int, log: Path, env: dict[str, str]
) -> tuple[subprocess.Popen[bytes], float]:
    """Start `command` in the bench folder (where the apps' module is) with `env`, and wait
    until it answers a POST with 200 (at most `START_LIMIT` seconds)."""
    begun = time.perf_counter()
    with log.open("wb") as sink:
        process = subprocess.Popen(  # noqa: S603 - fixed argv
            command, stdout=sink, stderr=subprocess.STDOUT, cwd=BENCH, env=env
        )
    try:
        while time.perf_counter() - begun < START_LIMIT and process.poll() is None:
            with contextlib.suppress(OSError, http.client.HTTPException):
                if post(port) == 200:
                    return process, time.perf_counter() - begun
            time.sleep(0.01)
    except BaseException:
        stop(process)
        raise
    stop(process)
    raise RuntimeError(f"{' '.join(command)} did not serve; its output:\n{log.read_text()}")


def table(title: str, servers: list[Server], cells: dict[tuple[str, int], Cell]) -> None:
    """Print the medians."""
    print(f"\n{title}")
    print(
        "| server | CPU/request c64 | req/s c64 | CPU/request c1 | req/s c1"
        " | context switches/request c64 / c1 | requests measured (runs) | other load on CPU 0 |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for server in servers:
        hi, lo = cells[server.name, 64], cells[server.name, 1]
        measured = sum(r.requests for r in hi.runs + lo.runs)
        others = statistics.median(r.others / r.seconds for r in hi.runs + lo.runs)
        print(
            f"| {server.name} ({server.note}) | {hi.median('us'):.1f} µs"
            f" | {hi.median('rps'):,.0f} | {lo.median('us'):.1f} µs | {lo.median('rps'):,.0f}"
            f" | {_per(hi, 'switches'):.2f} / {_per(lo, 'switches'):.2f}"
            f" | {measured:,} ({len(hi.runs) + len(lo.runs)})"
            f" | {others:.0%} |"
        )


def _per(cell: Cell, value: str) -> float:
    return float(statistics.median(getattr(run, value) / run.requests for run in cell.runs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="shortest run (5)")
    parser.add_argument("--max-seconds", type=float, default=20.0, help="longest run (20)")
    parser.add_argument("--min-requests", type=int, default=20_000, help="per run (20000)")
    parser.add_argument("--rounds", type=int, default=3, help="turns each server takes (3)")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds per warm-up run (2)")
    parser.add_argument("--no-upstream", action="store_true", help="the floor table alone")
    parser.add_argument(
        "--only", default="", help="comma-separated server names (default: every one)"
    )
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed: it makes the load (apt-get install wrk)", file=sys.stderr)
        return 1
    if not can_pin():
        print("warning: cannot pin (taskset or a second CPU missing): numbers are noisier")
    chosen = [s for s in SERVERS if not args.only or s.name in args.only.split(",")]
    servers = []
    for server in chosen:
        if server.missing():
            print(
                f"skipped {server.name}: {server.package} is not installed"
                f" (pip install {server.package}; it is not a dependency of turnout)"
            )
        else:
            servers.append(server)
    if not servers:
        return 1
    env = dict(os.environ)
    src = str(Path(turnout.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src, env.get("PYTHONPATH")]))
    env.pop("FLOOR_UPSTREAM_PORT", None)
    print(
        f"CPUs busy before the start: {busy_share():.0%}; load average"
        f" {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="server-floor-") as tmp:
        directory = Path(tmp)
        script = directory / "post.lua"
        script.write_text(
            'wrk.method = "POST"\n'
            f"wrk.body = '{REQUEST_BODY}'\n"
            'wrk.headers["Content-Type"] = "application/json"\n'
            'wrk.headers["Authorization"] = "Bearer sk-bench-0123456789abcdef"\n'
        )
        print(f"\nthe server alone ({len(REQUEST_BODY)}-byte request body, 334-byte answer)")
        cells = compare(servers, args, directory, script, env)
        table("The server alone (medians)", servers, cells)
        upstream_servers = [s for s in servers if s.name in UPSTREAM_SERVERS]
        if not args.no_upstream and upstream_servers:
            upstream, upstream_port = start_upstream(directory)
            try:
                env["FLOOR_UPSTREAM_PORT"] = str(upstream_port)
                print("\nthe server and one upstream call per request (mock upstream on CPU 1)")
                cells = compare(upstream_servers, args, directory, script, env)
            finally:
                stop(upstream)
            table("The server and one upstream call (medians)", upstream_servers, cells)
    print(
        f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())};"
        f" {time.perf_counter() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
