"""The StateStore contract, for every backend (memory; Redis when reachable)."""

from __future__ import annotations

import asyncio
import math
from typing import TYPE_CHECKING

import pytest

from turnout.state.base import StateStore, Subscription

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    Wait = Callable[[Callable[[], bool]], Awaitable[None]]


async def test_backend_satisfies_the_protocol(state: StateStore) -> None:
    """Each backend is a StateStore and starts healthy with a described status."""
    assert isinstance(state, StateStore)
    assert state.healthy
    status = state.describe()
    assert status["healthy"] is True
    assert status["backend"] in {"memory", "redis"}


async def test_missing_key_reads_none(state: StateStore) -> None:
    """A key never set reads as None."""
    assert await state.get("nothing-here") is None


async def test_set_then_get_returns_the_bytes(state: StateStore) -> None:
    """A stored value comes back byte for byte."""
    value = bytes(range(256))
    await state.set("blob", value, 60)
    assert await state.get("blob") == value


async def test_set_replaces_the_value(state: StateStore) -> None:
    """A second set under one key replaces the first value."""
    await state.set("k", b"one", 60)
    await state.set("k", b"two", 60)
    assert await state.get("k") == b"two"


async def test_delete_removes_and_tolerates_missing(state: StateStore) -> None:
    """Delete removes a key; deleting an absent key is not an error."""
    await state.set("k", b"v", 60)
    await state.delete("k")
    await state.delete("never-set")
    assert await state.get("k") is None


async def test_touch_reports_whether_the_key_exists(state: StateStore) -> None:
    """Touch is True for a live key (which stays readable) and False for an absent one."""
    await state.set("k", b"v", 60)
    assert await state.touch("k", 120) is True
    assert await state.get("k") == b"v"
    assert await state.touch("absent", 120) is False


async def test_scan_lists_only_keys_under_the_prefix(state: StateStore) -> None:
    """Scan returns the live keys starting with the prefix, and no others."""
    await state.set("pin:a:1", b"x", 60)
    await state.set("pin:b:2", b"x", 60)
    await state.set("cache:zz", b"x", 60)
    assert sorted(await state.scan("pin:")) == ["pin:a:1", "pin:b:2"]
    assert await state.scan("pin:", limit=1) in (["pin:a:1"], ["pin:b:2"])


async def test_scan_treats_glob_characters_literally(state: StateStore) -> None:
    """A prefix with `*` or `[` matches only itself, not a pattern."""
    await state.set("a*b:1", b"x", 60)
    await state.set("axb:1", b"x", 60)
    assert await state.scan("a*b:") == ["a*b:1"]


@pytest.mark.parametrize("ttl", [0, -1, math.nan, math.inf])
async def test_invalid_ttl_is_refused(state: StateStore, ttl: float) -> None:
    """A TTL that is not a finite number of seconds > 0 raises ValueError."""
    with pytest.raises(ValueError, match="TTL"):
        await state.set("k", b"v", ttl)
    with pytest.raises(ValueError, match="TTL"):
        await state.touch("k", ttl)


async def test_non_number_ttl_is_a_type_error(state: StateStore) -> None:
    """A TTL that is not a number raises TypeError."""
    with pytest.raises(TypeError, match="TTL"):
        await state.set("k", b"v", "60")  # type: ignore[arg-type]


async def test_subscriber_receives_messages_in_order(state: StateStore, eventually: Wait) -> None:
    """Messages published after subscribe() returns arrive, in publication order."""
    subscription = await state.subscribe("events")
    assert isinstance(subscription, Subscription)
    for n in range(5):
        await state.publish("events", f"m{n}".encode())
    received = [await asyncio.wait_for(anext(subscription), 3) for _ in range(5)]
    assert received == [b"m0", b"m1", b"m2", b"m3", b"m4"]
    await subscription.aclose()


async def test_every_subscriber_gets_each_message(state: StateStore) -> None:
    """Two subscriptions to one channel both receive a message; other channels do not."""
    first = await state.subscribe("events")
    second = await state.subscribe("events")
    other = await state.subscribe("elsewhere")
    await state.publish("events", b"hello")
    assert await asyncio.wait_for(anext(first), 3) == b"hello"
    assert await asyncio.wait_for(anext(second), 3) == b"hello"
    await state.publish("elsewhere", b"marker")
    assert await asyncio.wait_for(anext(other), 3) == b"marker"
    for subscription in (first, second, other):
        await subscription.aclose()


async def test_publish_without_subscribers_is_fine(state: StateStore) -> None:
    """Publishing to a channel nobody listens to neither raises nor blocks."""
    await state.publish("nobody", b"x")
    await state.set("after", b"ok", 60)
    assert await state.get("after") == b"ok"


async def test_closing_a_subscription_ends_a_waiting_reader(state: StateStore) -> None:
    """A reader blocked on a subscription stops when the subscription is closed."""
    subscription = await state.subscribe("events")

    async def read_all() -> list[bytes]:
        return [message async for message in subscription]

    reader = asyncio.ensure_future(read_all())
    await asyncio.sleep(0)
    await subscription.aclose()
    assert await asyncio.wait_for(reader, 3) == []


async def test_close_ends_subscriptions(state: StateStore) -> None:
    """Closing the store ends every subscription's iteration."""
    subscription = await state.subscribe("events")
    await state.close()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(anext(subscription), 3)
    await state.close()
