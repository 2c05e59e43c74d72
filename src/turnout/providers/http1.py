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
`Timeouts.connect`, each silence while waiting for response bytes by `Timeouts.read`.
Rule 4: failures are raised as the `transport` module's `TransportFailure`s and mapped to
`ProviderError` by `transport.error_for_exception`; a cancellation propagates untouched and closes
the connection of the response it interrupted.
Rule 5: a slow reader of `chunks()` pauses the socket once `HIGH_WATER` bytes wait unread, and
resumes it when it takes them.
Rule 6: no compression is asked for; a body the server compresses anyway (gzip, deflate) is
decoded, and its headers are kept as sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import zlib
from collections import deque
from typing import TYPE_CHECKING, NamedTuple, TypeAlias, cast
from urllib.parse import quote, urlsplit

import httptools

from turnout.providers.transport import (
    BodyCutShort,
    ConnectFailed,
    ConnectTimeout,
    HttpReply,
    InvalidHeader,
    InvalidURL,
    ReadTimeout,
    Timeouts,
    TransportFailure,
    UnreadableResponse,
    UpstreamClosed,
    error_for_exception,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping
    from types import TracebackType

__all__ = ["HIGH_WATER", "Http1Transport"]

HIGH_WATER = 256 * 1024
"""Unread body bytes (per response) above which the socket stops being read."""

_SMALL_BODY = 64 * 1024
"""Bodies up to this size go out in the same write as the head."""

_FRAMING = frozenset({"host", "content-length", "transfer-encoding", "connection"})
"""Headers the client writes itself; the caller's copies are dropped."""

_URL_SAFE = "".join(chr(code) for code in range(0x21, 0x7F))
"""Printable ASCII stays as it is in a request target; anything else is percent-encoded."""

_Origin: TypeAlias = tuple[str, str, int]


class _Target(NamedTuple):
    """Where a URL goes: its origin and the request line with the Host header, encoded once."""

    origin: _Origin
    prefix: bytes


def _target_of(url: str) -> _Target:
    """Parse an absolute http(s) URL (InvalidURL otherwise)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidURL(f"{url!r}: {exc}") from None
    scheme = parts.scheme.lower()
    host = parts.hostname
    if scheme not in ("http", "https") or not host:
        raise InvalidURL(f"{url!r}: expected http:// or https:// and a host")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise InvalidURL(f"{url!r}: {exc}") from None
    default_port = 443 if scheme == "https" else 80
    port = port or default_port
    shown = f"[{host}]" if ":" in host else host
    authority = shown if port == default_port else f"{shown}:{port}"
    path = quote(parts.path or "/", safe=_URL_SAFE)
    if parts.query:
        path += "?" + quote(parts.query, safe=_URL_SAFE)
    prefix = f"POST {path} HTTP/1.1\r\nhost: {authority}\r\n".encode("ascii")
    return _Target((scheme, host, port), prefix)


def _request_head(prefix: bytes, length: int, headers: Mapping[str, str]) -> bytes:
    """The request's head: request line, Host, Content-Length, then the caller's headers."""
    lines = [f"{name}: {value}" for name, value in headers.items() if name.lower() not in _FRAMING]
    text = "\r\n".join(lines)
    breaks = len(lines) - 1 if lines else 0  # the separators' own
    if text.count("\n") != breaks or text.count("\r") != breaks:
        raise _bad_header(headers)
    try:
        encoded = text.encode("latin-1")
    except UnicodeEncodeError:
        raise _bad_header(headers) from None
    if encoded:
        return b"%scontent-length: %d\r\n%s\r\n\r\n" % (prefix, length, encoded)
    return b"%scontent-length: %d\r\n\r\n" % (prefix, length)


def _bad_header(headers: Mapping[str, str]) -> InvalidHeader:
    """The error naming the first header that cannot be sent (its value is never shown)."""
    for name, value in headers.items():
        line = f"{name}{value}"
        if "\r" in line or "\n" in line:
            return InvalidHeader(f"invalid header {name!r}: a name or value holds a line break")
        if not line.isascii():
            try:
                line.encode("latin-1")
            except UnicodeEncodeError:
                return InvalidHeader(
                    f"invalid header {name!r}: a name or value holds a character outside Latin-1"
                )
    return InvalidHeader("invalid header: a header cannot be sent")


class _Inflater:
    """Decodes a gzip or deflate body as it arrives (deflate with or without its zlib header)."""

    __slots__ = ("_decoder", "_deflate", "_fed")

    def __init__(self, encoding: str) -> None:
        self._deflate = encoding == "deflate"
        self._decoder = zlib.decompressobj(zlib.MAX_WBITS if self._deflate else 16 + zlib.MAX_WBITS)
        self._fed = False

    def feed(self, data: bytes) -> bytes:
        try:
            out = self._decoder.decompress(data)
        except zlib.error as exc:
            if not (self._deflate and not self._fed):
                message = f"unreadable response: bad compressed body ({exc})"
                raise UnreadableResponse(message) from None
            self._decoder = zlib.decompressobj(-zlib.MAX_WBITS)  # a raw deflate stream
            return self.feed(data)
        self._fed = True
        return out

    def flush(self) -> bytes:
        return self._decoder.flush()


class _Response:
    """One response being read off a connection: the `StreamReply` the caller sees, and the
    target of the `httptools` parser's callbacks."""

    __slots__ = (
        "_chunks",
        "_conn",
        "_done",
        "_error",
        "_fields",
        "_head_done",
        "_inflater",
        "_informational",
        "_parser",
        "_paused",
        "_pausing",
        "_provider",
        "_read_timeout",
        "_unread",
        "_until_eof",
        "_waiter",
        "headers",
        "keep_alive",
        "status",
    )

    def __init__(self, conn: _Connection, read_timeout: float, provider: str) -> None:
        self.status = 0
        self._fields: dict[str, str] = {}
        self.headers: Mapping[str, str] = self._fields
        self.keep_alive = False
        self._conn = conn
        self._read_timeout = read_timeout
        self._provider = provider
        self._parser = httptools.HttpResponseParser(self)
        self._chunks: list[bytes] = []
        self._unread = 0
        self._head_done = False
        self._done = False
        self._informational = False
        self._until_eof = False
        self._inflater: _Inflater | None = None
        self._error: TransportFailure | None = None
        self._waiter: asyncio.Future[bool] | None = None
        self._pausing = True
        self._paused = False

    # parser callbacks ---------------------------------------------------------------------
    def on_message_begin(self) -> None:
        if self._done:
            self._conn.reusable = False  # a second response nobody asked for

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._head_done:
            return  # a trailer of a chunked body
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        fields = self._fields
        fields[key] = f"{fields[key]}, {text}" if key in fields else text

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if status < 200:
            self._informational = True  # 1xx: skipped, the real head follows
            self._fields.clear()
            return
        self.status = status
        self._head_done = True
        headers = self._fields
        encoding = headers.get("transfer-encoding")
        if (
            (encoding is None or "chunked" not in encoding.lower())
            and "content-length" not in headers
            and status not in (204, 304)
        ):
            self._until_eof = True
        coding = headers.get("content-encoding")
        if coding is not None:
            coding = coding.strip().lower()
            if coding in ("gzip", "x-gzip", "deflate"):
                self._inflater = _Inflater(coding)

    def on_body(self, body: bytes) -> None:
        if self._error is not None:
            return
        if self._inflater is not None:
            try:
                body = self._inflater.feed(body)
            except TransportFailure as exc:
                self._fail(exc)
                return
            if not body:
                return
        self._chunks.append(body)
        self._unread += len(body)
        if self._unread > HIGH_WATER and self._pausing and not self._paused:
            self._paused = True
            self._conn.transport.pause_reading()

    def on_message_complete(self) -> None:
        if self._informational:
            self._informational = False
            return
        if self._done or self._error is not None:
            return
        self.keep_alive = self._parser.should_keep_alive()
        self._finish()

    # fed by the connection ---------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            if self._done:
                self._conn.reusable = False  # bytes after the response: never reuse
            else:
                self._fail(UnreadableResponse(f"unreadable response: {exc}"))
        self._wake(True)

    def end(self, exc: Exception | None) -> None:
        """The connection closed (`exc`: why, None for a clean close)."""
        if self._done or self._error is not None:
            return
        if not self._head_done:
            self._fail(UpstreamClosed("the upstream closed the connection"))
        elif self._until_eof and exc is None:
            self.keep_alive = False
            self._finish()  # a close-delimited body ends here
        else:
            self._fail(BodyCutShort("the response body was cut short"))
        self._wake(True)

    def _finish(self) -> None:
        if self._inflater is not None:
            rest = self._inflater.flush()
            if rest:
                self._chunks.append(rest)
                self._unread += len(rest)
        self._done = True

    def _fail(self, error: TransportFailure) -> None:
        if self._error is None and not self._done:
            self._error = error
            self._conn.close()

    def _wake(self, fresh: bool) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(fresh)

    # the caller's side ---------------------------------------------------------------------
    @property
    def is_consumed(self) -> bool:
        """True when the whole response arrived and the caller took every byte of it."""
        return self._done and not self._chunks

    async def _wait(self) -> None:
        """Wait for the next bytes or the end (ReadTimeout after `read` seconds of silence)."""
        loop = self._conn.loop
        waiter = self._waiter = loop.create_future()
        timer = loop.call_later(self._read_timeout, self._wake, False)
        try:
            fresh = await waiter
        finally:
            timer.cancel()
            self._waiter = None
        if not fresh:
            raise ReadTimeout(f"no bytes from the upstream for {self._read_timeout:g} s")

    async def wait_head(self) -> None:
        """Wait for the status line and headers."""
        while self._error is None:
            if self._head_done:
                return
            await self._wait()
        raise self._error

    async def read_all(self) -> bytes:
        """The whole remaining body (TransportFailure on a failure)."""
        self._pausing = False
        self._resume()
        while self._error is None:
            if self._done:
                return self._take()
            await self._wait()
        raise self._error

    def _take(self) -> bytes:
        chunks = self._chunks
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        self._unread = 0
        return data

    def _resume(self) -> None:
        if self._paused:
            self._paused = False
            if not self._conn.closed:
                self._conn.transport.resume_reading()

    async def read(self) -> bytes:
        """The whole remaining body (for an error status); failures as ProviderError."""
        try:
            return await self.read_all()
        except TransportFailure as exc:
            raise error_for_exception(exc, provider=self._provider) from exc

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive; failures as ProviderError after the bytes before."""
        while True:
            if self._chunks:
                data = self._take()
                self._resume()
                yield data
            elif self._error is not None:
                raise error_for_exception(self._error, provider=self._provider) from self._error
            elif self._done:
                return
            else:
                try:
                    await self._wait()
                except ReadTimeout as exc:
                    raise error_for_exception(exc, provider=self._provider) from exc


class _Connection(asyncio.Protocol):
    """One keep-alive connection of a pool."""

    __slots__ = (
        "closed",
        "idle_since",
        "loop",
        "lost",
        "pool",
        "registered",
        "response",
        "reusable",
        "transport",
    )

    def __init__(self, pool: _Pool) -> None:
        self.pool = pool
        self.loop = pool.loop
        self.transport: asyncio.Transport = None  # type: ignore[assignment] # set on connect
        self.response: _Response | None = None
        self.reusable = True
        self.closed = False
        # Counted by the pool once `_connect` has it; until then, the slot is the opener's.
        self.registered = False
        self.idle_since = 0.0
        self.lost: asyncio.Future[None] = self.loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport, but have its methods.
        self.transport = cast("asyncio.Transport", transport)

    def data_received(self, data: bytes) -> None:
        response = self.response
        if response is None:
            self.close()  # bytes while idle: the connection's state is unknown
        else:
            response.feed(data)

    def connection_lost(self, exc: Exception | None) -> None:
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

    def send(self, head: bytes, body: bytes, read_timeout: float, provider: str) -> _Response:
        """Write one request and return its response (being read)."""
        response = self.response = _Response(self, read_timeout, provider)
        if len(body) <= _SMALL_BODY:
            self.transport.write(head + body)
        else:
            self.transport.write(head)
            self.transport.write(body)
        return response

    @property
    def is_usable(self) -> bool:
        """True while the connection may carry another request."""
        return self.reusable and not self.closed and not self.transport.is_closing()

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
        origin: _Origin,
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
            if conn.is_usable and self.loop.time() - conn.idle_since < self._keepalive:
                return conn
            conn.close()
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


class _Exchange(contextlib.AbstractAsyncContextManager["_Response"]):
    """`Http1Transport.stream`'s context: sends on entry, releases or closes on exit."""

    __slots__ = ("_body", "_conn", "_headers", "_response", "_transport", "_url")

    def __init__(
        self, transport: Http1Transport, url: str, body: bytes, headers: Mapping[str, str]
    ) -> None:
        self._transport = transport
        self._url = url
        self._body = body
        self._headers = headers
        self._conn: _Connection | None = None
        self._response: _Response | None = None

    async def __aenter__(self) -> _Response:
        transport = self._transport
        try:
            conn, response = await transport.send(self._url, self._body, self._headers)
            self._conn, self._response = conn, response
            await response.wait_head()
        except (TransportFailure, OSError) as exc:
            self._close()
            raise error_for_exception(exc, provider=transport.provider) from exc
        except BaseException:
            self._close()
            raise
        return response

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

    `provider` names it in errors; `timeouts` (default `Timeouts()`: 10 s connect, 600 s read)
    bound opening a connection and each silence while reading; `max_connections` (default 100)
    caps the connections to each origin (scheme, host, port); idle connections are closed after
    `keepalive` seconds (default 30). https uses `ssl_context` (default: the system's trusted
    certificates via `ssl.create_default_context()`) with SNI.
    """

    def __init__(
        self,
        *,
        provider: str,
        timeouts: Timeouts | None = None,
        max_connections: int = 100,
        keepalive: float = 30.0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        if not keepalive > 0:
            raise ValueError("keepalive must be a positive number of seconds")
        self.provider = provider
        self.timeouts = timeouts if timeouts is not None else Timeouts()
        self._max_connections = max_connections
        self._keepalive = keepalive
        self._ssl = ssl_context
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pools: dict[_Origin, _Pool] = {}
        self._targets: dict[str, _Target] = {}

    def _pool_for(self, origin: _Origin) -> _Pool:
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

    def _target(self, url: str) -> _Target:
        target = self._targets.get(url)
        if target is None:
            target = _target_of(url)
            if len(self._targets) >= 1024:
                self._targets.clear()
            self._targets[url] = target
        return target

    async def send(
        self, url: str, body: bytes, headers: Mapping[str, str]
    ) -> tuple[_Connection, _Response]:
        """Write the request on a pooled connection (TransportFailure on a failure)."""
        target = self._target(url)
        head = _request_head(target.prefix, len(body), headers)
        conn = await self._pool_for(target.origin).acquire()
        return conn, conn.send(head, body, self.timeouts.read, self.provider)

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> HttpReply:
        """POST `body` and read the whole response; transport failures as ProviderError."""
        conn: _Connection | None = None
        try:
            conn, response = await self.send(url, body, headers)
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
    ) -> contextlib.AbstractAsyncContextManager[_Response]:
        """POST `body` and yield the response as it arrives (released on exit)."""
        return _Exchange(self, url, body, headers)

    async def aclose(self) -> None:
        """Close every connection (the transport opens new ones if used again)."""
        pools, self._pools = self._pools, {}
        lost = [future for pool in pools.values() for future in pool.close()]
        if lost:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):
                    await asyncio.gather(*lost)


def _abandon(pools: dict[_Origin, _Pool], loop: asyncio.AbstractEventLoop | None) -> None:
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
