"""PostgreSQL going away under a serving gateway (its connections pass through a TCP relay the
test closes, or stalls to play a database that accepts and never answers): admin calls answer
503 `store_unavailable` in the admin envelope within their bound, the health views and
`/readyz` answer without the store and say it is down, and chat goes on being served from the
configuration loaded last."""

from __future__ import annotations

import argparse
import asyncio
import io
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import httpx
from sqlalchemy import text
from sqlalchemy.engine import make_url

from tests._tcp_relay import Relay
from tests.gateway._store_support import HeldFeed, file_config
from tests.store.conftest import SECRET_KEY, store_on
from turnout.config.load import parse_config
from turnout.gateway.commands.health import main_health
from turnout.gateway.resolution.lookups import ProjectLookups
from turnout.gateway.runtime.control import ControlPlane
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import Listener, bind_socket, serving
from turnout.gateway.server.worker import reload_runtime
from turnout.store import SecretBox, migrate, open_store
from turnout.store.engine import StoreTimeouts
from turnout.store.file_sync import sync_file

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    import pytest

ADMIN_KEY = "adm-store-down-0123456789"


async def test_a_write_without_the_store_is_503_and_chat_is_served(
    postgres_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With the store gone: POST /projects is 503 store_unavailable (no 500, no traceback),
    and the file's key still gets a chat answer from the configuration loaded last."""
    file = parse_config(file_config(admin_keys=[ADMIN_KEY]), env={})
    target = make_url(postgres_url)
    relay = Relay(target.host or "127.0.0.1", target.port or 5432)
    await relay.start()
    with store_on("postgresql", tmp_path, postgres_url) as direct:
        migrate(direct)
        sync_file(direct, file)
        with direct.sessions() as session:  # the test's own schema, for the relayed store
            name = session.scalar(text("select current_schema()"))
        relayed = open_store(
            target.set(port=relay.port).render_as_string(hide_password=False),
            secrets=SecretBox(SECRET_KEY),
            connect_args={"options": f"-csearch_path={name}", "connect_timeout": 2},
        )
        control = ControlPlane(relayed, file, lookups=ProjectLookups)
        app = GatewayApp(control=control, admin_hashes=control.admin_key_hashes, admin=control)
        with bind_socket("127.0.0.1", 0) as sock:
            async with (
                serving(app, sock, ServerLimits(shutdown_grace=0.0)),
                httpx.AsyncClient(
                    base_url=f"http://127.0.0.1:{sock.getsockname()[1]}", timeout=30
                ) as client,
            ):
                chat = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
                caller = {"authorization": "Bearer file-key-0123456789"}
                admin = {"authorization": f"Bearer {ADMIN_KEY}"}
                first = await client.post("/v1/chat/completions", json=chat, headers=caller)
                assert first.status_code == 200, first.text
                await relay.close()
                refused = await client.post(
                    "/admin/v1/projects", json={"name": "later"}, headers=admin
                )
                assert refused.status_code == 503, refused.text
                error = refused.json()["error"]
                assert error["code"] == "store_unavailable"
                assert "store cannot be reached" in error["message"]
                served = await client.post("/v1/chat/completions", json=chat, headers=caller)
                assert served.status_code == 200, served.text
        assert not [r for r in caplog.records if r.exc_info]


@asynccontextmanager
async def _stalled_gateway(
    postgres_url: str, tmp_path: Path, *, call: float = 0.5, fresh: bool = False
) -> AsyncIterator[_Stalled]:
    """A gateway on PostgreSQL through a relay (store calls bounded at `call` s, connecting
    bounded at 2 s) that has answered once, then a relay that accepts connections and never
    answers (`fresh`: the pooled connections are dropped, so the next call connects anew)."""
    file = parse_config(file_config(admin_keys=[ADMIN_KEY]), env={})
    target = make_url(postgres_url)
    relay = Relay(target.host or "127.0.0.1", target.port or 5432)
    await relay.start()
    with store_on("postgresql", tmp_path, postgres_url) as direct:
        migrate(direct)
        sync_file(direct, file)
        with direct.sessions() as session:
            name = session.scalar(text("select current_schema()"))
        relayed = open_store(
            target.set(port=relay.port).render_as_string(hide_password=False),
            secrets=SecretBox(SECRET_KEY),
            timeouts=StoreTimeouts(call=call),
            connect_args={"options": f"-csearch_path={name}", "connect_timeout": 2},
        )
        control = ControlPlane(relayed, file, lookups=ProjectLookups, feed=HeldFeed())
        app = GatewayApp(
            control=control,
            admin_hashes=control.admin_key_hashes,
            admin=control,
            status=control.status,
        )
        with bind_socket("127.0.0.1", 0) as sock:
            url = f"http://127.0.0.1:{sock.getsockname()[1]}"
            async with (
                serving(app, sock, ServerLimits(shutdown_grace=0.0)) as listener,
                httpx.AsyncClient(base_url=url, timeout=3, headers=ADMIN) as client,
            ):
                assert (await client.get("/admin/v1/projects")).status_code == 200
                relay.stall()
                if fresh:
                    relayed.engine.dispose()
                try:
                    yield _Stalled(client, url, control, app, listener)
                finally:
                    await relay.close()  # cuts the connections still waiting


class _Stalled:
    def __init__(
        self,
        client: httpx.AsyncClient,
        url: str,
        control: ControlPlane,
        app: GatewayApp,
        listener: Listener,
    ) -> None:
        self.client, self.url = client, url
        self.control, self.app, self.listener = control, app, listener


ADMIN = {"authorization": f"Bearer {ADMIN_KEY}"}


async def test_a_store_that_never_answers_is_503_within_the_bound(
    postgres_url: str, tmp_path: Path
) -> None:
    """With PostgreSQL accepting and never answering, an admin read and an admin write each
    answer 503 store_unavailable within their bound (the client gives up after 3 s)."""
    async with _stalled_gateway(postgres_url, tmp_path) as gateway:
        read = await gateway.client.get("/admin/v1/projects")
        assert read.status_code == 503, read.text
        assert read.json()["error"]["code"] == "store_unavailable"
        written = await gateway.client.post("/admin/v1/projects", json={"name": "later"})
        assert written.status_code == 503, written.text
        assert written.json()["error"]["code"] == "store_unavailable"


async def test_health_answers_from_the_runtimes_while_the_store_never_answers(
    postgres_url: str, tmp_path: Path
) -> None:
    """`GET /admin/v1/health` and `turnout health` need no store: both answer at once."""
    async with _stalled_gateway(postgres_url, tmp_path) as gateway:
        health = await gateway.client.get("/admin/v1/health")
        assert health.status_code == 200, health.text
        assert [project["project"] for project in health.json()["data"]] == ["default"]
        args = argparse.Namespace(url=gateway.url, admin_key=ADMIN_KEY, json=False, timeout=3.0)
        out = io.StringIO()
        assert await asyncio.to_thread(main_health, args, out) == 0
        assert "No upstream has been called yet" in out.getvalue()


async def test_readyz_and_a_metric_say_the_store_does_not_answer(
    postgres_url: str, tmp_path: Path
) -> None:
    """Once a store call meets the silent store, `/readyz` is 200 `degraded` with
    `store.up: false` and `turnout_store_up{backend="postgresql"}` is 0; chat is served."""
    async with _stalled_gateway(postgres_url, tmp_path) as gateway:
        client = gateway.client
        before = (await client.get("/readyz")).json()
        assert before["status"] == "ready"
        assert before["store"] == {"backend": "postgresql", "up": True}
        assert (await client.get("/admin/v1/projects")).status_code == 503
        ready = await client.get("/readyz")
        assert ready.status_code == 200
        body = ready.json()
        assert body["status"] == "degraded"
        assert body["store"]["up"] is False
        assert "store: unreachable" in body["reason"]
        metrics = (await client.get("/metrics")).text
        assert 'turnout_store_up{backend="postgresql"} 0.0' in metrics
        chat = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
        caller = {"authorization": "Bearer file-key-0123456789"}
        served = await client.post("/v1/chat/completions", json=chat, headers=caller)
        assert served.status_code == 200, served.text


async def test_a_reload_without_the_store_serves_the_file_and_never_blocks_serving(
    postgres_url: str, tmp_path: Path
) -> None:
    """A SIGHUP reload while the store accepts and never answers leaves `/healthz` and chat
    answering while it waits, then serves the new file (a route it adds answers) and shows
    as `ok` in `/readyz`."""
    async with _stalled_gateway(postgres_url, tmp_path, call=3.0, fresh=True) as gateway:
        grown = file_config(admin_keys=[ADMIN_KEY])
        grown["routes"] = [
            *grown["routes"],
            {"name": "more", "models": ["gpt-4o"], "targets": [{"provider": "m"}]},
        ]
        gateway.control._reload_file = lambda: parse_config(grown, env={})
        reload = asyncio.create_task(
            reload_runtime(gateway.app, gateway.listener, gateway.control.reload_file, "f")
        )
        client = gateway.client
        healthz = await asyncio.wait_for(client.get("/healthz"), 1.5)
        served = await asyncio.wait_for(_chat(client, "gpt-4o-mini"), 1.5)
        assert not reload.done()  # both answered while the reload waits on the store
        assert healthz.status_code == 200
        assert served.status_code == 200, served.text
        assert await reload
        assert (await _chat(client, "gpt-4o")).status_code == 200
        ready = (await client.get("/readyz")).json()
        assert ready["reload"]["outcome"] == "ok", ready
        assert ready["store"]["up"] is False


async def _chat(client: httpx.AsyncClient, model: str) -> httpx.Response:
    chat = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    return await client.post(
        "/v1/chat/completions", json=chat, headers={"authorization": "Bearer file-key-0123456789"}
    )
