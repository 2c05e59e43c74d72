"""The gateway as a new user starts it, beside nginx and the server floor, in one run.

`turnout serve --config turnout.yaml` with nothing turned off: `server.auth: keys`, no `store:`
line (so the SQLite store beside the config, with the audit writer process), access lines to
the log at the default level, two openai-compatible targets at the mock upstream. Each row is
one process tree on the gateway CPU; the mock upstream and wrk share the other CPU.

Rows:
- `nginx`: nginx as a plain keep-alive proxy to the mock upstream (when `nginx` is installed);
- `floor`: `server_floor.py`'s floor with one upstream call (our HTTP server, a handler that
  POSTs the body to the upstream through the providers' client and answers its body);
- `bare`: `turnout serve` with the audit writer never started and only warnings logged;
- `defaults`: `turnout serve` as above.

Load, per row: wrk for `--seconds` at c=1 and at c=64 (a 263-byte chat request, a 334-byte
answer), then streams at c=8 (10 content events 10 ms apart, `stream_options.include_usage`).
CPU is utime + stime of every process of the tree, before the first run to `SETTLE` seconds
after the last (the audit writer has written its last batch by then). RSS is the sum of VmRSS
over the tree after the load (PSS beside it, which counts a page shared by the serving process
and its child once); "serving" columns are the serving process's alone. Start is the seconds
from spawning the tree to its first 200, the first start in a fresh folder (the store is
created) and the median of `--starts` restarts.

    python bench/defaults.py [--seconds 5] [--starts 3] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _gateway_procs import (
    GATEWAY_CPU,
    SERVE_PARTS,
    SETTLE,
    busy_share,
    cpu_of,
    descendants,
    free_port,
    pinned,
    settle_below,
    start_upstream,
    stop,
    wrk,
)

if TYPE_CHECKING:
    from collections.abc import Callable

BENCH = Path(__file__).resolve().parent
KEY = "sk-bench"
MODEL = "mock-gpt"
STREAM_MODEL = "mock-gpt-stream"
# The mock upstream's fault grammar: ten content events, 10 ms apart.
STREAM_FAULT = "chunks=10;chunk_delay=0.01"
BODY = (
    '{"model": "mock-gpt", "messages": [{"role": "system", "content": "You are a support '
    'assistant."}, {"role": "user", "content": "Why is checkout failing for order 18213? '
    'Answer in one sentence."}], "max_tokens": 64, "temperature": 0.2, "user": "bench-user-1"}'
)
START_LIMIT = 30.0


def stream_body(model: str) -> str:
    """The streamed request for `model`, asking for the final usage event."""
    return (
        f'{{"model": "{model}", "stream": true, "stream_options": {{"include_usage": true}}, '
        '"messages": [{"role": "user", "content": "Why is checkout failing? Answer in one '
        'sentence."}], "max_tokens": 64}'
    )


def lua(directory: Path, name: str, body: str) -> Path:
    """A wrk script that POSTs `body` with the bench key."""
    path = directory / name
    path.write_text(
        'wrk.method = "POST"\n'
        f"wrk.body = '{body}'\n"
        'wrk.headers["Content-Type"] = "application/json"\n'
        f'wrk.headers["Authorization"] = "Bearer {KEY}"\n'
    )
    return path


def config_text(upstream: int, port: int) -> str:
    """The config a new user writes (plus a route whose target streams slowly)."""
    base = f"http://127.0.0.1:{upstream}/s/{{}}/v1"
    return (
        f"server: {{host: 127.0.0.1, port: {port}, auth: keys}}\n"
        "providers:\n"
        f"  - {{name: primary, kind: openai-compatible, base_url: '{base.format('primary')}',"
        " api_key: bench-upstream}\n"
        f"  - {{name: fallback, kind: openai-compatible, base_url: '{base.format('fallback')}',"
        " api_key: bench-upstream}\n"
        "routes:\n"
        f"  - name: {MODEL}\n"
        f"    models: [{MODEL}]\n"
        f"    targets: [{{provider: primary, model: {MODEL}}},"
        f" {{provider: fallback, model: {MODEL}}}]\n"
        f"  - name: {STREAM_MODEL}\n"
        f"    models: [{STREAM_MODEL}]\n"
        f"    targets: [{{provider: primary, model: '{MODEL}/fault:{STREAM_FAULT}'}},"
        f" {{provider: fallback, model: '{MODEL}/fault:{STREAM_FAULT}'}}]\n"
        f'keys: [{{name: bench, key: "{KEY}"}}]\n'
    )


NGINX_CONF = """\
worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/nginx-error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {dir}/body; proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fcgi; uwsgi_temp_path {dir}/uwsgi; scgi_temp_path {dir}/scgi;
  upstream mock {{ server 127.0.0.1:{upstream}; keepalive 128; }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://mock;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
    }}
  }}
}}
"""


@dataclass
class Row:
    """What one process tree cost under the load."""

    name: str
    cpu_ms_c64: float = 0.0
    cpu_ms_c1: float = 0.0
    cpu_ms_c64_serving: float = 0.0
    rps_c64: float = 0.0
    p50_ms_c1: float = 0.0
    cpu_ms_stream: float = 0.0
    streams: int = 0
    rss_mib: float = 0.0
    pss_mib: float = 0.0
    rss_serving_mib: float = 0.0
    first_start_s: float = 0.0
    start_s: float = 0.0
    processes: int = 0


def _post_ok(port: int, body: str) -> bool:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        headers = {"content-type": "application/json", "authorization": f"Bearer {KEY}"}
        conn.request("POST", "/v1/chat/completions", body, headers)
        return conn.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        conn.close()


def launch(
    command: list[str], port: int, log: Path, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], float]:
    """Start `command` and wait for its first 200 to a chat completion: the process and the
    seconds from the spawn to that answer."""
    begun = time.perf_counter()
    with log.open("wb") as sink:
        process = subprocess.Popen(  # noqa: S603 - fixed argv
            command, stdout=sink, stderr=subprocess.STDOUT, env=env, cwd=log.parent
        )
    try:
        while time.perf_counter() - begun < START_LIMIT and process.poll() is None:
            if _post_ok(port, BODY):
                return process, time.perf_counter() - begun
            time.sleep(0.002)
    except BaseException:
        stop(process)
        raise
    stop(process)
    raise RuntimeError(f"{' '.join(command)[-200:]} did not serve; its output:\n{log.read_text()}")


def _tree(pid: int) -> list[int]:
    return [pid, *descendants(pid)]


def _memory_mib(pids: list[int]) -> tuple[float, float]:
    rss = pss = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
    return rss / 1024, pss / 1024


def measure(row: Row, pid: int, port: int, scripts: dict[str, Path], seconds: float) -> None:
    """Run the load against the tree below `pid` and fill `row`."""
    settle_below([pid])  # the audit writer process has started
    for name, connections in (("c1", 1), ("c64", 64)):
        pids = _tree(pid)
        before, serving = cpu_of(pids), cpu_of([pid])
        run = wrk(port, connections, seconds, scripts["chat"])
        time.sleep(SETTLE)
        spent = cpu_of(_tree(pid)) - before
        per = spent / max(run.requests, 1) * 1000
        if name == "c1":
            row.cpu_ms_c1, row.p50_ms_c1 = per, run.p50_ms
        else:
            row.cpu_ms_c64, row.rps_c64 = per, run.rps
            row.cpu_ms_c64_serving = (cpu_of([pid]) - serving) / max(run.requests, 1) * 1000
    before = cpu_of(_tree(pid))
    run = wrk(port, 8, seconds, scripts["stream"])
    time.sleep(SETTLE)
    row.streams = run.requests
    row.cpu_ms_stream = (cpu_of(_tree(pid)) - before) / max(run.requests, 1) * 1000
    pids = _tree(pid)
    row.processes = len(pids)
    row.rss_mib, row.pss_mib = _memory_mib(pids)
    row.rss_serving_mib = _memory_mib([pid])[0]


def starts(
    make: Callable[[Path], tuple[list[str], int, dict[str, str] | None]], count: int, root: Path
) -> tuple[float, float]:
    """The first start in a fresh folder and the median of `count` restarts in it."""
    folder = root / f"start-{time.monotonic_ns()}"
    folder.mkdir()
    seconds = []
    for _ in range(count + 1):
        command, port, env = make(folder)
        process, took = launch(command, port, folder / "start.log", env)
        stop(process)
        seconds.append(took)
    return seconds[0], statistics.median(seconds[1:]) if count else seconds[0]


def turnout_maker(upstream: int, *, bare: bool) -> Callable[[Path], tuple[list[str], int, None]]:
    """A function that writes the config in a folder and gives the serving command."""

    def make(folder: Path) -> tuple[list[str], int, None]:
        port = free_port()
        config = folder / "turnout.yaml"
        config.write_text(config_text(upstream, port))
        if bare:
            args = ["serve", "--config", str(config), "--log-level", "warning"]
            return (
                [*pinned(GATEWAY_CPU), sys.executable, "-c", SERVE_PARTS, "audit", *args],
                port,
                None,
            )
        return (
            [
                *pinned(GATEWAY_CPU),
                sys.executable,
                "-m",
                "turnout.cli",
                "serve",
                "--config",
                str(config),
            ],
            port,
            None,
        )

    return make


def nginx_maker(upstream: int) -> Callable[[Path], tuple[list[str], int, None]]:
    def make(folder: Path) -> tuple[list[str], int, None]:
        port = free_port()
        conf = folder / "nginx.conf"
        conf.write_text(NGINX_CONF.format(dir=folder, upstream=upstream, port=port))
        binary = shutil.which("nginx") or "/usr/sbin/nginx"
        return [*pinned(GATEWAY_CPU), binary, "-c", str(conf), "-p", str(folder)], port, None

    return make


def floor_maker(upstream: int) -> Callable[[Path], tuple[list[str], int, dict[str, str]]]:
    def make(folder: Path) -> tuple[list[str], int, dict[str, str]]:
        port = free_port()
        env = {**os.environ, "FLOOR_UPSTREAM_PORT": str(upstream)}
        apps = str(BENCH / "_server_floor_apps.py")
        return [*pinned(GATEWAY_CPU), sys.executable, apps, "ours", str(port)], port, env

    return make


FIGURES: tuple[tuple[str, str, str], ...] = (
    ("CPU/req c64", "cpu_ms_c64", "{:.3f} ms"),
    ("CPU/req c1", "cpu_ms_c1", "{:.3f} ms"),
    ("serving c64", "cpu_ms_c64_serving", "{:.3f} ms"),
    ("req/s c64", "rps_c64", "{:,.0f}"),
    ("p50 c1", "p50_ms_c1", "{:.2f} ms"),
    ("CPU/stream", "cpu_ms_stream", "{:.2f} ms"),
    ("RSS", "rss_mib", "{:.0f} MiB"),
    ("PSS", "pss_mib", "{:.0f} MiB"),
    ("RSS serving", "rss_serving_mib", "{:.0f} MiB"),
    ("start", "start_s", "{:.2f} s"),
    ("first start", "first_start_s", "{:.2f} s"),
)
"""Each column: its title, the `Row` field and its format."""


def table(rows: list[Row]) -> str:
    """The rows, then each turnout row's figures as ratios to nginx and to the floor."""
    lines = [("", *(title for title, _, _ in FIGURES), "procs")]
    lines += [
        (r.name, *(form.format(getattr(r, f)) for _, f, form in FIGURES), str(r.processes))
        for r in rows
    ]
    by = {r.name: r for r in rows}
    for ref in ("nginx", "floor"):
        if (base := by.get(ref)) is None:
            continue
        lines += [
            (
                f"{r.name} / {ref}",
                *(_ratio(getattr(r, f), getattr(base, f)) for _, f, _ in FIGURES),
                "",
            )
            for r in rows
            if r.name in ("bare", "defaults")
        ]
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join(
        "  ".join(
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in lines
    )


def _ratio(value: float, base: float) -> str:
    return f"{value / base:.1f}x" if base else "-"


def compile_package() -> None:
    """Write turnout's bytecode, as installing it does, so that starts load it instead of
    compiling every module (an editable install, or PYTHONDONTWRITEBYTECODE, would leave
    every start compiling the whole package: about twice the start time)."""
    import compileall

    import turnout

    compileall.compile_dir(str(Path(turnout.__file__).parent), quiet=1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="each wrk run (default 5)")
    parser.add_argument("--starts", type=int, default=3, help="restarts timed per row")
    parser.add_argument(
        "--only", default="", help="comma-separated rows (nginx,floor,bare,defaults)"
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is needed (Debian: apt-get install wrk)")
    names = [
        n
        for n in ("nginx", "floor", "bare", "defaults")
        if not args.only or n in args.only.split(",")
    ]
    if "nginx" in names and not (shutil.which("nginx") or Path("/usr/sbin/nginx").exists()):
        names.remove("nginx")
        print("nginx is not installed: its row is left out", file=sys.stderr)
    compile_package()
    busy = busy_share()
    if busy > 0.10:
        print(f"warning: the CPUs were {busy:.0%} busy before the run", file=sys.stderr)
    rows = []
    with tempfile.TemporaryDirectory(prefix="turnout-defaults-") as tmp:
        root = Path(tmp)
        upstream_process, upstream = start_upstream(root)
        try:
            makers = {
                "nginx": nginx_maker(upstream),
                "floor": floor_maker(upstream),
                "bare": turnout_maker(upstream, bare=True),
                "defaults": turnout_maker(upstream, bare=False),
            }
            for name in names:
                make = makers[name]
                row = Row(name)
                row.first_start_s, row.start_s = starts(make, args.starts, root)
                folder = root / name
                folder.mkdir()
                command, port, env = make(folder)
                chat = lua(folder, "chat.lua", BODY)
                stream_model = (
                    STREAM_MODEL
                    if name in ("bare", "defaults")
                    else (f"{MODEL}/fault:{STREAM_FAULT}")
                )
                stream = lua(folder, "stream.lua", stream_body(stream_model))
                process, _ = launch(command, port, folder / "serve.log", env)
                try:
                    measure(row, process.pid, port, {"chat": chat, "stream": stream}, args.seconds)
                finally:
                    stop(process)
                rows.append(row)
                print(f"{name}: done", file=sys.stderr)
        finally:
            stop(upstream_process)
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
    else:
        print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
