"""End to end: the official OpenAI SDK against a real gateway in front of
`turnout mock-upstream`, with scripted failovers: the `/metrics` samples (exact label sets and
counts), the failover and breaker WARNING lines, the access line, and no configured secret in
any log line or metric."""

from __future__ import annotations

import io
import logging
import os
from typing import TYPE_CHECKING, Any

import httpx
import openai
import orjson
import pytest
import pytest_asyncio
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e._gateway import RunningGateway, running_gateway
from turnout.gateway.observe.logs import FORMAT_ENV, LEVEL_ENV, configure_logging
from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

pytestmark = pytest.mark.asyncio(loop_scope="module")

USER: Any = [{"role": "user", "content": "Why is checkout failing?"}]
SECRETS = ("sk-obs-secret-openai", "sk-obs-secret-backup", "tk-obs-secret-caller")


def _config(upstream: MockUpstream) -> dict[str, Any]:
    def route(name: str, first: str, **options: Any) -> dict[str, Any]:
        targets = [
            {"provider": "openai", "model": first, "name": "primary"},
            {"provider": "backup", "model": f"{name}-backup", "name": "backup"},
        ]
        return {"name": name, "models": [name], "targets": targets, **options}

    return {
        "server": {"auth": "keys"},
        "keys": [{"name": "ops-team", "key": SECRETS[2]}],
        "providers": [
            {
                "name": "openai",
                "kind": "openai",
                "api_key": SECRETS[0],
                "base_url": upstream.openai_base_url,
                "prices": {"fo-backup": {"input": 1.0, "output": 2.0}},
            },
            {
                "name": "backup",
                "kind": "openai",
                "api_key": SECRETS[1],
                "base_url": upstream.openai_base_url,
                "prices": {"fo-backup": {"input": 1.0, "output": 2.0}},
            },
        ],
        "routes": [
            route("fo", "fo/fault:status=429"),
            route("br", "br/fault:status=500"),
        ],
    }


@pytest.fixture(scope="module")
def log_lines() -> Iterator[io.StringIO]:
    """Every `turnout` log line of the module's run, as JSON, at DEBUG."""
    saved = {name: os.environ.get(name) for name in (LEVEL_ENV, FORMAT_ENV)}
    stream = io.StringIO()
    handler = configure_logging("debug", "json", stream=stream)
    yield stream
    root = logging.getLogger("turnout")
    root.removeHandler(handler)
    root.setLevel(logging.NOTSET)
    root.propagate = True
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def gateway(log_lines: io.StringIO) -> AsyncIterator[RunningGateway]:
    async with MockUpstream() as upstream, running_gateway(_config(upstream)) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def oai(gateway: RunningGateway) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=SECRETS[2], max_retries=0)
    yield client
    await client.close()


def _logged(stream: io.StringIO) -> str:
    """What was logged so far: the log writer writes its lines out in batches, so flush first."""
    for handler in logging.getLogger("turnout").handlers:
        handler.flush()
    return stream.getvalue()


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in _logged(stream).splitlines()]


async def _samples(gateway: RunningGateway) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    async with httpx.AsyncClient() as client:
        answer = await client.get(f"{gateway.url}/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


async def test_failover_is_counted_and_logged(
    oai: openai.AsyncOpenAI, gateway: RunningGateway, log_lines: io.StringIO
) -> None:
    """A 429 then an answer: one answered call, one rate_limited failover, both calls timed,
    tokens and cost under the serving target, one failover WARNING and one access line."""
    completion = await oai.chat.completions.create(model="fo", messages=USER)
    request_id = completion.model_extra["routing"]["request_id"]  # type: ignore[index]
    samples = await _samples(gateway)

    def value(name: str, **labels: str) -> float | None:
        return samples.get((name, frozenset(labels.items())))

    assert value("turnout_route_calls_total", route="fo", outcome="answered") == 1
    assert value("turnout_route_failovers_total", route="fo", reason="rate_limited") == 1
    assert [k for k in samples if k[0] == "turnout_route_failovers_total"] == [
        ("turnout_route_failovers_total", frozenset({("route", "fo"), ("reason", "rate_limited")}))
    ]
    duration = "turnout_attempt_duration_seconds_count"
    assert value(duration, provider="openai", model="fo/fault:status=429", outcome="failed") == 1
    assert value(duration, provider="backup", model="fo-backup", outcome="answered") == 1
    tokens = completion.usage
    assert tokens is not None
    assert value("turnout_tokens_total", provider="backup", model="fo-backup", kind="input") == (
        tokens.prompt_tokens
    )
    cost = value("turnout_cost_usd_total", provider="backup", model="fo-backup")
    assert cost is not None
    assert cost > 0
    assert value("turnout_overhead_seconds_count") == 1
    mine = [line for line in _lines(log_lines) if line.get("request_id") == request_id]
    failover = [line for line in mine if line["event"] == "failover"]
    assert len(failover) == 1
    assert failover[0]["level"] == "WARNING"
    assert failover[0]["logger"] == "turnout.events"
    assert {
        k: failover[0][k] for k in ("route", "from_target", "to_target", "class", "status")
    } == {
        "route": "fo",
        "from_target": "primary",
        "to_target": "backup",
        "class": "rate_limited",
        "status": 429,
    }
    access = [line for line in mine if line["event"] == "access"]
    assert len(access) == 1
    assert access[0]["status"] == 200
    assert access[0]["key"] == "ops-team"
    assert (access[0]["route"], access[0]["target"], access[0]["attempts"]) == ("fo", "backup", 2)
    assert access[0]["failovers"] == 1


async def test_breaker_transition_is_counted_and_logged(
    oai: openai.AsyncOpenAI, gateway: RunningGateway, log_lines: io.StringIO
) -> None:
    """Three 500s in a row (the default threshold) open the breaker of `openai/br/…`: one
    `to="open"` transition counted under the health key and one WARNING `health` line."""
    for _ in range(3):
        await oai.chat.completions.create(model="br", messages=USER)
    samples = await _samples(gateway)
    key = "openai/br/fault:status=500"
    opened = ("turnout_breaker_transitions_total", frozenset({("key", key), ("to", "open")}))
    assert samples.get(opened) == 1
    health = [line for line in _lines(log_lines) if line["event"] == "health"]
    assert [(line["level"], line["key"], line["to"]) for line in health] == [
        ("WARNING", key, "open")
    ]
    answered = frozenset({("route", "br"), ("outcome", "answered")})
    assert samples.get(("turnout_route_calls_total", answered)) == 3


async def test_no_secret_in_any_log_line_or_metric(
    oai: openai.AsyncOpenAI, gateway: RunningGateway, log_lines: io.StringIO
) -> None:
    """After answered, failed-over and refused (401) requests, neither a provider key nor the
    caller's turnout key appears in any log line or in `/metrics`."""
    await oai.chat.completions.create(model="fo", messages=USER)
    async with httpx.AsyncClient() as client:
        refused = await client.post(
            f"{gateway.openai_base_url}/chat/completions",
            headers={"authorization": f"Bearer {SECRETS[2]}-wrong"},
            json={"model": "fo", "messages": USER},
        )
        metrics = (await client.get(f"{gateway.url}/metrics")).text
    assert refused.status_code == 401
    logged = _logged(log_lines)
    assert logged.count('"event":"access"') >= 3
    for secret in SECRETS:
        assert secret not in logged
        assert secret not in metrics
