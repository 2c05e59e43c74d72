"""A replica whose PostgreSQL cannot be reached when it starts (its connections pass through a
TCP relay that is closed, then opened): it starts anyway, serving the config file's project
from the file alone (store version 0, `/readyz` degraded), and the first refresh that reaches
the store migrates it, brings the file's objects into it and serves it."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import httpx
from sqlalchemy import text
from sqlalchemy.engine import make_url

from tests._tcp_relay import Relay
from tests.store.conftest import store_on
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import bind_socket, serving
from turnout.gateway.server.serving import open_control
from turnout.store import service

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

CONFIG = """\
store: "{store}"
providers:
  - {{name: m, kind: mock}}
routes:
  - {{name: main, models: [gpt-4o-mini], targets: [{{provider: m}}]}}
keys: [{{name: file, key: file-key-0123456789}}]
"""
CHAT = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
CALLER = {"authorization": "Bearer file-key-0123456789"}


async def test_a_replica_starts_on_its_file_and_takes_the_store_when_it_answers(
    postgres_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Start with the store unreachable: a WARNING says so (no start-up error), the file's key
    is served, `/readyz` says `store.up: false`; once the store answers, a refresh prepares and
    serves it."""
    target = make_url(postgres_url)
    relay = Relay(target.host or "127.0.0.1", target.port or 5432)
    await relay.start()
    await relay.close()  # nothing listens on its port now
    with store_on("postgresql", tmp_path, postgres_url) as direct:
        with direct.sessions() as session:
            schema = session.scalar(text("select current_schema()"))
        url = target.set(port=relay.port).render_as_string(hide_password=False)
        path = tmp_path / "turnout.yaml"
        path.write_text(CONFIG.format(store=f"{url}?options=-csearch_path%3D{schema}"))
        with caplog.at_level(logging.WARNING, logger="turnout.gateway"):
            control = open_control(str(path), {})
            control.load()
        assert "unreachable" in caplog.text
        assert control.prepared is False
        app = GatewayApp(control=control, admin=control, status=control.status)
        with bind_socket("127.0.0.1", 0) as sock:
            base = f"http://127.0.0.1:{sock.getsockname()[1]}"
            async with (
                serving(app, sock, ServerLimits(shutdown_grace=0.0)),
                httpx.AsyncClient(base_url=base, timeout=10) as client,
            ):
                served = await client.post("/v1/chat/completions", json=CHAT, headers=CALLER)
                assert served.status_code == 200, served.text
                ready = (await client.get("/readyz")).json()
                assert (ready["status"], ready["config_version"]) == ("degraded", 0)
                assert ready["store"]["up"] is False
                assert await control.refresh() is False  # still unreachable
                await relay.start()
                assert await control.refresh() is True
                ready = (await client.get("/readyz")).json()
                assert ready["status"] == "ready"
                assert ready["config_version"] >= 1
                assert ready["store"] == {"backend": "postgresql", "up": True}
                again = await client.post("/v1/chat/completions", json=CHAT, headers=CALLER)
                assert again.status_code == 200, again.text
        assert [row["name"] for row in service.list_projects(direct)] == ["default"]
        await relay.close()
