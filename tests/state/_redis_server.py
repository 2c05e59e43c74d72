"""A throwaway `redis-server` for tests that stop and start Redis: on a free local port, with no
persistence, skipped (with the reason) when the binary is not installed."""

from __future__ import annotations

import asyncio
import shutil
import socket
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import pytest
import redis.asyncio as aredis

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


def free_port() -> int:
    """A local TCP port nothing listens on (bound once, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


class Server:
    """A throwaway redis-server on a fixed port that can be stopped and started."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        binary = shutil.which("redis-server")
        assert binary is not None
        self.process = await asyncio.create_subprocess_exec(
            binary,
            *("--port", str(self.port), "--bind", "127.0.0.1", "--save", ""),
            *("--appendonly", "no", "--daemonize", "no", "--loglevel", "warning"),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        client = aredis.Redis.from_url(self.url, socket_connect_timeout=0.1)
        try:
            for _ in range(200):
                try:
                    await client.ping()
                except (OSError, aredis.ConnectionError):
                    await asyncio.sleep(0.01)
                else:
                    return
            raise AssertionError("redis-server did not start")
        finally:
            await client.aclose()

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            await self.process.wait()


@asynccontextmanager
async def running_redis() -> AsyncIterator[Server]:
    """A started redis-server, stopped on exit (the test is skipped when the binary is
    missing)."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    own = Server(free_port())
    await own.start()
    try:
        yield own
    finally:
        await own.stop()
