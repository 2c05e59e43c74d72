"""What the gateway adds with every part on; what each part costs; streams; two workers.

The gateway runs as people run it (JSON access lines to a file, metrics, the audit and usage
ledger in its SQLite store, health shared over Redis): DIRECT (load -> mock upstream) against
THROUGH (load -> turnout -> mock upstream), side by side in one run, each number beside its
target and the reference numbers; then what each of those parts costs alone, the CPU of a
streamed answer, and `--workers 2` against one worker.

Run: ``python bench/gateway.py [--seconds N] [--rounds R] [--quick] [--json] [--profile]``.

``turnout mock-upstream`` and ``turnout serve --config <generated temp config>`` run as
subprocesses: the gateway pinned to CPU 0, the mock upstream to CPU 1 (``taskset``, when the
machine has two CPUs); the load generator and this script share CPU 1 with the upstream. The
config has a route with one openai-kind target at the mock upstream, a route whose target
streams ten events, ``server.auth: open``, the default SQLite store beside it (so the audit and
usage ledger are written there) and ``state:`` the ``--redis`` database, flushed first.
``turnout serve`` runs with ``--log-format json``; its output goes to a file.

Load comes from ``wrk`` when installed (a Lua script for the POST body, ``--latency`` for
percentiles), else from an in-process aiohttp generator; every run is bounded by ``--seconds``.
Measured, every part on:

- latency p50/p99 at concurrency 1, and req/s and p99 at concurrency 64, direct and through
  (``--rounds`` alternating rounds; the median round of each side is kept);
- gateway CPU milliseconds per proxied request: /proc/<pid>/stat utime+stime of the serving
  process and of its audit writer process (its child, on the same CPU) from before the first
  round to just after the last (the audit writer finishes the last batch), divided by the
  requests answered through it; each process's share and the context switches per request
  (every thread of both) are printed under the table;
- streaming time to first token added: a small aiohttp client timing the first SSE event
  that carries content, alternating direct and through, concurrency 1;
- the CPU of a ten-event stream: many streams in a loop, gateway CPU ÷ streams, beside the
  upstream's own CPU per stream;
- the gateway's peak RSS (VmHWM of /proc/<pid>/status) after all of the above;
- seconds from spawning ``turnout serve`` to its first answered request (median of a few starts);
- that every part counted: the routed requests in the scraped ``/metrics``, the lines of the
  access log and the rows of the audit.

Then (unless ``--no-parts``) six gateways side by side on CPU 0: every part off, each part alone,
every part on; their CPU per request at c64 and c1, and each part's cost over the bare one.
Then (unless ``--no-workers``) ``--workers 2`` against one worker, every part on, nothing pinned.

``--profile`` samples the everything-on gateway with py-spy under concurrency-64 load and prints
the functions with the most own time (the collapsed stacks are kept for a flame graph).

``--tracing`` instead measures what tracing costs: two gateways over the same config, one with
tracing off and one with an OpenTelemetry SDK tracer provider whose exporter drops every span
(so spans are made, batched and handed over, but nothing is sent), loaded in alternating
rounds at concurrency 1 and 64; each one's CPU per request and req/s side by side. All traffic
stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp
from _gateway_parts import (
    PartCost,
    StreamCost,
    Workers,
    part_costs,
    parts_table,
    rounds,
    stream_cpu,
    workers,
)
from _gateway_procs import (
    GATEWAY_CPU,
    PATH,
    STREAM_BODY,
    UPSTREAM_CPU,
    Counted,
    Parts,
    Run,
    busy_share,
    can_pin,
    count_files,
    flush_redis,
    free_port,
    gateway_command,
    load_average,
    load_python,
    load_wrk,
    pinned,
    scrape,
    serve_args,
    settle_below,
    spawn,
    start_upstream,
    status_kib,
    stop,
    write_config,
    wrk_script,
)
from _gateway_profile import profile

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Sequence

    from _gateway_procs import Load

CONTENT = re.compile(rb'"delta":\{[^}]*"content":"[^"]')  # a delta with non-empty text
BUSY = 0.10  # a share of CPU time busy before the run that is worth a warning
SATURATED = 0.85  # under c64 the gateway should use at least this share of its CPU
REDIS = "redis://127.0.0.1:6379/14"  # the benchmark's own database, flushed before use


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

    direct: Run
    through: Run
    cpu_ms: float  # the serving process and its audit writer process
    cpu_share: float  # gateway CPU seconds per second of the through windows
    own_ms: float = 0.0  # the serving process alone
    audit_ms: float = 0.0  # its audit writer process alone
    switches: float = 0.0  # context switches per request, every thread of both


def measure(
    load: Load, ports: tuple[int, int], gateway_pid: int, connections: int, args: argparse.Namespace
) -> Sides:
    """`args.rounds` alternating rounds of direct then through at `connections`."""
    direct, through = rounds(
        lambda port: load(port, connections, args.seconds, args.script),
        [(ports[0], []), (ports[1], [gateway_pid])],
        args.rounds,
    )
    elapsed = sum(r.seconds for r in through.runs)
    by_latency = connections == 1
    return Sides(
        direct.median(by_latency),
        through.median(by_latency),
        through.cpu_ms,
        through.cpu / max(elapsed, 1e-9),
        through.own_cpu_ms,
        through.below_cpu_ms,
        through.switches_per_request,
    )


@dataclass
class Report:
    """Every number of one run (milliseconds unless named otherwise)."""

    load_generator: str
    seconds: float
    rounds: int
    pinned: bool
    busy_before: float
    load_average_before: float
    redis: str
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
    split_c64: tuple[float, float, float]  # serving process ms, audit process ms, switches
    split_c1: tuple[float, float, float]
    ttft_direct: float
    ttft_through: float
    stream: StreamCost
    peak_rss_mib: float
    start_seconds: list[float]
    counted: Counted
    parts: list[PartCost] | None
    workers: Workers | None
    load_average_after: float


def run(args: argparse.Namespace, load: Load) -> Report:
    """Start the processes, measure everything, stop them; `--profile` samples the gateway."""
    tmp = Path(args.tmp)
    flush_redis(args.redis)
    upstream, upstream_port = start_upstream(tmp)
    gateway: subprocess.Popen[bytes] | None = None
    try:
        folder = tmp / "main"
        config = write_config(folder, upstream_port, args.redis)
        starts = []
        for _ in range(args.starts):
            if gateway is not None:
                stop(gateway)
            port = free_port()
            command = gateway_command(config, port, Parts(), extra=args.serve_arg)
            gateway, seconds = spawn(command, port, folder / "gateway.log")
            starts.append(seconds)
        assert gateway is not None
        ports = (upstream_port, port)
        for warm in ports:
            load(warm, 64, 1.0, args.script)
        settle_below([gateway.pid])
        print("measuring concurrency 1 ...", flush=True)
        c1 = measure(load, ports, gateway.pid, 1, args)
        print("measuring concurrency 64 ...", flush=True)
        c64 = measure(load, ports, gateway.pid, 64, args)
        print("measuring time to first token ...", flush=True)
        ttft = asyncio.run(first_token_ms(*ports, args.samples))
        print("measuring the CPU of streams ...", flush=True)
        stream = stream_cpu(args, load, ports, (upstream.pid, gateway.pid))
        rss = status_kib(gateway.pid, "VmHWM") / 1024
        if args.profile:
            profile(gateway.pid, port, args, load)
        metrics = scrape(port)
        stop(gateway)
        count = count_files(metrics, folder)
        parts = None
        if args.parts:
            print("measuring each part alone ...", flush=True)
            parts = part_costs(args, load, upstream_port, tmp)
    finally:
        if gateway is not None:
            stop(gateway)
        stop(upstream)
    scaling = None
    if args.workers:
        print("measuring --workers 2 against one worker ...", flush=True)
        scaling = workers(args, tmp)
    return Report(
        load_generator="wrk" if load is load_wrk else "aiohttp (in-process)",
        seconds=args.seconds,
        rounds=args.rounds,
        pinned=can_pin(),
        busy_before=args.busy_before,
        load_average_before=args.load_before,
        redis=args.redis,
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
        split_c64=(c64.own_ms, c64.audit_ms, c64.switches),
        split_c1=(c1.own_ms, c1.audit_ms, c1.switches),
        ttft_direct=ttft[0],
        ttft_through=ttft[1],
        stream=stream,
        peak_rss_mib=rss,
        start_seconds=starts,
        counted=count,
        parts=parts,
        workers=scaling,
        load_average_after=load_average(),
    )


# -- tracing off and on ----------------------------------------------------------------------

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


def run_tracing(args: argparse.Namespace, load: Load) -> str:
    """Tracing off against tracing on (no-op exporter), every other part on, side by side:
    the printed table."""
    tmp = Path(args.tmp)
    flush_redis(args.redis)
    upstream, upstream_port = start_upstream(tmp)
    started: list[subprocess.Popen[bytes]] = []
    try:
        config = write_config(tmp / "traced", upstream_port, args.redis)
        sides: list[tuple[int, list[int]]] = []
        for name in ("off", "on"):
            port = free_port()
            command = gateway_command(config, port, Parts())
            if name == "on":
                serve = serve_args(config, port, Parts())
                command = [*pinned(GATEWAY_CPU), sys.executable, "-c", TRACED_SERVE, *serve]
            process, _ = spawn(command, port, tmp / f"gateway-{name}.log")
            started.append(process)
            sides.append((port, [process.pid]))
        for port, _ in sides:
            load(port, 64, 1.0, args.script)
        print("measuring concurrency 1 ...", flush=True)
        c1 = rounds(lambda port: load(port, 1, args.seconds, args.script), sides, args.rounds)
        print("measuring concurrency 64 ...", flush=True)
        c64 = rounds(lambda port: load(port, 64, args.seconds, args.script), sides, args.rounds)
    finally:
        for process in started:
            stop(process)
        stop(upstream)
    rows = [
        ("gateway CPU per request, c64 (ms)", c64[0].cpu_ms, c64[1].cpu_ms, 3),
        ("gateway CPU per request, c1 (ms)", c1[0].cpu_ms, c1[1].cpu_ms, 3),
        ("req/s, c64", c64[0].median().rps, c64[1].median().rps, 0),
        ("latency p99, c64 (ms)", c64[0].median().p99_ms, c64[1].median().p99_ms, 2),
        ("latency p50, c1 (ms)", c1[0].median(True).p50_ms, c1[1].median(True).p50_ms, 3),
    ]
    head = ("metric", "tracing off", "on (no-op exporter)", "added")
    lines = [head] + [
        (name, _cell(off, digits), _cell(on, digits), _cell(on - off, digits))
        for name, off, on, digits in rows
    ]
    generator = "wrk" if load is load_wrk else "aiohttp (in-process)"
    return f"load: {generator}, {args.seconds:g} s per run, {args.rounds} alternating rounds\n" + (
        _grid(lines, left=(0,))
    )


# -- the tables ------------------------------------------------------------------------------


def _cell(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _grid(lines: Sequence[tuple[str, ...]], left: tuple[int, ...]) -> str:
    """`lines` as aligned columns: those in `left` to the left, the others to the right."""
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) if i in left else c.rjust(w)
                  for i, (c, w) in enumerate(zip(line, widths, strict=True))).rstrip()
        for line in lines
    )  # fmt: skip


Row = tuple[str, float | None, float | None, float | None, str, bool | None, str, str]


def table(report: Report) -> str:
    """Each number beside its target, whether it meets it, and the reference numbers."""
    r = report
    start = statistics.median(r.start_seconds)
    added_p99 = r.c64_through_p99 - r.c64_direct_p99
    rows: list[Row] = [
        # metric, direct, through, added, target, met, LiteLLM, nginx
        ("latency p50, c1 (ms)", r.c1_direct_p50, r.c1_through_p50,
         r.c1_through_p50 - r.c1_direct_p50, "added <= 0.5",
         r.c1_through_p50 - r.c1_direct_p50 <= 0.5, "+17.5", "+0.11"),
        ("latency p99, c1 (ms)", r.c1_direct_p99, r.c1_through_p99,
         r.c1_through_p99 - r.c1_direct_p99, "", None, "", ""),
        ("req/s, c64", r.c64_direct_rps, r.c64_through_rps, None, ">= 14,000",
         r.c64_through_rps >= 14_000, "57", "32,003"),
        ("latency p99, c64 (ms)", r.c64_direct_p99, r.c64_through_p99, added_p99,
         "added <= 3", added_p99 <= 3, "", "+1.3"),
        ("gateway CPU per request, c64 (ms)", None, r.cpu_ms_per_request_c64, None, "<= 0.07",
         r.cpu_ms_per_request_c64 <= 0.07, "13-20", "0.02"),
        ("gateway CPU per request, c1 (ms)", None, r.cpu_ms_per_request_c1, None, "<= 0.10",
         r.cpu_ms_per_request_c1 <= 0.10, "", "0.06"),
        ("stream first token p50, c1 (ms)", r.ttft_direct, r.ttft_through,
         r.ttft_through - r.ttft_direct, "added <= 0.5",
         r.ttft_through - r.ttft_direct <= 0.5, "+21", ""),
        (f"gateway CPU per {r.stream.events}-event stream (ms)", r.stream.upstream_direct_ms,
         r.stream.gateway_ms, None, "<= 0.5", r.stream.gateway_ms <= 0.5, "", "0.39"),
        ("gateway peak RSS (MiB)", None, r.peak_rss_mib, None, "<= 80", r.peak_rss_mib <= 80,
         "330-384", "12"),
        ("start to first request (s)", None, start, None, "<= 1", start <= 1, "8-13", "0.3"),
    ]  # fmt: skip
    if r.workers is not None:
        w = r.workers
        rows.append(("req/s, c64, --workers 2 over 1", None, w.ratio, None, ">= 1.7x",
                     w.ratio >= 1.7, "", ""))  # fmt: skip
    head = ("metric", "direct", "through", "added", "target", "met", "LiteLLM", "nginx")
    lines = [head] + [
        (name, _cell(d), _cell(t), _cell(a), target, {None: "", True: "yes", False: "NO"}[met],
         lite, nginx)
        for name, d, t, a, target, met, lite, nginx in rows
    ]  # fmt: skip
    return _grid(lines, left=(0, 4, 5))


def preamble(report: Report) -> str:
    """Where each process ran, how the load was made, what was on."""
    where = (
        f"gateway pinned to CPU {GATEWAY_CPU}; mock upstream, load generator and this script "
        f"share CPU {UPSTREAM_CPU}"
        if report.pinned
        else "not pinned (needs taskset and two CPUs): every process shares the machine"
    )
    starts = ", ".join(f"{s:.2f}" for s in report.start_seconds)
    text = (
        f"{where}\n"
        "every part on: JSON access log to a file, metrics, audit and usage ledger (SQLite "
        f"beside the config), health shared over {report.redis}\n"
        f"load: {report.load_generator}, {report.seconds:g} s per run, {report.rounds} "
        f"alternating rounds (median kept); starts timed (s): {starts}\n"
        f"at c64 the gateway used {report.gateway_cpu_share_c64:.0%} of its CPU\n"
        f"machine: CPUs {report.busy_before:.0%} busy just before, load average "
        f"{report.load_average_before:.2f} before and {report.load_average_after:.2f} after\n"
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


def epilogue(report: Report) -> str:
    """What the gateway counted, the stream's numbers, the part table, the workers' numbers."""
    c, s = report.counted, report.stream
    split = "".join(
        f"\n  {name}: serving process {own:.3f} + audit process {audit:.3f} = "
        f"{own + audit:.3f} ms per request; {switched:.3f} context switches per request"
        for name, (own, audit, switched) in (("c64", report.split_c64), ("c1", report.split_c1))
    )
    text = (
        f"gateway CPU per request, counted in the serving process and its audit writer process:"
        f"{split}\n"
        f"counted by the everything-on gateway: {c.metrics_requests:,} routed requests in "
        f"/metrics, {c.access_lines:,} JSON access lines, {c.audit_rows:,} audit rows, "
        f"{c.audit_dropped:,} audit rows dropped\n"
        f"streams: {s.streams:,} streams of {s.events} events at concurrency {s.concurrency}; "
        f"gateway CPU {s.gateway_ms:.3f} ms per stream; the upstream's own "
        f"{s.upstream_direct_ms:.3f} ms direct, {s.upstream_through_ms:.3f} ms through"
    )
    if report.parts is not None:
        text += (
            "\n\neach part alone (six gateways side by side on the gateway CPU; cost = CPU per"
            " request over the bare gateway's, in microseconds):\n" + parts_table(report.parts)
        )
    if (w := report.workers) is not None:
        text += (
            "\n\n--workers 2 against one worker, every part on, NOTHING pinned: the workers, the "
            f"mock upstream and wrk ({w.wrk_threads} threads) share both CPUs, so two workers "
            "cannot get a CPU each\n"
            f"  req/s c64: 1 worker {w.rps_1:,.0f}, 2 workers {w.rps_2:,.0f}: {w.ratio:.2f}x\n"
            f"  gateway CPU per request (every process): {w.cpu_ms_1:.3f} ms with 1 worker, "
            f"{w.cpu_ms_2:.3f} ms with 2; if each worker had a CPU of its own: "
            f"{w.cpu_bound_ratio:.2f}x\n"
            f"  wrk's own CPU per request: {w.wrk_cpu_ms_1:.3f} ms (1 worker run), "
            f"{w.wrk_cpu_ms_2:.3f} ms (2 workers run)"
        )
    return text


def to_json(report: Report) -> dict[str, object]:
    """Every number of `report`, with the derived ones: each part's cost in microseconds over
    the bare gateway, and the workers' ratios."""
    out = asdict(report)
    if report.parts is not None:
        bare = report.parts[0]
        out["part_cost_us"] = {
            cost.name: {
                "c64": (cost.cpu_c64 - bare.cpu_c64) * 1000,
                "c1": (cost.cpu_c1 - bare.cpu_c1) * 1000,
            }
            for cost in report.parts[1:]
        }
    if report.workers is not None:
        out["workers"]["ratio"] = report.workers.ratio
        out["workers"]["cpu_bound_ratio"] = report.workers.cpu_bound_ratio
    return out


# -- command line ----------------------------------------------------------------------------


def main() -> int:
    """Parse the options, run, print the table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="per load run (5)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per side (3)")
    parser.add_argument("--samples", type=int, default=300, help="streams per side (300)")
    parser.add_argument("--starts", type=int, default=3, help="gateway starts timed (3)")
    parser.add_argument(
        "--quick", action="store_true", help="2 s runs (1 s per part), 1 round, 100 streams"
    )
    parser.add_argument("--parts-seconds", type=int, default=2, help="per part run, s (2)")
    parser.add_argument("--no-parts", dest="parts", action="store_false", help="skip the parts")
    parser.add_argument(
        "--no-workers", dest="workers", action="store_false", help="skip --workers 2"
    )
    parser.add_argument(
        "--stream-concurrency", type=int, default=16, help="streams at once for their CPU (16)"
    )
    parser.add_argument(
        "--redis", default=REDIS, help=f"the Redis database to share health on, flushed ({REDIS})"
    )
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
        "--tracing", action="store_true", help="instead: tracing off against on (no-op exporter)"
    )
    args = parser.parse_args()
    # SIGTERM (e.g. from `timeout`) unwinds like Ctrl-C, so the subprocesses are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.quick:
        args.seconds, args.rounds, args.samples, args.starts = 2.0, 1, 100, 1
        args.parts_seconds = 1.0
    if can_pin():
        os.sched_setaffinity(0, {UPSTREAM_CPU})  # this script and its load share CPU 1
    load = load_python if args.python_load or not shutil.which("wrk") else load_wrk
    if load is load_python:
        args.workers = False  # two workers are measured with wrk's threads only
    args.load_before = load_average()
    args.busy_before = busy_share()
    with tempfile.TemporaryDirectory() as tmp:
        args.tmp = tmp
        args.script = wrk_script(Path(tmp))
        if args.tracing:
            print(run_tracing(args, load))
            return 0
        report = run(args, load)
    if args.json:
        print(json.dumps(to_json(report), indent=2))
        return 0
    print(preamble(report))
    print(table(report))
    print(epilogue(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
