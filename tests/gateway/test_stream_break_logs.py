"""What an operator sees of a stream that broke after its first token and of a request every
target failed: the log lines name the target, count the failovers, and the chat error event
says the upstream failed."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from tests.gateway._app_support import chat, client_of, mock_provider, sse_events
from turnout.config.load import parse_config
from turnout.gateway.resolution.lookups import build_runtime
from turnout.gateway.server.app import GatewayApp
from turnout.routing.clock import FakeClock

if TYPE_CHECKING:
    import httpx

    from turnout.gateway.runtime.live import Runtime


def _route(name: str, *models: str) -> dict[str, Any]:
    targets = [{"provider": "oa", "model": m, "name": f"t{i}"} for i, m in enumerate(models)]
    return {"name": name, "models": [name], "targets": targets}


CONFIG: dict[str, Any] = {
    "server": {"auth": "open"},
    "providers": [mock_provider("oa")],
    "routes": [
        _route("cut", "cut-a/fault:cut=2", "cut-b"),
        _route("all-503", "al-a/fault:status=503", "al-b/fault:status=503"),
    ],
}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def runtime(clock: FakeClock) -> Runtime:
    return build_runtime(parse_config(CONFIG, env={}), clock=clock)


async def _post(runtime: Runtime, clock: FakeClock, body: dict[str, Any]) -> httpx.Response:
    async with client_of(GatewayApp(runtime)) as client:
        return await clock.run(client.post("/v1/chat/completions", json=body))


def _fields(caplog: pytest.LogCaptureFixture, event: str) -> list[dict[str, Any]]:
    return [r.fields for r in caplog.records if r.getMessage() == event and hasattr(r, "fields")]


async def test_broken_stream_logs_a_warning_naming_the_target(
    runtime: Runtime, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """A stream cut after its first token logs a WARNING `stream_broken` line naming the
    target and provider."""
    caplog.set_level(logging.INFO, logger="turnout")
    await _post(runtime, clock, {**chat("cut"), "stream": True})
    warnings = [r for r in caplog.records if r.getMessage() == "stream_broken"]
    assert [r.levelno for r in warnings] == [logging.WARNING]
    fields = _fields(caplog, "stream_broken")[0]
    assert (fields["target"], fields["provider"], fields["route"]) == ("t0", "oa", "cut")


async def test_broken_stream_access_line_names_the_target(
    runtime: Runtime, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The access line of a broken stream names the target, provider and model it came
    from, not `-`."""
    caplog.set_level(logging.INFO, logger="turnout")
    await _post(runtime, clock, {**chat("cut"), "stream": True})
    access = _fields(caplog, "access")[-1]
    assert (access["target"], access["provider"]) == ("t0", "oa")
    assert access["model"] == "cut-a/fault:cut=2"


async def test_failovers_count_when_every_target_fails(
    runtime: Runtime, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    """When every target fails, the access line counts the failover the failover line logged."""
    caplog.set_level(logging.INFO, logger="turnout")
    reply = await _post(runtime, clock, chat("all-503"))
    assert reply.status_code >= 500
    assert len(_fields(caplog, "failover")) == 1
    assert _fields(caplog, "access")[-1]["failovers"] == 1


async def test_chat_stream_break_error_is_a_server_error(
    runtime: Runtime, clock: FakeClock
) -> None:
    """The chat in-stream error for a break after the first token is typed `server_error`:
    the upstream failed, not the caller's request."""
    reply = await _post(runtime, clock, {**chat("cut"), "stream": True})
    error = orjson.loads(sse_events(reply.text)[-1][1])["error"]
    assert (error["code"], error["type"]) == ("stream_broken", "server_error")
