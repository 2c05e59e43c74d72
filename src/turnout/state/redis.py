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
import contextlib
import logging
import math
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from turnout.routing.clock import Clock, LoopClock
from turnout.state.base import check_ttl
from turnout.state.memory import DEFAULT_QUEUE_SIZE, MemoryState, QueuedSubscription

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from redis.asyncio.client import PubSub

__all__ = ["RedisState", "redacted_url"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
_FAILURES = (RedisError, OSError, TimeoutError)
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


class _Down:
    """The sentinel for "Redis was not asked or did not answer"."""


_DOWN = _Down()


def redacted_url(url: str) -> str:
    """`url` with any password replaced by `***` (safe for logs and `/readyz`)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class RedisState:
    """Shared state in Redis at `url` (`redis://host:port/db`, `rediss://` for TLS).

    `prefix` (default `turnout:`) namespaces every key and channel; `timeout` (seconds, default
    0.25) bounds connecting and each reply; `retry_every` (seconds, default 1.0) is how often
    an outage is probed; `probe_every` (seconds, default 1.0) is how long a readiness ping's
    answer is reused and `probe_timeout` (seconds, default 0.5) bounds it; `clock` paces those
    probes (default: the loop clock); `local` is the fallback store (default: a new
    `MemoryState` on the same clock).
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
        self.outages = 0
        self._timeout = timeout
        self._guard = max(4 * timeout, 0.5)
        self._retry_every = retry_every
        self._probe_every = probe_every
        self._probe_timeout = probe_timeout
        self._probed_at = -math.inf
        self._probing: asyncio.Task[None] | None = None
        self.pings = 0  # readiness pings sent (Rule 6)
        self._client = Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            # One immediate retry on a broken connection only: a pooled connection that died
            # with a server restart is replaced at once, while a timeout is never paid twice.
            retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
        )
        database = self._client.connection_pool.connection_kwargs.get("db", 0)
        self._channel_prefix = f"{prefix}db{database}:"
        self._down_since: float | None = None
        self._down_at = 0.0
        self._reason = ""
        self._up = asyncio.Event()
        self._up.set()
        self._reconnecting: asyncio.Task[None] | None = None
        self._channels: dict[str, set[QueuedSubscription]] = {}
        self._closed = False

    def __repr__(self) -> str:
        return f"RedisState({redacted_url(self.url)!r}, prefix={self.prefix!r})"

    # -- status

    @property
    def healthy(self) -> bool:
        """False during an outage, while serving on local state."""
        return self._down_since is None

    def describe(self) -> dict[str, Any]:
        """`backend`, `url` (password redacted), `prefix`, `healthy`, `detail`, and during an
        outage `down_since` (epoch seconds) and `down_seconds`."""
        status: dict[str, Any] = {
            "backend": "redis",
            "url": redacted_url(self.url),
            "prefix": self.prefix,
            "healthy": self.healthy,
            "outages": self.outages,
        }
        if self._down_since is None:
            status["detail"] = "shared state reachable"
            return status
        status["detail"] = f"unreachable ({self._reason}); serving on local state"
        status["down_since"] = self._down_since
        status["down_seconds"] = max(0.0, self.clock.now() - self._down_at)
        return status

    async def check(self) -> bool:
        """Ping Redis now: opens or closes an outage accordingly; returns `healthy`."""
        try:
            async with asyncio.timeout(self._guard):
                await self._client.ping()
        except _FAILURES as exc:
            self._fail(exc)
        else:
            self._recover()
        return self.healthy

    async def probe(self) -> bool:
        """Rule 6: a readiness check; returns `healthy`."""
        if self._down_since is not None or self._closed:
            return self.healthy
        if self._probing is None:
            now = self.clock.now()
            if now - self._probed_at < self._probe_every:
                return self.healthy
            self._probed_at = now
            self._probing = asyncio.get_running_loop().create_task(self._ping())
        # Shielded: a readiness request that goes away does not cancel the others' ping.
        await asyncio.shield(self._probing)
        return self.healthy

    async def _ping(self) -> None:
        self.pings += 1
        try:
            async with asyncio.timeout(self._probe_timeout):
                await self._client.ping()
        except _FAILURES as exc:
            self._fail(exc)
        else:
            self._recover()
        finally:
            self._probing = None

    # -- key/value

    async def get(self, key: str) -> bytes | None:
        """The value under `key` (from Redis; from local state during an outage)."""
        value = await self._shared(lambda r: r.get(self.prefix + key))
        if isinstance(value, _Down):
            return await self.local.get(key)
        if isinstance(value, str):  # only with decode_responses, which this client never sets
            return value.encode()
        return value

    async def set(self, key: str, value: bytes, ttl: float) -> None:
        """Store `value` under `key` for `ttl` seconds (Redis and the local mirror)."""
        ms = _milliseconds(check_ttl(ttl))
        await self._shared(lambda r: r.set(self.prefix + key, value, px=ms))
        await self.local.set(key, value, ttl)

    async def delete(self, key: str) -> None:
        """Remove `key` from Redis and the local mirror."""
        await self._shared(lambda r: r.delete(self.prefix + key))
        await self.local.delete(key)

    async def touch(self, key: str, ttl: float) -> bool:
        """Make `key` expire `ttl` seconds from now; False when absent."""
        ms = _milliseconds(check_ttl(ttl))
        found = await self._shared(lambda r: r.pexpire(self.prefix + key, ms))
        local = await self.local.touch(key, ttl)
        return local if isinstance(found, _Down) else bool(found)

    async def scan(self, prefix: str, *, limit: int = 1000) -> list[str]:
        """Up to `limit` live keys starting with `prefix` (Redis `SCAN`, a few round trips)."""
        keys = await self._shared(lambda r: self._scan(r, prefix, limit))
        if isinstance(keys, _Down):
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
        left = await self._shared(lambda r: r.eval(_CLAIM, 1, self.prefix + key, value, ms))
        if isinstance(left, _Down):
            return await self.local.claim(key, value, ttl)
        return max(0.0, int(left) / 1000)

    async def unclaim(self, key: str, value: bytes) -> None:
        """Delete `key` only while it holds `value` (compare and delete, one round trip)."""
        await self._shared(lambda r: r.eval(_UNCLAIM, 1, self.prefix + key, value))
        await self.local.unclaim(key, value)

    # -- publish/subscribe

    async def publish(self, channel: str, message: bytes) -> None:
        """Publish through Redis; during an outage, to this process's subscribers only."""
        sent = await self._shared(lambda r: r.publish(self._channel_prefix + channel, message))
        if isinstance(sent, _Down):
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
        if self._down_since is not None:
            return None
        pubsub = self._client.pubsub()
        try:
            async with asyncio.timeout(self._guard):
                await pubsub.subscribe(self._channel_prefix + channel)
                while True:
                    reply = await pubsub.get_message(timeout=self._guard)
                    if reply is not None and reply.get("type") == "subscribe":
                        return pubsub
        except _FAILURES as exc:
            self._fail(exc)
            await _close_pubsub(pubsub)
            return None

    async def _read(
        self, channel: str, subscription: QueuedSubscription, pubsub: PubSub | None
    ) -> None:
        while not subscription.closed:
            if pubsub is None:
                await self._up.wait()
                pubsub = await self._open_pubsub(channel)
                continue
            try:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=None)
            except _FAILURES as exc:
                self._fail(exc)
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
        if self._closed:
            return
        self._closed = True
        for task in (self._reconnecting, self._probing):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        for subscribers in list(self._channels.values()):
            for subscription in list(subscribers):
                await subscription.aclose()
        self._channels.clear()
        await _quietly(self._client.aclose())
        await self.local.close()

    # -- outages

    async def _shared(self, op: Callable[[Redis], Awaitable[T]]) -> T | _Down:
        if self._down_since is not None or self._closed:
            return _DOWN
        try:
            async with asyncio.timeout(self._guard):
                return await op(self._client)
        except _FAILURES as exc:
            self._fail(exc)
            return _DOWN

    def _fail(self, exc: BaseException) -> None:
        if self._closed or self._down_since is not None:
            return
        self._down_since = self.clock.wall()
        self._down_at = self.clock.now()
        self._reason = f"{type(exc).__name__}: {exc}".rstrip(": ")
        self.outages += 1
        self._up.clear()
        logger.warning(
            "shared state %s unreachable (%s); serving on local state until it recovers",
            redacted_url(self.url),
            self._reason,
        )
        if self._reconnecting is None or self._reconnecting.done():
            self._reconnecting = asyncio.get_running_loop().create_task(self._reconnect())

    def _recover(self) -> None:
        if self._down_since is None:
            return
        seconds = self.clock.now() - self._down_at
        self._down_since = None
        self._up.set()
        logger.info(
            "shared state %s recovered after %.1f s; serving on shared state again",
            redacted_url(self.url),
            seconds,
        )

    async def _reconnect(self) -> None:
        while not self._closed and self._down_since is not None:
            await self.clock.sleep(self._retry_every)
            try:
                async with asyncio.timeout(self._guard):
                    await self._client.ping()
            except _FAILURES:
                continue
            self._recover()


def _milliseconds(seconds: float) -> int:
    return max(1, math.ceil(seconds * 1000))


async def _close_pubsub(pubsub: PubSub) -> None:
    await _quietly(pubsub.aclose())  # type: ignore[no-untyped-call]  # redis-py leaves it untyped


async def _quietly(closing: Awaitable[object]) -> None:
    with contextlib.suppress(*_FAILURES):
        await closing
