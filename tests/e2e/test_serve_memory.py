"""End to end: `turnout serve` as a process gives back the memory of a burst of large failed
requests at once, without waiting for a full garbage collection (its RSS, read from /proc)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from tests.e2e.test_serve_signals import serve

if TYPE_CHECKING:
    from tests.e2e.test_serve_signals import Served

BODY_BYTES = 8 * 1024 * 1024
BURST = 20
CONFIG = """\
server: {auth: open, shutdown_grace_seconds: 0}
providers:
  - {name: m, kind: mock}
routes:
  - {name: quick, models: [quick], targets: [{provider: m}]}
"""


def _rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS line")


async def _burst(served: Served, body: bytes) -> None:
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as client:
        for _ in range(BURST):
            reply = await client.post("/v1/chat/completions", content=body)
            assert reply.status_code == 400


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads RSS from /proc")
async def test_a_burst_of_large_invalid_bodies_leaves_rss_flat(tmp_path: Path) -> None:
    """After 20 invalid 8 MB bodies the gateway's RSS has grown by far less than their sum
    (each body is freed when its 400 is written)."""
    path = tmp_path / "turnout.yaml"
    path.write_text(CONFIG)
    body = b'{"model": "quick", "messages": [' + b"x" * BODY_BYTES
    async with serve(path) as served:
        await _burst(served, body[:1024])  # the first request's one-time costs
        before = _rss_bytes(served.process.pid)
        await _burst(served, body)
        grown = _rss_bytes(served.process.pid) - before
        assert await served.stop() == 0
    assert grown < BURST * BODY_BYTES // 4, f"RSS grew by {grown >> 20} MiB"
