"""End to end: `turnout serve --workers 2 --log-format json` as a process: `/metrics`, whichever
worker answers, counts every request the workers served, and after SIGTERM stderr holds one
access line per request."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING

import httpx
import orjson
from prometheus_client.parser import text_string_to_metric_families

if TYPE_CHECKING:
    from pathlib import Path

_SERVE = "import sys\nfrom turnout.cli import main\nsys.exit(main(sys.argv[1:]))\n"
CONFIG = """\
server: {auth: open, shutdown_grace_seconds: 0.3}
providers:
  - {name: m, kind: mock}
routes:
  - {name: main, models: [main], targets: [{provider: m}]}
"""
REQUESTS = 24


def _calls(text: str) -> float:
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "turnout_route_calls_total" and sample.labels["route"] == "main"
    )


async def test_workers_count_every_request_and_write_every_access_line(tmp_path: Path) -> None:
    """Two workers: a scrape soon sums both workers' counts, each request once (a worker adds
    its counts within a quarter of a second); once they stopped, every access line is in
    stderr, none lost in a buffer."""
    config = tmp_path / "turnout.yaml"
    config.write_text(CONFIG)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _SERVE, "serve", "--config", str(config), "--port", "0",
        "--workers", "2", "--log-format", "json",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        while True:
            line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
            assert line, "the server ended before its banner"
            if line.startswith("turnout serving on "):
                break
        url = line.split()[3]
        body = {"model": "main", "messages": [{"role": "user", "content": "hi"}]}
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            ids = set()
            for _ in range(REQUESTS):
                # A new connection each time, so both workers get some of them.
                answer = await client.post(
                    "/v1/chat/completions", json=body, headers={"connection": "close"}
                )
                assert answer.status_code == 200
                ids.add(answer.headers["x-request-id"])
            deadline = asyncio.get_running_loop().time() + 5
            while True:
                counted = _calls((await client.get("/metrics")).text)
                if counted >= REQUESTS or asyncio.get_running_loop().time() > deadline:
                    break
                await asyncio.sleep(0.05)
        assert counted == REQUESTS
        process.terminate()
        _, errors = await asyncio.wait_for(process.communicate(), 20)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    lines = [orjson.loads(line) for line in errors.splitlines() if line.startswith(b"{")]
    access = {line["request_id"] for line in lines if line.get("event") == "access"}
    assert ids <= access
