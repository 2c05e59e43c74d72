"""End to end: the half-open probe on the gateway that tripped the breaker, over memory and
over Redis state. A real gateway socket (on a fake clock) in front of `turnout mock-upstream`,
the official OpenAI SDK as the client: p1 answers 503 three times, which opens its breaker, then
recovers; the first request after the cooldown is the probe, and p1 serves it."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import openai
import pytest

from tests.e2e._gateway import running_runtime
from tests.state._redis_server import running_redis
from turnout.config.load import parse_config
from turnout.gateway.resolution.lookups import build_runtime
from turnout.mock_upstream import MockUpstream
from turnout.routing.clock import FakeClock

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from tests.e2e._gateway import RunningGateway

USER: Any = [{"role": "user", "content": "Is checkout up again?"}]
COOLDOWN = 2.0


def _config(upstream: MockUpstream, state: str) -> dict[str, Any]:
    return {
        "server": {"auth": "open"},
        "state": state,
        "defaults": {"circuit_breaker": {"failure_threshold": 3, "cooldown_seconds": COOLDOWN}},
        "providers": [
            {
                "name": "up",
                "kind": "openai-compatible",
                "api_key": "sk-test",
                "base_url": upstream.openai_base_url,
            }
        ],
        "routes": [
            {
                "name": "main",
                "models": ["main"],
                "targets": [
                    {"provider": "up", "model": "p1-model", "name": "p1", "max_retries": 0},
                    {"provider": "up", "model": "p2-model", "name": "p2"},
                ],
            }
        ],
    }


@asynccontextmanager
async def _state_url(kind: str) -> AsyncIterator[str]:
    if kind == "memory":
        yield "memory"
        return
    async with running_redis() as server:
        yield server.url


@asynccontextmanager
async def _gateway(
    upstream: MockUpstream, kind: str, clock: FakeClock
) -> AsyncIterator[RunningGateway]:
    async with _state_url(kind) as state:
        config = parse_config(_config(upstream, state), env={})
        async with running_runtime(build_runtime(config, clock=clock)) as gateway:
            yield gateway


async def _served_by(oai: openai.AsyncOpenAI) -> tuple[str, list[str]]:
    """One chat through the gateway: the target that served it, and each attempt entry as
    `target outcome`."""
    raw = await oai.chat.completions.with_raw_response.create(model="main", messages=USER)
    items = [item.split(";") for item in raw.headers["x-turnout-attempts"].split(",")]
    return raw.headers["x-turnout-target"], [f"{item[0]} {item[1]}" for item in items]


@pytest.mark.parametrize("state", ["memory", "redis"])
async def test_first_request_after_the_cooldown_probes_and_is_served_by_p1(state: str) -> None:
    """After three 503s open p1's breaker and the cooldown passes, the very next request is
    the half-open probe: p1 serves it (with shared state as without)."""
    clock = FakeClock()
    async with MockUpstream() as upstream, _gateway(upstream, state, clock) as gateway:
        upstream.app.faults.script("p1-model", ["status=503"] * 3)
        oai = openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key="x", max_retries=0)
        try:
            for _ in range(3):
                assert await _served_by(oai) == ("p2", ["p1 outcome=failed", "p2 outcome=answered"])
            skipped = ("p2", ["p1 outcome=breaker_open", "p2 outcome=answered"])
            assert await _served_by(oai) == skipped  # open
            clock.advance(COOLDOWN + 0.5)
            served = ("p1", ["p1 outcome=answered", "p2 outcome=not_tried"])
            assert await _served_by(oai) == served  # the probe
            assert await _served_by(oai) == served  # closed
        finally:
            await oai.close()
