"""PostgreSQL going away under a serving gateway (its connections pass through a TCP relay the
test closes): an admin write answers 503 `store_unavailable` in the admin envelope, and chat
goes on being served from the configuration loaded last."""

from __future__ import annotations

from typing import TYPE_CHECKING

import httpx
from sqlalchemy import text
from sqlalchemy.engine import make_url

from tests._tcp_relay import Relay
from tests.gateway._store_support import file_config
from tests.store.conftest import SECRET_KEY, store_on
from turnout.config.load import parse_config
from turnout.gateway.runtime.control import ControlPlane
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import bind_socket, serving
from turnout.store import SecretBox, migrate, open_store
from turnout.store.file_sync import sync_file

if TYPE_CHECKING:
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
        control = ControlPlane(relayed, file)
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
