"""End to end: `turnout serve` as a process under signals: SIGTERM ends an open stream with an
error event within the grace and exits 0, SIGHUP reloads the configuration file (or keeps the
old one when the new one is invalid), and `--workers 2` replaces a worker that dies."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

_SERVE = "import sys\nfrom turnout.cli import main\nsys.exit(main(sys.argv[1:]))\n"
CONFIG = """\
server: {auth: open, shutdown_grace_seconds: 0.3}
providers:
  - {name: m, kind: mock}
routes:
  - {name: drip, models: [drip], targets: [{provider: m, model: "drip/fault:chunk_delay=0.5"}]}
"""
RELOADED = CONFIG + "  - {name: added, models: [added], targets: [{provider: m}]}\n"
INVALID = CONFIG + "  - {name: broken, models: [broken], targets: [{provider: nowhere}]}\n"


class Served:
    """A running `turnout serve`: its process, base URL, and its stderr lines so far."""

    def __init__(self, process: asyncio.subprocess.Process, url: str) -> None:
        self.process = process
        self.url = url
        self.errors: list[str] = []
        self.signalled = False
        self._reader = asyncio.ensure_future(self._read_stderr())

    async def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        while line := await self.process.stderr.readline():
            self.errors.append(line.decode())

    async def wait_for_line(self, text: str, limit: float = 10.0) -> str:
        """The first stderr line containing `text` (within `limit` seconds)."""
        async with asyncio.timeout(limit):
            while True:
                for line in self.errors:
                    if text in line:
                        return line
                await asyncio.sleep(0.02)

    def terminate(self) -> None:
        """Send SIGTERM once."""
        self.signalled = True
        self.process.send_signal(signal.SIGTERM)

    async def stop(self) -> int:
        """SIGTERM (unless sent already), then the exit status."""
        if not self.signalled:
            self.terminate()
        code = await asyncio.wait_for(self.process.wait(), 15)
        await asyncio.wait_for(self._reader, 5)
        return code


@contextlib.asynccontextmanager
async def serve(path: Path, *extra: str) -> AsyncIterator[Served]:
    """`turnout serve --config path --port 0 …` until the block ends (SIGTERM)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _SERVE,
        "serve",
        "--config",
        str(path),
        "--port",
        "0",
        *extra,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    try:
        while True:
            line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
            if line.startswith("turnout serving on "):
                break
            assert line, "the server ended before its banner"
        served = Served(process, line.split()[3])
        yield served
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def _chat(model: str, *, stream: bool = False) -> dict[str, object]:
    return {"model": model, "stream": stream, "messages": [{"role": "user", "content": "hi"}]}


async def test_sigterm_ends_an_open_stream_with_an_error_event_and_exits_0(
    tmp_path: Path,
) -> None:
    """A stream still open when the 0.3 s grace ends gets a `shutting_down` event, and the
    process exits 0 soon after."""
    path = tmp_path / "turnout.yaml"
    path.write_text(CONFIG)
    async with serve(path) as served, httpx.AsyncClient(base_url=served.url, timeout=10) as client:
        request = client.build_request(
            "POST", "/v1/chat/completions", json=_chat("drip", stream=True)
        )
        response = await client.send(request, stream=True)
        assert response.status_code == 200
        chunks = response.aiter_bytes()
        received = await anext(chunks)
        signalled = time.monotonic()
        served.terminate()
        async for chunk in chunks:
            received += chunk
        assert b'"code":"shutting_down"' in received
        assert b"[DONE]" not in received
        assert await served.stop() == 0
        assert time.monotonic() - signalled < 5.0
        assert not [line for line in served.errors if "Traceback" in line]


async def test_sighup_reloads_a_valid_file_and_keeps_serving_on_an_invalid_one(
    tmp_path: Path,
) -> None:
    """SIGHUP with a new route serves it (INFO line); SIGHUP with a broken file logs an
    ERROR naming the problem and the previous configuration keeps serving."""
    path = tmp_path / "turnout.yaml"
    path.write_text(CONFIG)
    async with serve(path) as served, httpx.AsyncClient(base_url=served.url, timeout=10) as client:
        assert (await client.post("/v1/chat/completions", json=_chat("added"))).status_code != 200
        path.write_text(RELOADED)
        served.process.send_signal(signal.SIGHUP)
        line = await served.wait_for_line("reloaded")
        assert "INFO" in line
        assert "2 routes" in line
        assert (await client.post("/v1/chat/completions", json=_chat("added"))).status_code == 200
        path.write_text(INVALID)
        served.process.send_signal(signal.SIGHUP)
        line = await served.wait_for_line("reload of")
        assert "ERROR" in line
        assert "routes[1].targets[0].provider" in line
        assert (await client.post("/v1/chat/completions", json=_chat("added"))).status_code == 200
        assert await served.stop() == 0


async def test_a_reload_s_outcome_shows_in_readyz_and_the_metrics(tmp_path: Path) -> None:
    """A refused SIGHUP reload makes `/readyz` degraded with the problem and moves the reload
    metrics; a valid one that changes `server.port` is served, with a WARNING line and
    `restart_required` naming the port."""
    path = tmp_path / "turnout.yaml"
    path.write_text(CONFIG)
    async with serve(path) as served, httpx.AsyncClient(base_url=served.url, timeout=10) as client:
        assert (await client.get("/readyz")).json()["reload"] is None
        path.write_text(INVALID)
        served.process.send_signal(signal.SIGHUP)
        await served.wait_for_line("reload of")
        refused = (await client.get("/readyz")).json()
        assert refused["status"] == "degraded"
        assert refused["reload"]["outcome"] == "refused"
        assert "routes[1].targets[0].provider" in refused["reload"]["problems"][0]
        metrics = (await client.get("/metrics")).text
        assert 'turnout_config_reloads_total{outcome="refused"} 1.0' in metrics
        assert "turnout_config_last_reload_ok 0.0" in metrics
        path.write_text(RELOADED.replace("auth: open,", "auth: open, port: 4999,"))
        served.process.send_signal(signal.SIGHUP)
        line = await served.wait_for_line("server.port changed")
        assert "WARNING" in line
        assert "next start" in line
        await served.wait_for_line("reloaded")
        ready = (await client.get("/readyz")).json()
        assert ready["status"] == "ready"
        assert ready["reload"]["outcome"] == "ok"
        assert ready["reload"]["restart_required"] == ["server.port"]
        assert "turnout_config_last_reload_ok 1.0" in (await client.get("/metrics")).text
        assert await served.stop() == 0


async def _until(condition: Callable[[], bool]) -> None:
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("not within 10 s")


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(child) for child in text.split()]


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc for worker pids")
async def test_workers_share_the_socket_and_a_dead_one_is_replaced(tmp_path: Path) -> None:
    """`--workers 2`: two worker processes answer; one killed is replaced; SIGTERM stops all
    and exits 0."""
    path = tmp_path / "turnout.yaml"
    path.write_text(CONFIG.replace("drip/fault:chunk_delay=0.5", "drip"))
    async with (
        serve(path, "--workers", "2") as served,
        httpx.AsyncClient(base_url=served.url, timeout=10) as client,
    ):
        async with asyncio.timeout(10):
            await _until(lambda: len(_children(served.process.pid)) >= 2)
            workers = _children(served.process.pid)
            assert (
                await client.post("/v1/chat/completions", json=_chat("drip"))
            ).status_code == 200
            os.kill(workers[0], signal.SIGKILL)
            await served.wait_for_line("starting another")
            await _until(lambda: len(set(_children(served.process.pid)) - {workers[0]}) >= 2)
        async with httpx.AsyncClient(base_url=served.url, timeout=10) as fresh:
            for _ in range(4):
                assert (
                    await fresh.post("/v1/chat/completions", json=_chat("drip"))
                ).status_code == 200
        assert await served.stop() == 0
