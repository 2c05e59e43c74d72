"""`TURNOUT_SECRET_KEY` missing: `turnout serve` refuses to start over a store holding
encrypted provider secrets, naming the variable; over a store without any it starts, says
once that the admin API cannot take secrets, and a secret sent to the admin API over real
HTTP is 503 `SECRET_KEY_MISSING` with an ERROR line."""

from __future__ import annotations

import argparse
import logging
from typing import TYPE_CHECKING

import httpx

from tests.gateway._store_support import control_of, file_config
from tests.store.conftest import SECRET_KEY
from turnout.config.load import parse_config
from turnout.gateway.commands.serve import add_serve_parser, main_serve
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import bind_socket, serving
from turnout.store import SECRET_KEY_VARIABLE, SecretBox, migrate, open_store
from turnout.store import service as svc
from turnout.store.file_sync import sync_file

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

ADMIN_KEY = "adm-secret-key-test-0123456789"
SEALED_KEY = "sk-stored-under-a-key-0123"


def _serve_args(config: Path) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_serve_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["serve", "--config", str(config), "--port", "0"])


def test_serve_refuses_a_store_with_secrets_it_cannot_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store holding a sealed provider secret and no TURNOUT_SECRET_KEY: exit 1 naming it."""
    url = f"sqlite:///{tmp_path}/turnout.db"
    config = tmp_path / "turnout.yaml"
    config.write_text(f"store: {url}\nproviders: [{{name: m, kind: mock}}]\n")
    keyed = open_store(url, secrets=SecretBox(SECRET_KEY))
    migrate(keyed)
    sync_file(keyed, parse_config({"providers": [{"name": "m", "kind": "mock"}]}, env={}))
    project_id = svc.list_projects(keyed)[0]["id"]
    body = {"name": "vendor", "kind": "openai", "api_key": SEALED_KEY}
    svc.create_object(keyed, "provider", project_id, body)
    keyed.close()
    monkeypatch.delenv(SECRET_KEY_VARIABLE, raising=False)
    assert main_serve(_serve_args(config)) == 1
    err = capsys.readouterr().err
    assert f"error: cannot start: {SECRET_KEY_VARIABLE} is not set" in err
    assert "the store holds encrypted provider secrets" in err
    assert SEALED_KEY not in err


async def test_a_secret_sent_without_the_key_is_503_with_an_error_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """No key, no stored secret: the gateway starts (one WARNING line), a provider with an
    api_key is 503 SECRET_KEY_MISSING naming the variable (ERROR line), one without is 201."""
    store = open_store(f"sqlite:///{tmp_path}/turnout.db", secrets=SecretBox(None))
    migrate(store)
    control = control_of(store, file_config(admin_keys=[ADMIN_KEY]))
    app = GatewayApp(control=control, admin_hashes=control.admin_key_hashes, admin=control)
    headers = {"authorization": f"Bearer {ADMIN_KEY}"}
    with bind_socket("127.0.0.1", 0) as sock, caplog.at_level(logging.INFO):
        address = f"http://127.0.0.1:{sock.getsockname()[1]}"
        async with (
            serving(app, sock, ServerLimits(shutdown_grace=0.0)),
            httpx.AsyncClient(base_url=address, headers=headers, timeout=30) as client,
        ):
            project = (await client.get("/admin/v1/projects")).json()["data"][0]["id"]
            path = f"/admin/v1/projects/{project}/providers"
            secret = {"name": "vendor", "kind": "openai", "api_key": "sk-never-stored-0123"}
            refused = await client.post(path, json=secret)
            keyless = await client.post(path, json={"name": "local", "kind": "mock"})
    assert refused.status_code == 503, refused.text
    error = refused.json()["error"]
    assert error["code"] == "SECRET_KEY_MISSING"
    assert error["meta"] == {"variable": SECRET_KEY_VARIABLE}
    assert SECRET_KEY_VARIABLE in error["message"]
    assert keyless.status_code == 201, keyless.text
    lines = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert any(
        level == logging.WARNING and "admin API is on and TURNOUT_SECRET_KEY is not set" in text
        for level, text in lines
    )
    assert any(
        level == logging.ERROR and text.startswith(f"admin API: POST {path}: {SECRET_KEY_VARIABLE}")
        for level, text in lines
    )
    assert not any("sk-never-stored-0123" in text for _, text in lines)
