"""`turnout serve`: its options, the start-up lines, and configuration errors."""

from __future__ import annotations

import argparse
import io
import logging
import socket
import subprocess
import sys
from typing import TYPE_CHECKING, Any

from tests.gateway._app_support import mock_provider, runtime_of
from turnout.errors import ConfigError
from turnout.gateway.commands.serve import add_serve_parser, main_serve
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.serving import (
    ServeOptions,
    banner,
    open_control,
    preflight,
    worker_app,
    worker_warning,
)

if TYPE_CHECKING:
    from collections.abc import MutableMapping
    from pathlib import Path

    import pytest

    from turnout.gateway.runtime.live import Runtime


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_serve_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["serve", *argv])


CONFIG: dict[str, Any] = {
    "providers": [mock_provider("m")],
    "routes": [{"name": "r", "models": ["x"], "targets": [{"provider": "m"}]}],
}


def test_serve_options() -> None:
    """`--config`, `--host`, `--port` and `--workers` parse; the address defaults to the config."""
    args = _parse("--config", "t.yaml", "--host", "10.1.2.3", "--port", "8080", "--workers", "4")
    assert (args.config, args.host, args.port, args.workers) == ("t.yaml", "10.1.2.3", 8080, 4)
    defaults = _parse()
    assert (defaults.config, defaults.host, defaults.port, defaults.workers) == (
        None,
        None,
        None,
        1,
    )


def test_banner_names_the_address_routes_and_auth() -> None:
    """One line: where it listens, how many routes, which auth."""
    line = banner(runtime_of(CONFIG), "127.0.0.1", 4000)
    assert line == "turnout serving on http://127.0.0.1:4000 (1 route, auth=open)"


def test_several_workers_without_redis_warn() -> None:
    """Several workers without Redis warn: state is per worker; one worker or Redis is quiet."""
    memory = runtime_of(CONFIG)
    shared = runtime_of({**CONFIG, "state": "redis://127.0.0.1:6379/0"})
    warning = worker_warning(memory, 4)
    assert warning is not None
    assert "per worker" in warning
    assert worker_warning(memory, 1) is None
    assert worker_warning(shared, 4) is None


def test_preflight_binds_and_warns_without_serving() -> None:
    """The preflight listens on the address and prints the load warnings, not the banner: the
    plan it returns carries the socket, the worker count and where SIGHUP reloads from."""
    out = io.StringIO()
    plan = preflight(ServeOptions(host="127.0.0.1", port=0, workers=2), runtime_of(CONFIG), out=out)
    assert plan is not None
    with plan.sock:
        assert plan.sock.getsockname()[0] == "127.0.0.1"
        assert (plan.host, plan.workers, plan.path, plan.control) == ("127.0.0.1", 2, None, None)
        assert plan.reload[0] == "the embedded defaults"
    lines = out.getvalue().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("warning: 2 workers without Redis")


def test_preflight_refuses_an_address_in_use(capsys: pytest.CaptureFixture[str]) -> None:
    """An address that cannot be bound is refused before anything starts (None, the reason on
    stderr, nothing on `out`)."""
    out = io.StringIO()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        options = ServeOptions(host="127.0.0.1", port=port)
        assert preflight(options, runtime_of(CONFIG), out=out) is None
    assert capsys.readouterr().err.startswith(f"error: cannot listen on 127.0.0.1:{port}: ")
    assert out.getvalue() == ""


def test_invalid_config_prints_every_error_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad file never starts a server: each error with its path on stderr, exit status 1."""
    path = tmp_path / "turnout.yaml"
    path.write_text(
        "providers:\n  - {name: m, kind: mock}\n"
        "routes:\n  - name: r\n    targets: [{provider: nowhere, max_retries: 12}]\n"
    )
    assert main_serve(_parse("--config", str(path))) == 1
    err = capsys.readouterr().err
    assert "routes[0].targets[0].provider" in err
    assert "routes[0].targets: total attempts 13 exceeds the maximum of 10" in err


def test_missing_config_file_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file that cannot be read is an error, not a traceback."""
    assert main_serve(_parse("--config", str(tmp_path / "absent.yaml"))) == 1
    assert "absent.yaml" in capsys.readouterr().err


def test_zero_workers_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """`--workers 0` is a usage error."""
    assert main_serve(_parse("--workers", "0")) == 2
    assert "--workers" in capsys.readouterr().err


async def _lifespan(app: GatewayApp) -> list[str]:
    """Drive one lifespan (startup, then shutdown); the messages the app sent back."""
    inbox = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    sent: list[str] = []

    async def receive() -> dict[str, Any]:
        return inbox.pop(0)

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message["type"])

    await app({"type": "lifespan"}, receive, send)
    return sent


async def test_lifespan_builds_the_runtime_and_closes_it() -> None:
    """A worker's app builds its runtime at startup and closes its pools at shutdown."""
    runtime = runtime_of(CONFIG)
    closed: list[bool] = []

    async def aclose() -> None:
        closed.append(True)

    runtime.providers["m"].aclose = aclose
    app = GatewayApp(load=lambda: runtime)
    assert await _lifespan(app) == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert app.runtime is runtime
    assert closed == [True]


async def test_lifespan_reports_a_runtime_that_cannot_load() -> None:
    """A configuration that fails in a worker stops the server with the reason."""

    def broken() -> Runtime:
        raise ConfigError("providers[0].kind: unknown")

    assert await _lifespan(GatewayApp(load=broken)) == ["lifespan.startup.failed"]


async def test_worker_app_loads_the_configured_file(tmp_path: Path) -> None:
    """`worker_app` (one per worker process) builds its runtime from the file at startup."""
    path = tmp_path / "turnout.yaml"
    path.write_text(
        "server: {auth: open}\nproviders: [{name: m, kind: mock}]\n"
        "routes: [{name: only, models: [x], targets: [{provider: m}]}]\n"
    )
    app = worker_app(str(path))
    before = app.runtime
    await _lifespan(app)
    after = app.runtime
    assert before is None
    assert after is not None
    assert list(after.routes) == ["only"]


def test_a_store_that_cannot_be_reached_does_not_stop_the_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Nothing answers at the store's address: a WARNING names the store without its password,
    and the file's project is served from the file alone (store version 0)."""
    path = tmp_path / "turnout.yaml"
    path.write_text(
        "store: postgresql://turnout:pw-hunter2@127.0.0.1:1/turnout\n"
        "providers: [{name: m, kind: mock}]\n"
    )
    with caplog.at_level(logging.WARNING, logger="turnout.gateway"):
        control = open_control(str(path), {})
        served = control.load()
    assert "the store at postgresql://turnout:***@127.0.0.1:1/turnout is unreachable" in (
        caplog.text
    )
    assert "hunter2" not in caplog.text
    assert (served.version, list(served.runtimes)) == (0, ["default"])
    control.store.close()


def test_serving_needs_no_third_party_server() -> None:
    """`turnout serve` and the demo stage load no uvicorn: it is no longer a dependency."""
    code = (
        "import sys\n"
        "import turnout.gateway.server.serving, turnout.demo.stage\n"
        "print('uvicorn' in sys.modules)\n"
    )
    result = subprocess.run(  # noqa: S603 - this interpreter, fixed code
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "False"
