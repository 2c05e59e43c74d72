"""What `gateway.py` and its part tables share: the processes (mock upstream, `turnout serve`
with some of its parts turned off), their CPU time, the generated configs, and the load runs.

Rule 1: every process listens on 127.0.0.1; whoever starts one stops it (`stop`), also when the
benchmark fails.
Rule 2: CPU time is utime + stime of /proc/<pid>/stat (every thread), summed over a process
and, where said, its descendants: the workers of `--workers N` and each serving process's audit
writer process. Context switches are voluntary + nonvoluntary of /proc/<pid>/task/*/status,
summed over every thread.
Rule 3: a part is turned off only by the bench's own launcher (`SERVE_PARTS`): the product has
no switch for the audit or the metrics, so the launcher never starts the audit writer (nor,
so, its process) and hands it nothing, and makes the per-request metrics count a no-op, then
runs `turnout serve` as is.
Access lines are turned off with `--log-level warning`; shared health is `state: memory`
against a Redis URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import os
import re
import resource
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

MODEL = "gpt-4o-mini"
STREAM_MODEL = "bench-stream"  # a route whose target streams STREAM_EVENTS events
STREAM_EVENTS = 10  # a role event, the content events, a finish event and [DONE]
# The mock upstream's fault grammar: `chunks=N` splits the answer into N content events.
STREAM_TARGET = f"{MODEL}/fault:chunks={STREAM_EVENTS - 3}"
PATH = "/v1/chat/completions"
BODY = (
    b'{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": '
    b'"Why is checkout failing? Answer in one sentence."}], "max_tokens": 64}'
)
STREAM_BODY = (
    b'{"model": "gpt-4o-mini", "stream": true, "messages": [{"role": "user", "content": '
    b'"Why is checkout failing? Answer in one sentence."}], "max_tokens": 64}'
)
START_LIMIT = 30.0  # seconds a subprocess may take to serve
SETTLE = 1.2  # seconds after a load phase for the audit writer's last batch (it flushes each 1 s)
GATEWAY_CPU, UPSTREAM_CPU = 0, 1
PARTS = ("access_log", "metrics", "audit", "redis")
"""The parts of `turnout serve` measured one by one."""

Load = Callable[[int, int, float, Path], "Run"]


# -- processes -------------------------------------------------------------------------------


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def can_pin() -> bool:
    """Whether the machine has the two CPUs and `taskset` that pinning needs."""
    return (os.cpu_count() or 1) > max(GATEWAY_CPU, UPSTREAM_CPU) and bool(shutil.which("taskset"))


def pinned(cpu: int | None) -> list[str]:
    """`taskset -c cpu` when pinning is possible; `cpu` None: every CPU (undoing the
    script's own pin, which children inherit)."""
    if not can_pin():
        return []
    cpus = ",".join(str(c) for c in range(os.cpu_count() or 1)) if cpu is None else str(cpu)
    return ["taskset", "-c", cpus]


def pin(pid: int, cpu: int) -> None:
    """Move every thread of the running process `pid` and of its descendants (its audit
    writer process) to `cpu` (threads and processes started later inherit it), when pinning
    is possible."""
    if can_pin():
        for one in (pid, *descendants(pid)):
            for task in Path(f"/proc/{one}/task").iterdir():
                with contextlib.suppress(ProcessLookupError):
                    os.sched_setaffinity(int(task.name), {cpu})


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                if int(stat[1]) == pid:
                    found.append(int(entry.name))
    return found


def descendants(pid: int) -> list[int]:
    """The live processes below `pid`: its children, theirs, and so on."""
    found = _children(pid)
    for child in list(found):
        found += descendants(child)
    return found


def cpu_seconds(pid: int, *, children: bool = False) -> float:
    """User + system CPU seconds of process `pid` so far (every thread; with `children`, plus
    its live descendants')."""
    pids = [pid, *(descendants(pid) if children else ())]
    return cpu_of(pids)


def cpu_of(pids: Sequence[int]) -> float:
    """User + system CPU seconds of the processes `pids` so far (every thread)."""
    total = 0
    for one in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def settle_below(pids: Sequence[int], limit: float = 15.0) -> None:
    """Wait (at most `limit` seconds) until the descendants of `pids` idle: the audit writer
    processes have started (their imports cost about half a CPU second), so that start-up is
    not counted as work per request."""
    began = time.perf_counter()
    before = cpu_of([d for pid in pids for d in descendants(pid)])
    while time.perf_counter() - began < limit:
        time.sleep(0.5)
        now = cpu_of([d for pid in pids for d in descendants(pid)])
        if now - before < 0.02:
            return
        before = now


def switches(pids: Sequence[int]) -> int:
    """Context switches (voluntary + nonvoluntary) of every thread of the processes `pids`."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{pid}/task").iterdir():
                with contextlib.suppress(OSError):
                    for line in (task / "status").read_text().splitlines():
                        if "ctxt_switches:" in line:
                            total += int(line.split()[1])
    return total


def children_cpu_seconds() -> float:
    """CPU seconds of this script's ended and waited-for children (the load generator's runs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def status_kib(pid: int, field: str) -> int:
    """A `kB` field of /proc/<pid>/status (VmHWM: peak RSS, VmRSS: current)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def busy_share(seconds: float = 1.0) -> float:
    """The share of all CPUs' time spent busy over the next `seconds` (Linux /proc/stat)."""

    def sample() -> tuple[int, int]:
        values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = values[3] + values[4]  # idle + iowait
        return sum(values) - idle, sum(values)

    busy, total = sample()
    time.sleep(seconds)
    busy_after, total_after = sample()
    return (busy_after - busy) / max(total_after - total, 1)


def load_average() -> float:
    """The one-minute load average."""
    return os.getloadavg()[0]


def post(port: int, body: bytes = BODY, timeout: float = 2.0) -> int:
    """POST one chat completion to 127.0.0.1:`port`; returns the status."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", PATH, body, {"content-type": "application/json"})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def get(port: int, path: str, timeout: float = 5.0) -> str:
    """GET `path` from 127.0.0.1:`port`: the body as text (any status)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        return conn.getresponse().read().decode()
    finally:
        conn.close()


@dataclass
class Counted:
    """What a gateway counted: routed requests in its `/metrics`, audit rows it dropped,
    whether it reported shared state up, its JSON access lines and its audit rows."""

    metrics_requests: int
    audit_dropped: int
    shared_up: bool
    access_lines: int = 0
    audit_rows: int = 0


def scrape(port: int) -> Counted:
    """From the gateway's `/metrics`: routed requests, audit rows dropped, shared state up."""
    calls = dropped = 0.0
    shared = False
    for line in get(port, "/metrics").splitlines():
        if line.startswith("turnout_route_calls_total{"):
            calls += float(line.rsplit(" ", 1)[1])
        elif line.startswith("turnout_audit_dropped_total"):
            dropped += float(line.rsplit(" ", 1)[1])
        elif line.startswith("turnout_shared_state_up{"):
            shared = float(line.rsplit(" ", 1)[1]) == 1
    return Counted(round(calls), round(dropped), shared)


def count_files(counted: Counted, folder: Path) -> Counted:
    """`counted` with the access lines of `folder`'s gateway.log and the rows of the audit in
    its store (read once the gateway has stopped and written everything)."""
    log = (folder / "gateway.log").read_text()
    counted.access_lines = sum(1 for line in log.splitlines() if '"event":"access"' in line)
    with contextlib.closing(sqlite3.connect(folder / "turnout.db")) as db:
        (rows,) = db.execute("SELECT count(*) FROM request_audit").fetchone()
    counted.audit_rows = int(rows)
    return counted


def spawn(command: list[str], port: int, log: Path) -> tuple[subprocess.Popen[bytes], float]:
    """Start `command` (its output to `log`) and poll until it answers a chat completion with
    200 (for at most START_LIMIT seconds); returns the process and the seconds to that answer."""
    ((process, seconds),) = spawn_all([(command, port, log)])
    return process, seconds


def spawn_all(
    commands: Sequence[tuple[list[str], int, Path]], limit: float = START_LIMIT
) -> list[tuple[subprocess.Popen[bytes], float]]:
    """`spawn` for each (command, port, log), all started at once: each process and the
    seconds from its start to its first answer (within `limit` seconds)."""
    started: list[tuple[subprocess.Popen[bytes], float]] = []
    out = []
    try:
        for command, _port, log in commands:
            with log.open("wb") as sink:
                begun = time.perf_counter()
                process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)  # noqa: S603
            started.append((process, begun))
        for (process, begun), (command, port, log) in zip(started, commands, strict=True):
            out.append((process, _served(process, port, begun, command, log, limit=limit)))
    except BaseException:
        for process, _ in started:  # never leave a process behind, whatever interrupted
            stop(process)
        raise
    return out


def _served(
    process: subprocess.Popen[bytes],
    port: int,
    begun: float,
    command: list[str],
    log: Path,
    *,
    limit: float,
) -> float:
    """Seconds from `begun` to the first answer, or an error with the process's output."""
    seconds = _first_answer(process, port, begun, limit)
    if seconds is None:
        raise RuntimeError(
            f"{' '.join(command)[-300:]} did not serve within {limit:g} s; its output:\n"
            f"{log.read_text()}"
        )
    return seconds


def _first_answer(
    process: subprocess.Popen[bytes], port: int, started: float, limit: float = START_LIMIT
) -> float | None:
    """Seconds from `started` to the first 200 from `port`; None if `process` exits first or
    `limit` seconds pass."""
    while time.perf_counter() - started < limit and process.poll() is None:
        with contextlib.suppress(OSError, http.client.HTTPException):
            if post(port) == 200:
                return time.perf_counter() - started
        time.sleep(0.002)
    return None


def stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate `process` and wait (killing it after 10 s)."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def start_upstream(
    directory: Path, cpu: int | None = UPSTREAM_CPU
) -> tuple[subprocess.Popen[bytes], int]:
    """`turnout mock-upstream` on `cpu` (None: any CPU): the process and its port."""
    port = free_port()
    command = [*pinned(cpu), sys.executable, "-m", "turnout.mock_upstream", "--port", str(port)]
    process, _ = spawn(command, port, directory / f"upstream-{port}.log")
    return process, port


def flush_redis(url: str) -> None:
    """Empty the Redis database of `url` (the benchmark's own), or say which option to change."""
    import redis

    try:
        client = redis.Redis.from_url(url, socket_timeout=2)
        with contextlib.closing(client):
            client.flushdb()
    except redis.RedisError as exc:
        raise SystemExit(
            f"--redis {url}: cannot reach Redis ({exc}); start it or pass another URL"
        ) from exc


# -- configs and commands --------------------------------------------------------------------


@dataclass(frozen=True)
class Parts:
    """Which parts of `turnout serve` are on: JSON access lines to a file, the per-request
    metrics, the audit (and usage ledger) writer, health shared over Redis."""

    access_log: bool = True
    metrics: bool = True
    audit: bool = True
    redis: bool = True

    @property
    def off(self) -> list[str]:
        """The names of the parts turned off."""
        return [name for name in PARTS if not getattr(self, name)]

    @classmethod
    def only(cls, part: str | None) -> Parts:
        """Every part off but `part` (None: all off, the bare gateway)."""
        return cls(**{name: name == part for name in PARTS})


def write_config(directory: Path, upstream_port: int, state: str, project: str = "bench") -> Path:
    """The gateway's config in `directory` (its SQLite store, the default, goes beside it): a
    route for MODEL and one for STREAM_MODEL, each with one openai-kind target at the mock
    upstream, `server.auth: open`, on `state` (`memory` or a Redis URL)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "turnout.yaml"
    path.write_text(
        f"project: {project}\n"
        "server: {auth: open}\n"
        f"state: '{state}'\n"
        "providers:\n"
        f"  - {{name: openai, kind: openai, api_key: sk-bench,"
        f" base_url: 'http://127.0.0.1:{upstream_port}/v1'}}\n"
        "routes:\n"
        f"  - {{name: bench, models: [{MODEL}], targets: [{{provider: openai, model: {MODEL}}}]}}\n"
        f"  - {{name: stream, models: [{STREAM_MODEL}],"
        f" targets: [{{provider: openai, model: '{STREAM_TARGET}'}}]}}\n"
    )
    return path


def serve_args(config: Path, port: int, parts: Parts, extra: Sequence[str] = ()) -> list[str]:
    """`serve …` arguments: JSON access lines when that part is on, else only warnings."""
    level = "info" if parts.access_log else "warning"
    return [
        "serve", "--config", str(config), "--port", str(port),
        "--log-level", level, "--log-format", "json", *extra,
    ]  # fmt: skip


def gateway_command(
    config: Path, port: int, parts: Parts, cpu: int | None = GATEWAY_CPU, extra: Sequence[str] = ()
) -> list[str]:
    """`turnout serve` on `cpu`: as people run it when every part is on, else through the
    bench's launcher (`SERVE_PARTS`) with the parts turned off."""
    args = serve_args(config, port, parts, extra)
    if not (off := [name for name in parts.off if name in ("metrics", "audit")]):
        return [*pinned(cpu), sys.executable, "-m", "turnout.cli", *args]
    return [*pinned(cpu), sys.executable, "-c", SERVE_PARTS, ",".join(off), *args]


# `turnout serve` with the audit and/or the per-request metrics turned off (Rule 3): its first
# argument names them. It refuses to run when what it replaces has moved, rather than measuring
# a gateway with the part still on.
SERVE_PARTS = """\
import sys
off = set(filter(None, sys.argv.pop(1).split(",")))
if "audit" in off:
    # The audit writer is made but never started (so no process of its own) nor handed a request.
    import turnout.gateway.server.audit as audit
    assert hasattr(audit, "AuditedControl") and hasattr(audit, "Observer"), "audit seams moved"
    audit.AuditedControl = lambda control, writer: control
    observer = audit.Observer
    audit.Observer = lambda *args, sink=None, **options: observer(*args, **options)
if "metrics" in off:
    from turnout.gateway.observe.metrics import Metrics
    assert hasattr(Metrics, "count_request"), "the metrics seam moved"
    Metrics.count_request = lambda self, *args, **options: None
from turnout.cli import main
sys.exit(main(sys.argv[1:]))
"""


# -- load ------------------------------------------------------------------------------------


@dataclass
class Run:
    """One bounded load run: requests answered, seconds, latency percentiles, errors, and the
    load generator's own CPU seconds (when it ran as a child process)."""

    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: int = 0
    load_cpu: float = 0.0

    @property
    def rps(self) -> float:
        """Requests per second."""
        return self.requests / self.seconds


def _ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text)
    if match is None:
        raise ValueError(f"unexpected wrk time {text!r}")
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}[match.group(2)]
    return float(match.group(1)) * scale


def wrk(
    port: int,
    connections: int,
    seconds: float,
    script: Path,
    *,
    threads: int = 1,
    cpu: int | None = UPSTREAM_CPU,
) -> Run:
    """wrk with `threads` threads and `connections` keep-alive connections for `seconds`, on
    `cpu` (None: any CPU), POSTing what `script` says; its own CPU time is measured."""
    duration = f"-d{max(1, round(seconds))}s"  # wrk takes whole seconds
    command = [*pinned(cpu), "wrk", f"-t{threads}", f"-c{connections}", duration]
    url = f"http://127.0.0.1:{port}{PATH}"
    before = children_cpu_seconds()
    output = subprocess.run(  # noqa: S603 - fixed argv
        [*command, "--latency", "-s", str(script), url],
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds + 30,
    ).stdout
    load_cpu = children_cpu_seconds() - before

    def find(pattern: str) -> str:
        match = re.search(pattern, output, re.M)
        if match is None:
            raise ValueError(f"wrk output without {pattern!r}:\n{output}")
        return match.group(1)

    done = re.search(r"(\d+) requests in ([\d.]+)(ms|s|m)", output)
    if done is None:
        raise ValueError(f"unexpected wrk output:\n{output}")
    elapsed = _ms(done.group(2) + done.group(3)) / 1000
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return Run(
        int(done.group(1)),
        elapsed,
        _ms(find(r"^\s*50%\s+(\S+)")),
        _ms(find(r"^\s*99%\s+(\S+)")),
        int(bad.group(1)) if bad else 0,
        load_cpu,
    )


def load_wrk(port: int, connections: int, seconds: float, script: Path) -> Run:
    """wrk with one thread on the load CPU."""
    return wrk(port, connections, seconds, script)


def wrk_script(directory: Path, body: bytes = BODY, name: str = "post.lua") -> Path:
    """The Lua script that makes wrk POST `body`."""
    path = directory / name
    path.write_text(
        'wrk.method = "POST"\n'
        f"wrk.body = '{body.decode()}'\n"
        'wrk.headers["Content-Type"] = "application/json"\n'
    )
    return path


def load_python(port: int, connections: int, seconds: float, script: Path) -> Run:
    """The same measurement from an aiohttp load generator in this process (no wrk); the body
    is the one `script` holds."""
    body = re.search(r"wrk\.body = '(.*)'", script.read_text())
    assert body is not None
    return asyncio.run(_load_python(port, connections, seconds, body.group(1).encode()))


async def _load_python(port: int, connections: int, seconds: float, body: bytes) -> Run:
    latencies: list[float] = []
    errors = 0
    url = f"http://127.0.0.1:{port}{PATH}"
    headers = {"content-type": "application/json"}
    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(connector=connector) as session:
        started = time.perf_counter()
        deadline = started + seconds

        async def worker() -> None:
            nonlocal errors
            while time.perf_counter() < deadline:
                begun = time.perf_counter()
                async with session.post(url, data=body, headers=headers) as response:
                    await response.read()
                    errors += response.status != 200
                latencies.append(time.perf_counter() - begun)

        await asyncio.gather(*(worker() for _ in range(connections)))
        elapsed = time.perf_counter() - started
    return Run(len(latencies), elapsed, percentile(latencies, 50), percentile(latencies, 99))


def percentile(values: Iterable[float], pct: float) -> float:
    """The `pct` percentile of `values` (seconds) in milliseconds."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))] * 1000


def count_events(port: int, body: bytes) -> int:
    """The SSE events (`data:` lines) of one streamed answer from `port`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("POST", PATH, body, {"content-type": "application/json"})
        text = conn.getresponse().read()
    finally:
        conn.close()
    return sum(1 for line in text.splitlines() if line.startswith(b"data:"))
