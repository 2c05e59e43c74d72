"""End to end: two `turnout serve` processes on one Redis (database 11) in front of a mock
upstream with a failing target. Once process A's breaker opens on it, process B no longer
calls it: the mock upstream's log shows no request to the failing model from B."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING

import httpx
import openai
import pytest
import redis
import redis.asyncio as aredis

from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

# The command as the console script runs it (`turnout serve …`).
_SERVE = (
    "import argparse, sys\n"
    "from turnout.gateway.commands.serve import add_serve_parser, main_serve\n"
    "parser = argparse.ArgumentParser()\n"
    "add_serve_parser(parser.add_subparsers(dest='command'))\n"
    "sys.exit(main_serve(parser.parse_args(sys.argv[1:])))\n"
)
BAD = "bad/fault:status=500"


def _redis_url() -> str:
    base = os.environ.get("TURNOUT_TEST_REDIS_URL") or "redis://127.0.0.1:6379/15"
    url = base.rsplit("/", 1)[0] + "/11"
    client = redis.Redis.from_url(url, socket_timeout=0.25, socket_connect_timeout=0.25)
    try:
        client.ping()
    except (redis.RedisError, OSError) as exc:
        pytest.skip(f"no Redis at {url} ({type(exc).__name__}); set TURNOUT_TEST_REDIS_URL")
    finally:
        client.close()
    return url


def _config(upstream: MockUpstream, state: str) -> str:
    return f"""\
server: {{auth: open, shutdown_grace_seconds: 0}}
state: "{state}"
defaults:
  circuit_breaker: {{failure_threshold: 2, cooldown_seconds: 600}}
providers:
  - {{name: up, kind: openai-compatible, api_key: sk-test, base_url: "{upstream.openai_base_url}"}}
routes:
  - name: main
    models: [main]
    targets:
      - {{provider: up, model: "{BAD}", name: bad, max_retries: 0}}
      - {{provider: up, model: good, name: good}}
"""


@asynccontextmanager
async def _serving(config: Path, count: int) -> AsyncIterator[list[str]]:
    """`count` `turnout serve` processes on free ports, started side by side: their base URLs
    until the block ends (then SIGTERM)."""
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            *("-c", _SERVE, "serve", "--config", str(config), "--port", "0"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        for _ in range(count)
    ]
    try:
        urls = []
        for process in processes:
            assert process.stdout is not None
            line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
            assert line.startswith("turnout serving on http://127.0.0.1:"), line
            urls.append(line.split()[3])
        yield urls
    finally:
        for process in processes:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            await asyncio.wait_for(process.wait(), 30)


async def _applied(base: str) -> int:
    async with httpx.AsyncClient(base_url=base, timeout=10) as client:
        ready = (await client.get("/readyz")).json()
    return int(ready["health"]["applied"])


async def test_a_trip_in_one_process_stops_the_other_calling_the_target(tmp_path: Path) -> None:
    """A's two failures open the breaker; B then answers from the healthy target only."""
    url = _redis_url()
    flush = aredis.Redis.from_url(url)
    await flush.flushdb()
    config = tmp_path / "turnout.yaml"
    async with AsyncExitStack() as stack:
        upstream = await stack.enter_async_context(MockUpstream())
        config.write_text(_config(upstream, url))
        a, b = await stack.enter_async_context(_serving(config, 2))
        clients = {}
        for name, base in (("a", a), ("b", b)):
            clients[name] = openai.AsyncOpenAI(
                base_url=f"{base}/v1", api_key="anything", max_retries=0
            )
        user = [{"role": "user", "content": "hello"}]
        for _ in range(2):
            answer = await clients["a"].chat.completions.create(model="main", messages=user)  # type: ignore[arg-type]
            assert answer.choices[0].message.content
        assert [e.model for e in upstream.app.log.entries()].count(BAD) == 2
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 10.0
        while await _applied(b) < 1:  # the trip reaches B through Redis
            assert loop.time() < deadline, "B never learned A's trip"
            await asyncio.sleep(0.02)
        upstream.app.log.clear()
        for _ in range(3):
            answer = await clients["b"].chat.completions.create(model="main", messages=user)  # type: ignore[arg-type]
            assert answer.choices[0].message.content
        models = [entry.model for entry in upstream.app.log.entries()]
        assert models == ["good", "good", "good"]
        for client in clients.values():
            await client.close()
    await flush.flushdb()
    await flush.aclose()
