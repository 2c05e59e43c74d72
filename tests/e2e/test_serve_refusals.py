"""End to end: `turnout serve` as a process over its store, serving a second project made through
the admin API: a chat with an unknown key and one with a revoked key, through the OpenAI SDK, are
ordinary 401s, each with an access line, an audit row and a dashboard row, and no traceback."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import TYPE_CHECKING, Any

import httpx
import openai
import orjson
import pytest

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

_SERVE = "import sys\nfrom turnout.cli import main\nsys.exit(main(sys.argv[1:]))\n"
ADMIN_KEY = "admin-key-0123456789abcdef"
CONFIG = """\
store: "sqlite:///turnout.db"
admin_keys: ["{admin}"]
server: {{auth: keys, shutdown_grace_seconds: 1}}
providers:
  - {{name: m, kind: mock}}
routes:
  - {{name: main, models: [gpt-4o-mini], targets: [{{provider: m}}]}}
keys: [{{name: caller, key: "caller-key-0123456789abcdef"}}]
"""
_ADMIN = {"authorization": f"Bearer {ADMIN_KEY}"}
# Bounds a wait for the audit writer's batch (about a second) or the store poll.
_LIMIT = 20.0


@contextlib.asynccontextmanager
async def _serving(folder: Path) -> AsyncIterator[str]:
    """`turnout serve` (JSON logs into `folder/stderr.log`) until the block ends; its URL."""
    config = folder / "turnout.yaml"
    config.write_text(CONFIG.format(admin=ADMIN_KEY))
    with (folder / "stderr.log").open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", _SERVE, "serve", "--config", str(config), "--port", "0",
            "--log-format", "json", cwd=folder, stdout=asyncio.subprocess.PIPE, stderr=stderr,
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


async def _revoked_key_of_a_second_project(admin: httpx.AsyncClient) -> tuple[str, str, str]:
    """A project and a key made through the admin API, the key then revoked: the project's
    id, the key's id and its plaintext."""
    project = (await admin.post("/admin/v1/projects", json={"name": "second"})).json()
    keys = f"/admin/v1/projects/{project['id']}/keys"
    key = (await admin.post(keys, json={"name": "app"})).json()
    revoked = await admin.post(f"{keys}/{key['id']}/revoke")
    assert revoked.status_code == 200, revoked.text
    return project["id"], key["id"], key["key"]


async def _refused_id(url: str, key: str) -> str:
    """A chat with `key` through the OpenAI SDK, refused with 401: its `x-request-id`."""
    async with openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=key, max_retries=0) as sdk:
        with pytest.raises(openai.AuthenticationError) as refused:
            await sdk.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
            )
    return refused.value.response.headers["x-request-id"]


async def _refused_listing_id(url: str) -> str:
    """`GET /v1/models` with an unknown key through the OpenAI SDK, refused with 401: its
    `x-request-id`."""
    async with openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="tk_unknown", max_retries=0) as sdk:
        with pytest.raises(openai.AuthenticationError) as refused:
            await sdk.models.list()
    return refused.value.response.headers["x-request-id"]


async def _audited(admin: httpx.AsyncClient, request_id: str) -> dict[str, Any]:
    """The request's audit row, once the writer wrote it (or a failed assertion)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _LIMIT
    while True:
        reply = await admin.get(f"/admin/v1/requests/{request_id}")
        if reply.status_code != 404 or loop.time() > deadline:
            assert reply.status_code == 200, reply.text
            found: dict[str, Any] = reply.json()
            return found
        await asyncio.sleep(0.1)


def _lines(folder: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (folder / "stderr.log").read_bytes().splitlines()]


async def test_unknown_and_revoked_keys_are_logged_audited_and_shown(tmp_path: Path) -> None:
    """With a second project, an unknown key and a revoked key each get a 401 with an access
    line, an audit row (no key id; the revoked key's id) and a dashboard row, and no ERROR;
    a model listing refused for its key shows on the dashboard too."""
    async with (
        _serving(tmp_path) as url,
        httpx.AsyncClient(base_url=url, headers=_ADMIN) as admin,
    ):
        project_id, key_id, plaintext = await _revoked_key_of_a_second_project(admin)
        unknown = await _refused_id(url, "tk_not-a-key-of-this-gateway")
        revoked = await _refused_id(url, plaintext)
        listing = await _refused_listing_id(url)
        unknown_row = await _audited(admin, unknown)
        revoked_row = await _audited(admin, revoked)
        dashboard = (await admin.get("/ui/part/requests")).text
    lines = _lines(tmp_path)
    assert not [line for line in lines if line["level"] in ("ERROR", "CRITICAL")]
    access = {line["request_id"]: line for line in lines if line["event"] == "access"}
    assert (access[unknown]["status"], access[unknown]["key"]) == (401, None)
    assert (access[revoked]["status"], access[revoked]["key"]) == (401, "app")
    assert (unknown_row["status"], unknown_row["outcome"], unknown_row["key_id"]) == (
        401,
        "refused",
        None,
    )
    assert (revoked_row["project_id"], revoked_row["key_id"]) == (project_id, key_id)
    assert access[listing]["status"] == 401
    for request_id in (unknown, revoked, listing):
        assert request_id in dashboard
