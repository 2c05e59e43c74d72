"""Which async HTTP client the providers use: turnout's own HTTP/1.1 client (`Http1Transport`),
aiohttp and httpx, measured against the mock upstream.

Run: ``python bench/client.py [--quick]``. The mock upstream runs in a subprocess on CPU 0; the
client runs here on CPU 1 (when the machine has two), so the client's CPU time is its own. For
each client and event loop it reports, against ``POST /v1/chat/completions`` on 127.0.0.1:

- requests per second and p50/p99 latency at concurrency 1 and 64 (keep-alive pool);
- CPU milliseconds the client process spent per request (``time.process_time``);
- streaming: p50 time to the first content chunk (TTFT) and to the end of the stream.

Every loop is bounded by a request count; nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import aiohttp
import httpx
import uvloop

from turnout.providers.http1 import Http1Transport
from turnout.providers.transport import HttpTimeouts

BODY = (
    b'{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": '
    b'"Why is checkout failing? Answer in one sentence."}], "max_tokens": 64}'
)
STREAM_BODY = (
    b'{"model": "gpt-4o-mini", "stream": true, "stream_options": {"include_usage": true}, '
    b'"messages": [{"role": "user", "content": "Why is checkout failing?"}]}'
)
HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-bench"}
CONTENT_MARK = b'"delta":{"content":"m'

Call = Callable[[], Awaitable[None]]


@dataclass
class Result:
    """One measured scenario."""

    client: str
    scenario: str
    requests: int
    seconds: float
    cpu_seconds: float
    latencies: list[float]

    def row(self) -> str:
        """A table row."""
        lat = sorted(self.latencies)
        p50 = lat[len(lat) // 2] * 1000
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000
        rps = self.requests / self.seconds
        cpu = self.cpu_seconds / self.requests * 1000
        return (
            f"{self.client:<18} {self.scenario:<14} {rps:>9.0f} {p50:>9.2f} {p99:>9.2f} {cpu:>9.3f}"
        )


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def pin(cpu: int) -> None:
    """Pin this process to `cpu` when the machine has it."""
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > cpu:
        os.sched_setaffinity(0, {cpu})


def start_upstream(port: int) -> subprocess.Popen[bytes]:
    """The mock upstream in a subprocess on CPU 0; returns once it accepts connections."""
    command = [sys.executable, "-m", "turnout.mock_upstream", "--port", str(port)]
    if (os.cpu_count() or 1) > 1 and os.path.exists("/usr/bin/taskset"):
        command = ["/usr/bin/taskset", "-c", "0", *command]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL)  # noqa: S603 - fixed argv
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return process
        time.sleep(0.05)
    process.kill()
    raise RuntimeError("the mock upstream did not start")


async def measure(client: str, scenario: str, call: Call, n: int, concurrency: int) -> Result:
    """Run `n` calls with `concurrency` workers; latencies per call."""
    latencies: list[float] = []
    remaining = n

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            started = time.perf_counter()
            await call()
            latencies.append(time.perf_counter() - started)

    for _ in range(min(200, n)):  # warm the pool and the code paths
        await call()
    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Result(
        client, scenario, n, time.perf_counter() - t0, time.process_time() - cpu0, latencies
    )


async def ttft(client: str, stream: Callable[[], Awaitable[float]], n: int) -> Result:
    """Sequential streams; `latencies` are times to the first content chunk."""
    for _ in range(min(50, n)):
        await stream()
    cpu0, t0 = time.process_time(), time.perf_counter()
    firsts = [await stream() for _ in range(n)]
    return Result(
        client, "stream ttft", n, time.perf_counter() - t0, time.process_time() - cpu0, firsts
    )


async def bench_aiohttp(label: str, url: str, n: int) -> list[Result]:
    """aiohttp.ClientSession with a keep-alive TCPConnector."""
    results = []
    for concurrency in (1, 64):
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(connector=connector) as session:

            async def call() -> None:
                async with session.post(url, data=BODY, headers=HEADERS) as response:
                    await response.read()

            count = n if concurrency > 1 else n // 4
            results.append(await measure(label, f"c={concurrency}", call, count, concurrency))
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1)) as session:

        async def stream() -> float:
            started = time.perf_counter()
            first = 0.0
            async with session.post(url, data=STREAM_BODY, headers=HEADERS) as response:
                async for line in response.content:
                    if not first and CONTENT_MARK in line:
                        first = time.perf_counter() - started
            return first

        results.append(await ttft(label, stream, n // 20))
    return results


async def bench_http1(label: str, url: str, n: int) -> list[Result]:
    """turnout's Http1Transport, as a provider uses it (`post`, `stream` + `chunks`)."""
    results = []
    timeouts = HttpTimeouts(connect=10.0, read=30.0)
    for concurrency in (1, 64):
        transport = Http1Transport(provider="bench", timeouts=timeouts, max_connections=concurrency)

        async def call(transport: Http1Transport = transport) -> None:
            await transport.post(url, BODY, HEADERS)

        count = n if concurrency > 1 else n // 4
        results.append(await measure(label, f"c={concurrency}", call, count, concurrency))
        await transport.aclose()
    transport = Http1Transport(provider="bench", timeouts=timeouts, max_connections=1)

    async def stream() -> float:
        started = time.perf_counter()
        first = 0.0
        async with transport.stream(url, STREAM_BODY, HEADERS) as reply:
            async for data in reply.chunks():
                if not first and CONTENT_MARK in data:
                    first = time.perf_counter() - started
        return first

    results.append(await ttft(label, stream, n // 20))
    await transport.aclose()
    return results


async def bench_httpx(label: str, url: str, n: int) -> list[Result]:
    """httpx.AsyncClient with a keep-alive pool."""
    results = []
    for concurrency in (1, 64):
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(limits=limits, timeout=30.0) as client:

            async def call() -> None:
                response = await client.post(url, content=BODY, headers=HEADERS)
                response.read()

            count = n if concurrency > 1 else n // 4
            results.append(await measure(label, f"c={concurrency}", call, count, concurrency))
    async with httpx.AsyncClient(timeout=30.0) as client:

        async def stream() -> float:
            started = time.perf_counter()
            first = 0.0
            request = client.stream("POST", url, content=STREAM_BODY, headers=HEADERS)
            async with request as response:
                async for line in response.aiter_lines():
                    if not first and CONTENT_MARK.decode() in line:
                        first = time.perf_counter() - started
            return first

        results.append(await ttft(label, stream, n // 20))
    return results


Bench = Callable[[str, str, int], Awaitable[list[Result]]]


def run(bench: Bench, label: str, url: str, n: int) -> list[Result]:
    """Run one client's benchmark on a fresh loop (uvloop when `label` says so)."""
    factory = uvloop.new_event_loop if "uvloop" in label else asyncio.new_event_loop
    loop = factory()
    try:
        return loop.run_until_complete(bench(label, url, n))
    finally:
        loop.close()


def main() -> int:
    """Print the comparison table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests (a smoke run)")
    parser.add_argument("--requests", type=int, default=20_000, help="requests at c=64")
    args = parser.parse_args()
    n = 2_000 if args.quick else args.requests
    port = free_port()
    upstream = start_upstream(port)
    pin(1)
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    try:
        head = ("client", "scenario", "req/s", "p50 ms", "p99 ms", "cpu ms")
        print("{:<18} {:<14} {:>9} {:>9} {:>9} {:>9}".format(*head))
        for bench, label in (
            (bench_http1, "http1+asyncio"),
            (bench_http1, "http1+uvloop"),
            (bench_aiohttp, "aiohttp+asyncio"),
            (bench_aiohttp, "aiohttp+uvloop"),
            (bench_httpx, "httpx+asyncio"),
            (bench_httpx, "httpx+uvloop"),
        ):
            for result in run(bench, label, url, n):
                print(result.row(), flush=True)
    finally:
        upstream.terminate()
        upstream.wait(10)
    print(
        "cpu ms = client CPU per request; for 'stream ttft', p50/p99 are the times to the first "
        "content chunk and req/s counts whole streams."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
