"""The real-client conformance run: each pinned client, unchanged, against a gateway in front of
the mock vendor, on each route whose format it speaks; one table, and a non-zero exit on any
failure. `scripts/clients` runs it; `docs/clients.md` is the recipe of each client as run here.

A case passes when the client shows success (its own check in `cases.py`) and the wire shows
what the case is about: every routed call answered 200 on the expected route; a stream was
streamed; a tool result went back to the vendor after the scripted tool call; on a failover
case and on the mixed route, the first target failed (429/503) and the routing record counts
the failover while the client saw success.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import cases
import install
from stack import ANSWERING, Stack

CALL_LIMIT = 120.0  # seconds one client run may take
TOOL_RESULTS = ('"tool_result"', '"function_call_output"', '"role": "tool"')

# (route, wire format) -> (model for the cases, model for the failover case, route names)
MODELS = {
    ("openai", "openai"): ("gpt-4o-mini", "gpt-failover", "openai-route", "openai-failover"),
    ("anthropic", "anthropic"): (
        "claude",
        "failover-claude",
        "anthropic-route",
        "anthropic-failover",
    ),
    ("mixed", "openai"): ("mixed-gpt", "mixed-gpt", "mixed-gpt", "mixed-gpt"),
    ("mixed", "anthropic"): ("mixed-claude", "mixed-claude", "mixed-claude", "mixed-claude"),
}

Runner = Callable[[Path, str, str, str, Path], cases.Call]


@dataclass(frozen=True)
class Client:
    """A client under test: how it installs, which routes it runs on in which format (and why
    not the others), the tool the mock vendor calls in it, how one case runs and is checked."""

    name: str
    install: Callable[[Path], tuple[Path | None, str]]
    routes: dict[str, str]
    not_on: dict[str, str]
    tool: str
    call: Runner
    check: Callable[[str, str], cases.Verdict]
    structured_tool: str | None = None


def _claude(exe: Path, case: str, model: str, gateway: str, work: Path) -> cases.Call:
    """Claude Code on the anthropic route runs with its default model (no --model)."""
    return cases.claude_call(exe, case, None if model == "claude" else model, gateway, work)


def _sdk(library: str) -> Runner:
    def call(python: Path, case: str, model: str, gateway: str, work: Path) -> cases.Call:
        api = "openai" if model.startswith(("gpt", "mixed-gpt")) else "anthropic"
        base = f"{gateway}/v1" if api == "openai" else gateway
        name = "claude-sonnet-4-5" if model == "claude" else model
        return cases.sdk_call(python, library, api, case=case, model=name, base=base)

    return call


BOTH = {"openai": "openai", "anthropic": "anthropic", "mixed": "openai"}
CLIENTS = [
    Client(
        "claude-code",
        lambda cache: install.install_npm(cache, "claude-code"),
        {"anthropic": "anthropic", "mixed": "anthropic"},
        {"openai": "speaks Anthropic Messages only"},
        "Read",
        _claude,
        cases.claude_check,
        # Claude Code asks for structured output as a call of its StructuredOutput tool, which
        # the model must make; the mock vendor is scripted to make it, as Claude does.
        structured_tool="StructuredOutput",
    ),
    Client(
        "codex",
        lambda cache: install.install_npm(cache, "codex"),
        {"openai": "openai", "mixed": "openai"},
        {"anthropic": "speaks the Responses API only"},
        "exec_command",
        cases.codex_call,
        cases.codex_check,
    ),
    Client(
        "openai-agents",
        lambda cache: install.install_venv(cache, "agents"),
        {"openai": "openai", "mixed": "openai"},
        {"anthropic": "speaks the Responses API only"},
        "get_weather",
        _sdk("agents"),
        cases.sdk_check,
    ),
    Client(
        "pydantic-ai",
        lambda cache: install.install_venv(cache, "pydantic-ai"),
        BOTH,
        {},
        "get_weather",
        _sdk("pydantic_ai"),
        cases.sdk_check,
    ),
    Client(
        "langchain",
        lambda cache: install.install_venv(cache, "langchain"),
        BOTH,
        {},
        "get_weather",
        _sdk("langchain"),
        cases.sdk_check,
    ),
]


@dataclass(frozen=True)
class Row:
    client: str
    case: str
    route: str
    result: str
    seconds: float | None
    detail: str


def _run_client(call: cases.Call) -> tuple[str | None, str]:
    """Run one client call; (None, output) when it ended, else (why, output so far)."""
    env = {**os.environ, **call.env}
    for key in ("HOME", "CODEX_HOME"):
        if key in call.env:
            Path(call.env[key]).mkdir(parents=True, exist_ok=True)
    # A session of its own: on a timeout the client and every process it started are killed,
    # so no helper left behind holds its output open.
    with subprocess.Popen(
        call.command,
        env=env,
        cwd=call.cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=CALL_LIMIT)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, _ = process.communicate()
            return f"TIMEOUT after {CALL_LIMIT:g} s", stdout.decode(errors="replace")
    out = stdout.decode(errors="replace")
    if process.returncode != 0:
        err = stderr.decode(errors="replace").strip()[-200:]
        return f"exit {process.returncode}: {err or out[-200:]}", out
    return None, out


def _wire(
    case: str, route: str, requests: list[dict[str, Any]], lines: list[dict[str, Any]]
) -> str | None:
    """What the wire shows against the case, or None when it shows what it must."""
    on_route = [line for line in lines if line.get("route") == route]
    if not on_route:
        return f"no access line on route {route}"
    if bad := [line for line in on_route if line.get("status") != 200]:
        return f"route {route} answered {bad[0].get('status')} ({bad[0].get('path')})"
    if case == "stream" and not any(r.get("stream") for r in requests):
        return "no streamed request reached the vendor"
    if case == "tool":
        bodies = [json.dumps(r.get("body")) for r in requests]
        if not any(mark in body for body in bodies for mark in TOOL_RESULTS):
            return "no tool result went back to the vendor"
    if case == "failover" or route.startswith("mixed"):
        if not any(r.get("status") in (429, 503) for r in requests):
            return "the first target did not fail"
        if not any((line.get("failovers") or 0) >= 1 for line in on_route):
            return "no failover in the routing record"
    return None


def _scripted_tool(client: Client, case: str) -> str | None:
    """The tool the mock vendor is scripted to call in this case's first answer, if any."""
    if case == "tool":
        return client.tool
    return client.structured_tool if case == "structured" else None


def run_case(stack: Stack, client: Client, exe: Path, *, route: str, case: str, work: Path) -> Row:
    """Run one case and check it, client side and wire side."""
    api = client.routes[route]
    model, failover_model, route_name, failover_route = MODELS[(route, api)]
    if case == "failover":
        model, route_name = failover_model, failover_route
    if (tool := _scripted_tool(client, case)) is not None:
        stack.script(ANSWERING[model], [f"tool_call={tool}"])
    mark = stack.mark()
    began = time.monotonic()
    why, out = _run_client(client.call(exe, case, model, stack.gateway, work))
    seconds = time.monotonic() - began
    stack.clear_scripts()
    if why is not None:
        return Row(client.name, case, route, "FAIL", seconds, why)
    ok, detail = client.check(case, out)
    if ok:
        requests, lines = stack.since(mark)
        wire = _wire(case, route_name, requests, lines)
        served = [line.get("model") for line in lines if line.get("route") == route_name]
        ok, detail = (False, wire) if wire else (True, f"{detail}; served by {served[-1]}")
    return Row(client.name, case, route, "pass" if ok else "FAIL", seconds, detail)


def install_all(clients: list[Client], cache: Path) -> list[tuple[Path | None, str]]:
    """Install (or find installed) every client, side by side; per client its executable, or
    None and why not."""
    print(f"installing {', '.join(c.name for c in clients)} into {cache}", flush=True)
    # Made before the installs start: they run at once and each writes its log here.
    cache.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=len(clients) or 1) as pool:
        return list(pool.map(lambda client: client.install(cache), clients))


def run_client(
    stack: Stack, client: Client, installed: tuple[Path | None, str], scratch: Path
) -> list[Row]:
    """Every case of one client, or one skip row when it cannot be installed."""
    exe, what = installed
    if exe is None:
        return [Row(client.name, "-", "-", "skip", None, f"cannot be installed: {what}")]
    rows = [Row(client.name, "-", r, "n/a", None, why) for r, why in client.not_on.items()]
    for route in client.routes:
        for case in cases.CASES:
            work = scratch / f"{client.name}-{route}-{case}"
            work.mkdir(parents=True, exist_ok=True)
            rows.append(run_case(stack, client, exe, route=route, case=case, work=work))
            print(_format(rows[-1]), flush=True)
    return rows


def _format(row: Row) -> str:
    seconds = "" if row.seconds is None else f"{row.seconds:.1f}"
    return (
        f"{row.client:<14} {row.case:<10} {row.route:<9} {row.result:<5} {seconds:>6}  {row.detail}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=Path(".clients"), help="install cache")
    parser.add_argument("--only", nargs="*", default=[], help="run only these clients")
    args = parser.parse_args()
    began = time.monotonic()
    chosen = [c for c in CLIENTS if not args.only or c.name in args.only]
    installed = install_all(chosen, args.cache.resolve())
    print(f"installed in {time.monotonic() - began:.0f} s", flush=True)
    with tempfile.TemporaryDirectory(prefix="turnout-clients-") as scratch:
        stack = Stack(Path(scratch))
        stack.start()
        try:
            rows = [
                row
                for c, done in zip(chosen, installed, strict=True)
                for row in run_client(stack, c, done, Path(scratch))
            ]
        finally:
            stack.stop()
    print(f"\n{'client':<14} {'case':<10} {'route':<9} {'result':<5} {'s':>6}  detail")
    print("\n".join(_format(row) for row in rows))
    failed = sum(row.result == "FAIL" for row in rows)
    passed = sum(row.result == "pass" for row in rows)
    skipped = sum(row.result == "skip" for row in rows)
    print(f"\n{len(rows)} rows in {time.monotonic() - began:.0f} s")
    print(f"clients: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
