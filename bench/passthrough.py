"""What a same-format request and stream cost the gateway: CPU per stream by event count, and
CPU per whole request by body size, for an OpenAI caller of an openai target and an Anthropic
caller of an anthropic target.

Run: ``python bench/passthrough.py [--seconds N] [--events 7,100@0.002,1000,5000]
[--bodies 1024,102400,1048576] [--state redis://127.0.0.1:6379/9] [--json]``.

``turnout mock-upstream`` and ``turnout serve`` run as subprocesses (the gateway pinned to CPU 0,
the upstream and the load (wrk) to CPU 1, as in ``gateway.py``); the config has the
access log, metrics and the audit on (the defaults) and, with ``--state``, health shared through
Redis. Each route's target asks the mock upstream for an answer in a given number of content
chunks (the model's ``fault:chunks=N``; ``N@S`` spaces them S seconds apart), so a stream of
N content chunks has N + 3 events for OpenAI (role, finish, usage) and N + 6 for Anthropic.
Measured: the gateway's utime + stime (``/proc/<pid>/stat``) over a load window divided by the
streams or requests answered in it.
All traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from _gateway_procs import cpu_seconds, free_port, pinned, spawn, stop

GATEWAY_CPU, UPSTREAM_CPU = 0, 1
PROMPT = "Why is checkout failing? Answer in one sentence."
FORMATS = {
    # name: (path, target provider, target model prefix, extra headers)
    "openai": ("/v1/chat/completions", "openai", "gpt-4o-mini", {}),
    "anthropic": (
        "/v1/messages",
        "anthropic",
        "claude-haiku-4-5",
        {"anthropic-version": "2023-06-01"},
    ),
}


def _fault(spec: str) -> str:
    """`N` -> `chunks=N`; `N@S` -> `chunks=N;chunk_delay=S` (S seconds between chunks, so each
    content event comes in a read of its own, as from a real model)."""
    count, _, delay = spec.partition("@")
    return f"chunks={count}" + (f";chunk_delay={delay}" if delay else "")


def _route(spec: str) -> str:
    return spec.replace("@", "d").replace(".", "_")


def write_config(directory: Path, upstream: int, events: list[str], state: str) -> Path:
    """One route per format and content-chunk count (`<format>-<n>`), and `<format>-whole`."""
    routes = []
    for name, (_, provider, model, _) in FORMATS.items():
        probe = ", gpt-4o-mini" if name == "openai" else ""  # what `spawn` asks for
        routes.append(
            f"  - {{name: {name}-whole, models: [{name}-whole{probe}],"
            f" targets: [{{provider: {provider}, model: {model}}}]}}"
        )
        routes.extend(
            f"  - {{name: {name}-{_route(n)}, models: [{name}-{_route(n)}],"
            f" targets: [{{provider: {provider}, model: '{model}/fault:{_fault(n)}'}}]}}"
            for n in events
        )
    path = directory / "turnout.yaml"
    path.write_text(
        "project: bench\n"
        "server: {auth: open}\n"
        f"state: '{state}'\n"
        "providers:\n"
        f"  - {{name: openai, kind: openai, api_key: sk-bench,"
        f" base_url: 'http://127.0.0.1:{upstream}/v1'}}\n"
        f"  - {{name: anthropic, kind: anthropic, api_key: sk-bench,"
        f" base_url: 'http://127.0.0.1:{upstream}'}}\n"
        "routes:\n" + "\n".join(routes) + "\n"
    )
    return path


def body_for(fmt: str, model: str, *, stream: bool, size: int = 0) -> bytes:
    """A chat body for `fmt` asking `model`, padded to about `size` bytes."""
    text = PROMPT + " " + "x" * max(size - 200, 0)
    obj: dict[str, object] = {
        "model": model,
        "max_tokens": 64,
        "messages": [{"role": "user", "content": text}],
    }
    if stream:
        obj["stream"] = True
        if fmt == "openai":
            obj["stream_options"] = {"include_usage": True}
    return json.dumps(obj).encode()


def _load(
    port: int,
    pid: int,
    path: str,
    body: bytes,
    *,
    headers: dict[str, str],
    args: argparse.Namespace,
) -> tuple[int, float, int]:
    """(answers, gateway CPU seconds, failures) of one wrk run of `args.seconds` at
    `args.connections` (after a one-second warm-up run)."""
    tmp, connections, seconds = args.tmp, args.connections, args.seconds
    body_file = tmp / "body.json"
    body_file.write_bytes(body)
    lines = [
        'wrk.method = "POST"',
        'wrk.headers["Content-Type"] = "application/json"',
        f'local f = io.open("{body_file}", "rb")',
        "wrk.body = f:read('*a')",
        "f:close()",
    ]
    lines += [f'wrk.headers["{k}"] = "{v}"' for k, v in headers.items()]
    script = tmp / "post.lua"
    script.write_text("\n".join(lines) + "\n")
    url = f"http://127.0.0.1:{port}{path}"

    def wrk(duration: float) -> str:
        command = [
            *pinned(UPSTREAM_CPU),
            "wrk",
            "-t1",
            f"-c{connections}",
            f"-d{duration:g}s",
            "-s",
            str(script),
            url,
        ]
        run = subprocess.run  # fixed argv
        return run(
            command, capture_output=True, text=True, check=True, timeout=duration + 30
        ).stdout

    wrk(1)
    before = cpu_seconds(pid)
    output = wrk(seconds)
    cpu = cpu_seconds(pid) - before
    done = re.search(r"(\d+) requests in", output)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    if done is None:
        raise RuntimeError(f"unexpected wrk output:\n{output}")
    failed = int(bad.group(1)) if bad else 0
    return int(done.group(1)) - failed, cpu, failed


def measure(port: int, pid: int, args: argparse.Namespace) -> dict[str, float]:
    """CPU milliseconds per stream (by event count) and per whole request (by body size)."""
    out: dict[str, float] = {}
    for fmt, (path, _, _, headers) in FORMATS.items():
        for n in args.events:
            body = body_for(fmt, f"{fmt}-{_route(n)}", stream=True)
            streams, cpu, failed = _load(port, pid, path, body, headers=headers, args=args)
            count, _, delay = n.partition("@")
            key = f"{fmt} stream, {count} content chunks" + (f" {delay} s apart" if delay else "")
            out[key] = cpu / max(streams, 1) * 1000
            out[key + " per chunk"] = out[key] / int(count)
            print(
                f"{key}: {out[key]:.3f} ms/stream ({streams} streams, {failed} failed)", flush=True
            )
        for size in args.bodies:
            body = body_for(fmt, f"{fmt}-whole", stream=False, size=size)
            answers, cpu, failed = _load(port, pid, path, body, headers=headers, args=args)
            key = f"{fmt} whole, {size} B body"
            out[key] = cpu / max(answers, 1) * 1000
            print(
                f"{key}: {out[key]:.3f} ms/request ({answers} answers, {failed} failed)", flush=True
            )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per window (3)")
    parser.add_argument("--connections", type=int, default=64, help="concurrency (64)")
    parser.add_argument(
        "--events",
        default="7,100@0.002,1000,5000",
        help="content chunks per stream, comma separated (N@S: S seconds apart)",
    )
    parser.add_argument(
        "--bodies",
        default="1024,102400,1048576",
        help="request body sizes in bytes, comma separated",
    )
    parser.add_argument("--state", default="memory", help="memory, or a redis:// URL")
    parser.add_argument("--formats", default="openai,anthropic", help="which caller formats")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    args = parser.parse_args()
    args.events = [v for v in args.events.split(",") if v]
    args.bodies = [int(v) for v in args.bodies.split(",") if v]
    for name in set(FORMATS) - set(args.formats.split(",")):
        del FORMATS[name]
    with tempfile.TemporaryDirectory(prefix="turnout-passthrough-") as tmp_name:
        tmp = args.tmp = Path(tmp_name)
        upstream_port = free_port()
        upstream_command = [
            sys.executable,
            "-m",
            "turnout.mock_upstream",
            "--port",
            str(upstream_port),
        ]
        upstream, _ = spawn(
            [*pinned(UPSTREAM_CPU), *upstream_command], upstream_port, tmp / "up.log"
        )
        gateway = None
        try:
            config = write_config(tmp, upstream_port, args.events, args.state)
            port = free_port()
            command = [
                *pinned(GATEWAY_CPU),
                sys.executable,
                "-m",
                "turnout.cli",
                "serve",
                "--config",
                str(config),
                "--port",
                str(port),
            ]
            gateway, _ = spawn(command, port, tmp / "gateway.log")
            numbers = measure(port, gateway.pid, args)
        finally:
            if gateway is not None:
                stop(gateway)
            stop(upstream)
    if args.json:
        print(json.dumps(numbers, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
