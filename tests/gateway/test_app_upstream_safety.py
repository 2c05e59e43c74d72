"""The gateway in process against real upstream sockets: one caller's request that turnout
cannot send never trips the providers' health for everyone else, and what an upstream echoes
of the configured secrets never reaches the caller."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import pytest

from tests.gateway._app_support import chat, client_of, runtime_of
from tests.providers._raw_http import RawServer
from turnout.gateway.server.app import GatewayApp
from turnout.mock_upstream import ThreadedMockUpstream

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Iterator

    from turnout.gateway.runtime.live import Runtime


@pytest.fixture(scope="module")
def upstream() -> Iterator[ThreadedMockUpstream]:
    """The mock upstream on a free 127.0.0.1 port."""
    with ThreadedMockUpstream() as server:
        yield server


def _runtime(upstream: ThreadedMockUpstream) -> Runtime:
    def provider(name: str) -> dict[str, Any]:
        return {
            "name": name,
            "kind": "openai",
            "api_key": f"sk-{name}-0123456789abcdef",
            "base_url": upstream.openai_base_url,
        }

    return runtime_of(
        {
            "providers": [provider("p1"), provider("p2")],
            "routes": [
                {
                    "name": "main",
                    "models": ["gpt-4o-mini"],
                    "targets": [
                        {"provider": "p1", "model": "gpt-4o", "name": "a"},
                        {"provider": "p2", "model": "gpt-4o", "name": "b"},
                    ],
                }
            ],
        }
    )


def _deep(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"inner": value}
    return value


async def test_requests_too_deep_to_send_are_400_and_trip_nothing(
    upstream: ThreadedMockUpstream,
) -> None:
    """Requests too deep to re-encode are 400 invalid_request, send nothing, trip no breaker."""
    upstream.reset()
    runtime = _runtime(upstream)
    try:
        async with client_of(GatewayApp(runtime)) as client:
            for _ in range(3):
                reply = await client.post(
                    "/v1/chat/completions", json=chat("gpt-4o-mini", metadata=_deep(300))
                )
                assert reply.status_code == 400
                assert reply.json()["error"]["code"] == "invalid_request"
                assert "nested too deeply" in reply.json()["error"]["message"]
            served = await client.post("/v1/chat/completions", json=chat("gpt-4o-mini"))
        assert served.status_code == 200
        assert served.headers["x-turnout-target"] == "a"
        assert all(entry.failures == 0 for entry in runtime.health.snapshot())
        assert len(upstream.requests()) == 1
    finally:
        await runtime.aclose()


OWN_KEY = "live-p1-0123456789"
OTHER_KEY = "live-p2-0123456789"


async def _echo_keys(
    server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Answers 401 naming the key it received and another provider's key."""
    while (request := await server.read_request(reader)) is not None:
        sent = request.split(b"authorization: Bearer ")[1].split(b"\r\n")[0].decode()
        said = f"Incorrect API key provided: {sent} (nor {OTHER_KEY})"
        body = orjson.dumps({"error": {"message": said, "type": "invalid_request_error"}})
        writer.write(b"HTTP/1.1 401 No\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))


@pytest.mark.parametrize("stream", [False, True])
async def test_echoed_configured_secrets_never_reach_the_caller(stream: bool) -> None:
    """Keys of any configured provider echoed by an upstream never reach the caller."""
    async with RawServer(_echo_keys) as server:
        base = server.url("/v1")
        runtime = runtime_of(
            {
                "providers": [
                    {"name": "p1", "kind": "openai", "api_key": OWN_KEY, "base_url": base},
                    {"name": "p2", "kind": "openai", "api_key": OTHER_KEY, "base_url": base},
                ],
                "routes": [
                    {"name": "main", "models": ["gpt-4o-mini"], "targets": [{"provider": "p1"}]}
                ],
            }
        )
        try:
            async with client_of(GatewayApp(runtime)) as client:
                reply = await client.post(
                    "/v1/chat/completions", json=chat("gpt-4o-mini", stream=stream)
                )
        finally:
            await runtime.aclose()
    assert reply.status_code == 401
    assert "[redacted]" in reply.text
    seen = reply.text + " ".join(f"{k}: {v}" for k, v in reply.headers.items())
    assert OWN_KEY not in seen
    assert OTHER_KEY not in seen
