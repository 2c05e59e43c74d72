"""Health shared between replicas through a real Redis: three registries in one process, each on
its own fake clock and its own Redis connection (database 11, flushed per test)."""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING

import orjson
import pytest
import redis
import redis.asyncio as aredis

from tests.state._redis_server import running_redis
from turnout.routing.clock import FakeClock
from turnout.routing.health import Admission, Health, Skip
from turnout.routing.reasons import health_skip_reason
from turnout.state.health import HealthNotice
from turnout.state.redis import RedisState
from turnout.state.shared_health import SharedHealth

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable

    Wait = Callable[[Callable[[], bool]], Awaitable[None]]

KEY = ("prov_1", "gpt-4o-mini")
WALL = 1_767_225_600.0
LEASE = 30.0
SCOPE = "acme"


@pytest.fixture(scope="module")
def db_url() -> str:
    """Database 11 of the test Redis (its own, flushed per test), or a skip saying why."""
    base = os.environ.get("TURNOUT_TEST_REDIS_URL") or "redis://127.0.0.1:6379/15"
    url = base.rsplit("/", 1)[0] + "/11"
    client = redis.Redis.from_url(url, socket_timeout=0.25, socket_connect_timeout=0.25)
    try:
        client.ping()
    except (redis.RedisError, OSError) as exc:
        pytest.skip(f"no Redis at {url} ({type(exc).__name__}); set TURNOUT_TEST_REDIS_URL")
    finally:
        client.close()
    return url


class Replica:
    """One replica: a Health on its own fake clock, its own Redis connection, the sharing."""

    def __init__(self, name: str, url: str, start: float) -> None:
        self.clock = FakeClock(start, wall_start=WALL)
        self.health = Health(clock=self.clock)
        self.state = RedisState(url, timeout=2.0)
        self.shared = SharedHealth(self.health, self.state, scope=SCOPE, replica_id=name)

    def admit(self, lease: float = LEASE) -> Admission | Skip:
        return self.health.admit(KEY, lease=lease)

    async def ask(self, lease: float = LEASE) -> Admission | Skip:
        """What a request meets, as the engine asks: a probe due is claimed across replicas."""
        verdict = self.admit(lease)
        if isinstance(verdict, Admission) and verdict.needs_lease:
            return await self.health.claim_probe(verdict, lease=lease)
        return verdict

    def trip(self) -> None:
        """Three retryable failures in a row: the breaker opens."""
        for _ in range(3):
            admission = self.admit()
            assert isinstance(admission, Admission), admission
            self.health.record_failure(admission, "provider_error")

    @property
    def leases_answered(self) -> int:
        return self.shared.leases.taken + self.shared.leases.refused


@pytest.fixture
async def replicas(db_url: str) -> AsyncIterator[list[Replica]]:
    """Replicas a, b and c, started on a flushed database 11."""
    client = aredis.Redis.from_url(db_url)
    await client.flushdb()
    made = [Replica(name, db_url, start) for name, start in (("a", 10.0), ("b", 500.0), ("c", 7.0))]
    for replica in made:
        await replica.shared.start()
    yield made
    for replica in made:
        await replica.shared.stop()
        await replica.state.close()
    await client.flushdb()
    await client.aclose()


def advance(replicas: list[Replica], seconds: float) -> None:
    for replica in replicas:
        replica.clock.advance(seconds)


async def open_everywhere(replicas: list[Replica], eventually: Wait) -> None:
    """Trip the breaker in a; wait until b and c applied it."""
    replicas[0].trip()
    await eventually(lambda: all(r.shared.publisher.applied >= 1 for r in replicas[1:]))


async def one_probe(replicas: list[Replica]) -> tuple[Replica, Admission]:
    """After the open period: every replica asks at once; the one that takes the lease has its
    probe, the others skip the key as probed elsewhere."""
    verdicts = await asyncio.gather(*(replica.ask() for replica in replicas))
    probes = [(r, v) for r, v in zip(replicas, verdicts, strict=True) if isinstance(v, Admission)]
    assert len(probes) == 1, verdicts
    assert probes[0][1].probe
    skips = [v for v in verdicts if isinstance(v, Skip)]
    assert [(v.outcome, v.probe) for v in skips] == [("breaker_open", "elsewhere")] * 2
    return probes[0]


async def test_trip_in_one_replica_makes_the_others_skip(
    replicas: list[Replica], eventually: Wait
) -> None:
    """A breaker trip in a reaches b and c: they skip the key for the same 60 s."""
    await open_everywhere(replicas, eventually)
    for replica in replicas[1:]:
        verdict = replica.admit()
        assert isinstance(verdict, Skip)
        assert (verdict.outcome, verdict.seconds_left(replica.clock.now())) == ("breaker_open", 60)


async def test_applied_notices_are_not_published_again(
    replicas: list[Replica], eventually: Wait, db_url: str
) -> None:
    """One trip is one message on the channel: b and c apply it and publish nothing."""
    listener = aredis.Redis.from_url(db_url).pubsub()
    await listener.subscribe(f"turnout:db11:health:{SCOPE}")
    await open_everywhere(replicas, eventually)
    for replica in replicas:
        await replica.shared.publisher.flush()
    messages = []
    for _ in range(4):  # a quiet 0.1 s four times over: nothing more is coming
        message = await listener.get_message(ignore_subscribe_messages=True, timeout=0.1)
        if message is not None:
            messages.append(orjson.loads(message["data"]))
    await listener.aclose()  # type: ignore[no-untyped-call, unused-ignore]  # untyped before redis-py 8
    assert [(m["r"], m["o"]) for m in messages] == [("a", "open")]
    assert [r.shared.publisher.published for r in replicas] == [1, 0, 0]
    assert replicas[0].shared.publisher.applied == 0


async def test_exactly_one_probe_among_three(replicas: list[Replica], eventually: Wait) -> None:
    """When the open period ends and the three ask at once, one takes the lease and that
    request is the probe; the other two skip."""
    await open_everywhere(replicas, eventually)
    advance(replicas, 60)
    await one_probe(replicas)
    assert sum(r.shared.leases.taken for r in replicas) == 1
    assert sum(r.shared.leases.refused for r in replicas) == 2


async def test_the_replica_that_takes_the_lease_probes_and_its_success_closes_all(
    replicas: list[Replica], eventually: Wait
) -> None:
    """The first request after the open period on the replica that tripped takes the lease and
    is the probe; b and c skip with the probe in flight elsewhere as the reason, and after the
    probe's success all three call the key again."""
    a, b, c = replicas
    await open_everywhere(replicas, eventually)
    advance(replicas, 60)
    probe = await a.ask()
    assert isinstance(probe, Admission)
    assert (probe.probe, probe.needs_lease) == (True, False)
    for replica in (b, c):
        verdict = await replica.ask()
        assert isinstance(verdict, Skip)
        reason = health_skip_reason(verdict, replica.clock.now())
        assert reason == "breaker open, probe in flight on another replica"
    assert a.health.admit_forced(KEY, lease=LEASE) is None  # one probe per key here too
    a.health.record_success(probe)
    await eventually(lambda: all(isinstance(r.admit(), Admission) for r in (b, c)))
    for replica in replicas:
        verdict = replica.admit()
        assert isinstance(verdict, Admission)
        assert not verdict.probe
        assert replica.health.snapshot().get(KEY).state == "available"  # type: ignore[union-attr]


async def test_probe_failure_reopens_the_key_everywhere(
    replicas: list[Replica], eventually: Wait
) -> None:
    """The probe's failure is published as a new open period for every replica."""
    await open_everywhere(replicas, eventually)
    advance(replicas, 60)
    prober, probe = await one_probe(replicas)
    applied = [r.shared.publisher.applied for r in replicas]
    prober.health.record_failure(probe, "provider_error")
    others = [r for r in replicas if r is not prober]
    await eventually(
        lambda: all(r.shared.publisher.applied > applied[replicas.index(r)] for r in others)
    )
    for replica in replicas:
        verdict = replica.admit()
        assert isinstance(verdict, Skip)
        assert verdict.seconds_left(replica.clock.now()) == 60


async def test_a_probe_released_without_a_result_frees_its_lease(
    replicas: list[Replica], eventually: Wait, db_url: str
) -> None:
    """A probe that ends without counting (cancelled, or on a caller's own credential) deletes
    its lease in Redis at once instead of holding it for the call's timeout."""
    await open_everywhere(replicas, eventually)
    advance(replicas, 60)
    prober, probe = await one_probe(replicas)
    client = aredis.Redis.from_url(db_url)
    try:
        assert len(await client.keys("turnout:probe:*")) == 1
        prober.health.release(probe)
        for _ in range(300):
            if not await client.keys("turnout:probe:*"):
                break
            await asyncio.sleep(0.01)
        assert await client.keys("turnout:probe:*") == []
    finally:
        await client.aclose()


async def test_a_lease_freed_without_a_notice_is_claimed_again_within_a_second(
    replicas: list[Replica], eventually: Wait, db_url: str
) -> None:
    """A's probe released without a result frees the lease and publishes nothing: b, which
    saw the lease held, asks again after a second and probes instead of skipping the key for
    the rest of the lease."""
    a, b, _ = replicas
    await open_everywhere(replicas, eventually)
    advance(replicas, 60)
    probe = await a.ask()
    assert isinstance(probe, Admission)
    assert isinstance(await b.ask(), Skip)
    a.health.release(probe)
    client = aredis.Redis.from_url(db_url)
    try:
        for _ in range(300):  # the lease is deleted in Redis
            if not await client.keys("turnout:probe:*"):
                break
            await asyncio.sleep(0.01)
    finally:
        await client.aclose()
    assert isinstance(await b.ask(), Skip)  # b does not ask the store again at once
    b.clock.advance(1)
    verdict = await b.ask()
    assert isinstance(verdict, Admission)
    assert verdict.probe


async def test_stale_trip_after_a_close_is_ignored(
    replicas: list[Replica], eventually: Wait
) -> None:
    """A's old trip notice delivered again after b's probe closed the key changes nothing."""
    a, b, _ = replicas
    a.trip()
    await eventually(lambda: b.shared.publisher.applied >= 1)
    stored = await a.state.scan(f"health:{SCOPE}:")
    old = await a.state.get(stored[0])
    assert old is not None
    advance(replicas, 30)
    b.health.apply_remote(KEY, "closed", at=b.clock.now())
    late = orjson.loads(old)
    late["u"] += 30  # still running, but it happened before the close
    assert b.shared.publisher.apply(orjson.dumps(late))
    assert isinstance(b.admit(), Admission)


async def test_lease_of_a_probe_that_never_returns_expires(
    replicas: list[Replica], eventually: Wait
) -> None:
    """A probe that never reports frees the key for another replica once its lease (the
    call's timeout, PX in Redis) runs out."""
    a, b, _ = replicas
    await open_everywhere(replicas, eventually)
    advance(replicas, 60)
    lease = 0.3
    stuck = await a.ask(lease)
    assert isinstance(stuck, Admission)
    assert stuck.probe  # and it never reports
    refused = await b.ask(lease)
    assert isinstance(refused, Skip)
    assert refused.probe == "elsewhere"
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10.0
    while not isinstance(verdict := await b.ask(lease), Admission):
        assert loop.time() < deadline, f"b never took the expired lease: {verdict}"
        b.clock.advance(lease)  # past the lease it saw held, so b claims again
        await asyncio.sleep(0.05)
    assert verdict.probe


async def test_a_replica_that_starts_later_learns_the_trip(
    replicas: list[Replica], eventually: Wait, db_url: str
) -> None:
    """A replica that starts after the trip reads it from Redis and skips the key."""
    replicas[0].trip()
    await replicas[0].shared.publisher.flush()
    late = Replica("late", db_url, 42.0)
    await late.shared.start()
    try:
        verdict = late.admit()
        assert isinstance(verdict, Skip)
        assert verdict.outcome == "breaker_open"
    finally:
        await late.shared.stop()
        await late.state.close()


async def test_a_close_made_during_an_outage_reaches_redis_when_it_returns() -> None:
    """A replica that closes a key while Redis is down publishes the close once Redis is back,
    so a replica starting afterwards does not load the old trip."""
    async with running_redis() as server:
        a = Replica("a", server.url, 10.0)
        await a.shared.start()
        try:
            a.trip()
            await a.shared.publisher.flush()
            raw = aredis.Redis.from_url(server.url)
            kept = {key: await raw.get(key) for key in await raw.keys("turnout:health:*")}
            await raw.aclose()
            assert kept  # the trip is stored
            await server.stop()
            assert await a.shared.publisher.check_store() is False
            a.clock.advance(60)
            probe = a.admit()
            assert isinstance(probe, Admission)  # Redis down: this replica probes alone
            assert probe.probe
            a.health.record_success(probe)
            await a.shared.publisher.flush()
            await server.start()
            raw = aredis.Redis.from_url(server.url)  # as if Redis had kept its data
            for key, value in kept.items():
                await raw.set(key, value or b"", px=600_000)
            await raw.aclose()
            assert await a.state.check()
            assert await a.shared.publisher.check_store() is True
            await a.shared.publisher.flush()
            assert a.shared.publisher.resyncs == 1
            late = Replica("late", server.url, 3.0)
            await late.shared.start()
            try:
                verdict = late.admit()
                assert isinstance(verdict, Admission)
                assert verdict.probe is False
            finally:
                await late.shared.stop()
                await late.state.close()
        finally:
            await a.shared.stop()
            await a.state.close()


def test_notice_with_its_time_round_trips() -> None:
    """A notice keeps when it happened (`a`) through encoding; `closed` is a published kind."""
    notice = HealthNotice("a", KEY, "closed", WALL, WALL)
    assert HealthNotice.decode(notice.encode()) == notice
