"""One keep-alive HTTP/1.1 connection of `turnout.providers.http1`: the asyncio protocol that
writes a request, feeds the response's bytes to its `ResponseParser` and lets the caller wait
for them.

Rule 1: a connection carries one exchange at a time (`response`, the parser of the response
being read); bytes that come while it carries none close it.
Rule 2: a wait for response bytes is bounded by `read_timeout` of silence (`ReadTimeout`). One
timer serves every wait of the connection: it is not moved for each wait, and when it fires
before the silence is that long it is set again for when it will be.
Rule 3: a stream whose reader lags pauses the socket once `HIGH_WATER` bytes wait unread, and
resumes it when the reader takes them; a whole answer is never paused (its parser bounds it).
Rule 4: a failed response closes the connection at once; so does `close()`, whatever is in
flight. The connection's owner (its pool) hears of each close once (`forget`) and of the socket
being gone (`gone`).
Rule 5: a request the socket refused to write (the server's reset already there) is marked
`write_failed`, so a close before the response head reads as `RequestNotSent`.
"""

from __future__ import annotations

import asyncio
import select
from typing import Protocol, cast

from turnout.providers._http1_message import HIGH_WATER, ResponseParser, idle_limit
from turnout.providers.transport import ReadTimeout

__all__ = ["Connection", "Owner"]

_SMALL_BODY = 64 * 1024
"""Bodies up to this size go out in the same write as the head."""

_EARLY = 0.001
"""A loop timer may fire a hair before its time."""

_HAS_POLL = hasattr(select, "poll")
_GONE = select.POLLIN | select.POLLPRI | getattr(select, "POLLRDHUP", 0) if _HAS_POLL else 0
"""Poll events that make an idle connection unusable (POLLHUP and POLLERR always count)."""


class Owner(Protocol):
    """What a connection tells the pool it belongs to."""

    def release(self, conn: Connection) -> None:
        """The connection's exchange ended."""
        ...

    def forget(self, conn: Connection) -> None:
        """The connection closed (or started closing): its slot is free."""
        ...

    def gone(self, conn: Connection) -> None:
        """The connection's socket is closed."""
        ...


class Connection(asyncio.Protocol):
    """One keep-alive connection of a pool (`pool`), on its event loop (`loop`), waiting at most
    `read_timeout` seconds of silence for response bytes."""

    __slots__ = (
        "_paused",
        "_silence_timer",
        "_silent_since",
        "_waiter",
        "closed",
        "fd",
        "idle_limit",
        "idle_since",
        "loop",
        "lost",
        "pool",
        "read_timeout",
        "registered",
        "response",
        "transport",
        "write_failed",
    )

    def __init__(self, pool: Owner, loop: asyncio.AbstractEventLoop, read_timeout: float) -> None:
        self.pool = pool
        self.loop = loop
        self.read_timeout = read_timeout
        self.transport: asyncio.Transport = None  # type: ignore[assignment] # set on connect
        self.response: ResponseParser | None = None
        self.closed = False
        self.fd = -1
        self.write_failed = False  # Rule 5: the last request's write failed at once
        self.idle_limit: float | None = None  # the server's Keep-Alive hint
        # Counted by the pool once it has the connection; until then, the slot is the opener's.
        self.registered = False
        self.idle_since = 0.0
        self.lost: asyncio.Future[None] = loop.create_future()
        self._waiter: asyncio.Future[bool] | None = None
        self._silent_since = 0.0
        self._silence_timer: asyncio.TimerHandle | None = None
        self._paused = False

    # the protocol --------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport, but have its methods.
        self.transport = cast("asyncio.Transport", transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            self.fd = sock.fileno()

    def data_received(self, data: bytes) -> None:
        response = self.response
        if response is None:
            self.close()  # Rule 1: bytes while idle, the connection's state is unknown
            return
        response.feed(data)
        if response.error is not None:
            self.close()  # Rule 4
        elif response.unread > HIGH_WATER and not response.whole and not self._paused:
            self._paused = True  # Rule 3
            self.transport.pause_reading()
        self._wake(True)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._silence_timer is not None:
            self._silence_timer.cancel()
            self._silence_timer = None
        if not self.closed:
            self.closed = True
            if self.registered:
                self.pool.forget(self)
        self.pool.gone(self)
        if not self.lost.done():
            self.lost.set_result(None)
        response, self.response = self.response, None
        if response is not None:
            response.end(clean=exc is None, request_refused=self.write_failed)
            self._wake(True)

    # one exchange --------------------------------------------------------------------------
    def send(self, head: bytes, body: bytes, limit: int) -> ResponseParser:
        """Write one request and return the parser of its response, whose whole answer holds
        at most `limit` bytes."""
        response = self.response = ResponseParser(limit)
        writer = self.transport
        if len(body) <= _SMALL_BODY:
            writer.write(head + body)
        else:
            writer.write(head)
            writer.write(body)
        # A write the socket refuses (the server's reset already there) closes the transport
        # at once; the loop reports the loss later. Bytes left buffered count as written: a
        # TLS layer's buffers say nothing sure about what reached the server.
        self.write_failed = writer.is_closing()
        return response

    async def wait_head(self, response: ResponseParser) -> None:
        """Wait for `response`'s status line and headers (its failure raised), and take its
        Keep-Alive hint."""
        while response.error is None:
            if response.head_done:
                hint = response.headers.get("keep-alive")
                if hint is not None:
                    self.idle_limit = idle_limit(hint)
                return
            await self.wait()
        raise response.error

    async def read_all(self, response: ResponseParser) -> bytes:
        """The whole remaining body of `response` (its failure raised; `AnswerTooLarge` past its
        limit)."""
        response.read_whole()
        if response.error is not None:
            self.close()
        self.resume()
        while response.error is None:
            if response.done:
                return response.take()
            await self.wait()
        raise response.error

    async def wait(self) -> None:
        """Wait for the next bytes or the end (Rule 2: ReadTimeout after `read_timeout` seconds
        of silence)."""
        loop = self.loop
        waiter = self._waiter = loop.create_future()
        now = self._silent_since = loop.time()
        if self._silence_timer is None:
            self._silence_timer = loop.call_at(now + self.read_timeout, self._silence_due)
        try:
            fresh = await waiter
        finally:
            self._waiter = None
        if not fresh:
            raise ReadTimeout(f"no bytes from the upstream for {self.read_timeout:g} s")

    def resume(self) -> None:
        """Rule 3: the reader took the bytes that waited: read the socket again."""
        if self._paused:
            self._paused = False
            if not self.closed:
                self.transport.resume_reading()

    def _silence_due(self) -> None:
        self._silence_timer = None
        if self._waiter is None:
            return  # nobody waits: the next wait arms the timer again
        due = self._silent_since + self.read_timeout
        if self.loop.time() >= due - _EARLY:
            self._wake(False)
        else:
            self._silence_timer = self.loop.call_at(due, self._silence_due)

    def _wake(self, fresh: bool) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(fresh)

    # the pool's side -----------------------------------------------------------------------
    @property
    def is_usable(self) -> bool:
        """True while the connection may carry another request."""
        return not self.closed and not self.transport.is_closing()

    def is_alive(self) -> bool:
        """No FIN, reset or byte waits on the socket (one poll, no wait)."""
        if self.fd < 0:
            return True
        if not _HAS_POLL:  # Windows: select works on sockets
            readable, _, broken = select.select([self.fd], [], [self.fd], 0)
            return not (readable or broken)
        poller = select.poll()
        poller.register(self.fd, _GONE)
        return not poller.poll(0)

    def close(self) -> None:
        """Close now, whatever is in flight (idempotent)."""
        if not self.closed:
            self.closed = True
            if self.registered:
                self.pool.forget(self)
            self.transport.abort()
