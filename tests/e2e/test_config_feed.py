"""End to end: two `turnout serve` processes on one PostgreSQL store, with Redis (database 12)
and without. A key created through process A's admin API is accepted by process B soon after,
carried by Redis announcements or by PostgreSQL's own notifications, and B's
`turnout_config_version` gauge shows the version its `/readyz` serves."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING
from urllib.parse import quote

import httpx
import openai
import pytest
import redis
from sqlalchemy import text

from tests.store.conftest import postgres_url
from turnout.store import open_store

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

__all__ = ["postgres_url"]

_SERVE = "import sys\nfrom turnout.cli import main\nsys.exit(main(sys.argv[1:]))\n"
ADMIN_KEY = "adm-feed-test-0123456789"
USER = [{"role": "user", "content": "hi"}]
# Bounds the wait for B to serve A's write (a change takes well under a second; this only
# keeps a broken feed from hanging the test).
_CHANGE_LIMIT = 15.0


def _redis_url() -> str:
    base = os.environ.get("TURNOUT_TEST_REDIS_URL") or "redis://127.0.0.1:6379/15"
    url = base.rsplit("/", 1)[0] + "/12"
    client = redis.Redis.from_url(url, socket_timeout=0.25, socket_connect_timeout=0.25)
    try:
        client.ping()
        client.flushdb()
    except (redis.RedisError, OSError) as exc:
        pytest.skip(f"no Redis at {url} ({type(exc).__name__}); set TURNOUT_TEST_REDIS_URL")
    finally:
        client.close()
    return url


@asynccontextmanager
async def _schema(database: str) -> AsyncIterator[str]:
    """A schema of its own in `database`: the store URL that uses it."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    setup = open_store(database)
    with setup.engine.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{name}"'))
    try:
        yield f"{database}?options={quote(f'-csearch_path={name}')}"
    finally:
        with setup.engine.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{name}" CASCADE'))
        setup.close()


def _config(store: str, state: str) -> str:
    return f"""\
project: default
store: "{store}"
state: "{state}"
server: {{auth: keys, shutdown_grace_seconds: 0}}
admin_keys: ["{ADMIN_KEY}"]
providers:
  - {{name: m, kind: mock}}
routes:
  - {{name: main, models: [gpt-4o-mini], targets: [{{provider: m}}]}}
keys: [{{name: file, key: file-key-0123456789}}]
"""


@asynccontextmanager
async def _serving(config: Path, count: int) -> AsyncIterator[list[str]]:
    """`count` `turnout serve` processes on free ports: their base URLs until the block ends."""
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
            while True:
                line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
                if line.startswith("turnout serving on "):
                    break
                assert line, "the server ended before its banner"
            urls.append(line.split()[3])
        yield urls
    finally:
        for process in processes:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            await asyncio.wait_for(process.wait(), 30)


@pytest.mark.parametrize("feed", ["redis", "postgresql"])
async def test_a_key_created_on_one_replica_serves_on_the_other(
    feed: str, postgres_url: str, tmp_path: Path
) -> None:
    """A key created through A's admin API is accepted by B without a restart; B's gauge
    says which store version it serves."""
    state = _redis_url() if feed == "redis" else "memory"
    config = tmp_path / "turnout.yaml"
    async with AsyncExitStack() as stack:
        store = await stack.enter_async_context(_schema(postgres_url))
        config.write_text(_config(store, state))
        a, b = await stack.enter_async_context(_serving(config, 2))
        admin = await stack.enter_async_context(
            httpx.AsyncClient(
                base_url=f"{a}/admin/v1", headers={"authorization": f"Bearer {ADMIN_KEY}"}
            )
        )
        projects = (await admin.get("/projects")).json()["data"]
        project = next(p for p in projects if p["name"] == "default")
        created = await admin.post(f"/projects/{project['id']}/keys", json={"name": "fresh"})
        assert created.status_code == 201, created.text
        client = openai.AsyncOpenAI(
            api_key=created.json()["key"], base_url=f"{b}/v1", max_retries=0
        )
        stack.push_async_callback(client.close)
        answer = await asyncio.wait_for(_first_answer(client), _CHANGE_LIMIT)
        assert answer.choices[0].message.content
        async with httpx.AsyncClient(base_url=b) as plain:
            version = (await plain.get("/readyz")).json()["config_version"]
            metrics = (await plain.get("/metrics")).text
        assert version >= 1
        assert f"turnout_config_version {float(version)}" in metrics


async def _first_answer(client: openai.AsyncOpenAI) -> openai.types.chat.ChatCompletion:
    """Call until the key is accepted (401 until the replica serves the write)."""
    for _ in range(100_000):
        try:
            return await client.chat.completions.create(model="gpt-4o-mini", messages=USER)  # type: ignore[arg-type]
        except openai.AuthenticationError:
            await asyncio.sleep(0.02)
    raise AssertionError("unreachable")
