"""The Redis connection behind `RedisState` and its outages (the rules are in
`turnout.state.redis`: a failing Redis never fails a call, an outage is opened once and closed by
its own pings, readiness pings are paced).

`RedisLink.run` is the one way a Redis operation is made: it answers `DOWN` instead of raising
when Redis is not asked (an outage is on, or the link is closed) or does not answer in time, and a
failure opens the outage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import urlsplit, urlunsplit

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from turnout.routing.clock import Clock

__all__ = ["DOWN", "FAILURES", "Down", "RedisLink", "quietly", "redacted_url"]

# The outage lines are the shared state's own, whichever piece of it notices.
logger = logging.getLogger("turnout.state.redis")

T = TypeVar("T")
FAILURES = (RedisError, OSError, TimeoutError)
"""What a Redis operation raises when Redis is gone, slow or refuses."""


class Down:
    """The sentinel for "Redis was not asked or did not answer"."""


DOWN = Down()


def redacted_url(url: str) -> str:
    """`url` with any password replaced by `***` (safe for logs and `/readyz`)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class RedisLink:
    """A Redis client at `url` and whether Redis is reachable now.

    `timeout` bounds connecting and each reply; `retry_every` is how often an outage is probed;
    a readiness ping's answer is reused for `probe_every` seconds and bounded by `probe_timeout`;
    `clock` paces the pings. `guard` bounds one whole operation. `outages` counts the outages
    opened, `pings` the readiness pings sent.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout: float,
        retry_every: float,
        probe_every: float,
        probe_timeout: float,
        clock: Clock,
    ) -> None:
        self.url = url
        self.clock = clock
        self.guard = max(4 * timeout, 0.5)
        self.outages = 0
        self.pings = 0
        self.reason = ""
        self.closed = False
        self.client = Redis.from_url(
            url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            # One immediate retry on a broken connection only: a pooled connection that died
            # with a server restart is replaced at once, while a timeout is never paid twice.
            retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
        )
        self.database: int = self.client.connection_pool.connection_kwargs.get("db", 0)
        self._retry_every = retry_every
        self._probe_every = probe_every
        self._probe_timeout = probe_timeout
        self._probed_at = -math.inf
        self._probing: asyncio.Task[None] | None = None
        self._down_since: float | None = None
        self._down_at = 0.0
        self._up = asyncio.Event()
        self._up.set()
        self._reconnecting: asyncio.Task[None] | None = None

    @property
    def healthy(self) -> bool:
        """False during an outage."""
        return self._down_since is None

    @property
    def down_since(self) -> float | None:
        """When the outage on now began (epoch seconds), else None."""
        return self._down_since

    def down_seconds(self) -> float:
        """How long the outage on now has lasted."""
        return max(0.0, self.clock.now() - self._down_at)

    async def wait_up(self) -> None:
        """Wait until no outage is on."""
        await self._up.wait()

    async def run(self, op: Callable[[Redis], Awaitable[T]]) -> T | Down:
        """`op`'s answer, or `DOWN` when Redis is not asked or fails (the outage is opened)."""
        if self._down_since is not None or self.closed:
            return DOWN
        try:
            async with asyncio.timeout(self.guard):
                return await op(self.client)
        except FAILURES as exc:
            self.fail(exc)
            return DOWN

    async def check(self) -> bool:
        """Ping Redis now: opens or closes an outage accordingly; returns `healthy`."""
        await self._ping_within(self.guard)
        return self.healthy

    async def probe(self) -> bool:
        """A paced readiness check; returns `healthy`."""
        if self._down_since is not None or self.closed:
            return self.healthy
        if self._probing is None:
            now = self.clock.now()
            if now - self._probed_at < self._probe_every:
                return self.healthy
            self._probed_at = now
            self._probing = asyncio.get_running_loop().create_task(self._readiness_ping())
        # Shielded: a readiness request that goes away does not cancel the others' ping.
        await asyncio.shield(self._probing)
        return self.healthy

    async def _readiness_ping(self) -> None:
        self.pings += 1
        try:
            await self._ping_within(self._probe_timeout)
        finally:
            self._probing = None

    async def _ping_within(self, seconds: float) -> None:
        try:
            async with asyncio.timeout(seconds):
                await self.client.ping()
        except FAILURES as exc:
            self.fail(exc)
        else:
            self._recover()

    def fail(self, exc: BaseException) -> None:
        """Redis failed with `exc`: open an outage (once) and start pinging until it is back."""
        if self.closed or self._down_since is not None:
            return
        self._down_since = self.clock.wall()
        self._down_at = self.clock.now()
        self.reason = f"{type(exc).__name__}: {exc}".rstrip(": ")
        self.outages += 1
        self._up.clear()
        logger.warning(
            "shared state %s unreachable (%s); serving on local state until it recovers",
            redacted_url(self.url),
            self.reason,
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
        while not self.closed and self._down_since is not None:
            await self.clock.sleep(self._retry_every)
            try:
                async with asyncio.timeout(self.guard):
                    await self.client.ping()
            except FAILURES:
                continue
            self._recover()

    async def stop(self) -> None:
        """Ask Redis nothing more: every later operation answers `DOWN`, and pinging stops."""
        self.closed = True
        for task in (self._reconnecting, self._probing):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    async def close(self) -> None:
        """Stop, then close the connections."""
        await self.stop()
        await quietly(self.client.aclose())


async def quietly(closing: Awaitable[object]) -> None:
    """Await `closing`, ignoring Redis being gone."""
    with contextlib.suppress(*FAILURES):
        await closing
