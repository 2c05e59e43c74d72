"""HealthPublisher: cooldowns, parks and trips reach other replicas' Health through the state
store (one MemoryState, or two Redis connections), on wall-clock deadlines."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import orjson
import pytest

from turnout.routing.clock import FakeClock
from turnout.routing.health import Admission, Breaker, Health
from turnout.state.health import HealthNotice, HealthPublisher
from turnout.state.memory import MemoryState

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Hashable

    from turnout.state.base import StateStore

    Wait = Callable[[Callable[[], bool]], Awaitable[None]]

KEY = ("prov_1", "gpt-4o-mini")
WALL = 1_767_225_600.0


def replica_health(start: float, *, skew: float = 0.0) -> Health:
    """A Health on its own fake clock: a monotonic reading of `start`, wall time WALL + skew."""
    return Health(clock=FakeClock(start, wall_start=WALL + skew))


def fail(health: Health, error_class: str, retry_after: float | None = None) -> None:
    """Record one failed call on KEY."""
    admission = health.admit(KEY, lease=30)
    assert isinstance(admission, Admission), admission
    health.record_failure(admission, error_class, retry_after=retry_after)


def seconds_left(health: Health, key: Hashable = KEY) -> tuple[str, float | None]:
    """The key's state and seconds left in `health`'s snapshot."""
    entry = health.snapshot().get(key)
    assert entry is not None, f"{key} unknown"
    return entry.state, entry.seconds_left


@pytest.fixture
async def replicas(
    state_pair: tuple[StateStore, StateStore],
) -> AsyncIterator[tuple[HealthPublisher, HealthPublisher]]:
    """Replicas "a" and "b", started, with monotonic clocks 100 s and 5,000 s apart in origin."""
    a = HealthPublisher(replica_health(100.0), state_pair[0], "a")
    b = HealthPublisher(replica_health(5_000.0), state_pair[1], "b")
    await a.start()
    await b.start()
    yield a, b
    await a.stop()
    await b.stop()


async def test_cooldown_reaches_the_other_replica(
    replicas: tuple[HealthPublisher, HealthPublisher], eventually: Wait
) -> None:
    """A Retry-After cooldown on one replica cools the key on another for the same time left."""
    a, b = replicas
    fail(a.health, "rate_limited", retry_after=30)
    await eventually(lambda: b.applied == 1)
    assert seconds_left(b.health) == ("cooling_down", 30.0)


async def test_park_reaches_the_other_replica(
    replicas: tuple[HealthPublisher, HealthPublisher], eventually: Wait
) -> None:
    """A quota park (15 min default) is parked on the other replica too."""
    a, b = replicas
    fail(a.health, "quota_exhausted")
    await eventually(lambda: b.applied == 1)
    assert seconds_left(b.health) == ("parked", 900.0)


async def test_breaker_trip_reaches_the_other_replica(
    replicas: tuple[HealthPublisher, HealthPublisher], eventually: Wait
) -> None:
    """Three failures in a row open the breaker on one replica and hold it open on the other."""
    a, b = replicas
    for _ in range(3):
        fail(a.health, "provider_error")
    await eventually(lambda: b.applied == 1)
    state, left = seconds_left(b.health)
    assert state == "open"
    assert left == 60.0


async def test_a_held_longer_deadline_is_never_shortened(
    replicas: tuple[HealthPublisher, HealthPublisher], eventually: Wait
) -> None:
    """A shorter cooldown from another replica leaves a longer local one as it is."""
    a, b = replicas
    fail(b.health, "rate_limited", retry_after=120)
    fail(a.health, "rate_limited", retry_after=10)
    await eventually(lambda: b.applied == 1)
    assert seconds_left(b.health) == ("cooling_down", 120.0)


async def test_a_replica_ignores_its_own_notices(
    replicas: tuple[HealthPublisher, HealthPublisher], eventually: Wait
) -> None:
    """The publisher's own notice comes back on the channel and is not applied."""
    a, b = replicas
    fail(a.health, "rate_limited", retry_after=30)
    await eventually(lambda: b.applied == 1)
    await a.flush()
    assert a.published == 1
    assert a.applied == 0
    assert b.published == 0


async def test_a_replica_that_starts_later_catches_up(
    state_pair: tuple[StateStore, StateStore], eventually: Wait
) -> None:
    """A new replica applies the notices stored by others while it was not running."""
    a = HealthPublisher(replica_health(100.0), state_pair[0], "a")
    await a.start()
    fail(a.health, "quota_exhausted")
    await a.flush()
    late = HealthPublisher(replica_health(7.0), state_pair[1], "late")
    await late.start()
    try:
        assert late.applied == 1
        assert seconds_left(late.health) == ("parked", 900.0)
    finally:
        await late.stop()
        await a.stop()


async def test_wall_clock_skew_shifts_the_deadline() -> None:
    """The deadline is wall time: a receiver whose wall clock runs 10 s ahead sees 10 s less."""
    shared = MemoryState()
    a = HealthPublisher(replica_health(0.0), shared, "a")
    b = HealthPublisher(replica_health(0.0, skew=10.0), shared, "b")
    notice = HealthNotice("a", KEY, "cooling_down", WALL + 30)
    assert b.apply(notice.encode())
    assert seconds_left(b.health) == ("cooling_down", 20.0)
    assert a.apply(notice.encode()) is False


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b"[1, 2]",
        orjson.dumps({"r": "x", "k": ["p", "m"], "o": "melted", "u": WALL + 30}),
        orjson.dumps({"r": "x", "k": {"p": 1}, "o": "parked", "u": WALL + 30}),
        orjson.dumps({"r": "x", "k": "p", "o": "parked", "u": "soon"}),
        orjson.dumps({"r": "x", "k": "p", "o": "parked", "u": WALL - 1}),
    ],
)
def test_malformed_or_expired_notices_are_ignored(data: bytes) -> None:
    """A notice that is not well formed, names no published outcome, or has passed does nothing."""
    receiver = HealthPublisher(replica_health(0.0), MemoryState(), "b")
    assert receiver.apply(data) is False
    assert len(receiver.health.snapshot()) == 0


def test_notice_deadline_is_capped_at_a_day() -> None:
    """A notice claiming a park of a week parks for at most 24 h."""
    receiver = HealthPublisher(replica_health(0.0), MemoryState(), "b")
    assert receiver.apply(HealthNotice("a", "prov", "parked", WALL + 7 * 86_400).encode())
    assert seconds_left(receiver.health, "prov") == ("parked", 86_400.0)


def test_notice_round_trips_string_and_tuple_keys() -> None:
    """Encoding keeps a tuple key a tuple (with a None model) and a string key a string."""
    for key in (("prov", None), "route/target", ("route", "target")):
        notice = HealthNotice("a", key, "open", WALL + 5)
        assert HealthNotice.decode(notice.encode()) == notice


async def test_disabled_breaker_takes_cooldowns_but_not_parks(eventually: Wait) -> None:
    """A replica without a breaker merges published cooldowns and ignores parks."""
    shared = MemoryState()
    a = HealthPublisher(replica_health(0.0), shared, "a")
    b = HealthPublisher(Health(breaker=Breaker(enabled=False), clock=FakeClock()), shared, "b")
    async with a, b:
        fail(a.health, "quota_exhausted", retry_after=40)
        await eventually(lambda: b.applied >= 1)
    assert seconds_left(b.health) == ("cooling_down", 40.0)


async def test_transitions_recorded_on_another_thread_are_published(eventually: Wait) -> None:
    """A failure recorded off the event loop's thread is still published."""
    shared = MemoryState()
    async with (
        HealthPublisher(replica_health(0.0), shared, "a") as a,
        HealthPublisher(replica_health(0.0), shared, "b") as b,
    ):
        worker = threading.Thread(target=fail, args=(a.health, "rate_limited", 12))
        worker.start()
        worker.join()
        await eventually(lambda: b.applied == 1)
    assert seconds_left(b.health) == ("cooling_down", 12.0)


async def test_stopped_publisher_publishes_nothing(eventually: Wait) -> None:
    """After stop(), new transitions are not published."""
    shared = MemoryState()
    a = HealthPublisher(replica_health(0.0), shared, "a")
    await a.start()
    await a.stop()
    fail(a.health, "rate_limited", retry_after=30)
    assert await shared.scan("health:") == []
    assert a.published == 0
