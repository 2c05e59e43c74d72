"""The keep-alive connections of one `Http1Transport` to one origin, on one event loop.

Rule 1: at most `limit` connections are open or being opened; a caller past it waits for the
next connection freed (handed over as it is released) or the next slot freed (by a close).
Rule 2: waiting for a connection and opening it (TLS included) is bounded by `connect_timeout`
(`ConnectTimeout`).
Rule 3: a connection goes back to the pool only when it is usable; idle, it is closed after
`keepalive` seconds (or its server's Keep-Alive hint), by one sweeping timer.
Rule 4: a pooled connection idle for `LIVENESS_AFTER` seconds or more is looked at before reuse:
one on which the server's FIN, a reset or any byte already waits is closed, not used.
Rule 5: a socket error that says this machine ran out of something (descriptors, memory, ports)
is a `LocalFailure`, never the provider's fault.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
from collections import deque
from typing import TYPE_CHECKING

from turnout.providers._http1_connection import Connection
from turnout.providers.transport import (
    ConnectFailed,
    ConnectTimeout,
    LocalFailure,
    TransportFailure,
    UpstreamClosed,
)

if TYPE_CHECKING:
    import ssl

    from turnout.providers._http1_message import Origin

__all__ = ["LIVENESS_AFTER", "Pool"]

LIVENESS_AFTER = 0.1
"""Seconds idle after which a pooled connection's socket is polled before reuse (Rule 4).
Servers close idle connections after seconds, not milliseconds; a connection reused sooner is
not polled, so a busy pool makes no extra system call."""

_LOCAL_ERRNOS = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.EADDRNOTAVAIL}
)
"""Socket errors that say this machine ran out of something (descriptors, memory, ports)."""


class Pool:
    """The keep-alive connections of one transport to one `origin`, on the running event loop.

    `limit` caps its connections (Rule 1); `connect_timeout` bounds getting one (Rule 2);
    `keepalive` is how long one is kept idle (Rule 3); `read_timeout` bounds each silence on
    each of them; `ssl_context` is for https origins (None for http).
    """

    def __init__(
        self,
        origin: Origin,
        *,
        limit: int,
        keepalive: float,
        connect_timeout: float,
        read_timeout: float,
        ssl_context: ssl.SSLContext | None,
    ) -> None:
        self.origin = origin
        self.loop = asyncio.get_running_loop()
        self._limit = limit
        self._keepalive = keepalive
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._ssl = ssl_context
        self._idle: list[Connection] = []  # most recently used last
        self._all: set[Connection] = set()
        self._open = 0  # connections open or being opened
        self._waiters: deque[asyncio.Future[Connection | None]] = deque()
        self._sweeper: asyncio.TimerHandle | None = None

    async def acquire(self) -> Connection:
        """A connection for one exchange: a pooled one, a new one, or the next one freed."""
        idle = self._idle
        while idle:
            conn = idle.pop()
            limit = self._keepalive if conn.idle_limit is None else conn.idle_limit
            idled = self.loop.time() - conn.idle_since
            if conn.is_usable and idled < limit and (idled < LIVENESS_AFTER or conn.is_alive()):
                return conn
            conn.close()
        return await self.acquire_new()

    async def acquire_new(self) -> Connection:
        """A connection that is not one of the idle ones (a new one, or one freed by a caller
        while this one waits), within the connect timeout."""
        try:
            async with asyncio.timeout(self._connect_timeout):
                return await self._acquire_slow()
        except TimeoutError as exc:
            if isinstance(exc, TransportFailure):
                raise
            host, port = self.origin[1], self.origin[2]
            raise ConnectTimeout(
                f"no connection to {host}:{port} within {self._connect_timeout:g} s"
            ) from None

    async def _acquire_slow(self) -> Connection:
        while True:
            if self._open < self._limit:
                self._open += 1
                break
            handed = await self._wait_turn()
            if handed is None:
                break  # a slot was freed for us
            if handed.is_usable:
                return handed
            handed.close()
        try:
            return await self._connect()
        except BaseException:
            self._open -= 1
            self._hand_slot()
            raise

    async def _wait_turn(self) -> Connection | None:
        waiter: asyncio.Future[Connection | None] = self.loop.create_future()
        self._waiters.append(waiter)
        try:
            return await waiter
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                handed = waiter.result()  # handed over just as we gave up: pass it on
                if handed is None:
                    self._open -= 1
                    self._hand_slot()
                else:
                    self.release(handed)
            raise

    async def _connect(self) -> Connection:
        scheme, host, port = self.origin
        secure = scheme == "https"
        loop, read_timeout = self.loop, self._read_timeout
        try:
            _, conn = await loop.create_connection(
                lambda: Connection(self, loop, read_timeout),
                host,
                port,
                ssl=self._ssl if secure else None,
                server_hostname=host if secure else None,
                ssl_handshake_timeout=self._connect_timeout if secure else None,
            )
        except TimeoutError as exc:
            raise ConnectTimeout(f"no connection to {host}:{port}: {exc}") from None
        except OSError as exc:
            if exc.errno in _LOCAL_ERRNOS:
                raise LocalFailure(f"cannot open a connection here: {exc}") from exc
            raise ConnectFailed(f"cannot connect: {exc}") from None
        if conn.closed:  # closed as it opened: the opener still holds the slot
            raise UpstreamClosed(f"{host}:{port} closed the connection as it opened")
        conn.registered = True
        self._all.add(conn)
        return conn

    def release(self, conn: Connection) -> None:
        """Take back a connection whose exchange ended; keep it only when it is usable."""
        conn.response = None
        if not conn.is_usable:
            conn.close()
            return
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(conn)
                return
        conn.idle_since = self.loop.time()
        self._idle.append(conn)
        if self._sweeper is None:
            self._sweeper = self.loop.call_at(conn.idle_since + self._keepalive, self._sweep)

    def forget(self, conn: Connection) -> None:
        """A connection closed (or started closing): its slot goes to the next waiter."""
        if conn in self._idle:
            self._idle.remove(conn)
        self._open -= 1
        self._hand_slot()

    def gone(self, conn: Connection) -> None:
        """A connection's socket is closed."""
        self._all.discard(conn)

    def _hand_slot(self) -> None:
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                self._open += 1
                waiter.set_result(None)
                return

    def _sweep(self) -> None:
        """Close the connections idle for `keepalive` seconds; re-arm while others wait."""
        self._sweeper = None
        deadline = self.loop.time() - self._keepalive
        idle = self._idle
        while idle and idle[0].idle_since <= deadline:
            idle.pop(0).close()
        if idle:
            self._sweeper = self.loop.call_at(idle[0].idle_since + self._keepalive, self._sweep)

    def close(self) -> list[asyncio.Future[None]]:
        """Close every connection (idle or busy); the futures resolve once they are gone."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        self._idle.clear()
        conns = list(self._all)  # open and still closing
        for conn in conns:
            conn.close()
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(ConnectFailed("cannot connect: the transport was closed"))
        return [conn.lost for conn in conns]

    def abandon(self) -> None:
        """Close every connection of a pool whose event loop is not this one's (best effort)."""
        for conn in list(self._all):
            with contextlib.suppress(Exception):
                conn.close()
