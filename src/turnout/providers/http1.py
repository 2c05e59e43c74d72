"""A lean keep-alive HTTP/1.1 client for the providers, on an asyncio protocol and `httptools`.

A provider only POSTs JSON and reads JSON or an event stream back, so the client does only that:
one write per request, one `httptools` parser per response, bytes handed over as they arrive.
bench/client.py measures it beside aiohttp and httpx against the mock upstream.

Rule 1: pools belong to the event loop that first used the transport; used from another loop,
the transport drops them and starts new pools there (close each with `aclose()` before its loop
ends).
Rule 2: a connection carries one exchange at a time. It goes back to its pool only when its
response was read to the end, the server allowed keep-alive, and no byte arrived out of turn;
anything else closes it. A pooled connection the server closed, or idle for `keepalive` seconds,
is never reused. At most `max_connections` connections per origin: callers wait for a free one.
Rule 3: every wait is bounded: waiting for a connection and opening it (TLS included) by
`HttpTimeouts.connect`, each silence while waiting for response bytes by `HttpTimeouts.read`.
Rule 4: failures are raised as the `transport` module's `TransportFailure`s and mapped to
`ProviderError` by `transport.error_for_exception`; a cancellation propagates untouched and closes
the connection of the response it interrupted. Anything that fails here before the request is
written, for this machine's reasons (no file descriptors or ports left, a bug), is a
`LocalFailure`: never the provider's fault.
Rule 5: a slow reader of `chunks()` pauses the socket once `HIGH_WATER` bytes wait unread, and
resumes it when it takes them.
Rule 6: no compression is asked for; a body the server compresses anyway (gzip, deflate) is
decoded, and its headers are kept as sent. A whole answer holds at most `max_response_bytes`
once decoded (`_http1_message` Rule 5).
Rule 7: a request is sent once more, on a new connection, only when it never left: the socket
refused its write (the server's reset was already there). A pooled connection idle for
`LIVENESS_AFTER` seconds or more is looked at before reuse: one on which the server's FIN, a
reset or any byte already waits is closed, not used. A request written whole is never sent
again, however soon its connection closes unanswered: the server may have read it and begun a
billable call. A server's `Keep-Alive: timeout=N` header shortens how long its connections are
kept idle, to N - 1 s.
Nothing else is ever resent (Rule 2 of `transport`: the route is the only retry authority).

The bytes of one exchange (request head, response parsing) live in `_http1_message`; this
module holds the connections, their pools and the transport, and `default_transport`, the client
a provider gets when it is given none.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import select
import ssl
from collections import deque
from typing import TYPE_CHECKING, cast

from turnout.providers._http1_message import (
    HIGH_WATER,
    Origin,
    ParsedURL,
    RequestNotSent,
    Response,
    head_with,
    header_block,
    parse_url,
)
from turnout.providers.transport import (
    DEFAULT_MAX_RESPONSE_BYTES,
    ConnectFailed,
    ConnectTimeout,
    HttpReply,
    HttpTimeouts,
    LocalFailure,
    Transport,
    TransportFailure,
    UpstreamClosed,
    error_for_exception,
)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import TracebackType

__all__ = ["HIGH_WATER", "LIVENESS_AFTER", "Http1Transport", "default_transport"]

_SMALL_BODY = 64 * 1024
"""Bodies up to this size go out in the same write as the head."""

LIVENESS_AFTER = 0.1
"""Seconds idle after which a pooled connection's socket is polled before reuse (Rule 7).
Servers close idle connections after seconds, not milliseconds; a connection reused sooner is
not polled, so a busy pool makes no extra system call."""

_EARLY = 0.001
"""A loop timer may fire a hair before its time."""

_LOCAL_ERRNOS = frozenset(
    {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.EADDRNOTAVAIL}
)
"""Socket errors that say this machine ran out of something (descriptors, memory, ports)."""

_HAS_POLL = hasattr(select, "poll")
_GONE = select.POLLIN | select.POLLPRI | getattr(select, "POLLRDHUP", 0) if _HAS_POLL else 0
"""Poll events that make an idle connection unusable (POLLHUP and POLLERR always count)."""


class _Connection(asyncio.Protocol):
    """One keep-alive connection of a pool."""

    __slots__ = (
        "closed",
        "fd",
        "idle_limit",
        "idle_since",
        "loop",
        "lost",
        "pool",
        "registered",
        "response",
        "reusable",
        "silence_timer",
        "silent_since",
        "transport",
        "waiting",
        "write_failed",
    )

    def __init__(self, pool: _Pool) -> None:
        self.pool = pool
        self.loop = pool.loop
        self.transport: asyncio.Transport = None  # type: ignore[assignment] # set on connect
        self.response: Response | None = None
        self.reusable = True
        self.closed = False
        self.fd = -1
        self.write_failed = False  # Rule 7: the last request's write failed at once
        self.idle_limit: float | None = None  # the server's Keep-Alive hint (Rule 7)
        # Counted by the pool once `_connect` has it; until then, the slot is the opener's.
        self.registered = False
        self.idle_since = 0.0
        self.lost: asyncio.Future[None] = self.loop.create_future()
        # Rule 3's read timeout: one timer per connection, re-armed only when it fires early.
        self.waiting: Response | None = None
        self.silent_since = 0.0
        self.silence_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport, but have its methods.
        self.transport = cast("asyncio.Transport", transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            self.fd = sock.fileno()

    def data_received(self, data: bytes) -> None:
        response = self.response
        if response is None:
            self.close()  # bytes while idle: the connection's state is unknown
        else:
            response.feed(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.silence_timer is not None:
            self.silence_timer.cancel()
            self.silence_timer = None
        if not self.closed:
            self.closed = True
            if self.registered:
                self.pool.forget(self)
        self.pool.gone(self)
        if not self.lost.done():
            self.lost.set_result(None)
        response, self.response = self.response, None
        if response is not None:
            response.end(exc)

    def send(self, head: bytes, body: bytes, transport: Http1Transport) -> Response:
        """Write one request and return its response (being read)."""
        response = self.response = Response(
            self, transport.timeouts.read, transport.provider, transport.max_response_bytes
        )
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

    def watch(self, response: Response, timeout: float) -> None:
        """`response` waits for bytes from now on: tell it if none come for `timeout`
        seconds (Rule 3). The timer is not moved for each wait: when it fires before the
        silence is that long, it is set again for when it will be."""
        self.waiting = response
        now = self.silent_since = self.loop.time()
        if self.silence_timer is None:
            self.silence_timer = self.loop.call_at(now + timeout, self._silence_due, timeout)

    def _silence_due(self, timeout: float) -> None:
        self.silence_timer = None
        response = self.waiting
        if response is None:
            return  # nobody waits: the next wait arms the timer again
        due = self.silent_since + timeout
        if self.loop.time() >= due - _EARLY:
            response.silent()
        else:
            self.silence_timer = self.loop.call_at(due, self._silence_due, timeout)

    @property
    def is_usable(self) -> bool:
        """True while the connection may carry another request."""
        return self.reusable and not self.closed and not self.transport.is_closing()

    def is_alive(self) -> bool:
        """Rule 7: no FIN, reset or byte waits on the socket (one poll, no wait)."""
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


class _Pool:
    """The keep-alive connections of one transport to one origin, on one event loop."""

    def __init__(
        self,
        origin: Origin,
        *,
        limit: int,
        keepalive: float,
        connect_timeout: float,
        ssl_context: ssl.SSLContext | None,
    ) -> None:
        self.origin = origin
        self.loop = asyncio.get_running_loop()
        self._limit = limit
        self._keepalive = keepalive
        self._connect_timeout = connect_timeout
        self._ssl = ssl_context
        self._idle: list[_Connection] = []  # most recently used last
        self._all: set[_Connection] = set()
        self._open = 0  # connections open or being opened
        self._waiters: deque[asyncio.Future[_Connection | None]] = deque()
        self._sweeper: asyncio.TimerHandle | None = None

    async def acquire(self) -> _Connection:
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

    async def acquire_new(self) -> _Connection:
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

    async def _acquire_slow(self) -> _Connection:
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

    async def _wait_turn(self) -> _Connection | None:
        waiter: asyncio.Future[_Connection | None] = self.loop.create_future()
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

    async def _connect(self) -> _Connection:
        scheme, host, port = self.origin
        secure = scheme == "https"
        try:
            _, conn = await self.loop.create_connection(
                lambda: _Connection(self),
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

    def release(self, conn: _Connection) -> None:
        """Take back a connection whose exchange ended; keep it only when it is reusable."""
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

    def forget(self, conn: _Connection) -> None:
        """A connection closed (or started closing): its slot goes to the next waiter."""
        if conn in self._idle:
            self._idle.remove(conn)
        self._open -= 1
        self._hand_slot()

    def gone(self, conn: _Connection) -> None:
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


class _StreamedPost(contextlib.AbstractAsyncContextManager["Response"]):
    """One streamed POST (`Http1Transport.stream`): sent on entry; its connection released or
    closed on exit."""

    __slots__ = ("_body", "_conn", "_headers", "_response", "_transport", "_url")

    def __init__(
        self, transport: Http1Transport, url: str, body: bytes, headers: Mapping[str, str]
    ) -> None:
        self._transport = transport
        self._url = url
        self._body = body
        self._headers = headers
        self._conn: _Connection | None = None
        self._response: Response | None = None

    async def __aenter__(self) -> Response:
        transport = self._transport
        try:
            self._conn, self._response = await transport.send(self._url, self._body, self._headers)
        except (TransportFailure, OSError) as exc:
            self._close()
            raise error_for_exception(exc, provider=transport.provider) from exc
        except BaseException:
            self._close()
            raise
        assert self._response is not None
        return self._response

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        conn, response = self._conn, self._response
        if conn is None or response is None:
            return
        if response.is_consumed and response.keep_alive:
            conn.pool.release(conn)
        else:
            conn.close()  # Rule 2: a response not read to its end closes its connection

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()


class Http1Transport:
    """A `Transport` speaking HTTP/1.1 over pooled keep-alive connections, for one provider.

    `provider` names it in errors; `timeouts` (default `HttpTimeouts()`: 10 s connect, 600 s read)
    bound opening a connection and each silence while reading; `max_connections` (default 100)
    caps the connections to each origin (scheme, host, port); idle connections are closed after
    `keepalive` seconds (default 30); a whole answer larger than `max_response_bytes` (default
    32 MiB, after decompression) fails as `provider_error`. https uses `ssl_context` (default:
    the system's trusted certificates via `ssl.create_default_context()`) with SNI.
    """

    def __init__(
        self,
        *,
        provider: str,
        timeouts: HttpTimeouts | None = None,
        max_connections: int = 100,
        keepalive: float = 30.0,
        ssl_context: ssl.SSLContext | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    ) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        if max_response_bytes < 1:
            raise ValueError("max_response_bytes must be at least 1")
        if not keepalive > 0:
            raise ValueError("keepalive must be a positive number of seconds")
        self.provider = provider
        self.timeouts = timeouts if timeouts is not None else HttpTimeouts()
        self._max_connections = max_connections
        self.max_response_bytes = max_response_bytes
        self._keepalive = keepalive
        self._ssl = ssl_context
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pools: dict[Origin, _Pool] = {}
        self._parsed_urls: dict[str, ParsedURL] = {}
        # The encoded header lines of the last header set sent: most calls send the same (the
        # provider's own). One set only, so no caller's own credential is kept past its turn.
        self._block_of: tuple[tuple[str, str], ...] = ()
        self._block = b""

    def _pool_for(self, origin: Origin) -> _Pool:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            _abandon(self._pools, self._loop)
            self._pools = {}
            self._loop = loop
        pool = self._pools.get(origin)
        if pool is None:
            secure = origin[0] == "https"
            if secure and self._ssl is None:
                self._ssl = ssl.create_default_context()
            pool = self._pools[origin] = _Pool(
                origin,
                limit=self._max_connections,
                keepalive=self._keepalive,
                connect_timeout=self.timeouts.connect,
                ssl_context=self._ssl if secure else None,
            )
        return pool

    def _parsed(self, url: str) -> ParsedURL:
        parsed = self._parsed_urls.get(url)
        if parsed is None:
            parsed = parse_url(url)
            if len(self._parsed_urls) >= 1024:
                self._parsed_urls.clear()
            self._parsed_urls[url] = parsed
        return parsed

    def _lines(self, headers: Mapping[str, str]) -> bytes:
        key = tuple(headers.items())
        if key != self._block_of:
            self._block = header_block(headers)  # raises before the set is remembered
            self._block_of = key
        return self._block

    async def send(
        self, url: str, body: bytes, headers: Mapping[str, str], *, method: str = "POST"
    ) -> tuple[_Connection, Response]:
        """Write the request on a pooled connection and wait for the response's head
        (TransportFailure on a failure); once more on a new connection when the first never
        left (Rule 7). The connection is closed on any failure."""
        try:
            parsed = self._parsed(url)
            prefix = parsed.prefix
            if method != "POST":
                prefix = method.encode("ascii") + prefix[len(b"POST") :]
            head = head_with(prefix, len(body), self._lines(headers))
            pool = self._pool_for(parsed.origin)
            conn = await pool.acquire()
        except TransportFailure:
            raise
        except Exception as exc:
            raise LocalFailure(f"{type(exc).__name__} before the request was sent") from exc
        for again in (False, True):
            response = conn.send(head, body, self)
            try:
                await response.wait_head()
            except RequestNotSent:
                conn.close()
                if again:
                    raise
                conn = await pool.acquire_new()
                continue
            except BaseException:
                conn.close()
                raise
            break
        return conn, response

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> HttpReply:
        """POST `body` and read the whole response; transport failures as ProviderError."""
        return await self.request("POST", url, body, headers)

    async def request(
        self, method: str, url: str, body: bytes, headers: Mapping[str, str]
    ) -> HttpReply:
        """`method` (POST, GET, DELETE) with `body` and read the whole response; transport
        failures as ProviderError."""
        conn: _Connection | None = None
        try:
            conn, response = await self.send(url, body, headers, method=method)
            payload = await response.read_all()
        except (TransportFailure, OSError) as exc:
            if conn is not None:
                conn.close()
            raise error_for_exception(exc, provider=self.provider) from exc
        except BaseException:
            if conn is not None:
                conn.close()  # Rule 4: an interrupted exchange never returns to the pool
            raise
        if response.keep_alive:
            conn.pool.release(conn)
        else:
            conn.close()
        return HttpReply(response.status, response.headers, payload)

    def stream(
        self, url: str, body: bytes, headers: Mapping[str, str]
    ) -> contextlib.AbstractAsyncContextManager[Response]:
        """POST `body` and yield the response as it arrives (released on exit)."""
        return _StreamedPost(self, url, body, headers)

    async def aclose(self) -> None:
        """Close every connection (the transport opens new ones if used again)."""
        pools, self._pools = self._pools, {}
        lost = [future for pool in pools.values() for future in pool.close()]
        if lost:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):
                    await asyncio.gather(*lost)


def default_transport(
    *,
    provider: str,
    timeouts: HttpTimeouts | None = None,
    max_connections: int = 100,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
) -> Transport:
    """The providers' transport when none is given: an `Http1Transport` named `provider` (in
    its errors), with `timeouts` (default `HttpTimeouts()`), at most `max_connections`
    (default 100) connections to each origin and answers of at most `max_response_bytes`
    (default 32 MiB); idle connections are kept 30 s."""
    return Http1Transport(
        provider=provider,
        timeouts=timeouts,
        max_connections=max_connections,
        max_response_bytes=max_response_bytes,
    )


def _abandon(pools: dict[Origin, _Pool], loop: asyncio.AbstractEventLoop | None) -> None:
    """Rule 1: drop the pools of another event loop, closing their sockets without running it."""
    if not pools or loop is None:
        return

    def close_all() -> None:
        for pool in pools.values():
            pool.abandon()

    if loop.is_running() and not loop.is_closed():
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(close_all)
            return
    close_all()
