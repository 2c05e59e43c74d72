"""What the gateway adds: DIRECT (load -> mock upstream) against THROUGH (load -> turnout -> mock
upstream), side by side in one run, each number beside its target and the reference numbers.

Run: ``python bench/gateway.py [--seconds N] [--rounds R] [--quick] [--profile] [--json]``.

``turnout mock-upstream`` and ``turnout serve --config <generated temp config>`` run as
subprocesses: the gateway pinned to CPU 0, the mock upstream to CPU 1 (``taskset``, when the
machine has two CPUs); the load generator and this script share CPU 1 with the upstream. The
config has one route with one openai-kind target at the mock upstream and ``server.auth: open``.

Load comes from ``wrk`` when installed (a Lua script for the POST body, ``--latency`` for
percentiles), else from an in-process aiohttp generator; every run is bounded by ``--seconds``.
Measured:

- latency p50/p99 at concurrency 1, and req/s and p99 at concurrency 64, direct and through
  (``--rounds`` alternating rounds; the median round of each side is kept);
- gateway CPU milliseconds per proxied request: /proc/<pid>/stat utime+stime over the through
  windows, divided by their requests;
- streaming time to first token added: a small aiohttp client timing the first SSE event
  that carries content, alternating direct and through, concurrency 1;
- the gateway's peak RSS (VmHWM of /proc/<pid>/status) after all of the above;
- seconds from spawning ``turnout serve`` to its first answered request (median of a few starts).

``--profile`` then samples the gateway with py-spy under concurrency-64 load and prints the
functions with the most own time (the collapsed stacks are kept for a flame graph).

``--tracing`` instead measures what tracing costs: two gateways over the same config, one with
tracing off and one with an OpenTelemetry SDK tracer provider whose exporter drops every span
(so spans are made, batched and handed over, but nothing is sent), loaded in alternating
rounds at concurrency 1 and 64; each one's CPU per request and req/s side by side. All traffic
stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

MODEL = "gpt-4o-mini"
PATH = "/v1/chat/completions"
BODY = (
    b'{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": '
    b'"Why is checkout failing? Answer in one sentence."}], "max_tokens": 64}'
)
STREAM_BODY = (
    b'{"model": "gpt-4o-mini", "stream": true, "messages": [{"role": "user", "content": '
    b'"Why is checkout failing? Answer in one sentence."}], "max_tokens": 64}'
)
CONTENT = re.compile(rb'"delta":\{[^}]*"content":"[^"]')  # a delta with non-empty text
START_LIMIT = 30.0  # seconds a subprocess may take to serve
BUSY = 0.10  # a share of CPU time busy before the run that is worth a warning
SATURATED = 0.85  # under c64 the gateway should use at least this share of its CPU
GATEWAY_CPU, UPSTREAM_CPU = 0, 1


# -- processes -------------------------------------------------------------------------------


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def pinned(cpu: int) -> list[str]:
    """`taskset -c cpu` when the machine has that CPU and the tool, else nothing."""
    if (os.cpu_count() or 1) > max(GATEWAY_CPU, UPSTREAM_CPU) and shutil.which("taskset"):
        return ["taskset", "-c", str(cpu)]
    return []


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far (every thread; Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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


def spawn(command: list[str], port: int, log: Path) -> tuple[subprocess.Popen[bytes], float]:
    """Start `command` and poll until it answers a chat completion with 200 (for at most
    START_LIMIT seconds); returns the process and the seconds from spawn to that answer."""
    with log.open("wb") as sink:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)  # noqa: S603
    try:
        seconds = _first_answer(process, port, started)
    except BaseException:
        stop(process)  # never leave a process behind, whatever interrupted the wait
        raise
    if seconds is None:
        stop(process)
        raise RuntimeError(f"{' '.join(command)} did not serve; its output:\n{log.read_text()}")
    return process, seconds


def _first_answer(process: subprocess.Popen[bytes], port: int, started: float) -> float | None:
    """Seconds from `started` to the first 200 from `port`; None if `process` exits first or
    START_LIMIT passes."""
    while time.perf_counter() - started < START_LIMIT and process.poll() is None:
        with contextlib.suppress(OSError, http.client.HTTPException):
            if post(port) == 200:
                return time.perf_counter() - started
        time.sleep(0.002)
    return None


def stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate `process` and wait (killing it after 10 s)."""
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def write_config(directory: Path, upstream_port: int, state: str = "memory") -> Path:
    """The gateway's config: one route, one openai-kind target at the mock upstream, on
    `state` (`memory`, or a Redis URL: health shared as between replicas)."""
    path = directory / "turnout.yaml"
    path.write_text(
        "project: bench\n"
        "server: {auth: open}\n"
        f"state: '{state}'\n"
        "providers:\n"
        f"  - {{name: openai, kind: openai, api_key: sk-bench,"
        f" base_url: 'http://127.0.0.1:{upstream_port}/v1'}}\n"
        "routes:\n"
        f"  - {{name: bench, models: [{MODEL}], targets: [{{provider: openai, model: {MODEL}}}]}}\n"
    )
    return path


def gateway_command(config: Path, port: int, extra: Sequence[str] = ()) -> list[str]:
    """`turnout serve` on CPU 0 (its log lines go to a file), with `extra` arguments."""
    serve = ["-m", "turnout.cli", "serve", "--config", str(config), "--port", str(port), *extra]
    return [*pinned(GATEWAY_CPU), sys.executable, *serve]


# `turnout serve` under an SDK tracer provider whose exporter drops every span: the gateway
# traces each request (request, route and call spans, the batch processor's thread) and sends
# nothing, so what it costs is tracing itself.
TRACED_SERVE = """\
import sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

class Dropped(SpanExporter):
    def export(self, spans):
        return SpanExportResult.SUCCESS

provider = TracerProvider()
provider.add_span_processor(BatchSpanProcessor(Dropped()))
trace.set_tracer_provider(provider)
from turnout.cli import main
sys.exit(main(sys.argv[1:]))
"""


def traced_gateway_command(config: Path, port: int) -> list[str]:
    """`turnout serve` on CPU 0 with tracing on and a no-op exporter (`TRACED_SERVE`)."""
    serve = ["serve", "--config", str(config), "--port", str(port)]
    return [*pinned(GATEWAY_CPU), sys.executable, "-c", TRACED_SERVE, *serve]


# -- load ------------------------------------------------------------------------------------


@dataclass
class Load:
    """One bounded load run: requests answered, seconds, latency percentiles, errors."""

    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    errors: int = 0

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


def load_wrk(port: int, connections: int, seconds: float, script: Path) -> Load:
    """wrk with one thread and `connections` keep-alive connections for `seconds`."""
    command = [*pinned(UPSTREAM_CPU), "wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s"]
    url = f"http://127.0.0.1:{port}{PATH}"
    output = subprocess.run(  # noqa: S603 - fixed argv
        [*command, "--latency", "-s", str(script), url],
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds + 30,
    ).stdout

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
    return Load(
        int(done.group(1)),
        elapsed,
        _ms(find(r"^\s*50%\s+(\S+)")),
        _ms(find(r"^\s*99%\s+(\S+)")),
        int(bad.group(1)) if bad else 0,
    )


def wrk_script(directory: Path) -> Path:
    """The Lua script that makes wrk POST the chat completion body."""
    path = directory / "post.lua"
    path.write_text(
        'wrk.method = "POST"\n'
        f"wrk.body = '{BODY.decode()}'\n"
        'wrk.headers["Content-Type"] = "application/json"\n'
    )
    return path


def load_python(port: int, connections: int, seconds: float, script: Path) -> Load:
    """The same measurement from an aiohttp load generator in this process (no wrk)."""
    del script
    return asyncio.run(_load_python(port, connections, seconds))


async def _load_python(port: int, connections: int, seconds: float) -> Load:
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
                async with session.post(url, data=BODY, headers=headers) as response:
                    await response.read()
                    errors += response.status != 200
                latencies.append(time.perf_counter() - begun)

        await asyncio.gather(*(worker() for _ in range(connections)))
        elapsed = time.perf_counter() - started
    return Load(len(latencies), elapsed, _percentile(latencies, 50), _percentile(latencies, 99))


def _percentile(values: list[float], pct: float) -> float:
    """The `pct` percentile of `values` (seconds) in milliseconds."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))] * 1000


async def first_token_ms(direct: int, through: int, samples: int) -> tuple[float, float]:
    """Median milliseconds to the first content event of a stream, (direct, through);
    `samples` streams each, alternating, one at a time."""
    times: dict[int, list[float]] = {direct: [], through: []}
    headers = {"content-type": "application/json"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=2)) as session:
        for number in range(samples * 2 + 20):
            port = (direct, through)[number % 2]
            started = time.perf_counter()
            first = None
            url = f"http://127.0.0.1:{port}{PATH}"
            async with session.post(url, data=STREAM_BODY, headers=headers) as response:
                async for line in response.content:
                    if first is None and CONTENT.search(line):
                        first = time.perf_counter() - started
            if first is None:
                raise RuntimeError(f"a stream from port {port} carried no content")
            if number >= 20:  # the first ten of each are warm-up
                times[port].append(first)
    return (statistics.median(times[direct]) * 1000, statistics.median(times[through]) * 1000)


# -- one run ---------------------------------------------------------------------------------


@dataclass
class Sides:
    """The median round of each side at one concurrency, and the gateway's CPU per request."""

    direct: Load
    through: Load
    cpu_ms: float
    cpu_share: float  # gateway CPU seconds per second of the through windows


def measure(
    load: Callable[[int, int, float, Path], Load],
    ports: tuple[int, int],
    gateway_pid: int,
    connections: int,
    args: argparse.Namespace,
) -> Sides:
    """`args.rounds` alternating rounds of direct then through at `connections`."""
    runs: tuple[list[Load], list[Load]] = ([], [])
    cpu, requests, elapsed = 0.0, 0, 0.0
    for _ in range(args.rounds):
        for side, port in enumerate(ports):
            before = cpu_seconds(gateway_pid)
            result = load(port, connections, args.seconds, args.script)
            if side == 1:
                cpu += cpu_seconds(gateway_pid) - before
                requests += result.requests
                elapsed += result.seconds
            if result.errors:
                print(f"warning: {result.errors} non-2xx answers at c{connections}", flush=True)
            runs[side].append(result)

    def median(results: list[Load]) -> Load:
        key = (lambda r: r.p50_ms) if connections == 1 else (lambda r: -r.rps)
        return sorted(results, key=key)[len(results) // 2]

    per_request = cpu / max(requests, 1) * 1000
    return Sides(median(runs[0]), median(runs[1]), per_request, cpu / max(elapsed, 1e-9))


@dataclass
class Report:
    """Every number of one run (milliseconds unless named otherwise)."""

    load_generator: str
    seconds: float
    rounds: int
    pinned: bool
    busy_before: float
    c1_direct_p50: float
    c1_through_p50: float
    c1_direct_p99: float
    c1_through_p99: float
    c64_direct_rps: float
    c64_through_rps: float
    c64_direct_p99: float
    c64_through_p99: float
    cpu_ms_per_request_c1: float
    cpu_ms_per_request_c64: float
    gateway_cpu_share_c64: float
    ttft_direct: float
    ttft_through: float
    peak_rss_mib: float
    start_seconds: list[float]


def run(args: argparse.Namespace, load: Callable[[int, int, float, Path], Load]) -> Report:
    """Start the processes, measure everything, stop them; `--profile` samples the gateway."""
    tmp = Path(args.tmp)
    upstream_port = free_port()
    python = sys.executable
    upstream_command = [python, "-m", "turnout.mock_upstream", "--port", str(upstream_port)]
    upstream, _ = spawn([*pinned(UPSTREAM_CPU), *upstream_command], upstream_port, tmp / "up.log")
    gateway: subprocess.Popen[bytes] | None = None
    try:
        config = write_config(tmp, upstream_port, args.state)
        starts = []
        for _ in range(args.starts):
            if gateway is not None:
                stop(gateway)
            port = free_port()
            gateway, seconds = spawn(
                gateway_command(config, port, args.serve_arg), port, tmp / "gateway.log"
            )
            starts.append(seconds)
        assert gateway is not None
        ports = (upstream_port, port)
        for warm in ports:
            load(warm, 64, 1.0, args.script)
        print("measuring concurrency 1 ...", flush=True)
        c1 = measure(load, ports, gateway.pid, 1, args)
        print("measuring concurrency 64 ...", flush=True)
        c64 = measure(load, ports, gateway.pid, 64, args)
        print("measuring time to first token ...", flush=True)
        ttft = asyncio.run(first_token_ms(*ports, args.samples))
        rss = status_kib(gateway.pid, "VmHWM") / 1024
        if args.profile:
            profile(gateway.pid, port, args, load)
    finally:
        if gateway is not None:
            stop(gateway)
        stop(upstream)
    return Report(
        load_generator="wrk" if load is load_wrk else "aiohttp (in-process)",
        seconds=args.seconds,
        rounds=args.rounds,
        pinned=bool(pinned(GATEWAY_CPU)),
        busy_before=args.busy_before,
        c1_direct_p50=c1.direct.p50_ms,
        c1_through_p50=c1.through.p50_ms,
        c1_direct_p99=c1.direct.p99_ms,
        c1_through_p99=c1.through.p99_ms,
        c64_direct_rps=c64.direct.rps,
        c64_through_rps=c64.through.rps,
        c64_direct_p99=c64.direct.p99_ms,
        c64_through_p99=c64.through.p99_ms,
        cpu_ms_per_request_c1=c1.cpu_ms,
        cpu_ms_per_request_c64=c64.cpu_ms,
        gateway_cpu_share_c64=c64.cpu_share,
        ttft_direct=ttft[0],
        ttft_through=ttft[1],
        peak_rss_mib=rss,
        start_seconds=starts,
    )


# -- tracing off and on ----------------------------------------------------------------------


@dataclass
class Traced:
    """One gateway's numbers at one concurrency: the median round, CPU ms per request."""

    median: Load
    cpu_ms: float


def measure_pair(
    load: Callable[[int, int, float, Path], Load],
    gateways: Sequence[tuple[int, int]],
    connections: int,
    args: argparse.Namespace,
) -> list[Traced]:
    """`args.rounds` alternating rounds over `gateways` (pid, port): each one's median round
    and CPU per request over all its rounds."""
    runs: list[list[Load]] = [[] for _ in gateways]
    cpu = [0.0 for _ in gateways]
    for _ in range(args.rounds):
        for side, (pid, port) in enumerate(gateways):
            before = cpu_seconds(pid)
            result = load(port, connections, args.seconds, args.script)
            cpu[side] += cpu_seconds(pid) - before
            if result.errors:
                print(f"warning: {result.errors} non-2xx answers at c{connections}", flush=True)
            runs[side].append(result)
    out = []
    for side, results in enumerate(runs):
        ordered = sorted(results, key=lambda r: -r.rps)
        requests = sum(r.requests for r in results)
        out.append(Traced(ordered[len(ordered) // 2], cpu[side] / max(requests, 1) * 1000))
    return out


def run_tracing(args: argparse.Namespace, load: Callable[[int, int, float, Path], Load]) -> str:
    """Tracing off against tracing on (no-op exporter), side by side: the printed table."""
    tmp = Path(args.tmp)
    upstream_port = free_port()
    upstream_command = [sys.executable, "-m", "turnout.mock_upstream", "--port", str(upstream_port)]
    upstream, _ = spawn([*pinned(UPSTREAM_CPU), *upstream_command], upstream_port, tmp / "up.log")
    started: list[subprocess.Popen[bytes]] = []
    try:
        config = write_config(tmp, upstream_port)
        gateways = []
        for name, command in (("off", gateway_command), ("on", traced_gateway_command)):
            port = free_port()
            process, _ = spawn(command(config, port), port, tmp / f"gateway-{name}.log")
            started.append(process)
            gateways.append((process.pid, port))
        for _, port in gateways:
            load(port, 64, 1.0, args.script)
        print("measuring concurrency 1 ...", flush=True)
        c1 = measure_pair(load, gateways, 1, args)
        print("measuring concurrency 64 ...", flush=True)
        c64 = measure_pair(load, gateways, 64, args)
    finally:
        for process in started:
            stop(process)
        stop(upstream)
    rows = [
        ("gateway CPU per request, c64 (ms)", c64[0].cpu_ms, c64[1].cpu_ms, 3),
        ("gateway CPU per request, c1 (ms)", c1[0].cpu_ms, c1[1].cpu_ms, 3),
        ("req/s, c64", c64[0].median.rps, c64[1].median.rps, 0),
        ("latency p99, c64 (ms)", c64[0].median.p99_ms, c64[1].median.p99_ms, 2),
        ("latency p50, c1 (ms)", c1[0].median.p50_ms, c1[1].median.p50_ms, 3),
    ]
    head = ("metric", "tracing off", "on (no-op exporter)", "added")
    lines = [head] + [
        (name, _cell(off, digits), _cell(on, digits), _cell(on - off, digits))
        for name, off, on, digits in rows
    ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    generator = "wrk" if load is load_wrk else "aiohttp (in-process)"
    return f"load: {generator}, {args.seconds:g} s per run, {args.rounds} alternating rounds\n" + (
        "\n".join(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(line, widths, strict=True))
            )
            for line in lines
        )
    )


# -- the table -------------------------------------------------------------------------------


def _cell(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def table(report: Report) -> str:
    """Each number beside its target, whether it meets it, and the reference numbers."""
    r = report
    start = statistics.median(r.start_seconds)
    rows: list[tuple[str, float | None, float | None, float | None, str, bool | None, str, str]]
    rows = [
        # metric, direct, through, added, target, met, LiteLLM, nginx
        ("latency p50, c1 (ms)", r.c1_direct_p50, r.c1_through_p50,
         r.c1_through_p50 - r.c1_direct_p50, "added <= 0.5",
         r.c1_through_p50 - r.c1_direct_p50 <= 0.5, "+17.5", "+0.27"),
        ("latency p99, c1 (ms)", r.c1_direct_p99, r.c1_through_p99,
         r.c1_through_p99 - r.c1_direct_p99, "", None, "", ""),
        ("req/s, c64", r.c64_direct_rps, r.c64_through_rps, None, ">= 3,000",
         r.c64_through_rps >= 3000, "57", ""),
        ("latency p99, c64 (ms)", r.c64_direct_p99, r.c64_through_p99,
         r.c64_through_p99 - r.c64_direct_p99, "", None, "", ""),
        ("gateway CPU per request, c64 (ms)", None, r.cpu_ms_per_request_c64, None, "<= 0.25",
         r.cpu_ms_per_request_c64 <= 0.25, "13-20", "0.04-0.12"),
        ("gateway CPU per request, c1 (ms)", None, r.cpu_ms_per_request_c1, None, "", None,
         "", ""),
        ("stream first token p50, c1 (ms)", r.ttft_direct, r.ttft_through,
         r.ttft_through - r.ttft_direct, "added <= 0.5",
         r.ttft_through - r.ttft_direct <= 0.5, "+21", ""),
        ("gateway peak RSS (MiB)", None, r.peak_rss_mib, None, "<= 80", r.peak_rss_mib <= 80,
         "330-384", ""),
        ("start to first request (s)", None, start, None, "<= 1", start <= 1, "8-13", ""),
    ]  # fmt: skip
    head = ("metric", "direct", "through", "added", "target", "met", "LiteLLM", "nginx")
    lines = [
        (name, _cell(d), _cell(t), _cell(a), target, {None: "", True: "yes", False: "NO"}[met],
         lite, nginx)
        for name, d, t, a, target, met, lite, nginx in rows
    ]  # fmt: skip
    widths = [max(len(line[i]) for line in (head, *lines)) for i in range(len(head))]
    return "\n".join(
        "  ".join(cell.ljust(w) if i in (0, 4, 5) else cell.rjust(w)
                  for i, (cell, w) in enumerate(zip(line, widths, strict=True))).rstrip()
        for line in (head, *lines)
    )  # fmt: skip


def preamble(report: Report) -> str:
    """Where each process ran and how the load was made."""
    where = (
        f"gateway pinned to CPU {GATEWAY_CPU}; mock upstream, load generator and this script "
        f"share CPU {UPSTREAM_CPU}"
        if report.pinned
        else "not pinned (needs taskset and two CPUs): every process shares the machine"
    )
    starts = ", ".join(f"{s:.2f}" for s in report.start_seconds)
    text = (
        f"{where}\n"
        f"load: {report.load_generator}, {report.seconds:g} s per run, {report.rounds} "
        f"alternating rounds (median kept); starts timed (s): {starts}\n"
        f"at c64 the gateway used {report.gateway_cpu_share_c64:.0%} of its CPU\n"
        "LiteLLM and nginx: reference numbers from the same kind of machine, not measured here"
    )
    if report.gateway_cpu_share_c64 < SATURATED:
        text += (
            "\nwarning: the gateway did not get its whole CPU at c64: other work shared it, so"
            " req/s and latencies there are pessimistic"
        )
    if report.busy_before > BUSY:
        text += (
            f"\nwarning: other work kept the CPUs {report.busy_before:.0%} busy just before"
            " the run: the numbers are pessimistic"
        )
    return text


# -- profile ---------------------------------------------------------------------------------


def profile(
    pid: int, port: int, args: argparse.Namespace, load: Callable[[int, int, float, Path], Load]
) -> None:
    """Sample the gateway with py-spy under concurrency-64 load; print the top own-time
    functions and own time by package; keep the collapsed stacks (speedscope reads them)."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        print("profile skipped: py-spy is not installed (pip install py-spy)")
        return
    raw = Path(args.profile_dir) / "gateway-profile.txt"
    # --native shows C frames (the cyclic GC, syscalls) but must pause the process per sample.
    mode = ["--native"] if args.native else ["--nonblocking"]
    record = [spy, "record", "--pid", str(pid), "--rate", "250", *mode]
    record += ["--duration", str(max(1, round(args.seconds))), "--format", "raw"]
    print("profiling the gateway with py-spy ...", flush=True)
    sampler = subprocess.Popen(  # noqa: S603 - fixed argv
        [*pinned(UPSTREAM_CPU), *record, "--output", str(raw)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    time.sleep(0.5)  # py-spy attaches
    load(port, 64, args.seconds, args.script)
    _, err = sampler.communicate(timeout=args.seconds + 30)
    if sampler.returncode != 0 or not raw.exists():
        print(f"profile failed: {err.decode(errors='replace').strip()}")
        return
    print(own_time_summary(raw.read_text(), top=args.top))
    print(f"collapsed stacks: {raw} (open in https://www.speedscope.app or flamegraph.pl)")


_FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^()]*?)(?::\d+)?\)$")


def _place(frame: str) -> tuple[str, str]:
    """(`function (short file)`, package) of a py-spy frame `func (path:line)`."""
    match = _FRAME.match(frame.strip())
    if match is None:
        return frame.strip(), "?"
    path = match.group("file")
    for marker in ("site-packages/", "/src/", "/lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    if path.startswith(".") and "/" in path:  # lib/python3.11/asyncio/... -> asyncio/...
        path = path.split("/", 1)[1]
    parts = path.split("/")
    package = "/".join(parts[:2]) if parts[0] == "turnout" and len(parts) > 2 else parts[0]
    return f"{match.group('func')} ({path})", package.removesuffix(".py")


def own_time_summary(collapsed: str, top: int = 25) -> str:
    """From py-spy's collapsed stacks: the functions with the most own (leaf) samples, own
    samples by package, and the turnout functions with the most inclusive samples."""
    own: dict[str, int] = {}
    by_package: dict[str, int] = {}
    inclusive: dict[str, int] = {}
    total = 0
    for line in collapsed.splitlines():
        stack, _, text = line.rpartition(" ")
        if not stack or not text.isdigit():
            continue
        samples = int(text)
        places = [_place(frame) for frame in stack.split(";")]
        function, package = places[-1]
        own[function] = own.get(function, 0) + samples
        by_package[package] = by_package.get(package, 0) + samples
        for name in {name for name, package in places if package.startswith("turnout")}:
            inclusive[name] = inclusive.get(name, 0) + samples
        total += samples
    if total == 0:
        return "no samples"
    return "\n".join(
        [
            f"own time, top {top} functions ({total} samples while busy):",
            *_shares(own, total, top),
            "own time by package:",
            *_shares(by_package, total, 15),
            f"inclusive time, top {top} turnout functions:",
            *_shares(inclusive, total, top),
        ]
    )


def _shares(counts: dict[str, int], total: int, top: int) -> list[str]:
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:top]
    return [f"  {count / total:6.1%}  {name}" for name, count in ranked]


# -- command line ----------------------------------------------------------------------------


def main() -> int:
    """Parse the options, run, print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="per load run (5)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per side (3)")
    parser.add_argument("--samples", type=int, default=300, help="streams per side (300)")
    parser.add_argument("--starts", type=int, default=3, help="gateway starts timed (3)")
    parser.add_argument("--quick", action="store_true", help="2 s runs, 1 round, 100 streams")
    parser.add_argument("--profile", action="store_true", help="then sample with py-spy")
    parser.add_argument("--native", action="store_true", help="profile C frames too (slower)")
    parser.add_argument("--profile-dir", default=tempfile.gettempdir(), help="py-spy output")
    parser.add_argument("--top", type=int, default=25, help="functions in the profile (25)")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    parser.add_argument(
        "--serve-arg", action="append", default=[], help="add to `turnout serve` (repeatable)"
    )
    parser.add_argument("--python-load", action="store_true", help="aiohttp even if wrk exists")
    parser.add_argument(
        "--state", default="memory", help="the gateway's `state:` (memory, or a redis:// URL)"
    )
    parser.add_argument(
        "--tracing", action="store_true", help="instead: tracing off against on (no-op exporter)"
    )
    args = parser.parse_args()
    # SIGTERM (e.g. from `timeout`) unwinds like Ctrl-C, so the subprocesses are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.quick:
        args.seconds, args.rounds, args.samples, args.starts = 2.0, 1, 100, 1
    if pinned(UPSTREAM_CPU):
        os.sched_setaffinity(0, {UPSTREAM_CPU})  # this script and its load share CPU 1
    load = load_python if args.python_load or not shutil.which("wrk") else load_wrk
    args.busy_before = busy_share()
    with tempfile.TemporaryDirectory() as tmp:
        args.tmp = tmp
        args.script = wrk_script(Path(tmp))
        if args.tracing:
            print(run_tracing(args, load))
            return 0
        report = run(args, load)
    if args.json:
        print(json.dumps(asdict(report), indent=2))
        return 0
    print(preamble(report))
    print(table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
