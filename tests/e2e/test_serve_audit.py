"""End to end: `turnout serve` as a process audits every request into its store. A chat through
the OpenAI SDK is found by its `x-request-id` through the admin API with its attempts, its tokens
are in the usage report, and a request refused for its key is found as refused, on SQLite and on
PostgreSQL; SIGTERM writes what is still queued; with two workers every request is audited; a
store that goes away mid-run keeps requests answered and their usage spilled beside the config
file, written at the next start; the dashboard opens a request from the audit."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import uuid
from typing import TYPE_CHECKING

import httpx
import openai
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator
    from pathlib import Path

_SERVE = "import sys\nfrom turnout.cli import main\nsys.exit(main(sys.argv[1:]))\n"
ADMIN_KEY = "admin-key-0123456789abcdef"
CALLER_KEY = "caller-key-0123456789abcdef"
CONFIG = """\
store: "{store}"
admin_keys: ["{admin}"]
server: {{auth: keys, shutdown_grace_seconds: 1}}
providers:
  - {{name: up, kind: openai, api_key: sk-upstream-0123, base_url: "{upstream}"}}
routes:
  - {{name: main, models: [gpt-4o-mini], targets: [{{provider: up}}]}}
keys: [{{name: caller, key: "{caller}"}}]
"""
# Bounds a wait for the writer's batch (flushed about every second).
_FLUSH_LIMIT = 20.0


class _Served:
    """A running `turnout serve`: its process and base URL."""

    def __init__(self, process: asyncio.subprocess.Process, url: str) -> None:
        self.process = process
        self.url = url

    async def stop(self) -> int:
        """SIGTERM, then the exit status."""
        self.process.send_signal(signal.SIGTERM)
        return await asyncio.wait_for(self.process.wait(), 30)


@contextlib.asynccontextmanager
async def _serving(config: Path, *argv: str) -> AsyncIterator[_Served]:
    """`turnout serve --config config --port 0 …` (in the config's folder) until the block
    ends; killed if still running then."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _SERVE, "serve", "--config", str(config), "--port", "0", *argv,
        cwd=config.parent, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        while True:
            line = (await asyncio.wait_for(process.stdout.readline(), 30)).decode()
            if line.startswith("turnout serving on "):
                break
            assert line, "the server ended before its banner"
        yield _Served(process, line.split()[3])
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def _config(folder: Path, store: str, upstream: MockUpstream) -> Path:
    path = folder / "turnout.yaml"
    path.write_text(
        CONFIG.format(
            store=store, admin=ADMIN_KEY, caller=CALLER_KEY, upstream=upstream.openai_base_url
        )
    )
    return path


async def _chat(url: str) -> tuple[str, int, int]:
    """One chat through the OpenAI SDK (a connection of its own): its `x-request-id` and
    its prompt and completion tokens."""
    async with openai.AsyncOpenAI(base_url=f"{url}/v1", api_key=CALLER_KEY, max_retries=0) as sdk:
        raw = await sdk.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hello there"}]
        )
    completion = raw.parse()
    assert completion.usage is not None
    request_id = raw.headers["x-request-id"]
    return request_id, completion.usage.prompt_tokens, completion.usage.completion_tokens


async def _refused(url: str) -> str:
    """One chat with an unknown key (refused before routing): the `x-request-id` it got."""
    async with openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="not-a-key", max_retries=0) as sdk:
        with pytest.raises(openai.AuthenticationError) as refused:
            await sdk.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "hello there"}]
            )
    return refused.value.response.headers["x-request-id"]


async def _audited(client: httpx.AsyncClient, request_id: str) -> httpx.Response:
    """`GET /admin/v1/requests/{id}` until it is found (the batch was written) or the limit."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _FLUSH_LIMIT
    while True:
        reply = await client.get(f"/admin/v1/requests/{request_id}")
        if reply.status_code != 404 or loop.time() > deadline:
            return reply
        await asyncio.sleep(0.1)


_COUNTS = {
    "request_audit": text("SELECT count(*) FROM request_audit"),
    "usage_ledger": text("SELECT count(*) FROM usage_ledger"),
}


def _count(url: str, table: str) -> int:
    engine = create_engine(make_url(url).set(drivername=_driver(url)))
    try:
        with engine.connect() as connection:
            return int(connection.execute(_COUNTS[table]).scalar_one())
    finally:
        engine.dispose()


def _driver(url: str) -> str:
    return "sqlite" if url.startswith("sqlite") else "postgresql+psycopg"


_TERMINATE = text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n")


@contextlib.contextmanager
def _database(postgres_url: str) -> Iterator[tuple[str, Callable[[bool], None]]]:
    """A PostgreSQL database of this test's own: its URL, and a switch that refuses (False)
    or allows (True) connections to it, ending those open when refusing."""
    name = f"turnout_audit_{uuid.uuid4().hex[:10]}"
    admin = create_engine(
        make_url(postgres_url).set(drivername="postgresql+psycopg"), isolation_level="AUTOCOMMIT"
    )

    def allow(allowed: bool) -> None:
        with admin.connect() as connection:
            connection.execute(text(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {allowed}'))
            if not allowed:
                connection.execute(_TERMINATE, {"n": name})

    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        url = make_url(postgres_url).set(database=name, drivername="postgresql")
        yield url.render_as_string(hide_password=False), allow
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The store of the served process: an SQLite file beside the config, or a PostgreSQL
    database of the test's own."""
    if request.param == "sqlite":
        yield "sqlite:///turnout.db"
        return
    with _database(request.getfixturevalue("postgres_url")) as (url, _):
        yield url


async def test_a_chat_is_audited_and_counted_and_sigterm_writes_the_queue(
    tmp_path: Path, store_url: str
) -> None:
    """The routing record and attempts of a chat are found by its request id, its tokens are
    in the usage report; requests still queued at SIGTERM are in the store after the exit."""
    async with MockUpstream() as upstream:
        config = _config(tmp_path, store_url, upstream)
        async with _serving(config) as served:
            request_id, prompt, completion = await _chat(served.url)
            headers = {"authorization": f"Bearer {ADMIN_KEY}"}
            async with httpx.AsyncClient(base_url=served.url, headers=headers) as admin:
                found = await _audited(admin, request_id)
                assert found.status_code == 200, found.text
                audit = found.json()
                assert audit["routing"]["request_id"] == request_id
                assert audit["attempts"][0]["outcome"] == "answered"
                assert audit["key_name"] == "caller"
                usage = (await admin.get("/admin/v1/usage", params={"group_by": "key"})).json()
                refused_id = await _refused(served.url)
                refused = (await _audited(admin, refused_id)).json()
            assert (refused["status"], refused["outcome"], refused["error_code"]) == (
                401,
                "refused",
                "invalid_api_key",
            )
            [group] = usage["data"]
            assert (group["requests"], group["input_tokens"], group["output_tokens"]) == (
                1,
                prompt,
                completion,
            )
            for _ in range(3):  # queued, most likely unwritten when SIGTERM lands
                await _chat(served.url)
            assert await served.stop() == 0
    url = store_url if not store_url.startswith("sqlite") else f"sqlite:///{tmp_path}/turnout.db"
    assert _count(url, "request_audit") == 5  # the refused one has no usage
    assert _count(url, "usage_ledger") == 4


async def test_two_workers_audit_every_request_and_the_dashboard_reads_it(tmp_path: Path) -> None:
    """`--workers 2`: each worker writes its own requests, all in the store once the gateway
    stopped; after a restart (no process holds them in memory) a request opens on
    `/ui/requests/{id}` from the audit, and an unknown id is a 404."""
    headers = {"authorization": f"Bearer {ADMIN_KEY}"}
    async with MockUpstream() as upstream:
        config = _config(tmp_path, "sqlite:///turnout.db", upstream)
        async with _serving(config, "--workers", "2") as served:
            ids = [(await _chat(served.url))[0] for _ in range(8)]
            assert await served.stop() == 0
        url = f"sqlite:///{tmp_path}/turnout.db"
        assert _count(url, "request_audit") == len(set(ids)) == 8
        assert _count(url, "usage_ledger") == 8
        async with (
            _serving(config) as served,
            httpx.AsyncClient(base_url=served.url, headers=headers) as client,
        ):
            page = await client.get(f"/ui/requests/{ids[0]}")
            missing = await client.get("/ui/requests/req_never_seen")
            assert await served.stop() == 0
    assert page.status_code == 200, page.text
    assert ids[0] in page.text
    assert "answered" in page.text
    assert missing.status_code == 404


async def test_a_store_gone_mid_run_spills_usage_written_at_the_next_start(
    tmp_path: Path, postgres_url: str
) -> None:
    """With its database refusing connections, the gateway keeps answering and spills the
    usage to `turnout-spill` beside the config; the next start writes it to the store."""
    with _database(postgres_url) as (url, allow):
        async with MockUpstream() as upstream:
            config = _config(tmp_path, url, upstream)
            async with _serving(config) as served:
                allow(False)
                for _ in range(3):
                    await _chat(served.url)  # answered: the store is never on the request path
                assert await served.stop() == 0
            spilled = list((tmp_path / "turnout-spill").glob("usage-*.jsonl"))
            assert [path.read_text().count("\n") for path in spilled] == [3]
            allow(True)
            async with _serving(config) as served, httpx.AsyncClient(base_url=served.url) as probe:
                assert (await probe.get("/healthz")).status_code == 200  # started: spill replayed
                assert await served.stop() == 0
        assert _count(url, "usage_ledger") == 3
        assert not any(path.exists() for path in spilled)
