"""The operator's metrics through the in-process app: every finished request by route, status
class and project, its duration by route, a breaker skip counted as a skip (metric and
dashboard) and never as a failover, and each health key's state as a gauge read from the
health table, the same on two replicas over one Redis and with several workers."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from prometheus_client.parser import text_string_to_metric_families

from tests.gateway._app_support import app_of, chat, client_of, mock_provider, runtime_of
from tests.state._redis_server import running_redis
from turnout.access.keys import hash_key
from turnout.config.load import parse_config
from turnout.gateway.observe.metrics import MULTIPROC_ENV, Metrics
from turnout.gateway.resolution.lookups import build_runtime
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.lifespan import Lifespan
from turnout.routing.clock import FakeClock
from turnout.routing.health import Admission, Health

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    import httpx
    import pytest

ADMIN_KEY = "adm-request-metrics-key"
ADMIN = {"authorization": f"Bearer {ADMIN_KEY}"}
FLAKY = "flaky/fault:status=503"
"""The model of a target that always answers 503 (the mock fails by model name)."""


def _config(**extra: Any) -> dict[str, Any]:
    return {
        "project": "ops",
        "defaults": {"circuit_breaker": {"failure_threshold": 2, "cooldown_seconds": 60}},
        "providers": [mock_provider("m")],
        "routes": [
            {"name": "plain", "models": ["gpt-4o-mini"], "targets": [{"provider": "m"}]},
            {
                "name": "fo",
                "models": ["fo"],
                "targets": [
                    {"provider": "m", "model": FLAKY, "name": "bad"},
                    {"provider": "m", "model": "backup", "name": "good"},
                ],
            },
        ],
        **extra,
    }


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def _samples(client: httpx.AsyncClient) -> Samples:
    text = (await client.get("/metrics")).text
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


async def test_requests_count_by_route_status_class_and_project_with_durations() -> None:
    """Two answered requests and one for an unknown model: 2xx under their route, the
    unknown one (503 `NO_ROUTE`) 5xx under the route `none` (its model is never a label); each
    request's
    duration is observed under its route."""
    app = app_of(_config())
    async with client_of(app) as client:
        for _ in range(2):
            assert (await client.post("/v1/chat/completions", json=chat("gpt-4o-mini"))).is_success
        unknown = await client.post("/v1/chat/completions", json=chat("no-such-model-xyz"))
        assert unknown.status_code == 503
        samples = await _samples(client)
    total = "turnout_requests_total"
    assert _value(samples, total, route="plain", status_class="2xx", project="ops") == 2
    assert _value(samples, total, route="none", status_class="5xx", project="ops") == 1
    assert not any("no-such-model-xyz" in value for _, labels in samples for _, value in labels)
    count = "turnout_request_duration_seconds_count"
    assert _value(samples, count, route="plain") == 2
    assert _value(samples, "turnout_request_duration_seconds_bucket", route="plain", le="300.0")
    assert (_value(samples, "turnout_request_duration_seconds_sum", route="plain") or 0) > 0


async def test_a_breaker_skip_is_a_skip_not_a_failover() -> None:
    """Two failures of `bad` are failovers and open its breaker; the third request skips it:
    one skip (`breaker_open`), still two failovers, in the metrics and the dashboard."""
    app = GatewayApp(runtime_of(_config()), admin_hashes=lambda: frozenset({hash_key(ADMIN_KEY)}))
    async with client_of(app) as client:
        for _ in range(3):
            answer = await client.post("/v1/chat/completions", json=chat("fo"))
            assert answer.headers["x-turnout-target"] == "good"
        last = answer.json()["routing"]["attempts"][0]
        assert last["outcome"] == "breaker_open"
        samples = await _samples(client)
        data = (await client.get("/ui/data.json", headers=ADMIN)).json()
    failovers = "turnout_route_failovers_total"
    assert _value(samples, failovers, route="fo", reason="provider_error") == 2
    assert _value(samples, failovers, route="fo", reason="breaker_open") is None
    assert _value(samples, "turnout_route_skips_total", route="fo", reason="breaker_open") == 1
    _, per_route = app.observer.activity.failovers_by_hour()
    assert sum(per_route["fo"]) == 2
    assert [row.failovers for row in app.observer.activity.recent()] == [0, 1, 1]
    assert data["failovers"]["series"]["fo"][-1] == 2


async def test_upstream_state_gauge_follows_the_health_table() -> None:
    """Each health key has one series per state, 1 for its state now: `available` first,
    `open` once its breaker opened; the other states read 0."""
    app = app_of(_config())
    async with client_of(app) as client:
        assert (await client.post("/v1/chat/completions", json=chat("fo"))).is_success
        before = await _samples(client)
        assert (await client.post("/v1/chat/completions", json=chat("fo"))).is_success
        after = await _samples(client)
    gauge = "turnout_upstream_state"
    key = f"m/{FLAKY}"
    assert _value(before, gauge, key=key, state="available") == 1
    assert _value(after, gauge, key=key, state="open") == 1
    states = {labels: v for (name, labels), v in after.items() if name == gauge}
    assert sorted(dict(labels)["state"] for labels in states if ("key", key) in labels) == [
        "available", "cooling_down", "half_open", "open", "parked",
    ]  # fmt: skip
    assert sum(v for labels, v in states.items() if ("key", key) in labels) == 1
    assert _value(after, gauge, key="m/backup", state="available") == 1


async def _eventually(predicate: Callable[[], bool]) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 3.0
    while not predicate():
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.005)


async def test_two_replicas_over_one_redis_report_the_same_upstream_state() -> None:
    """A breaker opened on one replica reads `open` in the other replica's gauge too (it
    learned the transition through the shared state): both show the same states for it."""
    async with running_redis() as server:
        apps = [
            GatewayApp(
                build_runtime(
                    parse_config(_config(state=server.url, server={"auth": "open"}), env={}),
                    clock=FakeClock(),
                )
            )
            for _ in range(2)
        ]
        lifespans = [Lifespan(app) for app in apps]
        for lifespan in lifespans:
            await lifespan.startup()
        try:
            async with client_of(apps[0]) as first, client_of(apps[1]) as second:
                for _ in range(2):
                    assert (await first.post("/v1/chat/completions", json=chat("fo"))).is_success
                other = apps[1].runtime
                assert other is not None
                await _eventually(lambda: any(e.state == "open" for e in other.health.snapshot()))
                here, there = await _samples(first), await _samples(second)
        finally:
            for lifespan in lifespans:
                await lifespan.shutdown()

    def states(samples: Samples, key: str) -> dict[str, float]:
        return {
            dict(labels)["state"]: v
            for (name, labels), v in samples.items()
            if name == "turnout_upstream_state" and ("key", key) in labels
        }

    key = f"m/{FLAKY}"
    assert states(here, key) == states(there, key)
    assert states(there, key)["open"] == 1
    # `m/backup` served on the first replica only: the second one does not know it yet, and
    # an unknown key is available.
    assert states(there, "m/backup") == {}


def test_upstream_state_renders_with_several_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With several workers (`PROMETHEUS_MULTIPROC_DIR`), where `/metrics` sums the workers'
    files, the gauge is still read from the health tables given; a request with no status
    counts under the status class `none`."""
    health = Health(clock=FakeClock())
    for _ in range(3):
        admission = health.admit(("p", "m"), lease=30)
        assert isinstance(admission, Admission)
        health.record_failure(admission, "provider_error")
    metrics = Metrics()
    metrics.count_finished(None, 0, None, 0.002)
    alone = metrics.render([health]).decode()
    assert 'turnout_requests_total{project="",route="none",status_class="none"} 1.0' in alone
    monkeypatch.setenv(MULTIPROC_ENV, str(tmp_path))
    text = metrics.render([health]).decode()
    assert 'turnout_upstream_state{key="p/m",state="open"} 1.0' in text
    assert 'turnout_upstream_state{key="p/m",state="available"} 0.0' in text
