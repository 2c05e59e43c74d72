"""How the gateway's cost grows with the work: four curves, one `turnout serve` worker each.

Run: ``python bench/scaling.py [--quick] [--json] [--profile] [--only bodies,events,open,config]``.

``turnout mock-upstream`` and ``turnout serve --config <generated>`` run as subprocesses, the
gateway pinned to CPU 0 and the mock upstream, the load (``wrk``, or this script's asyncio
stream client) and this script to CPU 1 when the machine has two (as ``gateway.py`` does).
Costs are the gateway's CPU time (utime + stime from /proc) and its VmRSS, which other work on
the machine distorts little; latencies are wall-clock and are not.

1. bodies: chat completions whose user message is 1 KB to 1 MB, through a same-format route
   (openai client, openai-kind target), ``wrk`` at 8 connections: CPU per request and per KB.
2. events: streams of 10 to 5,000 events (mock ``chunks=N``), 4 at a time: CPU per event.
3. open streams: 1 to 5,000 streams open at once, each sent an event every D seconds
   (``chunk_delay``; D grows with N so the total rate stays near 2,000 events/s), every event
   stamped with its send time by the mock (``stamp``): VmRSS per open stream, errors, and the
   event latency (client receive time minus the stamp) through the gateway and direct.
4. config: 10 to 10,000 routes and 10 to 100,000 caller keys: start time, and CPU per
   request at 64 connections for requests picking a random route or key (a ``wrk`` Lua
   script); plus in-process microseconds per resolution and per key lookup.

All traffic stays on 127.0.0.1; every run is bounded and every process is stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import _gateway_procs as gw
import _scaling_configs as configs
import _scaling_streams as client
import uvloop
from _gateway_profile import own_time_summary

if TYPE_CHECKING:
    from collections.abc import Sequence

START_LIMIT = 120.0  # seconds a gateway with a large config may take to serve
EVENT_RATE = 2000.0  # events a second across all open streams, at most
STREAM_SECONDS = 90.0  # how long an open stream would last if the client did not close it
CHAT = '{"model": "%s", "messages": [{"role": "user", "content": "%s"}], "max_tokens": 64}'


# -- processes -------------------------------------------------------------------------------


def _answers(port: int, body: bytes, headers: dict[str, str]) -> bool:
    with contextlib.suppress(OSError, http.client.HTTPException):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            conn.request("POST", "/v1/chat/completions", body, headers)
            response = conn.getresponse()
            response.read()
            return response.status == 200
        finally:
            conn.close()
    return False


def _serve_command(config: Path, port: int) -> list[str]:
    """`turnout serve` as shipped (text access lines, metrics, the audit in the SQLite store
    beside the config, memory state), pinned to the gateway's CPU."""
    serve = ["-m", "turnout.cli", "serve", "--config", str(config), "--port", str(port)]
    return [*gw.pinned(gw.GATEWAY_CPU), sys.executable, *serve]


def start_gateway(
    config: Path, log: Path, headers: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], int, float, float]:
    """`turnout serve --config config` on CPU 0, polled until a chat completion answers 200
    (with `headers`); the process, its port, the seconds from spawn to that answer and the
    CPU seconds the process had used by then."""
    port = gw.free_port()
    body = (CHAT % (configs.MODEL, "ping")).encode()
    sent = {"content-type": "application/json", **(headers or {})}
    with log.open("wb") as sink:
        started = time.perf_counter()
        process = subprocess.Popen(  # noqa: S603 - fixed argv
            _serve_command(config, port), stdout=sink, stderr=subprocess.STDOUT
        )
    try:
        while time.perf_counter() - started < START_LIMIT and process.poll() is None:
            if _answers(port, body, sent):
                return process, port, time.perf_counter() - started, gw.cpu_seconds(process.pid)
            time.sleep(0.01)
    except BaseException:
        gw.stop(process)
        raise
    gw.stop(process)
    raise RuntimeError(f"turnout serve did not serve; its output:\n{log.read_text()[-3000:]}")


def start_upstream(log: Path) -> tuple[subprocess.Popen[bytes], int]:
    """The mock upstream on CPU 1 with a short request log (bodies may be 1 MB)."""
    port = gw.free_port()
    command = [sys.executable, "-m", "turnout.mock_upstream", "--port", str(port)]
    command += ["--log-limit", "20", "--hold-limit", "120"]
    with log.open("wb") as sink:
        process = subprocess.Popen(  # noqa: S603 - fixed argv
            [*gw.pinned(gw.UPSTREAM_CPU), *command], stdout=sink, stderr=subprocess.STDOUT
        )
    deadline = time.perf_counter() + 30
    while time.perf_counter() < deadline:
        with contextlib.suppress(OSError, http.client.HTTPException):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", "/_mock/health")
            if conn.getresponse().status == 200:
                conn.close()
                return process, port
        time.sleep(0.05)
    gw.stop(process)
    raise RuntimeError("the mock upstream did not start")


@contextlib.contextmanager
def running(config: Path, log: Path, headers: dict[str, str] | None = None) -> Any:
    """A gateway for the block: (process, port, start seconds, start CPU seconds); stopped
    after it."""
    process, port, seconds, cpu = start_gateway(config, log, headers)
    try:
        yield process, port, seconds, cpu
    finally:
        gw.stop(process)


def wrk(port: int, script: Path, connections: int, seconds: float) -> gw.Run:
    """`wrk` with one thread; the Lua `script` makes the requests."""
    return gw.load_wrk(port, connections, seconds, script)


def lua_file_body(directory: Path, name: str, body_path: Path) -> Path:
    """A wrk script POSTing the bytes of `body_path`."""
    script = directory / f"{name}.lua"
    script.write_text(
        f'local f = io.open("{body_path}", "rb")\nwrk.body = f:read("*a")\nf:close()\n'
        'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
    )
    return script


def lua_random(directory: Path, name: str, count: int, *, keys: bool) -> Path:
    """A wrk script: each request a random route's model (half exact names, half pattern
    matches), or with `keys` a random caller key of `count`."""
    script = directory / f"{name}.lua"
    if keys:
        pick = (
            'local headers = {["Content-Type"] = "application/json",\n'
            '  ["Authorization"] = "Bearer sk-bench-" .. i}\n'
            f"local model = '{configs.MODEL}'\n"
        )
    else:
        pick = (
            'local headers = {["Content-Type"] = "application/json"}\n'
            "local model\n"
            'if math.random() < 0.5 then model = "model-" .. i '
            'else model = "family-" .. i .. "-x" end\n'
        )
    body = CHAT % ("' .. model .. '", "Why is checkout failing?")
    script.write_text(
        "math.randomseed(7)\n"
        "request = function()\n"
        f"local i = math.random(0, {count - 1})\n"
        f"{pick}"
        f"local body = '{body}'\n"
        'return wrk.format("POST", "/v1/chat/completions", headers, body)\n'
        "end\n"
    )
    return script


# -- 1. request bodies -----------------------------------------------------------------------


@dataclass
class BodyPoint:
    """One body size: requests, errors, gateway CPU per request and per KB."""

    kb: int
    requests: int
    errors: int
    cpu_ms: float
    cpu_us_per_kb: float
    rps: float


def body_curve(args: argparse.Namespace, upstream: int, tmp: Path) -> list[BodyPoint]:
    """Curve 1: `args.body_kb` sizes through the same-format route at 8 connections."""
    config = configs.write_config(tmp / "bodies.yaml", configs.config_text(_base(upstream)))
    points = []
    with running(config, tmp / "gateway-bodies.log") as (process, port, _, _):
        for kb in args.body_kb:
            words = ("lorem ipsum dolor sit amet " * (kb * 1024 // 27 + 1))[: kb * 1024 - 90]
            body_path = tmp / f"body-{kb}.json"
            body_path.write_text(CHAT % (configs.MODEL, words))
            script = lua_file_body(tmp, f"body-{kb}", body_path)
            wrk(port, script, 8, 1)  # warm-up
            before = gw.cpu_seconds(process.pid)
            load = wrk(port, script, 8, args.seconds)
            cpu = gw.cpu_seconds(process.pid) - before
            per = cpu / max(load.requests, 1) * 1000
            points.append(BodyPoint(kb, load.requests, load.errors, per, per * 1000 / kb, load.rps))
            print(f"  body {kb:>5} KB: {per:.3f} ms CPU per request", flush=True)
        if args.profile:
            kb = max(args.body_kb)
            print(f"profiling the gateway with {kb} KB bodies ...", flush=True)
            profile(process.pid, port, tmp / f"body-{kb}.lua", args)
    return points


def profile(pid: int, port: int, script: Path, args: argparse.Namespace) -> None:
    """py-spy's own-time summary of the gateway under `script`'s load (`gateway.py`'s)."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(spy).exists():
        print("profile skipped: py-spy is not installed (pip install py-spy)")
        return
    raw = Path(args.profile_dir) / "scaling-profile.txt"
    seconds = max(2, round(args.seconds * 2))
    record = [spy, "record", "--pid", str(pid), "--rate", "250", "--nonblocking"]
    record += ["--duration", str(seconds), "--format", "raw", "--output", str(raw)]
    sampler = subprocess.Popen(  # noqa: S603 - fixed argv
        [*gw.pinned(gw.UPSTREAM_CPU), *record], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    time.sleep(0.5)
    wrk(port, script, 8, seconds)
    _, err = sampler.communicate(timeout=seconds + 30)
    if sampler.returncode != 0 or not raw.exists():
        print(f"profile failed: {err.decode(errors='replace').strip()}")
        return
    print(own_time_summary(raw.read_text(), top=args.top))
    print(f"collapsed stacks: {raw}")


# -- 2. events per stream --------------------------------------------------------------------


@dataclass
class EventPoint:
    """Streams of one length: how many, events received, CPU per event and per stream."""

    events_per_stream: int
    streams: int
    events: int
    errors: int
    cpu_us_per_event: float
    cpu_ms_per_stream: float


def event_curve(args: argparse.Namespace, upstream: int, tmp: Path) -> list[EventPoint]:
    """Curve 2: streams of `args.events` lengths, 4 at a time, `args.event_budget` events
    (at least 8 streams) per length."""
    config = configs.write_config(tmp / "events.yaml", configs.config_text(_base(upstream)))
    points = []
    with running(config, tmp / "gateway-events.log") as (process, port, _, _):
        run(client.streams(port, f"{configs.MODEL}/fault:chunks=10", 20, 4))  # warm-up
        for length in args.events:
            model = f"{configs.MODEL}/fault:chunks={length}"
            count = max(8, args.event_budget // length)
            before = gw.cpu_seconds(process.pid)
            got = run(client.streams(port, model, count, 4))
            cpu = gw.cpu_seconds(process.pid) - before
            events = sum(r.events for r in got)
            errors = sum(r.error is not None or not r.complete for r in got)
            point = EventPoint(
                length, count, events, errors, cpu / max(events, 1) * 1e6, cpu / count * 1000
            )
            points.append(point)
            print(
                f"  {length:>5} events: {point.cpu_us_per_event:.1f} us CPU per event", flush=True
            )
    return points


# -- 3. open streams -------------------------------------------------------------------------


@dataclass
class OpenPoint:
    """N streams open at once: memory, errors, event latency through and direct."""

    streams: int
    interval_s: float
    rss_before_mib: float
    rss_open_mib: float
    kib_per_stream: float
    errors: int
    events: int
    cpu_us_per_event: float
    open_seconds: float
    p50_ms: float
    p99_ms: float
    direct_p50_ms: float | None = None
    direct_p99_ms: float | None = None
    first_errors: list[str] = field(default_factory=list)


@dataclass
class Window:
    """What one batch of open streams measured."""

    errors: int
    events: int
    latencies: list[float]
    open_seconds: float
    rss_kib: int | None
    cpu: float
    first_errors: list[str]


async def hold_streams(
    port: int, models: list[str], hold: float, pid: int | None, opening: int = 100
) -> Window:
    """Open one stream per model (at most `opening` connecting at once), wait until each has
    its first event, then `hold` seconds: the latencies of the events in that window, the
    VmRSS of `pid` at its end and its CPU over it; then close every stream."""
    gate = asyncio.Semaphore(opening)
    opened: list[client.StreamProtocol] = []
    futures: list[asyncio.Future[client.Received]] = []
    started = time.perf_counter()

    async def one(model: str) -> None:
        async with gate:
            protocol, done = await client.open_stream(port, model)
            opened.append(protocol)
            futures.append(done)
            await protocol.first  # the first stamped event, or the stream's end

    await asyncio.gather(*(one(model) for model in models))
    open_seconds = time.perf_counter() - started
    window_start = time.perf_counter()
    cpu_before = gw.cpu_seconds(pid) if pid else 0.0
    await asyncio.sleep(hold)
    window_end = time.perf_counter()
    rss = gw.status_kib(pid, "VmRSS") if pid else None
    cpu = (gw.cpu_seconds(pid) - cpu_before) if pid else 0.0
    for protocol in opened:
        protocol.close()
    await asyncio.sleep(0.2)
    latencies = [
        ms
        for protocol in opened
        for at, ms in protocol.got.latencies
        if window_start <= at <= window_end
    ]
    failed = [
        p.got.error or f"a {p.got.status} stream ended before the client closed it"
        for p in opened
        if p.got.error is not None or p.got.complete
    ]
    return Window(len(failed), len(latencies), latencies, open_seconds, rss, cpu, failed[:3])


def _pct(values: list[float], share: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def open_curve(args: argparse.Namespace, upstream: int, tmp: Path) -> list[OpenPoint]:
    """Curve 3: for each N of `args.open`, a fresh gateway, N stamped streams held open."""
    # One provider carries every stream: its `max_connections` is raised past the largest N.
    text = configs.config_text(_base(upstream), providers=1, stream_routes=1)
    config = configs.write_config(tmp / "open.yaml", text)
    points = []
    for count in args.open:
        interval = max(0.1, round(count / EVENT_RATE, 2))
        hold = max(args.hold, 4 * interval)
        # Streams of about STREAM_SECONDS, longer than opening them and the window: the client
        # closes them. (The mock builds a stream's events up front: no more than needed.)
        chunks = math.ceil(STREAM_SECONDS / interval)
        spec = f"fault:stamp;chunks={chunks};chunk_delay={interval}"
        through = [f"s0/{spec}"] * count
        with running(config, tmp / f"gateway-open-{count}.log") as (process, port, _, _):
            run(client.streams(port, f"{configs.MODEL}/fault:chunks=5", 20, 4))  # warm-up
            time.sleep(0.3)
            before = gw.status_kib(process.pid, "VmRSS")
            window = run(hold_streams(port, through, hold, process.pid))
        direct = run(hold_streams(upstream, [f"{configs.MODEL}/{spec}"] * count, hold, None))
        assert window.rss_kib is not None
        point = OpenPoint(
            streams=count,
            interval_s=interval,
            rss_before_mib=before / 1024,
            rss_open_mib=window.rss_kib / 1024,
            kib_per_stream=(window.rss_kib - before) / count,
            errors=window.errors,
            events=window.events,
            cpu_us_per_event=window.cpu / max(window.events, 1) * 1e6,
            open_seconds=window.open_seconds,
            p50_ms=_pct(window.latencies, 0.5),
            p99_ms=_pct(window.latencies, 0.99),
            direct_p50_ms=_pct(direct.latencies, 0.5),
            direct_p99_ms=_pct(direct.latencies, 0.99),
            first_errors=window.first_errors,
        )
        points.append(point)
        print(
            f"  {count:>5} open: {point.kib_per_stream:.1f} KiB per stream, "
            f"{point.errors} errors, p99 {point.p99_ms:.2f} ms (direct "
            f"{point.direct_p99_ms:.2f})",
            flush=True,
        )
    return points


# -- 4. routes and keys ----------------------------------------------------------------------


@dataclass
class ConfigPoint:
    """A config of N routes or N keys: start time, CPU per request at c64, in-process costs."""

    kind: str
    count: int
    start_s: float
    start_cpu_s: float  # the gateway's CPU seconds from spawn to its first answer
    restart_s: float | None  # the same, started again on the same file and store
    restart_cpu_s: float | None
    requests: int
    errors: int
    cpu_ms: float
    rss_mib: float
    load_cpu_s: float | None = None  # in-process: load_config (YAML and validation)
    build_cpu_s: float | None = None  # in-process: Runtime.from_config
    lookup_cold_us: float | None = None
    lookup_warm_us: float | None = None


def config_curve(args: argparse.Namespace, upstream: int, tmp: Path) -> list[ConfigPoint]:
    """Curve 4: for each N of `args.routes` and `args.keys`, start a gateway, load it with
    random routes or keys at 64 connections; with `args.micro`, the in-process costs."""
    points = []
    for kind, counts in (("routes", args.routes), ("keys", args.keys)):
        for count in counts:
            is_keys = kind == "keys"
            text = configs.config_text(_base(upstream), **{kind: count})
            # A directory of its own: the gateway's store (next to the file) starts empty.
            home = tmp / f"{kind}-{count}"
            home.mkdir()
            config = configs.write_config(home / "turnout.yaml", text)
            script = lua_random(tmp, f"{kind}-{count}", count, keys=is_keys)
            headers = {"authorization": f"Bearer {configs.caller_key(0)}"} if is_keys else None
            log = tmp / f"gateway-{kind}-{count}.log"
            with running(config, log, headers) as (process, port, seconds, start_cpu):
                wrk(port, script, 64, 1)  # warm-up
                before = gw.cpu_seconds(process.pid)
                load = wrk(port, script, 64, args.seconds)
                cpu = gw.cpu_seconds(process.pid) - before
                rss = gw.status_kib(process.pid, "VmRSS") / 1024
            again = again_cpu = None
            if args.restart:  # again on the same file: the store already holds its routes
                with running(config, log, headers) as (_, _, again, again_cpu):
                    pass
            point = ConfigPoint(
                kind, count, seconds, start_cpu, again, again_cpu, load.requests, load.errors,
                cpu / max(load.requests, 1) * 1000, rss,
            )  # fmt: skip
            if args.micro:
                measure = configs.measure_keys if is_keys else configs.measure_routes
                found = measure(config, count, args.lookups)
                point.load_cpu_s = found.steps.load
                point.build_cpu_s = found.steps.build
                if is_keys:
                    point.lookup_cold_us, point.lookup_warm_us = found.key_us, found.authenticate_us
                else:
                    point.lookup_cold_us = found.resolve_cold_us
                    point.lookup_warm_us = found.resolve_warm_us
            points.append(point)
            print(
                f"  {count:>6} {kind}: start {seconds:.2f} s ({start_cpu:.2f} s CPU; again "
                f"{_f(again_cpu)} s CPU), "
                f"{point.cpu_ms:.3f} ms CPU per request, {load.errors} non-2xx",
                flush=True,
            )
    return points


# -- the tables ------------------------------------------------------------------------------


def _base(upstream: int) -> str:
    return f"http://127.0.0.1:{upstream}/v1"


def run(coroutine: Any) -> Any:
    """Run `coroutine` on uvloop, as the gateway runs."""
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coroutine)


def _grid(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in (head, *rows)) for i in range(len(head))]
    return "\n".join(
        "  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True))
        for row in (head, *rows)
    )


def _f(value: float | None, digits: int = 2) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:,.{digits}f}"


def header(report: dict[str, Any]) -> str:
    """Where the processes ran, how busy the machine was, what the numbers are."""
    where = (
        f"gateway pinned to CPU {gw.GATEWAY_CPU}; mock upstream, load and this script on CPU "
        f"{gw.UPSTREAM_CPU}"
        if report["pinned"]
        else "not pinned: every process shares the machine"
    )
    return (
        f"{where}; CPUs busy before the run: {report['busy_before']:.0%}, load average "
        f"{report['load_average']:.1f}; took {report['seconds']:.0f} s\n"
        "costs are gateway CPU time and VmRSS; latencies are wall-clock (load distorts them)\n"
    )


def tables(report: dict[str, Any]) -> str:
    """Each curve as a table."""
    out: list[str] = []
    rows: list[tuple[str, ...]]
    head: tuple[str, ...]
    if report.get("bodies"):
        rows = [
            (f"{p['kb']:,}", f"{p['requests']:,}", str(p["errors"]), _f(p["cpu_ms"], 3),
             _f(p["cpu_us_per_kb"], 2), _f(p["rps"], 0))
            for p in report["bodies"]
        ]  # fmt: skip
        head = (
            "body KB",
            "requests",
            "non-2xx",
            "CPU ms/request",
            "CPU us/KB",
            "req/s",
        )
        out += ["1. request bodies, same-format route, 8 connections", _grid(head, rows), ""]
    if report.get("events"):
        rows = [
            (f"{p['events_per_stream']:,}", str(p["streams"]), f"{p['events']:,}",
             str(p["errors"]), _f(p["cpu_us_per_event"], 1), _f(p["cpu_ms_per_stream"], 2))
            for p in report["events"]
        ]  # fmt: skip
        head = (
            "events/stream",
            "streams",
            "events",
            "errors",
            "CPU us/event",
            "CPU ms/stream",
        )
        out += ["2. events per stream, 4 streams at a time", _grid(head, rows), ""]
    if report.get("open"):
        rows = [
            (f"{p['streams']:,}", _f(p["interval_s"], 2), _f(p["rss_before_mib"], 1),
             _f(p["rss_open_mib"], 1), _f(p["kib_per_stream"], 1), str(p["errors"]),
             f"{p['events']:,}", _f(p["cpu_us_per_event"], 1), _f(p["open_seconds"], 1),
             _f(p["p50_ms"]), _f(p["p99_ms"]), _f(p["direct_p50_ms"]), _f(p["direct_p99_ms"]))
            for p in report["open"]
        ]  # fmt: skip
        head = ("open", "every s", "RSS MiB", "open MiB", "KiB/stream", "errors", "events",
                "CPU us/ev", "open s", "p50 ms", "p99 ms", "direct p50", "direct p99")  # fmt: skip
        out += [
            "3. streams open at once (targets: <= 40 KiB per stream, no errors, p99 <= 5 ms)",
            _grid(head, rows),
            "",
        ]
    if report.get("config"):
        rows = [
            (p["kind"], f"{p['count']:,}", _f(p["start_s"]), _f(p.get("start_cpu_s")),
             _f(p.get("restart_cpu_s")), _f(p["cpu_ms"], 3),
             str(p["errors"]), _f(p["rss_mib"], 1), _f(p.get("load_cpu_s")),
             _f(p.get("build_cpu_s")), _f(p["lookup_cold_us"], 1),
             _f(p["lookup_warm_us"], 1))
            for p in report["config"]
        ]  # fmt: skip
        head = ("kind", "N", "start s", "start CPU s", "again CPU s", "CPU ms/req", "non-2xx",
                "RSS MiB", "load CPU s", "build CPU s", "lookup us", "lookup2 us")  # fmt: skip
        out += [
            "4. routes and keys, 64 connections, random route or key per request",
            _grid(head, rows),
            (
                "in-process CPU: load = load_config, build = Runtime.from_config; lookup us:"
                " routes resolve() without the resolver's cache, keys KeyRing.lookup;"
                " lookup2 us: routes resolve() with it, keys header authentication"
            ),
            "",
        ]
    return "\n".join(out)


# -- command line ----------------------------------------------------------------------------


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def _fill_defaults(args: argparse.Namespace) -> None:
    """The options not given: the full run's, or with `--quick` the quick run's."""
    defaults: dict[str, Any] = {
        "seconds": 3, "event_budget": 100_000, "hold": 3.0, "micro": True, "restart": True,
        "open": [1, 10, 100, 1000, 5000], "routes": [10, 100, 1000, 10_000],
        "keys": [10, 1000, 10_000, 100_000],
    }  # fmt: skip
    if args.quick:
        defaults.update(seconds=2, event_budget=30_000, hold=2.0, micro=False, restart=False)
        defaults.update(open=[1, 100, 1000], routes=[10, 10_000], keys=[10, 100_000])
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)


def run_curves(args: argparse.Namespace, wanted: set[str]) -> dict[str, Any]:
    """Start the mock upstream, measure the `wanted` curves, stop it: the report."""
    report: dict[str, Any] = {"busy_before": gw.busy_share(), "pinned": bool(gw.pinned(0))}
    report["load_average"] = os.getloadavg()[0]
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        upstream, port = start_upstream(tmp / "upstream.log")
        try:
            for curve, measure in (
                ("bodies", body_curve),
                ("events", event_curve),
                ("open", open_curve),
                ("config", config_curve),
            ):
                if curve in wanted:
                    print(f"{curve} ...", flush=True)
                    report[curve] = [asdict(p) for p in measure(args, port, tmp)]
        finally:
            gw.stop(upstream)
    report["seconds"] = time.perf_counter() - began
    return report


def main() -> int:
    """Parse the options, run the curves asked for, print the tables (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer points, shorter runs")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    parser.add_argument("--only", default="bodies,events,open,config", help="curves to run")
    parser.add_argument("--seconds", type=int, help="per wrk run, whole seconds (3; quick 2)")
    parser.add_argument("--body-kb", type=_ints, default=[1, 10, 100, 1000])
    parser.add_argument("--events", type=_ints, default=[10, 100, 1000, 5000])
    parser.add_argument("--event-budget", type=int, help="events per length (100000; 30000)")
    parser.add_argument("--open", type=_ints, help="1,10,100,1000,5000 (quick 1,100,1000)")
    parser.add_argument("--hold", type=float, help="seconds streams stay open (3; quick 2)")
    parser.add_argument("--routes", type=_ints, help="10,100,1000,10000 (quick 10,10000)")
    parser.add_argument("--keys", type=_ints, help="10,1000,10000,100000 (quick 10,100000)")
    parser.add_argument("--micro", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument(
        "--restart", action=argparse.BooleanOptionalAction, default=None, help="time a restart"
    )
    parser.add_argument("--lookups", type=int, default=20_000, help="in-process lookups per N")
    parser.add_argument("--profile", action="store_true", help="py-spy the largest body")
    parser.add_argument("--profile-dir", default=tempfile.gettempdir())
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--tables", metavar="JSON", help="print the tables of a --json output")
    args = parser.parse_args()
    if args.tables:
        report = json.loads(Path(args.tables).read_text())
        print(header(report))
        print(tables(report))
        return 0
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    out = sys.stdout
    if args.json:
        sys.stdout = sys.stderr  # progress lines go to stderr, the JSON alone to stdout
    _fill_defaults(args)
    if not shutil.which("wrk"):
        print("wrk is needed (bodies and config curves)", file=sys.stderr)
        return 2
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the children inherit it
    if gw.pinned(gw.UPSTREAM_CPU):
        os.sched_setaffinity(0, {gw.UPSTREAM_CPU})
    report = run_curves(args, set(args.only.split(",")))
    report["file_limit"] = [soft, hard]
    if args.json:
        print(json.dumps(report, indent=2), file=out)
        return 0
    print(header(report))
    print(tables(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
