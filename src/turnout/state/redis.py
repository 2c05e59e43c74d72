"""Shared state in Redis for N gateway replicas, degrading to local state.

Rule 1: a failing Redis never fails a call. Every operation catches connection errors, timeouts
and Redis errors (short socket timeouts, 0.25 s by default; a broken pooled connection is retried
once at once, a timeout never) and answers from the local `MemoryState` instead.
Rule 2: the first failure opens an outage: `healthy` turns False, `describe()` says why and since
when, one warning is logged, and a background task pings Redis every `retry_every` seconds.
While the outage lasts no operation tries Redis, so no call pays a timeout twice. The first
successful ping closes the outage and logs once that shared state is back.
Rule 3: while healthy, reads go to Redis only; writes, touches and deletes go to Redis and to the
local mirror, so an outage starts from recent local state. Nothing written locally during an
outage is copied back to Redis: the state is advisory (pins, cache, published health).
Rule 4: keys and channels are stored under `prefix` (default `turnout:`), so several
deployments, or test runs, can share one Redis database. Channels also carry the database
number (`turnout:db3:health`): Redis delivers a message to every subscriber of a channel name,
whatever database each client selected, and deployments kept apart by database must not hear
each other's health or configuration notices.
Rule 5: a subscription is confirmed by Redis before `subscribe()` returns; it survives outages (it
resubscribes when Redis is back) and, during an outage, receives what this process publishes.
Rule 6: readiness does not wait for a call to find Redis gone. `probe()` pings Redis, bounded by
`probe_timeout`, at most once per `probe_every` seconds (callers in between get the last answer,
and concurrent callers share one ping), so a storm of readiness checks costs Redis one ping a
second. A failed ping opens an outage as a failed call does; during an outage `probe()` only
reports it (the outage's own pings close it, Rule 2).
"""

from __future__ import annotations

import asyncio
import math
from typing import TYPE_CHECKING, Any

from turnout.routing.clock import Clock, LoopClock
from turnout.state.base import check_ttl
from turnout.state.memory import DEFAULT_QUEUE_SIZE, MemoryState, QueuedSubscription
from turnout.state.redis_link import FAILURES, Down, RedisLink, quietly, redacted_url

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.client import PubSub

__all__ = ["RedisState", "redacted_url"]

# A lease in one round trip: 0 when taken, else the holder's milliseconds left (at least 1).
_CLAIM = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 0 end
local left = redis.call('PTTL', KEYS[1])
if left < 1 then return 1 end
return left
"""
_UNCLAIM = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
_GLOB_SPECIAL = str.maketrans({c: f"\\{c}" for c in "*?[]\\"})


class RedisState:
    """Shared state in Redis at `url` (`redis://host:port/db`, `rediss://` for TLS).

    `prefix` (default `turnout:`) namespaces every key and channel; `timeout` (seconds, default
    0.25) bounds connecting and each reply; `retry_every` (seconds, default 1.0) is how often
    an outage is probed; `probe_every` (seconds, default 1.0) is how long a readiness ping's
    answer is reused and `probe_timeout` (seconds, default 0.5) bounds it; `clock` paces those
    probes (default: the loop clock); `local` is the fallback store (default: a new
    `MemoryState` on the same clock). `link` is the connection and its outages (its `outages`
    and readiness `pings` count them).
    """

    def __init__(
        self,
        url: str,
        prefix: str = "turnout:",
        *,
        timeout: float = 0.25,
        retry_every: float = 1.0,
        probe_every: float = 1.0,
        probe_timeout: float = 0.5,
        clock: Clock | None = None,
        local: MemoryState | None = None,
    ) -> None:
        self.url = url
        self.prefix = prefix
        self.clock: Clock = clock if clock is not None else LoopClock()
        self.local = local if local is not None else MemoryState(self.clock)
        self.link = RedisLink(
            url,
            timeout=timeout,
            retry_every=retry_every,
            probe_every=probe_every,
            probe_timeout=probe_timeout,
            clock=self.clock,
        )
        self._channel_prefix = f"{prefix}db{self.link.database}:"
        self._channels: dict[str, set[QueuedSubscription]] = {}

    def __repr__(self) -> str:
        return f"RedisState({redacted_url(self.url)!r}, prefix={self.prefix!r})"

    # -- status

    @property
    def healthy(self) -> bool:
        """False during an outage, while serving on local state."""
        return self.link.healthy

    def describe(self) -> dict[str, Any]:
        """`backend`, `url` (password redacted), `prefix`, `healthy`, `detail`, and during an
        outage `down_since` (epoch seconds) and `down_seconds`."""
        link = self.link
        status: dict[str, Any] = {
            "backend": "redis",
            "url": redacted_url(self.url),
            "prefix": self.prefix,
            "healthy": link.healthy,
            "outages": link.outages,
        }
        if link.down_since is None:
            status["detail"] = "shared state reachable"
            return status
        status["detail"] = f"unreachable ({link.reason}); serving on local state"
        status["down_since"] = link.down_since
        status["down_seconds"] = link.down_seconds()
        return status

    async def check(self) -> bool:
        """Ping Redis now: opens or closes an outage accordingly; returns `healthy`."""
        return await self.link.check()

    async def probe(self) -> bool:
        """Rule 6: a readiness check; returns `healthy`."""
        return await self.link.probe()

    # -- key/value

    async def get(self, key: str) -> bytes | None:
        """The value under `key` (from Redis; from local state during an outage)."""
        value = await self.link.run(lambda r: r.get(self.prefix + key))
        if isinstance(value, Down):
            return await self.local.get(key)
        if isinstance(value, str):  # only with decode_responses, which this client never sets
            return value.encode()
        return value

    async def set(self, key: str, value: bytes, ttl: float) -> None:
        """Store `value` under `key` for `ttl` seconds (Redis and the local mirror)."""
        ms = _milliseconds(check_ttl(ttl))
        await self.link.run(lambda r: r.set(self.prefix + key, value, px=ms))
        await self.local.set(key, value, ttl)

    async def delete(self, key: str) -> None:
        """Remove `key` from Redis and the local mirror."""
        await self.link.run(lambda r: r.delete(self.prefix + key))
        await self.local.delete(key)

    async def touch(self, key: str, ttl: float) -> bool:
        """Make `key` expire `ttl` seconds from now; False when absent."""
        ms = _milliseconds(check_ttl(ttl))
        found = await self.link.run(lambda r: r.pexpire(self.prefix + key, ms))
        local = await self.local.touch(key, ttl)
        return local if isinstance(found, Down) else bool(found)

    async def scan(self, prefix: str, *, limit: int = 1000) -> list[str]:
        """Up to `limit` live keys starting with `prefix` (Redis `SCAN`, a few round trips)."""
        keys = await self.link.run(lambda r: self._scan(r, prefix, limit))
        if isinstance(keys, Down):
            return await self.local.scan(prefix, limit=limit)
        return keys

    async def _scan(self, client: Redis, prefix: str, limit: int) -> list[str]:
        pattern = (self.prefix + prefix).translate(_GLOB_SPECIAL) + "*"
        found: list[str] = []
        start = len(self.prefix)
        async for raw in client.scan_iter(match=pattern, count=500):
            text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
            found.append(text[start:])
            if len(found) >= limit:
                break
        return found

    async def claim(self, key: str, value: bytes, ttl: float) -> float:
        """`SET key value NX PX ttl` in one round trip: 0.0 when taken, else the holder's
        seconds left (`PTTL`). During an outage the local state answers (a per-process lease)."""
        ms = _milliseconds(check_ttl(ttl))
        left = await self.link.run(lambda r: r.eval(_CLAIM, 1, self.prefix + key, value, ms))
        if isinstance(left, Down):
            return await self.local.claim(key, value, ttl)
        return max(0.0, int(left) / 1000)

    async def unclaim(self, key: str, value: bytes) -> None:
        """Delete `key` only while it holds `value` (compare and delete, one round trip)."""
        await self.link.run(lambda r: r.eval(_UNCLAIM, 1, self.prefix + key, value))
        await self.local.unclaim(key, value)

    # -- publish/subscribe

    async def publish(self, channel: str, message: bytes) -> None:
        """Publish through Redis; during an outage, to this process's subscribers only."""
        sent = await self.link.run(lambda r: r.publish(self._channel_prefix + channel, message))
        if isinstance(sent, Down):
            for subscription in list(self._channels.get(channel, ())):
                subscription.deliver(message)

    async def subscribe(self, channel: str) -> QueuedSubscription:
        """A subscription to `channel`, confirmed by Redis unless an outage is on."""
        subscribers = self._channels.setdefault(channel, set())
        pubsub = await self._open_pubsub(channel)
        reader: asyncio.Task[None] | None = None

        async def stop() -> None:
            subscribers.discard(subscription)
            if reader is not None:
                reader.cancel()
                await asyncio.gather(reader, return_exceptions=True)

        subscription = QueuedSubscription(DEFAULT_QUEUE_SIZE, stop)
        subscribers.add(subscription)
        reader = asyncio.get_running_loop().create_task(self._read(channel, subscription, pubsub))
        return subscription

    async def _open_pubsub(self, channel: str) -> PubSub | None:
        link = self.link
        if not link.healthy:
            return None
        pubsub = link.client.pubsub()
        try:
            async with asyncio.timeout(link.guard):
                await pubsub.subscribe(self._channel_prefix + channel)
                while True:
                    reply = await pubsub.get_message(timeout=link.guard)
                    if reply is not None and reply.get("type") == "subscribe":
                        return pubsub
        except FAILURES as exc:
            link.fail(exc)
            await _close_pubsub(pubsub)
            return None

    async def _read(
        self, channel: str, subscription: QueuedSubscription, pubsub: PubSub | None
    ) -> None:
        while not subscription.closed:
            if pubsub is None:
                await self.link.wait_up()
                pubsub = await self._open_pubsub(channel)
                continue
            try:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=None)
            except FAILURES as exc:
                self.link.fail(exc)
                await _close_pubsub(pubsub)
                pubsub = None
                continue
            except asyncio.CancelledError:
                await _close_pubsub(pubsub)
                raise
            if message is not None and message.get("type") == "message":
                subscription.deliver(bytes(message["data"]))

    # -- lifecycle

    async def close(self) -> None:
        """Stop probing, end every subscription, close the connections. Idempotent."""
        if self.link.closed:
            return
        await self.link.stop()
        for subscribers in list(self._channels.values()):
            for subscription in list(subscribers):
                await subscription.aclose()
        self._channels.clear()
        await self.link.close()
        await self.local.close()


def _milliseconds(seconds: float) -> int:
    return max(1, math.ceil(seconds * 1000))


async def _close_pubsub(pubsub: PubSub) -> None:
    await quietly(pubsub.aclose())  # type: ignore[no-untyped-call, unused-ignore]  # untyped before redis-py 8
