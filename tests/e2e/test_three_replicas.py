"""End to end: three `turnout serve` replicas (A, B, C) on one PostgreSQL store and one Redis,
in front of a mock upstream whose `bad` models always fail (HTTP 500).

The module starts them once: PostgreSQL is a schema of its own in the run's database, reached
through a TCP relay the tests can close; Redis is a `redis-server` of the module's own on a free
port, which the tests can stop and start again. Each test leaves them serving as it found them
(a test that kills a replica has it started again by the next test that needs it).

What they pin: a breaker trip on A stops B and C calling the target, and its half-open probe is
one call across all three; a route changed through A's admin API is served by B and C within a
second; with Redis stopped no chat request fails and `/readyz` says `degraded`, then recovers;
with PostgreSQL unreachable every replica serves its last configuration and admin writes are
503 `store_unavailable`; a replica killed while it holds the probe's lease leaves the probe to
another replica once the lease (the target's `timeout`) expires.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx
import orjson
import pytest
import pytest_asyncio
import redis.asyncio as aredis
from sqlalchemy import text
from sqlalchemy.engine import make_url

from tests._tcp_relay import Relay
from tests.e2e._replicas import Replica, until
from tests.state._redis_server import running_redis
from turnout.mock_upstream import MockUpstream
from turnout.store import open_store

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from tests.state._redis_server import Server

pytestmark = pytest.mark.asyncio(loop_scope="module")

ADMIN_KEY = "adm-three-replicas-0123456789"
CALLER_KEY = "three-replicas-caller-0123456789"
COOLDOWN = 2.0  # the breaker's open period (seconds)
KILL_TIMEOUT = 3.0  # the `kill` route's failing target's timeout: its probe lease
TRIP_BAD = "trip-bad/fault:status=500"
KILL_BAD = "kill-bad/fault:status=500"
# Bounds a wait for something that takes milliseconds when it works (a broken feature fails
# the test after it instead of hanging it).
LIMIT = 15.0

_CONFIG = """\
project: default
store: "{store}"
state: "{state}"
server: {{auth: keys, shutdown_grace_seconds: 0}}
admin_keys: ["{admin}"]
defaults:
  circuit_breaker: {{failure_threshold: 2, cooldown_seconds: {cooldown}}}
providers:
  - {{name: up, kind: openai-compatible, api_key: sk-test, base_url: "{upstream}"}}
  - {{name: m, kind: mock}}
routes:
  - name: trip
    models: [trip]
    targets:
      - {{provider: up, model: "{trip_bad}", name: bad, max_retries: 0}}
      - {{provider: up, model: good, name: good}}
  - name: kill
    models: [kill]
    targets:
      - {{provider: up, model: "{kill_bad}", name: bad, max_retries: 0, timeout: {kill_timeout}}}
      - {{provider: up, model: good, name: good}}
  - name: steady
    models: [steady]
    targets: [{{provider: up, model: good}}]
keys: [{{name: file, key: {caller}}}]
"""


@dataclass
class Cluster:
    """The module's replicas and what they stand on."""

    upstream: MockUpstream
    redis: Server
    relay: Relay
    replicas: list[Replica]
    http: httpx.AsyncClient
    project: str = ""

    async def respawn(self) -> None:
        """Start again each replica that is not running (one a test killed)."""
        dead = [replica for replica in self.replicas if not replica.running]
        for replica in dead:
            await replica.stop()
        await asyncio.gather(*(replica.start() for replica in dead))

    async def chat(self, replica: Replica, model: str, *, stream: bool = False) -> tuple[int, str]:
        """One chat request through `replica`: its status and the model that answered."""
        body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
        url = f"{replica.url}/v1/chat/completions"
        headers = {"authorization": f"Bearer {CALLER_KEY}"}
        if not stream:
            reply = await self.http.post(url, json=body, headers=headers)
            answered = reply.json().get("model", "") if reply.status_code == 200 else reply.text
            return reply.status_code, answered
        body["stream"] = True
        async with self.http.stream("POST", url, json=body, headers=headers) as reply:
            data = await reply.aread()
        if reply.status_code != 200:
            return reply.status_code, data.decode(errors="replace")
        models = {
            orjson.loads(line[6:]).get("model", "")
            for line in data.splitlines()
            if line.startswith(b"data: {")
        }
        complete = b"data: [DONE]" in data
        return (200 if complete else 0), ",".join(sorted(models)) if complete else "cut"

    async def readyz(self, replica: Replica) -> dict[str, Any]:
        """`replica`'s `/readyz` body (its status is 200 once the configuration is loaded)."""
        reply = await self.http.get(f"{replica.url}/readyz")
        assert reply.status_code == 200, reply.text
        body: dict[str, Any] = reply.json()
        return body

    def admin(self, replica: Replica) -> httpx.AsyncClient:
        """The admin API of `replica` (a client of its own; close it after use)."""
        return httpx.AsyncClient(
            base_url=f"{replica.url}/admin/v1/projects/{self.project}",
            headers={"authorization": f"Bearer {ADMIN_KEY}"},
            timeout=30,
        )

    def bad_calls(self, model: str) -> list[float]:
        """When (epoch seconds) the mock upstream received each call of `model`."""
        return [entry.time for entry in self.upstream.app.log.entries() if entry.model == model]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def running(
    postgres_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Cluster]:
    """Three replicas on a store schema of the module's own (through the relay) and a Redis of
    the module's own, in front of the mock upstream."""
    folder = tmp_path_factory.mktemp("three-replicas")
    schema = f"t_{uuid.uuid4().hex[:12]}"
    setup = open_store(postgres_url)
    with setup.engine.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    target = make_url(postgres_url)
    relay = Relay(target.host or "127.0.0.1", target.port or 5432)
    await relay.start()
    relayed = target.set(port=relay.port).render_as_string(hide_password=False)
    store = f"{relayed}?options={quote(f'-csearch_path={schema}')}"
    try:
        async with (
            MockUpstream() as upstream,
            running_redis() as redis_server,
            httpx.AsyncClient(timeout=30) as http,
        ):
            config = folder / "turnout.yaml"
            values = {
                "store": store,
                "state": redis_server.url,
                "admin": ADMIN_KEY,
                "caller": CALLER_KEY,
                "cooldown": COOLDOWN,
                "upstream": upstream.openai_base_url,
                "trip_bad": TRIP_BAD,
                "kill_bad": KILL_BAD,
                "kill_timeout": KILL_TIMEOUT,
            }
            config.write_text(_CONFIG.format(**values))
            replicas = [Replica(name, config, folder / f"{name}.log") for name in "abc"]
            cluster = Cluster(upstream, redis_server, relay, replicas, http)
            try:
                await cluster.respawn()
                listed = await http.get(
                    f"{replicas[0].url}/admin/v1/projects",
                    headers={"authorization": f"Bearer {ADMIN_KEY}"},
                )
                projects = listed.json()["data"]
                cluster.project = next(p["id"] for p in projects if p["name"] == "default")
                yield cluster
            finally:
                await asyncio.gather(*(replica.stop() for replica in replicas))
    finally:
        await relay.close()
        with setup.engine.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        setup.close()


@pytest_asyncio.fixture(loop_scope="module")
async def cluster(running: Cluster) -> Cluster:
    """The module's three replicas, all running."""
    await running.respawn()
    return running


@dataclass
class Traffic:
    """Chat requests sent one after another through each replica until `stop` is set: when
    each was sent and answered, and what answered (status, model)."""

    cluster: Cluster
    model: str
    pause: float = 0.03
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    answers: dict[str, list[tuple[float, float, int, str]]] = field(default_factory=dict)

    async def run(self, replica: Replica) -> None:
        seen = self.answers.setdefault(replica.name, [])
        while not self.stop.is_set():
            sent = time.time()
            try:
                status, model = await self.cluster.chat(replica, self.model)
            except httpx.HTTPError as exc:
                status, model = 0, repr(exc)
            seen.append((sent, time.time(), status, model))
            await asyncio.sleep(self.pause)

    def failures(self) -> list[tuple[str, int, str]]:
        return [
            (name, status, model)
            for name, answers in self.answers.items()
            for _sent, _done, status, model in answers
            if status != 200
        ]

    def answered(self, name: str, start: float, end: float) -> int:
        """Answers through `name` sent at or after `start` and answered before `end`."""
        return sum(
            1
            for sent, done, status, _model in self.answers.get(name, [])
            if status == 200 and sent >= start and done < end
        )


async def test_a_trip_on_a_stops_b_and_c_and_one_probe_runs_across_the_three(
    cluster: Cluster,
) -> None:
    """A's two failures open the breaker; B and C, with traffic, never call the target while it
    is open; when it half-opens, the upstream sees one probe across the three replicas."""
    a, b, c = cluster.replicas
    tripped = await _trip_through_a(cluster, "trip", TRIP_BAD)
    opened_until = tripped[-1] + COOLDOWN  # a probe cannot come before
    learned_at = time.time()
    traffic = Traffic(cluster, "trip")
    runs = [asyncio.create_task(traffic.run(replica)) for replica in (a, b, c)]
    try:

        async def probed() -> bool:
            return len(cluster.bad_calls(TRIP_BAD)) > 2

        await until(probed, COOLDOWN + LIMIT, "a half-open probe")
        probe = cluster.bad_calls(TRIP_BAD)[2]
        # The probe failed, which opens the breaker again for COOLDOWN; meanwhile no other
        # replica may probe. Watch for most of that period.
        window_end = probe + COOLDOWN * 0.75
        await asyncio.sleep(window_end - time.time())
    finally:
        traffic.stop.set()
        await asyncio.gather(*runs)
    assert not traffic.failures()
    calls = cluster.bad_calls(TRIP_BAD)
    assert probe >= opened_until - 0.05, "the target was called before its breaker half-opened"
    for replica in (b, c):  # B and C had traffic while the breaker was open, and skipped it
        assert traffic.answered(replica.name, learned_at, opened_until) >= 2, traffic.answers
    assert [t for t in calls if t < window_end] == [*tripped, probe]
    for replica in (a, b, c):  # every replica had traffic around the probe
        assert traffic.answered(replica.name, opened_until, window_end) >= 2, traffic.answers


async def _trip_through_a(cluster: Cluster, model: str, bad: str) -> list[float]:
    """Open the breaker of `model`'s failing target `bad` with two calls through A, and wait
    until B and C learned it: when the upstream received those two calls."""
    a, b, c = cluster.replicas
    before = [await _applied(cluster, replica) for replica in (b, c)]
    for _ in range(2):
        assert await cluster.chat(a, model) == (200, "good")
    tripped = cluster.bad_calls(bad)
    assert len(tripped) == 2
    for replica, seen in zip((b, c), before, strict=True):

        async def learned(replica: Replica = replica, seen: int = seen) -> bool:
            return await _applied(cluster, replica) > seen

        await until(learned, LIMIT, f"replica {replica.name} learning A's trip")
    return tripped


async def _applied(cluster: Cluster, replica: Replica) -> int:
    """How many health notices of other replicas `replica` applied."""
    return int((await cluster.readyz(replica))["health"]["applied"])


async def test_a_route_changed_through_a_is_served_by_b_and_c_within_a_second(
    cluster: Cluster,
) -> None:
    """A route created, then changed three times, through A's admin API: B and C serve each
    change within a second of A answering the PATCH (the times are printed, and are in the
    failure message)."""
    a, b, c = cluster.replicas
    async with cluster.admin(a) as admin:
        created = await admin.post(
            "/routes",
            json={
                "name": "moving",
                "models": ["moving"],
                "targets": [{"provider": "m", "model": "moving-0"}],
            },
        )
        assert created.status_code == 201, created.text
        route = created.json()["id"]
        await _served_by(cluster, (b, c), "moving", "moving-0", LIMIT)
        lags, shown = [], []
        for number in range(1, 4):
            model = f"moving-{number}"
            sent = time.perf_counter()
            patched = await admin.patch(
                f"/routes/{route}", json={"targets": [{"provider": "m", "model": model}]}
            )
            answered = time.perf_counter()
            assert patched.status_code == 200, patched.text
            await _served_by(cluster, (b, c), "moving", model, LIMIT)
            served = time.perf_counter()
            lags.append(served - answered)
            shown.append(
                f"{(served - answered) * 1000:.0f} ms after A answered"
                f" ({(served - sent) * 1000:.0f} ms after the PATCH was sent)"
            )
    times = "; ".join(shown)
    print(f"\nroute changes through A served by B and C: {times}")
    assert max(lags) <= 1.0, f"B and C served the changes {times}"


async def _served_by(
    cluster: Cluster, replicas: Sequence[Replica], model: str, answered: str, limit: float
) -> None:
    """Ask each of `replicas` for `model` every 5 ms until `answered` answers on all."""

    async def serves(replica: Replica) -> None:
        async def now() -> bool:
            return await cluster.chat(replica, model) == (200, answered)

        await until(now, limit, f"replica {replica.name} serving {answered}", every=0.005)

    await asyncio.gather(*(serves(replica) for replica in replicas))


async def test_with_redis_stopped_no_chat_fails_and_readyz_says_degraded_until_it_is_back(
    cluster: Cluster,
) -> None:
    """Redis killed under traffic through the three replicas: no chat request fails, each
    `/readyz` turns `degraded` by itself, and `ready` again once Redis is back on its port."""
    replicas = cluster.replicas
    for replica in replicas:
        assert (await cluster.readyz(replica))["status"] == "ready"
    traffic = Traffic(cluster, "steady")
    runs = [asyncio.create_task(traffic.run(replica)) for replica in replicas]
    try:

        async def flowing() -> bool:
            return all(len(traffic.answers.get(r.name, [])) >= 3 for r in replicas)

        await until(flowing, LIMIT, "traffic through the three replicas")
        process = cluster.redis.process
        assert process is not None
        process.kill()
        await process.wait()
        down = time.time()
        reasons = await asyncio.gather(*(_status_becomes(cluster, r, "degraded") for r in replicas))
        for reason in reasons:
            assert "shared state" in reason, reason

        async def served_meanwhile() -> bool:
            now = time.time()
            return all(traffic.answered(r.name, down, now) >= 3 for r in replicas)

        await until(served_meanwhile, LIMIT, "traffic through the three while Redis is down")
        await cluster.redis.start()
        up = time.time()
        await asyncio.gather(*(_status_becomes(cluster, r, "ready") for r in replicas))
    finally:
        traffic.stop.set()
        await asyncio.gather(*runs)
    assert not traffic.failures()
    for replica in replicas:  # every replica had traffic while Redis was down
        assert traffic.answered(replica.name, down, up) >= 3, traffic.answers


async def _status_becomes(cluster: Cluster, replica: Replica, status: str) -> str:
    """Poll `replica`'s `/readyz` until its status is `status`: the reason it gives."""
    body: dict[str, Any] = {}

    async def reached() -> bool:
        nonlocal body
        body = await cluster.readyz(replica)
        return bool(body["status"] == status)

    await until(reached, LIMIT, f"replica {replica.name}'s /readyz saying {status}", every=0.1)
    return str(body.get("reason", ""))


async def test_with_postgresql_unreachable_every_replica_serves_its_last_configuration(
    cluster: Cluster,
) -> None:
    """PostgreSQL cut off: every replica goes on serving the route it loaded last (past its
    once-a-second check of the store), and an admin write on any of them is 503
    `store_unavailable`; once the store answers again, a write is accepted and every replica
    serves it."""
    a, _b, _c = replicas = cluster.replicas
    later = {
        "name": "later",
        "models": ["later"],
        "targets": [{"provider": "m", "model": "later-1"}],
    }
    async with cluster.admin(a) as admin:
        created = await admin.post(
            "/routes",
            json={
                "name": "kept",
                "models": ["kept"],
                "targets": [{"provider": "m", "model": "kept-1"}],
            },
        )
        assert created.status_code == 201, created.text
    await _served_by(cluster, replicas, "kept", "kept-1", LIMIT)
    await cluster.relay.close()
    try:
        loop = asyncio.get_running_loop()
        cut = loop.time()
        while loop.time() - cut < 1.5:
            for replica in replicas:
                assert await cluster.chat(replica, "kept") == (200, "kept-1"), replica
            await asyncio.sleep(0.05)
        for replica in replicas:
            async with cluster.admin(replica) as admin:
                refused = await admin.post("/routes", json=later)
            assert refused.status_code == 503, refused.text
            assert refused.json()["error"]["code"] == "store_unavailable"
    finally:
        await cluster.relay.start()
    async with cluster.admin(a) as admin:

        async def accepted() -> bool:
            reply = await admin.post("/routes", json=later)
            assert reply.status_code in {201, 503}, reply.text
            return reply.status_code == 201

        await until(accepted, LIMIT, "an admin write once PostgreSQL is back", every=0.1)
    await _served_by(cluster, replicas, "later", "later-1", LIMIT)


async def test_a_replica_killed_holding_the_probe_lease_leaves_the_probe_to_another(
    cluster: Cluster,
) -> None:
    """A's stream is the half-open probe, and A holds its lease; A is killed (SIGKILL) mid
    stream. B and C answer every request meanwhile, and neither calls the target until the
    lease expires (the target's timeout); then one of them probes it."""
    a, b, c = cluster.replicas
    await _trip_through_a(cluster, "kill", KILL_BAD)
    a_id = str((await cluster.readyz(a))["health"]["replica"])
    # The next call of the target (the probe) streams, and its first token never comes.
    cluster.upstream.app.faults.script("kill-bad", ["first_token=60"])

    async def streams_through_a() -> None:  # only A has traffic: it takes the probe
        while True:
            try:
                status, _model = await cluster.chat(a, "kill", stream=True)
            except httpx.HTTPError:
                return  # A was killed under the stream
            assert status == 200
            await asyncio.sleep(0.03)

    through_a = asyncio.create_task(streams_through_a())
    traffic = Traffic(cluster, "kill")
    runs: list[asyncio.Task[None]] = []
    try:

        async def probing() -> bool:
            return len(cluster.bad_calls(KILL_BAD)) > 2

        await until(probing, COOLDOWN + LIMIT, "A's probe")
        probe = [e for e in cluster.upstream.app.log.entries() if e.model == KILL_BAD][2]
        assert probe.stream, "the probe is not A's stream"
        lease = await _lease_held_by(cluster.redis.url, a_id)
        assert lease is not None, "A sends the probe without holding its lease"
        assert lease > KILL_TIMEOUT - 1.0, f"the lease lasts {lease:.2f} s, not the timeout"
        expires = time.time() + lease
        runs = [asyncio.create_task(traffic.run(replica)) for replica in (b, c)]
        a.kill()
        assert a.process is not None
        await a.process.wait()
        killed = time.time()
        await through_a

        async def probed_again() -> bool:
            return len(cluster.bad_calls(KILL_BAD)) > 3

        await until(probed_again, KILL_TIMEOUT + LIMIT, "a probe by B or C")
    finally:
        through_a.cancel()
        traffic.stop.set()
        await asyncio.gather(through_a, *runs, return_exceptions=True)
    assert not traffic.failures()
    again = cluster.bad_calls(KILL_BAD)[3]
    assert again >= expires - 0.05, f"probed {expires - again:.2f} s before A's lease expired"
    for replica in (b, c):  # both had traffic while A's lease held the key
        assert traffic.answered(replica.name, killed, expires) >= 2, traffic.answers


async def _lease_held_by(url: str, replica_id: str) -> float | None:
    """The seconds left on a probe lease `replica_id` holds in Redis, or None."""
    client = aredis.Redis.from_url(url, decode_responses=True)
    try:
        async for key in client.scan_iter(match="*probe:*"):
            value = await client.get(key)
            if value is not None and str(value).startswith(f"{replica_id}:"):
                left = await client.pttl(key)
                return left / 1000 if left > 0 else None
    finally:
        await client.aclose()
    return None
