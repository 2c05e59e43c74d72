"""End to end: `turnout serve` as a process over its store. A key written to the store by
another process is served without a restart and refused once revoked (the one-second version
poll carries both), on SQLite beside the config file, with two workers (PostgreSQL is covered
in process); `turnout serve` without a file keeps its store in the working directory."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import TYPE_CHECKING

import httpx
import openai

from turnout.store import open_store
from turnout.store import service as svc
from turnout.store.snapshot import load_snapshot

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from turnout.store import Store

_SERVE = "import sys\nfrom turnout.cli import main\nsys.exit(main(sys.argv[1:]))\n"
CONFIG = """\
store: {store}
providers:
  - {{name: m, kind: mock}}
routes:
  - {{name: main, models: [gpt-4o-mini], targets: [{{provider: m}}]}}
keys: [{{name: file, key: file-key-0123456789}}]
"""
# Bounds a wait for the gateway's poll (about a second) to carry a store change.
_CHANGE_LIMIT = 20.0


@contextlib.asynccontextmanager
async def _serving(*argv: str, cwd: Path) -> AsyncIterator[str]:
    """`turnout serve --port 0 …` in `cwd` until the block ends; yields its base URL."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _SERVE, "serve", "--port", "0", *argv, cwd=cwd,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        while True:
            line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
            if line.startswith("turnout serving on "):
                break
            assert line, "the server ended before its banner"
        yield line.split()[3]
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.wait(), 30)


async def _status_becomes(client: openai.AsyncOpenAI, wanted: int) -> int:
    """Ask until the answer's status is `wanted` (the poll carried the change) or the limit."""
    status = 0
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _CHANGE_LIMIT
    while loop.time() < deadline:
        try:
            await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
            )
            status = 200
        except openai.APIStatusError as exc:
            status = exc.status_code
        if status == wanted:
            break
        await asyncio.sleep(0.05)
    return status


async def _key_lifecycle(url: str, store: Store) -> None:
    project_id = load_snapshot(store).projects["default"].id
    key, plaintext = svc.create_key(store, project_id, {"name": "made-later"})
    async with openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=plaintext, max_retries=0) as sdk:
        assert await _status_becomes(sdk, 200) == 200
        svc.revoke_key(store, project_id, key["id"])
        assert await _status_becomes(sdk, 401) == 401


async def test_a_stored_key_is_served_then_refused_on_sqlite(tmp_path: Path) -> None:
    """The SQLite store sits beside the file; a key made there works, then is revoked; with
    two pre-forked workers, each opening the store itself."""
    config = tmp_path / "conf" / "turnout.yaml"
    config.parent.mkdir()
    config.write_text(CONFIG.format(store="sqlite:///turnout.db"))
    async with _serving("--config", str(config), "--workers", "2", cwd=tmp_path) as url:
        store = open_store(f"sqlite:///{config.parent}/turnout.db")
        try:
            await _key_lifecycle(url, store)
        finally:
            store.close()
    assert not (tmp_path / "turnout.db").exists()


async def test_serve_without_a_file_keeps_its_store_in_the_working_directory(
    tmp_path: Path,
) -> None:
    """The quick start: no file, the mock provider answers, `./turnout.db` is the store."""
    async with _serving(cwd=tmp_path) as url, httpx.AsyncClient(base_url=url) as client:
        reply = await client.post(
            "/v1/chat/completions",
            json={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
        )
    assert reply.status_code == 200
    assert (tmp_path / "turnout.db").is_file()
