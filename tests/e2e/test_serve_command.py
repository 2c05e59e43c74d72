"""End to end: `turnout serve` as a process: it prints its banner, answers on the port it
bound, and stops cleanly on SIGINT, closing its pools."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import TYPE_CHECKING

import httpx

if TYPE_CHECKING:
    from pathlib import Path

# The command as the console script runs it (`turnout serve …`), without depending on cli.py.
_SERVE = (
    "import argparse, sys\n"
    "from turnout.gateway.commands.serve import add_serve_parser, main_serve\n"
    "parser = argparse.ArgumentParser()\n"
    "add_serve_parser(parser.add_subparsers(dest='command'))\n"
    "sys.exit(main_serve(parser.parse_args(sys.argv[1:])))\n"
)
CONFIG = """\
server: {auth: open}
providers:
  - {name: m, kind: mock}
routes:
  - {name: quick, models: [quick-model], targets: [{provider: m}]}
"""


async def test_serve_prints_its_banner_answers_and_stops(tmp_path: Path) -> None:
    """Start on port 0, read the address from the banner, get an answer, stop with SIGINT."""
    path = tmp_path / "turnout.yaml"
    path.write_text(CONFIG)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _SERVE,
        "serve",
        "--config",
        str(path),
        "--port",
        "0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
        assert line.startswith("turnout serving on http://127.0.0.1:")
        assert line.rstrip().endswith("(1 route, auth=open)")
        base = line.split()[3]
        body = {"model": "quick-model", "messages": [{"role": "user", "content": "hi"}]}
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            reply = await client.post("/v1/chat/completions", json=body)
        assert reply.status_code == 200
        assert reply.headers["x-turnout-route"] == "quick"
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
        code = await asyncio.wait_for(process.wait(), 30)
    assert code == 0
