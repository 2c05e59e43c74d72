"""Benchmark: three `turnout serve` replicas on one PostgreSQL store and one Redis.

1. Config propagation: `--changes` PATCHes of a route's target model sent to replica A; for
   each, the time from sending it until B and C both serve the new model (each asked every
   2 ms); p50 and p99. The replicas share `state: redis://…`, so changes travel over the Redis
   announcement (with PostgreSQL NOTIFY and the 1 s poll behind it).
2. Upstream calls during an outage: one target of a route fails (HTTP 500) for
   `--outage-seconds` while `--rate` requests a second, spread evenly over the replicas, go to
   the route (breaker: 2 failures, 1 s cooldown). The calls the mock upstream receives for the
   failing target are counted for 1 replica and 3 replicas sharing Redis (about the same: one
   half-open probe across the replicas), and for 3 replicas with `state: memory` (each probes
   on its own).
3. Gateway CPU per request with Redis-shared health: not measured here; `bench/gateway.py`
   gives its cost over `state: memory` in its table of each part's cost.

Rule 1: each run creates a database of its own on `--postgres`'s server and drops it after,
and flushes the Redis database of `--redis` before and after each phase.
Rule 2: every process listens on 127.0.0.1 and is stopped before the script ends.

Run: python bench/replicas.py [--quick] [--json] [--changes 100] [--outage-seconds 30]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import redis.asyncio as aredis
from _replicas import Replica, fresh_database, ms, percentile, start_replica, stop

from turnout.mock_upstream import MockUpstream

ADMIN_KEY = "bench-admin-key"
CALLER_KEY = "tk_bench_caller_key"
BAD = "bad/fault:status=500"

_PROPAGATION_CONFIG = """\
project: default
store: "{store}"
state: "{state}"
server: {{auth: keys, shutdown_grace_seconds: 0}}
admin_keys: ["{admin}"]
providers:
  - {{name: m, kind: mock}}
routes:
  - {{name: main, models: [gpt-4o-mini], targets: [{{provider: m}}]}}
keys: [{{name: bench, key: {caller}}}]
"""

_OUTAGE_CONFIG = """\
server: {{auth: open, shutdown_grace_seconds: 0}}
state: "{state}"
defaults:
  circuit_breaker: {{failure_threshold: 2, cooldown_seconds: 1}}
providers:
  - {{name: up, kind: openai-compatible, api_key: sk-test, base_url: "{base_url}"}}
routes:
  - name: main
    models: [main]
    targets:
      - {{provider: up, model: "{bad}", name: bad, max_retries: 0}}
      - {{provider: up, model: good, name: good}}
"""


async def _flush(url: str) -> None:
    client = aredis.Redis.from_url(url)
    try:
        await client.flushdb()
    finally:
        await client.aclose()


async def _serves(client: httpx.AsyncClient, body: dict[str, Any], model: str) -> float:
    """Ask every 2 ms until the answer comes from `model`; when it did (perf_counter)."""
    for _ in range(10_000):
        reply = await client.post("/v1/chat/completions", json=body)
        if reply.status_code == 200 and reply.json().get("model") == model:
            return time.perf_counter()
        await asyncio.sleep(0.002)
    raise AssertionError(f"{client.base_url} never served {model}")


async def _propagation(folder: Path, store: str, redis_url: str, changes: int) -> dict[str, Any]:
    """Phase 1: PATCHes on A, until B and C both serve them."""
    config = folder / "propagation.yaml"
    config.write_text(
        _PROPAGATION_CONFIG.format(store=store, state=redis_url, admin=ADMIN_KEY, caller=CALLER_KEY)
    )
    await _flush(redis_url)
    replicas: list[Replica] = []
    try:
        for _ in range(3):
            replicas.append(await start_replica(config))  # noqa: PERF401 - one by one: a failed start still stops the others
        a, b, c = (url for _process, url in replicas)
        caller = {"authorization": f"Bearer {CALLER_KEY}"}
        async with (
            httpx.AsyncClient(
                base_url=f"{a}/admin/v1", headers={"authorization": f"Bearer {ADMIN_KEY}"},
                timeout=60,
            ) as admin,
            httpx.AsyncClient(base_url=b, headers=caller, timeout=60) as on_b,
            httpx.AsyncClient(base_url=c, headers=caller, timeout=60) as on_c,
        ):  # fmt: skip
            projects = (await admin.get("/projects")).json()["data"]
            project = next(p for p in projects if p["name"] == "default")
            base = f"/projects/{project['id']}/routes"
            created = await admin.post(
                base,
                json={
                    "name": "bench",
                    "models": ["bench-model"],
                    "targets": [{"provider": "m", "model": "served-start"}],
                },
            )
            assert created.status_code == 201, created.text
            route = created.json()["id"]
            body = {"model": "bench-model", "messages": [{"role": "user", "content": "hi"}]}
            await asyncio.gather(*(_serves(x, body, "served-start") for x in (on_b, on_c)))
            answered, both = [], []
            for number in range(changes):
                model = f"served-{number}"
                started = time.perf_counter()
                patched = await admin.patch(
                    f"{base}/{route}", json={"targets": [{"provider": "m", "model": model}]}
                )
                answered.append(time.perf_counter() - started)
                assert patched.status_code == 200, patched.text
                seen = await asyncio.gather(*(_serves(x, body, model) for x in (on_b, on_c)))
                both.append(max(seen) - started)
                await asyncio.sleep(0.05)  # apart from the last change's reloads
    finally:
        await stop(replicas)
        await _flush(redis_url)
    print(f"1. config propagation, 3 replicas (Redis feed): {changes} PATCHes on A")
    print(f"   PATCH answered by A          {ms(answered)}")
    print(f"   served by both B and C       {ms(both)}   (target: p99 <= 1 s)")
    return {
        "changes": changes,
        "patch_answered_ms": _summary(answered),
        "served_by_b_and_c_ms": _summary(both),
    }


def _summary(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(statistics.median(values) * 1000, 3),
        "p99": round(percentile(values, 0.99) * 1000, 3),
    }


async def _outage_run(
    folder: Path, upstream: MockUpstream, *, state: str, count: int, rate: float, seconds: float
) -> dict[str, Any]:
    """One outage window: `rate` requests a second spread over `count` replicas."""
    config = folder / f"outage-{count}-{state.split(':', maxsplit=1)[0]}.yaml"
    config.write_text(
        _OUTAGE_CONFIG.format(state=state, base_url=upstream.openai_base_url, bad=BAD)
    )
    if state.startswith("redis"):
        await _flush(state)
    replicas: list[Replica] = []
    try:
        for _ in range(count):
            replicas.append(await start_replica(config))  # noqa: PERF401 - one by one: a failed start still stops the others
        clients = [httpx.AsyncClient(base_url=url, timeout=30) for _process, url in replicas]
        body = {"model": "main", "messages": [{"role": "user", "content": "hi"}]}
        statuses: list[int] = []

        async def send(client: httpx.AsyncClient) -> None:
            try:
                reply = await client.post("/v1/chat/completions", json=body)
                statuses.append(reply.status_code)
            except httpx.HTTPError:
                statuses.append(0)

        upstream.app.log.clear()
        total = int(rate * seconds)
        loop = asyncio.get_running_loop()
        start = loop.time()
        tasks = []
        for number in range(total):  # open loop: request n leaves at start + n / rate
            delay = start + number / rate - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(send(clients[number % count])))
        await asyncio.gather(*tasks)
        for client in clients:
            await client.aclose()
        models = [entry.model for entry in upstream.app.log.entries()]
    finally:
        await stop(replicas)
        if state.startswith("redis"):
            await _flush(state)
    return {
        "replicas": count,
        "state": "redis" if state.startswith("redis") else "memory",
        "requests": total,
        "ok": sum(1 for status in statuses if status == 200),
        "failing_target_calls": models.count(BAD),
        "healthy_target_calls": models.count("good"),
    }


async def _outage(folder: Path, redis_url: str, rate: float, seconds: float) -> dict[str, Any]:
    """Phase 2: calls to a failing target with 1 and 3 replicas at one total rate."""
    runs = []
    async with MockUpstream() as upstream:
        for state, count in ((redis_url, 1), (redis_url, 3), ("memory", 3)):
            runs.append(
                await _outage_run(
                    folder, upstream, state=state, count=count, rate=rate, seconds=seconds
                )
            )
    print(
        f"2. calls to a failing target during a {seconds:g} s outage, {rate:g} req/s in total"
        " (breaker: 2 failures, 1 s cooldown)"
    )
    for run in runs:
        print(
            f"   {run['replicas']} replica(s), state {run['state']:<7}"
            f" failing target called {run['failing_target_calls']:4d} times"
            f"   ({run['ok']}/{run['requests']} answered 200)"
        )
    one, three = runs[0]["failing_target_calls"], runs[1]["failing_target_calls"]
    ratio = three / one if one else float("nan")
    print(f"   3 vs 1 replica on Redis: {ratio:.2f}x   (target: about 1x, not 3x)")
    return {"outage_seconds": seconds, "rate": rate, "runs": runs, "ratio_3_to_1": ratio}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=100)
    parser.add_argument("--outage-seconds", type=float, default=30.0)
    parser.add_argument("--rate", type=float, default=60.0, help="total requests a second")
    parser.add_argument("--quick", action="store_true", help="a 5 s outage")
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON too")
    parser.add_argument("--postgres", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/13")
    args = parser.parse_args()
    seconds = 5.0 if args.quick else args.outage_seconds
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as name, fresh_database(args.postgres, "bench_rep") as db:
        folder = Path(name)
        results["propagation"] = await _propagation(folder, db, args.redis, args.changes)
        results["outage"] = await _outage(folder, args.redis, args.rate, seconds)
    print("3. gateway CPU per request with Redis-shared health: see the `redis` row of")
    print("   python bench/gateway.py  (each part's cost over a bare gateway)")
    results["cpu"] = "see bench/gateway.py, part redis"
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
