"""The measurements of `gateway.py` beyond its main table: what each part of the gateway costs
(`part_costs`), the CPU of a streamed answer (`stream_cpu`), and `--workers 2` against one
worker (`workers`).

Rule 1: the gateways compared run side by side and are loaded in alternating rounds, so a
change in the machine's load falls on all of them alike.
Rule 2: a gateway's CPU per request is its CPU time from before its first round to a moment
`SETTLE` after its last one (its audit writer finishes the last batch by then), divided by the
requests answered in its rounds; between its rounds it idles while the others are loaded. Its
CPU is its own process's plus its descendants' (the audit writer process), each also given
alone, as are its context switches per request (every thread of both).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from _gateway_procs import (
    GATEWAY_CPU,
    PARTS,
    SETTLE,
    STREAM_BODY,
    STREAM_EVENTS,
    STREAM_MODEL,
    STREAM_TARGET,
    Counted,
    Parts,
    Run,
    count_events,
    count_files,
    cpu_of,
    cpu_seconds,
    descendants,
    flush_redis,
    free_port,
    gateway_command,
    pin,
    scrape,
    settle_below,
    spawn,
    spawn_all,
    start_upstream,
    stop,
    switches,
    write_config,
    wrk,
    wrk_script,
)

if TYPE_CHECKING:
    import argparse
    import subprocess
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from _gateway_procs import Load


@dataclass
class Loaded:
    """One process's rounds at one concurrency: its runs and its CPU seconds over them."""

    runs: list[Run] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)  # per process loaded, in `sides` order
    below: float = 0.0  # CPU seconds of their descendants (audit writer processes)
    switched: int = 0  # context switches of the processes and their descendants

    @property
    def cpu(self) -> float:
        """CPU seconds of every process counted, their audit writer processes included."""
        return sum(self.cpus) + self.below

    @property
    def own_cpu_ms(self) -> float:
        """CPU milliseconds per request of the serving processes alone."""
        return sum(self.cpus) / max(self.requests, 1) * 1000

    @property
    def below_cpu_ms(self) -> float:
        """CPU milliseconds per request of their descendants (the audit writer processes)."""
        return self.below / max(self.requests, 1) * 1000

    @property
    def switches_per_request(self) -> float:
        """Context switches per request, every thread of every process counted."""
        return self.switched / max(self.requests, 1)

    @property
    def requests(self) -> int:
        """Requests answered over every round."""
        return sum(r.requests for r in self.runs)

    @property
    def cpu_ms(self) -> float:
        """CPU milliseconds per request."""
        return self.cpu / max(self.requests, 1) * 1000

    def median(self, by_latency: bool = False) -> Run:
        """The median round: by p50 latency, or by req/s."""
        key: Callable[[Run], float] = (lambda r: r.p50_ms) if by_latency else (lambda r: -r.rps)
        return sorted(self.runs, key=key)[len(self.runs) // 2]


def rounds(
    load: Callable[[int], Run],
    sides: Sequence[tuple[int, Sequence[int]]],
    count: int,
    *,
    children: bool = False,
) -> list[Loaded]:
    """`count` alternating rounds over `sides` (the port to load, the pids whose CPU counts):
    each side's runs and its processes' CPU seconds (Rule 2). `children`: count the pids'
    child processes too (worker processes)."""
    out = [Loaded() for _ in sides]
    before = [[cpu_seconds(p, children=children) for p in pids] for _, pids in sides]
    # Descendants counted apart (when `children` does not count them already).
    below = [[] if children else [d for p in pids for d in descendants(p)] for _, pids in sides]
    below_before = [cpu_of(pids) for pids in below]
    every = [[*pids, *more] for (_, pids), more in zip(sides, below, strict=True)]
    if children:
        every = [[*pids, *(d for p in pids for d in descendants(p))] for _, pids in sides]
    switched_before = [switches(pids) for pids in every]
    for _ in range(count):
        for side, (port, _pids) in enumerate(sides):
            result = load(port)
            if result.errors:
                print(f"warning: {result.errors} non-2xx answers from port {port}", flush=True)
            out[side].runs.append(result)
    time.sleep(SETTLE)
    for side, (_, pids) in enumerate(sides):
        after = [cpu_seconds(p, children=children) for p in pids]
        out[side].cpus = [a - b for a, b in zip(after, before[side], strict=True)]
        out[side].below = cpu_of(below[side]) - below_before[side]
        out[side].switched = switches(every[side]) - switched_before[side]
    return out


# -- each part alone -------------------------------------------------------------------------


@dataclass
class PartCost:
    """One gateway of the part table: CPU ms per request at c64 and c1, req/s at c64."""

    name: str
    cpu_c64: float
    cpu_c1: float
    rps_c64: float
    counted: Counted
    checked: bool  # each part counted exactly when it was on
    audit_process_c64: float = 0.0  # of cpu_c64: the audit writer process's share
    switches_c64: float = 0.0  # context switches per request at c64


def _check(parts: Parts, counted: Counted) -> bool:
    """Whether `counted` shows each part of `parts` at work when on and idle when off."""
    return (
        (counted.access_lines > 0) == parts.access_log
        and (counted.metrics_requests > 0) == parts.metrics
        and (counted.audit_rows > 0) == parts.audit
        and counted.shared_up == parts.redis
    )


def part_costs(
    args: argparse.Namespace, load: Load, upstream_port: int, tmp: Path
) -> list[PartCost]:
    """Bare (every part off), each part alone, every part on: gateways side by side on the
    gateway CPU, `args.rounds` alternating rounds of `args.parts_seconds` at c64 and at c1."""
    variants: list[tuple[str, Parts]] = [
        ("bare", Parts.only(None)),
        *((name, Parts.only(name)) for name in PARTS),
        ("all on", Parts()),
    ]
    flush_redis(args.redis)
    started: list[subprocess.Popen[bytes]] = []
    try:
        commands = []
        for number, (_name, parts) in enumerate(variants):
            folder = tmp / f"part-{number}"
            state = args.redis if parts.redis else "memory"
            config = write_config(folder, upstream_port, state, project=f"bench{number}")
            port = free_port()
            command = gateway_command(config, port, parts, cpu=None)
            commands.append((command, port, folder / "gateway.log"))
        # Started on any CPU (six starting on one would take long), then moved to the gateway's.
        print(f"  starting {len(commands)} gateways ...", flush=True)
        started = [process for process, _ in spawn_all(commands, limit=90)]
        for process in started:
            pin(process.pid, GATEWAY_CPU)
        sides: list[tuple[int, Sequence[int]]] = [
            (port, [process.pid]) for process, (_, port, _) in zip(started, commands, strict=True)
        ]
        for port, _ in sides:
            load(port, 64, 1.0, args.script)
        settle_below([process.pid for process in started])
        seconds = args.parts_seconds
        print("  measuring each part at concurrency 64 ...", flush=True)
        c64 = rounds(lambda port: load(port, 64, seconds, args.script), sides, args.rounds)
        print("  measuring each part at concurrency 1 ...", flush=True)
        c1 = rounds(lambda port: load(port, 1, seconds, args.script), sides, args.rounds)
        scraped = [scrape(port) for port, _ in sides]
    finally:
        for process in started:
            stop(process)
    costs = []
    for i, (name, parts) in enumerate(variants):
        counted = count_files(scraped[i], commands[i][2].parent)
        if not (checked := _check(parts, counted)):
            print(f"warning: the gateway with {name} did not count as its parts say: {counted}")
        costs.append(
            PartCost(
                name, c64[i].cpu_ms, c1[i].cpu_ms, c64[i].median().rps, counted, checked,
                c64[i].below_cpu_ms, c64[i].switches_per_request,
            )
        )  # fmt: skip
    return costs


def _counted(cost: PartCost) -> str:
    c = cost.counted
    up = "up" if c.shared_up else "-"
    mark = "" if cost.checked else "  NOT AS SET"
    return f"{c.access_lines}, {c.metrics_requests}, {c.audit_rows}, {up}{mark}"


def parts_table(costs: list[PartCost]) -> str:
    """Each part's CPU per request and its cost over the bare gateway, in microseconds."""
    bare = costs[0]
    head = ("gateway", "CPU/req c64 (us)", "cost c64 (us)", "CPU/req c1 (us)", "cost c1 (us)",
            "req/s c64", "audit proc c64 (us)", "switches/req c64",
            "counted (log, metrics, audit, redis)")  # fmt: skip
    lines = [head]
    for cost in costs:
        first = cost is bare
        lines.append((
            cost.name,
            f"{cost.cpu_c64 * 1000:.1f}",
            "" if first else f"{(cost.cpu_c64 - bare.cpu_c64) * 1000:+.1f}",
            f"{cost.cpu_c1 * 1000:.1f}",
            "" if first else f"{(cost.cpu_c1 - bare.cpu_c1) * 1000:+.1f}",
            f"{cost.rps_c64:,.0f}",
            f"{cost.audit_process_c64 * 1000:.1f}",
            f"{cost.switches_c64:.3f}",
            _counted(cost),
        ))  # fmt: skip
    parts = costs[1:-1]
    lines.append((
        "sum of the parts alone", "",
        f"{sum(c.cpu_c64 - bare.cpu_c64 for c in parts) * 1000:+.1f}", "",
        f"{sum(c.cpu_c1 - bare.cpu_c1 for c in parts) * 1000:+.1f}", "", "", "", "",
    ))  # fmt: skip
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join(
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                  for i, (c, w) in enumerate(zip(line, widths, strict=True))).rstrip()
        for line in lines
    )  # fmt: skip


# -- streams ---------------------------------------------------------------------------------


@dataclass
class StreamCost:
    """CPU per streamed answer of STREAM_EVENTS events: the gateway's, and the upstream's own
    when called directly and through the gateway."""

    events: int
    concurrency: int
    streams: int
    gateway_ms: float
    upstream_direct_ms: float
    upstream_through_ms: float


def stream_cpu(
    args: argparse.Namespace, load: Load, ports: tuple[int, int], pids: tuple[int, int]
) -> StreamCost:
    """Many streams in a loop at `args.stream_concurrency`, direct and through alternating:
    gateway CPU ÷ streams, and the upstream's CPU ÷ streams on each side. `ports` and `pids`:
    (upstream, gateway)."""
    tmp = args.script.parent
    direct = wrk_script(tmp, STREAM_BODY.replace(b"gpt-4o-mini", STREAM_TARGET.encode()), "d.lua")
    through = wrk_script(tmp, STREAM_BODY.replace(b"gpt-4o-mini", STREAM_MODEL.encode()), "t.lua")
    upstream, gateway = pids
    for port, script in ((ports[0], direct), (ports[1], through)):
        body = script.read_text().split("'")[1].encode()
        if (events := count_events(port, body)) != STREAM_EVENTS:
            raise RuntimeError(f"a stream from {port} had {events} events, not {STREAM_EVENTS}")
    concurrency, seconds = args.stream_concurrency, args.seconds
    for port, script in ((ports[0], direct), (ports[1], through)):
        load(port, concurrency, 1.0, script)
    # The upstream works in both windows: its CPU is read around each; the gateway idles in
    # the direct one, and its CPU is read until SETTLE after the through one (Rule 2).
    begun = cpu_seconds(upstream)
    direct_run = load(ports[0], concurrency, seconds, direct)
    upstream_direct = cpu_seconds(upstream) - begun
    begun, gateway_begun = cpu_seconds(upstream), cpu_seconds(gateway, children=True)
    through_run = load(ports[1], concurrency, seconds, through)
    upstream_through = cpu_seconds(upstream) - begun
    time.sleep(SETTLE)
    gateway_cpu = cpu_seconds(gateway, children=True) - gateway_begun
    for run in (direct_run, through_run):
        if run.errors:
            print(f"warning: {run.errors} non-2xx answers to streams", flush=True)
    streams = max(through_run.requests, 1)
    return StreamCost(
        events=STREAM_EVENTS,
        concurrency=concurrency,
        streams=through_run.requests,
        gateway_ms=gateway_cpu / streams * 1000,
        upstream_direct_ms=upstream_direct / max(direct_run.requests, 1) * 1000,
        upstream_through_ms=upstream_through / streams * 1000,
    )


# -- workers ---------------------------------------------------------------------------------


@dataclass
class Workers:
    """`--workers 2` against one worker, everything on, nothing pinned: req/s at c64 (median
    round), gateway CPU ms per request (every process), the load generator's CPU per request."""

    rps_1: float
    rps_2: float
    cpu_ms_1: float
    cpu_ms_2: float
    wrk_cpu_ms_1: float
    wrk_cpu_ms_2: float
    wrk_threads: int

    @property
    def ratio(self) -> float:
        """The measured throughput of two workers over one's."""
        return self.rps_2 / self.rps_1

    @property
    def cpu_bound_ratio(self) -> float:
        """Two workers over one if each had a CPU of its own and nothing else ran: twice the
        CPU per request of one worker over that of two."""
        return 2 * self.cpu_ms_1 / self.cpu_ms_2


def workers(args: argparse.Namespace, tmp: Path) -> Workers:
    """One worker and `--workers 2` side by side, everything on, every process on any CPU
    (with two workers on two CPUs nothing can be pinned apart), `args.rounds` alternating
    rounds of wrk with two threads at c64."""
    threads = 2
    flush_redis(args.redis)
    started: list[subprocess.Popen[bytes]] = []
    try:
        upstream, upstream_port = start_upstream(tmp, cpu=None)
        started.append(upstream)
        sides: list[tuple[int, Sequence[int]]] = []
        for count in (1, 2):
            folder = tmp / f"workers-{count}"
            config = write_config(folder, upstream_port, args.redis, project=f"workers{count}")
            port = free_port()
            extra = ("--workers", str(count))
            command = gateway_command(config, port, Parts(), cpu=None, extra=extra)
            print(f"  starting the gateway with {count} worker(s) ...", flush=True)
            process, _ = spawn(command, port, folder / "gateway.log")
            started.append(process)
            sides.append((port, [process.pid]))
        script = args.script

        def run(port: int, seconds: float = args.seconds) -> Run:
            return wrk(port, 64, seconds, script, threads=threads, cpu=None)

        for port, _ in sides:
            run(port, 1.0)  # warm-up
        print("  measuring 1 and 2 workers at concurrency 64 ...", flush=True)
        one, two = rounds(run, sides, args.rounds, children=True)
    finally:
        for process in reversed(started):
            stop(process)

    def wrk_ms(loaded: Loaded) -> float:
        return sum(r.load_cpu for r in loaded.runs) / max(loaded.requests, 1) * 1000

    return Workers(
        rps_1=one.median().rps,
        rps_2=two.median().rps,
        cpu_ms_1=one.cpu_ms,
        cpu_ms_2=two.cpu_ms,
        wrk_cpu_ms_1=wrk_ms(one),
        wrk_cpu_ms_2=wrk_ms(two),
        wrk_threads=threads,
    )
