"""`gateway.py --profile`: sample the gateway with py-spy under concurrency-64 load, and the
own-time summary of py-spy's collapsed stacks."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from _gateway_procs import UPSTREAM_CPU, pinned

if TYPE_CHECKING:
    import argparse

    from _gateway_procs import Load


def profile(pid: int, port: int, args: argparse.Namespace, load: Load) -> None:
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
