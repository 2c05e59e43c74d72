"""Turning tracing on for `turnout serve`: when `server.tracing` and the `OTEL_*` variables say
it is on, the start-up error without the `turnout[otel]` extra, and a served process that
exports its spans (console, and OTLP to a collector stand-in) and flushes them when it stops."""

from __future__ import annotations

import asyncio
import io
import signal
import socket
import sys
from typing import TYPE_CHECKING, Any

import httpx
import orjson
import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from turnout.config.load import parse_config
from turnout.errors import ConfigError
from turnout.gateway.observe.tracing import TracingSettings
from turnout.gateway.resolution.lookups import build_runtime
from turnout.gateway.server.serving import ServeOptions, serve
from turnout.schema import TracingConfig

if TYPE_CHECKING:
    from pathlib import Path

_SERVE = (
    "import argparse, sys\n"
    "from turnout.gateway.commands.serve import add_serve_parser, main_serve\n"
    "parser = argparse.ArgumentParser()\n"
    "add_serve_parser(parser.add_subparsers(dest='command'))\n"
    "sys.exit(main_serve(parser.parse_args(sys.argv[1:])))\n"
)
CONFIG = """\
server:
  auth: open
  tracing: {exporter: console, service_name: gateway-under-test}
providers:
  - {name: m, kind: mock}
routes:
  - {name: quick, models: [quick-model], targets: [{provider: m}]}
"""


@pytest.mark.parametrize(
    ("config", "env", "expected"),
    [
        (None, {}, None),
        (None, {"OTEL_TRACES_EXPORTER": "none"}, None),
        (None, {"OTEL_TRACES_EXPORTER": "otlp"}, ("otlp", "turnout", "OTEL_TRACES_EXPORTER")),
        (
            None,
            {"OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "edge"},
            ("console", "edge", "OTEL_TRACES_EXPORTER"),
        ),
        ({}, {}, ("otlp", "turnout", "server.tracing.exporter")),
        (
            {"service_name": "gw"},
            {"OTEL_SERVICE_NAME": "edge"},
            ("otlp", "gw", "server.tracing.exporter"),
        ),
        ({"exporter": "none"}, {"OTEL_TRACES_EXPORTER": "otlp"}, None),
        ({}, {"OTEL_SDK_DISABLED": "true"}, None),
    ],
)
def test_when_tracing_is_on(
    config: dict[str, Any] | None, env: dict[str, str], expected: tuple[str, str, str] | None
) -> None:
    """The file's `server.tracing` decides (`exporter: none` is off), else
    `OTEL_TRACES_EXPORTER`; `OTEL_SDK_DISABLED=true` turns it off; the service name is the
    file's, else `OTEL_SERVICE_NAME`, else `turnout`."""
    tracing = None if config is None else TracingConfig.model_validate(config)
    settings = TracingSettings.of(tracing, env)
    got = None if settings is None else (settings.exporter, settings.service_name, settings.source)
    assert got == expected


def test_an_exporter_variable_turnout_cannot_serve_is_refused() -> None:
    """`OTEL_TRACES_EXPORTER=zipkin` is a `ConfigError` naming the variable."""
    with pytest.raises(ConfigError) as caught:
        TracingSettings.of(None, {"OTEL_TRACES_EXPORTER": "zipkin"})
    assert caught.value.errors == (("OTEL_TRACES_EXPORTER", "must name otlp, console or none"),)


def test_serve_without_the_extra_stops_with_an_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With tracing configured and the SDK not importable, `serve` prints an error naming the
    `turnout[otel]` extra and the key that asked for tracing, and returns 1 before binding."""
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk", None)
    config = {"server": {"auth": "open", "tracing": {"endpoint": "http://127.0.0.1:4318"}}}
    runtime = build_runtime(parse_config(config, env={}))
    out = io.StringIO()
    assert serve(ServeOptions(port=0), runtime, out=out) == 1
    error = capsys.readouterr().err
    assert "pip install 'turnout[otel]'" in error
    assert "server.tracing.exporter: needs the turnout[otel] extra" in error
    assert "turnout serving" not in out.getvalue()


async def test_a_served_process_prints_its_spans_to_the_console_on_stop(tmp_path: Path) -> None:
    """`turnout serve` with the console exporter: after one request and SIGINT, standard output
    holds its request and call spans under the configured service name."""
    output = await _serve_one_request(
        tmp_path, CONFIG, "tracing: console, service gateway-under-test"
    )
    spans = _console_spans(output)
    assert sorted(span["name"] for span in spans) == [
        "POST /v1/chat/completions",
        "chat quick-model",
    ]
    assert {span["resource"]["attributes"]["service.name"] for span in spans} == {
        "gateway-under-test"
    }


async def test_a_served_process_sends_its_spans_to_the_collector_on_stop(tmp_path: Path) -> None:
    """`turnout serve` with the OTLP exporter and an `endpoint`: its spans arrive as one
    protobuf export at the endpoint's `/v1/traces` (a collector stand-in on 127.0.0.1)."""
    received: list[tuple[str, bytes]] = []

    async def collect(request: web.Request) -> web.Response:
        received.append((request.path, await request.read()))
        return web.Response(body=b"", content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post("/{tail:.*}", collect)
    runner = web.AppRunner(app)
    await runner.setup()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        await web.SockSite(runner, sock).start()
        try:
            config = CONFIG.replace(
                "{exporter: console, service_name: gateway-under-test}",
                f"{{exporter: otlp, endpoint: 'http://127.0.0.1:{port}/'}}",
            )
            await _serve_one_request(tmp_path, config, "tracing: otlp, service turnout")
        finally:
            await runner.cleanup()
    assert [path for path, _ in received] == ["/v1/traces"]
    export = ExportTraceServiceRequest.FromString(received[0][1])
    names = sorted(
        span.name
        for resource in export.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    )
    assert names == ["POST /v1/chat/completions", "chat quick-model"]


async def _serve_one_request(tmp_path: Path, config: str, tracing_line: str) -> str:
    """Run `turnout serve` over `config`, check its first line, answer one chat request, stop
    it with SIGINT (exit 0): its standard output."""
    path = tmp_path / "turnout.yaml"
    path.write_text(config)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _SERVE,
        "serve",
        "--config",
        str(path),
        "--port",
        "0",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        lines = [(await asyncio.wait_for(process.stdout.readline(), 30)).decode()]
        while not lines[-1].startswith("turnout serving on "):
            lines.append((await asyncio.wait_for(process.stdout.readline(), 30)).decode())
        assert lines[0] == tracing_line + "\n"
        base = lines[-1].split()[3]
        body = {"model": "quick-model", "messages": [{"role": "user", "content": "hi"}]}
        async with httpx.AsyncClient(base_url=base, timeout=30) as client:
            reply = await client.post("/v1/chat/completions", json=body)
        assert reply.status_code == 200
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGINT)
        output, _ = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 0
    return output.decode()


def _console_spans(text: str) -> list[dict[str, Any]]:
    """The JSON objects the console exporter wrote (each spans several lines)."""
    spans, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char == "{":
            depth += 1
            if depth == 1:
                start = index
        elif char == "}":
            depth -= 1
            if depth == 0:
                spans.append(orjson.loads(text[start : index + 1]))
    return spans
