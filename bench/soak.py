"""A bounded fault soak: many requests through `turnout serve` while the upstream misbehaves, then
an abuse phase beside legitimate traffic. It measures; it passes or fails nothing.

Run: ``python bench/soak.py [--requests N] [--concurrency C] [--quick] [--seed S]``.

``turnout mock-upstream`` and ``turnout serve --config <generated temp config>`` run as
subprocesses (the gateway on CPU 0, the mock upstream and this script on CPU 1 when ``taskset``
and two CPUs are there). The config has route ``soak`` with three targets on the mock upstream,
tried in order (target timeout and first-token timeout 1 s; the breaker opens after 8 failures in
a row, not 3, as one call in five fails here, and cools down for 1 s), and route
``soak-clean`` with one target that never fails, for the abuse phase.

Soak: ``--requests`` (100,000; ``--quick`` 5,000) at ``--concurrency`` (64), a third of them
streams, in rounds. Before each round every target's model gets a script of one fault step per
request it may see (``POST /_mock/scripts``), drawn from ``FAULT_MIX``: about one upstream call in
five gets a 429, a 503, a TCP reset, a dropped connection before the first token, one after it,
or a hang. After each round the mock's request log is read and cleared. Counted:

- lost: no response (the connection failed or the body was cut short);
- hangs: no whole answer within ``HANG_BOUND`` seconds;
- 5xx with a healthy target left: an error status whose ``x-turnout-attempts`` shows a target
  ``not_tried`` (one skipped for its health is not healthy);
- duplicate upstream sends: the mock log holds the same request (its ``metadata.soak`` id) more
  often at one target than the routing record has calls there;
- streams broken after commit (the drop-after-first-token faults: expected, not failover's);
- the gateway's RSS (itself and any worker processes) before the soak, after it, and after abuse.

Abuse: legitimate requests on ``soak-clean`` at concurrency 8 for ``--abuse-seconds`` alone,
then as long again beside slowloris connections (request headers a byte every half second),
oversized headers (1 MiB), oversized bodies (8 MiB against ``max_body_bytes`` of 1 MiB) and idle
sockets; p50/p99 of both windows, and what became of each kind of abuse.

Every loop is bounded by a count and by ``--max-seconds`` (540; quick 150): past it no new
request starts and the table says so. All traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson

# The process helpers of the gateway benchmark beside this file (run from this folder).
from _gateway_procs import GATEWAY_CPU, UPSTREAM_CPU, free_port, pinned, post, stop

if TYPE_CHECKING:
    from collections.abc import Iterator

ROUTE, CLEAN = "soak", "soak-clean"
TARGETS = ("soak-a", "soak-b", "soak-c")
PATH = "/v1/chat/completions"
TARGET_TIMEOUT = 1.0  # seconds: the targets' timeout and first-token timeout
HANG_BOUND = 15.0  # seconds: a request not answered by then is a hang
START_LIMIT = 30.0
MAX_BODY = 1024 * 1024
CALLS = frozenset({"answered", "failed", "refused", "rejected", "lost_race", "cancelled"})
FAULT_MIX: tuple[tuple[str, str, float], ...] = (
    # (label, mock fault step, share of upstream calls)
    ("429", "status=429", 0.045),
    ("429 retry-after 0.1 s", "status=429;retry_after_ms=100", 0.005),
    ("503", "status=503", 0.04),
    ("reset", "reset", 0.03),
    ("drop before first token", "cut=0", 0.03),
    ("drop after first token", "cut=1", 0.03),
    ("hang", "hang", 0.02),
)
HEADERS = {"content-type": "application/json"}


# -- processes -------------------------------------------------------------------------------


def tree_rss_kib(pid: int) -> int:
    """VmRSS of `pid` plus its child processes (a server's workers), in KiB (Linux /proc)."""
    total = 0
    pending = [pid]
    while pending:
        current = pending.pop()
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
            for task in Path(f"/proc/{current}/task").iterdir():
                children = (task / "children").read_text().split()
                pending.extend(int(child) for child in children)
    return total


def body(model: str, soak_id: str, *, stream: bool) -> bytes:
    """A small chat request carrying its soak id where a same-format target keeps it."""
    return orjson.dumps(
        {
            "model": model,
            "messages": [{"role": "user", "content": "Why is checkout failing? One sentence."}],
            "max_tokens": 16,
            "stream": stream,
            "metadata": {"soak": soak_id},
        }
    )


def control(port: int, method: str, path: str, payload: Any = None) -> Any:
    """A mock upstream control call (`/_mock/...`); returns the parsed JSON answer."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        data = orjson.dumps(payload) if payload is not None else None
        conn.request(method, path, data, HEADERS)
        return orjson.loads(conn.getresponse().read())
    finally:
        conn.close()


def wait_until_serving(process: subprocess.Popen[bytes], check: Any, log: Path) -> None:
    """Poll `check()` until it is true (at most START_LIMIT seconds)."""
    started = time.monotonic()
    while time.monotonic() - started < START_LIMIT and process.poll() is None:
        with contextlib.suppress(OSError, http.client.HTTPException):
            if check():
                return
        time.sleep(0.02)
    raise RuntimeError(f"{process.args!r} did not serve; its output:\n{log.read_text()}")


def write_config(directory: Path, upstream: int) -> Path:
    """Route `soak` over three targets, route `soak-clean` over one, both on the mock."""
    targets = ", ".join(
        f"{{provider: mock, model: {t}, name: {t}, timeout: {TARGET_TIMEOUT},"
        f" first_token_timeout: {TARGET_TIMEOUT}}}"
        for t in TARGETS
    )
    path = directory / "turnout.yaml"
    path.write_text(
        "project: soak\n"
        f"server: {{auth: open, max_body_bytes: {MAX_BODY}}}\n"
        "providers:\n"
        f"  - {{name: mock, kind: openai, api_key: sk-soak,"
        f" base_url: 'http://127.0.0.1:{upstream}/v1'}}\n"
        "routes:\n"
        f"  - {{name: {ROUTE}, models: [{ROUTE}], stream_idle_timeout: 5,\n"
        "     circuit_breaker: {failure_threshold: 8, cooldown_seconds: 1},\n"
        f"     targets: [{targets}]}}\n"
        f"  - {{name: {CLEAN}, models: [{CLEAN}], targets: [{{provider: mock, model: {CLEAN}}}]}}\n"
    )
    return path


@contextlib.contextmanager
def servers(directory: Path, log_limit: int) -> Iterator[tuple[int, int, int]]:
    """The mock upstream and the gateway, started and stopped: (upstream port, gateway port,
    gateway pid)."""
    upstream, gateway = free_port(), free_port()
    upstream_log, gateway_log = directory / "upstream.log", directory / "gateway.log"
    mock = [sys.executable, "-m", "turnout.cli", "mock-upstream", "--port", str(upstream)]
    mock += ["--log-limit", str(log_limit), "--hold-limit", "30"]
    config = write_config(directory, upstream)
    serve = [sys.executable, "-m", "turnout.cli", "serve", "--config", str(config)]
    serve += ["--port", str(gateway)]
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for command, log in (
            (pinned(UPSTREAM_CPU) + mock, upstream_log),
            (pinned(GATEWAY_CPU) + serve, gateway_log),
        ):
            with log.open("wb") as sink:
                processes.append(subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT))  # noqa: S603
        wait_until_serving(
            processes[0], lambda: control(upstream, "GET", "/_mock/health"), upstream_log
        )
        clean = body(CLEAN, "warm-up", stream=False)
        wait_until_serving(processes[1], lambda: post(gateway, clean) == 200, gateway_log)
        yield upstream, gateway, processes[1].pid
    finally:
        for process in reversed(processes):
            stop(process)


# -- the soak --------------------------------------------------------------------------------


@dataclass(slots=True)
class Outcome:
    """What one request got: `kind` is ok, broken (a stream with an error event after commit),
    status (an error status), lost or hang; `detail` the status or exception name."""

    soak_id: str
    kind: str
    detail: str
    seconds: float
    attempts: str = ""


@dataclass
class Tally:
    """Everything the soak counts."""

    sent: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    statuses: Counter[str] = field(default_factory=Counter)
    lost: Counter[str] = field(default_factory=Counter)
    unrescued: int = 0
    duplicates: int = 0
    unseen_calls: int = 0
    upstream_calls: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    seconds: float = 0.0
    stopped_early: bool = False


def fault_script(rng: random.Random, steps: int) -> list[str]:
    """`steps` mock fault steps drawn from FAULT_MIX (the rest `ok`)."""
    specs = [spec for _, spec, _ in FAULT_MIX] + ["ok"]
    weights = [share for _, _, share in FAULT_MIX]
    weights.append(1.0 - sum(weights))
    return rng.choices(specs, weights, k=steps)


async def request(session: aiohttp.ClientSession, url: str, soak_id: str, stream: bool) -> Outcome:
    """One soak request, classified."""
    started = time.perf_counter()
    try:
        async with session.post(url, data=body(ROUTE, soak_id, stream=stream)) as reply:
            attempts = reply.headers.get("x-turnout-attempts", "")
            data = await reply.read()
            status = reply.status
    except TimeoutError:
        return Outcome(soak_id, "hang", "timeout", time.perf_counter() - started)
    except aiohttp.ClientError as exc:
        return Outcome(soak_id, "lost", type(exc).__name__, time.perf_counter() - started)
    seconds = time.perf_counter() - started
    if status != 200:
        return Outcome(soak_id, "status", str(status), seconds, attempts)
    if stream and b"data: [DONE]" not in data:
        kind = "broken" if b'"error"' in data else "lost"
        detail = "stream" if kind == "broken" else "no [DONE]"
        return Outcome(soak_id, kind, detail, seconds, attempts)
    return Outcome(soak_id, "ok", "200", seconds, attempts)


async def soak_round(
    upstream: int, gateway: int, numbers: range, args: argparse.Namespace, tally: Tally
) -> None:
    """One round: scripts queued, the requests `numbers` at the concurrency, the log read and
    checked."""
    control(upstream, "POST", "/_mock/reset")
    rng = random.Random(args.seed * 1_000_003 + numbers.start)
    for target in TARGETS:
        control(
            upstream,
            "POST",
            "/_mock/scripts",
            {"model": target, "faults": fault_script(rng, len(numbers))},
        )
    url = f"http://127.0.0.1:{gateway}{PATH}"
    outcomes: list[Outcome] = []
    timeout = aiohttp.ClientTimeout(total=HANG_BOUND)
    connector = aiohttp.TCPConnector(limit=args.concurrency)
    queue = iter(numbers)
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, headers=HEADERS
    ) as session:

        async def worker() -> None:
            for n in queue:
                if time.monotonic() > args.deadline:
                    tally.stopped_early = True
                    return
                outcomes.append(await request(session, url, f"s{n}", stream=n % 3 == 0))

        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
    log = control(upstream, "GET", "/_mock/requests")
    if len(log) >= args.log_limit:
        print("  warning: the mock's log was full, so some sends went uncounted", flush=True)
    check_round(log, outcomes, tally)


def check_round(log: list[dict[str, Any]], outcomes: list[Outcome], tally: Tally) -> None:
    """Count a round's outcomes, and compare the mock's log with the routing records."""
    sends: Counter[tuple[str, str]] = Counter()
    for entry in log:
        model, payload = entry.get("model"), entry.get("body")
        if model not in TARGETS or not isinstance(payload, dict):
            continue
        metadata = payload.get("metadata")
        if isinstance(metadata, dict) and isinstance(metadata.get("soak"), str):
            sends[metadata["soak"], model] += 1
            tally.upstream_calls += 1
            tally.faults[entry.get("fault") or "ok"] += 1
    for outcome in outcomes:
        tally.sent += 1
        tally.kinds[outcome.kind] += 1
        tally.latencies.append(outcome.seconds)
        if outcome.kind == "status":
            tally.statuses[outcome.detail] += 1
            if int(outcome.detail) >= 500 and "outcome=not_tried" in outcome.attempts:
                tally.unrescued += 1
        elif outcome.kind == "lost":
            tally.lost[outcome.detail] += 1
        if not outcome.attempts:
            continue
        calls: Counter[str] = Counter()
        for item in outcome.attempts.split(","):
            target, _, rest = item.partition(";")
            if rest.partition(";")[0].removeprefix("outcome=") in CALLS:
                calls[target] += 1
        for target in TARGETS:
            seen = sends[outcome.soak_id, target]
            tally.duplicates += max(0, seen - calls[target])
            tally.unseen_calls += max(0, calls[target] - seen)


async def run_soak(upstream: int, gateway: int, args: argparse.Namespace) -> Tally:
    """The whole soak, in rounds of `args.round_size`."""
    tally = Tally()
    started = time.perf_counter()
    first = 0
    while first < args.requests and not tally.stopped_early:
        count = min(args.round_size, args.requests - first)
        await soak_round(upstream, gateway, range(first, first + count), args, tally)
        first += count
        print(f"  {tally.sent:,} requests done, {time.perf_counter() - started:.0f} s", flush=True)
    tally.seconds = time.perf_counter() - started
    return tally


# -- the abuse phase ---------------------------------------------------------------------------


@dataclass
class Abuse:
    """What became of each kind of abuse, and the legitimate traffic beside it."""

    calm_ms: tuple[float, float, int] = (0.0, 0.0, 0)  # p50, p99, errors
    abused_ms: tuple[float, float, int] = (0.0, 0.0, 0)
    calm_requests: int = 0
    abused_requests: int = 0
    slowloris: int = 0
    slowloris_closed: list[float] = field(default_factory=list)
    idle: int = 0
    idle_closed: list[float] = field(default_factory=list)
    big_headers: Counter[str] = field(default_factory=Counter)
    big_bodies: Counter[str] = field(default_factory=Counter)


async def legit_load(port: int, seconds: float, concurrency: int = 8) -> tuple[list[float], int]:
    """Clean requests for `seconds`: their latencies and the count of non-200 answers."""
    latencies: list[float] = []
    errors = 0
    url = f"http://127.0.0.1:{port}{PATH}"
    payload = body(CLEAN, "legit", stream=False)
    timeout = aiohttp.ClientTimeout(total=HANG_BOUND)
    deadline = time.monotonic() + seconds
    async with aiohttp.ClientSession(timeout=timeout, headers=HEADERS) as session:

        async def worker() -> None:
            nonlocal errors
            while time.monotonic() < deadline:
                begun = time.perf_counter()
                try:
                    async with session.post(url, data=payload) as reply:
                        await reply.read()
                        errors += reply.status != 200
                except (TimeoutError, aiohttp.ClientError):
                    errors += 1
                latencies.append(time.perf_counter() - begun)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, errors


async def _held_open(port: int, deadline: float, drip: bool) -> float | None:
    """A connection that sends request headers a byte every half second (`drip`) or nothing;
    the seconds until the server closed it, or None when it was still open at `deadline`."""
    started = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 10_000
    try:
        sent = 0
        while time.monotonic() < deadline:
            if drip and sent < len(head):
                writer.write(head[sent : sent + 1])
                sent += 1
                await writer.drain()
            with contextlib.suppress(TimeoutError):
                if not await asyncio.wait_for(reader.read(65536), 0.5):
                    return time.monotonic() - started
    except OSError:
        return time.monotonic() - started
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return None


async def _oversized(port: int, headers_size: int, body_size: int) -> str:
    """One request with a huge header or a huge declared body; the answer's status, or how the
    connection ended (the answer is read while sending, as a server may answer early)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    answer = asyncio.ensure_future(reader.readline())
    try:
        head = f"POST {PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        head += f"Content-Length: {body_size}\r\n"
        with contextlib.suppress(OSError):
            writer.write(head.encode() + b"X-Big: " + b"a" * headers_size + b"\r\n\r\n")
            await writer.drain()
            chunk = b"x" * 65536
            for _ in range(body_size // len(chunk)):
                if answer.done():
                    break
                writer.write(chunk)
                await writer.drain()
        line = await asyncio.wait_for(answer, 5.0)
    except TimeoutError:
        return "no answer in 5 s"
    except OSError:
        return "reset"
    finally:
        answer.cancel()
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    return line.split(b" ")[1].decode() if line.count(b" ") >= 2 else "closed"


async def _repeat(port: int, deadline: float, tally: Counter[str], big_head: bool) -> None:
    while time.monotonic() < deadline:
        headers_size, body_size = (1024 * 1024, 0) if big_head else (0, 8 * MAX_BODY)
        tally[await _oversized(port, headers_size, body_size)] += 1
        await asyncio.sleep(0.05)


async def run_abuse(port: int, args: argparse.Namespace) -> Abuse:
    """Legitimate load alone, then beside the abuse, each for `args.abuse_seconds`."""
    abuse = Abuse(slowloris=args.slowloris, idle=args.idle)
    calm, calm_errors = await legit_load(port, args.abuse_seconds)
    abuse.calm_requests = len(calm)
    abuse.calm_ms = (percentile(calm, 50), percentile(calm, 99), calm_errors)
    deadline = time.monotonic() + args.abuse_seconds
    held = [_held_open(port, deadline, drip=True) for _ in range(args.slowloris)]
    held += [_held_open(port, deadline, drip=False) for _ in range(args.idle)]
    opened = asyncio.gather(*held, return_exceptions=True)
    floods = asyncio.gather(
        _repeat(port, deadline, abuse.big_headers, big_head=True),
        _repeat(port, deadline, abuse.big_bodies, big_head=False),
    )
    await asyncio.sleep(1.0)  # let the connections open before measuring beside them
    abused, abused_errors = await legit_load(port, max(1.0, deadline - time.monotonic()))
    closed = await opened
    await floods
    abuse.abused_requests = len(abused)
    abuse.abused_ms = (percentile(abused, 50), percentile(abused, 99), abused_errors)
    for index, result in enumerate(closed):
        target = abuse.slowloris_closed if index < args.slowloris else abuse.idle_closed
        if isinstance(result, float):
            target.append(result)
    return abuse


# -- report ----------------------------------------------------------------------------------


def percentile(values: list[float], pct: float) -> float:
    """The `pct` percentile of `values` (seconds) in milliseconds (0 when empty)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * pct / 100))] * 1000


def counts(counter: Counter[str]) -> str:
    """`a 3, b 1` by count, or `none`."""
    return ", ".join(f"{key} {value:,}" for key, value in counter.most_common()) or "none"


def closed_text(times: list[float], total: int) -> str:
    if not times:
        return f"0 of {total:,} (all still open at the end)"
    return f"{len(times):,} of {total:,}, median after {statistics.median(times):.1f} s"


def window(numbers: tuple[float, float, int], requests: int) -> str:
    """`p50 / p99 (n requests, e errors)` of a legitimate-load window."""
    return f"{numbers[0]:.1f} / {numbers[1]:.1f} ({requests:,} requests, {numbers[2]} errors)"


def table(tally: Tally, abuse: Abuse, rss: tuple[int, int, int], args: argparse.Namespace) -> str:
    """The results, one metric a row."""
    labels = {spec: label for label, spec, _ in FAULT_MIX}
    faults = Counter({labels.get(k, k): v for k, v in tally.faults.items()})
    rate = tally.sent / tally.seconds if tally.seconds else 0.0
    rows = [
        (
            "requests",
            f"{tally.sent:,} of {args.requests:,} at concurrency {args.concurrency}"
            + (" (stopped early: time bound)" if tally.stopped_early else ""),
        ),
        ("soak time, throughput", f"{tally.seconds:.0f} s, {rate:,.0f} req/s"),
        (
            "latency p50 / p99 (ms)",
            f"{percentile(tally.latencies, 50):.1f} / {percentile(tally.latencies, 99):.1f}",
        ),
        ("answered 200", f"{tally.kinds['ok']:,}"),
        ("streams broken after commit", f"{tally.kinds['broken']:,} (drops after the first token)"),
        ("error statuses", counts(tally.statuses)),
        ("lost (no whole response)", f"{tally.kinds['lost']:,} ({counts(tally.lost)})"),
        (f"hangs (> {HANG_BOUND:g} s)", f"{tally.kinds['hang']:,}"),
        ("5xx with a healthy target left", f"{tally.unrescued:,}"),
        ("duplicate upstream sends", f"{tally.duplicates:,}"),
        ("recorded calls the mock never saw", f"{tally.unseen_calls:,}"),
        ("upstream calls", f"{tally.upstream_calls:,} ({counts(faults)})"),
        (
            "gateway RSS before / after soak / after abuse (MiB)",
            " / ".join(f"{kib / 1024:.1f}" for kib in rss),
        ),
        ("legit p50 / p99, alone (ms)", window(abuse.calm_ms, abuse.calm_requests)),
        ("legit p50 / p99, beside abuse (ms)", window(abuse.abused_ms, abuse.abused_requests)),
        ("slowloris closed by the gateway", closed_text(abuse.slowloris_closed, abuse.slowloris)),
        ("idle sockets closed by the gateway", closed_text(abuse.idle_closed, abuse.idle)),
        ("1 MiB header: answers", counts(abuse.big_headers)),
        (f"{8 * MAX_BODY // 2**20} MiB body: answers", counts(abuse.big_bodies)),
    ]
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)


def main() -> int:
    """Parse the options, run the soak and the abuse phase, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000, help="soak requests (100,000)")
    parser.add_argument("--concurrency", type=int, default=64, help="soak concurrency (64)")
    parser.add_argument("--round-size", type=int, default=10_000, help="requests a round")
    parser.add_argument("--abuse-seconds", type=float, default=20.0, help="each abuse window")
    parser.add_argument("--slowloris", type=int, default=200, help="slowloris connections")
    parser.add_argument("--idle", type=int, default=500, help="idle sockets")
    parser.add_argument("--max-seconds", type=float, default=540.0, help="soak time bound")
    parser.add_argument("--seed", type=int, default=7, help="fault draws")
    parser.add_argument("--quick", action="store_true", help="5,000 requests, short abuse")
    args = parser.parse_args()
    # SIGTERM (e.g. from `timeout`) unwinds like Ctrl-C, so the subprocesses are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.quick:
        args.requests, args.round_size, args.abuse_seconds = 5_000, 1_000, 5.0
        args.slowloris, args.idle, args.max_seconds = 50, 100, 150.0
    if pinned(UPSTREAM_CPU):
        os.sched_setaffinity(0, {UPSTREAM_CPU})  # this script and the mock share CPU 1
    args.log_limit = 4 * args.round_size  # a round's calls, retries and failovers included
    with tempfile.TemporaryDirectory() as tmp, servers(Path(tmp), args.log_limit) as ports:
        upstream, gateway, pid = ports
        rss_before = tree_rss_kib(pid)
        args.deadline = time.monotonic() + args.max_seconds
        print(f"soak: {args.requests:,} requests at concurrency {args.concurrency} ...", flush=True)
        tally = asyncio.run(run_soak(upstream, gateway, args))
        rss_soak = tree_rss_kib(pid)
        print(
            f"abuse: {args.abuse_seconds:g} s alone, then {args.abuse_seconds:g} s beside "
            f"{args.slowloris} slowloris, {args.idle} idle sockets, oversized headers and bodies",
            flush=True,
        )
        abuse = asyncio.run(run_abuse(gateway, args))
        rss_abuse = tree_rss_kib(pid)
    print(table(tally, abuse, (rss_before, rss_soak, rss_abuse), args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
