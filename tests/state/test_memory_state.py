"""MemoryState: TTLs on the injected clock, LRU bounds, slow subscribers."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from turnout.state.memory import MemoryState

if TYPE_CHECKING:
    from turnout.routing.clock import FakeClock


async def test_entry_expires_when_its_deadline_is_reached(fake_clock: FakeClock) -> None:
    """An entry is readable before its TTL ends and gone exactly at the deadline."""
    state = MemoryState(fake_clock)
    await state.set("k", b"v", 10)
    fake_clock.advance(9.999)
    assert await state.get("k") == b"v"
    fake_clock.advance(0.001)
    assert await state.get("k") is None
    assert len(state) == 0


async def test_touch_moves_the_deadline(fake_clock: FakeClock) -> None:
    """Touch restarts the TTL from now; touching an expired key fails."""
    state = MemoryState(fake_clock)
    await state.set("k", b"v", 10)
    fake_clock.advance(8)
    assert await state.touch("k", 10)
    fake_clock.advance(8)
    assert await state.get("k") == b"v"
    fake_clock.advance(2)
    assert await state.touch("k", 10) is False
    assert await state.get("k") is None


async def test_expired_keys_are_not_scanned(fake_clock: FakeClock) -> None:
    """Scan skips entries whose TTL has ended."""
    state = MemoryState(fake_clock)
    await state.set("p:short", b"v", 1)
    await state.set("p:long", b"v", 100)
    fake_clock.advance(1)
    assert await state.scan("p:") == ["p:long"]


async def test_least_recently_used_entry_is_evicted_first(fake_clock: FakeClock) -> None:
    """Past max_entries the least recently used key goes; a read counts as use."""
    state = MemoryState(fake_clock, max_entries=3)
    for key in ("a", "b", "c"):
        await state.set(key, b"v", 60)
    await state.get("a")
    await state.set("d", b"v", 60)
    assert await state.get("b") is None
    assert [await state.get(k) for k in ("a", "c", "d")] == [b"v", b"v", b"v"]
    assert state.evicted == 1


async def test_byte_bound_evicts_until_under_the_limit(fake_clock: FakeClock) -> None:
    """Keys plus values never exceed max_bytes: older entries make room for a new one."""
    state = MemoryState(fake_clock, max_bytes=100)
    await state.set("a", b"x" * 40, 60)
    await state.set("b", b"x" * 40, 60)
    await state.set("c", b"x" * 40, 60)
    assert await state.get("a") is None
    assert await state.get("c") == b"x" * 40
    assert state.size_bytes <= 100


async def test_replacing_a_value_keeps_the_byte_count_exact(fake_clock: FakeClock) -> None:
    """Overwriting and deleting keys adjusts size_bytes back to zero."""
    state = MemoryState(fake_clock)
    await state.set("k", b"x" * 50, 60)
    await state.set("k", b"x" * 10, 60)
    assert state.size_bytes == 11
    await state.delete("k")
    assert state.size_bytes == 0


async def test_sweep_drops_expired_entries_on_write(fake_clock: FakeClock) -> None:
    """Expired entries nobody reads are removed by the periodic sweep on a later write."""
    state = MemoryState(fake_clock, sweep_every=60)
    for n in range(10):
        await state.set(f"old{n}", b"v", 5)
    fake_clock.advance(61)
    await state.set("new", b"v", 5)
    assert len(state) == 1


async def test_slow_subscriber_loses_its_oldest_messages(fake_clock: FakeClock) -> None:
    """A full subscription drops the oldest message, counts it, and never blocks publish."""
    state = MemoryState(fake_clock, queue_size=2)
    subscription = await state.subscribe("c")
    for n in range(4):
        await state.publish("c", str(n).encode())
    assert subscription.dropped == 2
    assert [await anext(subscription), await anext(subscription)] == [b"2", b"3"]


async def test_closed_subscription_is_unregistered(fake_clock: FakeClock) -> None:
    """After aclose, publishing no longer reaches the subscription."""
    state = MemoryState(fake_clock)
    subscription = await state.subscribe("c")
    await subscription.aclose()
    await state.publish("c", b"x")
    assert subscription.dropped == 0
    with pytest.raises(StopAsyncIteration):
        await anext(subscription)


def test_bounds_must_be_positive() -> None:
    """A store that could hold nothing is refused."""
    with pytest.raises(ValueError, match="at least 1"):
        MemoryState(max_entries=0)
