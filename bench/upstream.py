"""How fast the mock upstream answers, beside the two usual ways to build such a server.

Run: ``python bench/upstream.py [--seconds 5]``. Three servers answer the same non-streaming
chat completion on 127.0.0.1, each in a subprocess pinned to CPU 0:

- ``mock-upstream``: turnout's own (asyncio protocol + httptools, uvloop), faults parsed, every
  request logged;
- ``asgi+uvicorn``: a bare ASGI app (no framework) on uvicorn with uvloop and httptools;
- ``aiohttp.web``: an aiohttp.web handler on uvloop.

Load comes from ``wrk`` on CPU 1 (64 connections) when it is installed, else from an aiohttp
load generator. Reported: requests per second, p50/p99 latency, and the server's CPU
microseconds per request (from /proc). Bounded by ``--seconds`` per server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

import orjson

BODY = (
    b'{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": '
    b'"Why is checkout failing? Answer in one sentence."}]}'
)


def answer(model: str) -> bytes:
    """The fixed answer the comparison servers send."""
    return orjson.dumps(
        {
            "id": "chatcmpl-" + os.urandom(12).hex(),
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": f"mock answer from {model}"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16},
        }
    )


def serve_asgi(port: int) -> None:
    """A bare ASGI app on uvicorn (uvloop + httptools)."""
    import uvicorn

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        model = orjson.loads(body).get("model", "mock")
        headers = [(b"content-type", b"application/json"), (b"x-request-id", b"req_1")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer(model)})

    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        loop="uvloop",
        http="httptools",
        log_level="error",
        access_log=False,
    )


def serve_aiohttp(port: int) -> None:
    """An aiohttp.web handler on uvloop."""
    import uvloop
    from aiohttp import web

    async def chat(request: web.Request) -> web.Response:
        model = orjson.loads(await request.read()).get("model", "mock")
        return web.Response(
            body=answer(model), content_type="application/json", headers={"x-request-id": "req_1"}
        )

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    web.run_app(
        app,
        host="127.0.0.1",
        port=port,
        access_log=None,
        print=None,
        loop=uvloop.new_event_loop(),
    )


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def taskset(cpu: int) -> list[str]:
    """A `taskset -c cpu` prefix when the machine has that CPU and the tool."""
    if (os.cpu_count() or 1) > cpu and shutil.which("taskset"):
        return ["taskset", "-c", str(cpu)]
    return []


def start(kind: str, port: int) -> subprocess.Popen[bytes]:
    """Start one server on CPU 0 and wait until it accepts connections."""
    if kind == "mock-upstream":
        command = [sys.executable, "-m", "turnout.mock_upstream", "--port", str(port)]
    else:
        command = [sys.executable, __file__, "--serve", kind, "--port", str(port)]
    process = subprocess.Popen([*taskset(0), *command], stdout=subprocess.DEVNULL)  # noqa: S603
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return process
        time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"{kind} did not start")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of `pid` so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _ms(text: str) -> float:
    match = re.match(r"([\d.]+)(us|ms|s)", text)
    if match is None:
        return float("nan")
    value, unit = float(match.group(1)), match.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


def load_wrk(url: str, seconds: float) -> tuple[int, float, float, float]:
    """(requests, elapsed seconds, p50 ms, p99 ms) from wrk with 64 connections."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(
            'wrk.method = "POST"\n'
            f"wrk.body = [[{BODY.decode()}]]\n"
            'wrk.headers["Content-Type"] = "application/json"\n'
            'wrk.headers["Authorization"] = "Bearer sk-bench"\n'
        )
    command = [*taskset(1), "wrk", "-t1", "-c64", f"-d{int(seconds)}s", "--latency"]
    output = subprocess.run(  # noqa: S603 - fixed argv
        [*command, "-s", script.name, url], capture_output=True, text=True, check=True
    ).stdout
    os.unlink(script.name)
    requests = int(re.search(r"(\d+) requests in", output).group(1))  # type: ignore[union-attr]
    p50 = _ms(re.search(r"^\s*50%\s+(\S+)", output, re.M).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"^\s*99%\s+(\S+)", output, re.M).group(1))  # type: ignore[union-attr]
    return requests, seconds, p50, p99


def load_python(url: str, seconds: float) -> tuple[int, float, float, float]:
    """The same measurement with an aiohttp load generator (when wrk is missing)."""
    import aiohttp

    async def run() -> tuple[int, float, float, float]:
        latencies: list[float] = []
        deadline = time.perf_counter() + seconds
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as session:

            async def worker() -> None:
                while time.perf_counter() < deadline:
                    started = time.perf_counter()
                    async with session.post(url, data=BODY) as response:
                        await response.read()
                    latencies.append(time.perf_counter() - started)

            await asyncio.gather(*(worker() for _ in range(64)))
        latencies.sort()
        p50, p99 = latencies[len(latencies) // 2], latencies[int(len(latencies) * 0.99)]
        return len(latencies), seconds, p50 * 1000, p99 * 1000

    return asyncio.run(run())


def main() -> int:
    """Serve one comparison server (`--serve`), or run the whole comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", choices=("asgi+uvicorn", "aiohttp.web"))
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=5.0, help="load per server (5)")
    args = parser.parse_args()
    if args.serve == "asgi+uvicorn":
        serve_asgi(args.port)
        return 0
    if args.serve == "aiohttp.web":
        serve_aiohttp(args.port)
        return 0
    load = load_wrk if shutil.which("wrk") else load_python
    print(f"load: {'wrk' if load is load_wrk else 'aiohttp'}, 64 connections")
    print(f"{'server':<15} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'cpu us/req':>11}")
    for kind in ("mock-upstream", "asgi+uvicorn", "aiohttp.web"):
        port = free_port()
        server = start(kind, port)
        try:
            before = cpu_seconds(server.pid)
            n, elapsed, p50, p99 = load(
                f"http://127.0.0.1:{port}/v1/chat/completions", args.seconds
            )
            used = cpu_seconds(server.pid) - before
        finally:
            server.terminate()
            server.wait(10)
        print(f"{kind:<15} {n / elapsed:>9.0f} {p50:>8.2f} {p99:>8.2f} {used / n * 1e6:>11.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
