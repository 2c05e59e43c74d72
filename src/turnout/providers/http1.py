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

The bytes of one exchange (request head, response parsing, no I/O) live in `_http1_message`;
one connection (the asyncio protocol that feeds them) in `_http1_connection`; the connections to
one origin in `_http1_pool`. This module holds the transport, its streamed responses and
`default_transport`, the client a provider gets when it is given none.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from typing import TYPE_CHECKING

from turnout.providers._http1_message import (
    HIGH_WATER,
    Origin,
    ParsedURL,
    RequestNotSent,
    ResponseParser,
    head_with,
    header_block,
    parse_url,
)
from turnout.providers._http1_pool import LIVENESS_AFTER, Pool
from turnout.providers.transport import (
    DEFAULT_MAX_RESPONSE_BYTES,
    HttpReply,
    HttpTimeouts,
    LocalFailure,
    ReadTimeout,
    Transport,
    TransportFailure,
    error_for_exception,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    from turnout.providers._http1_connection import Connection

__all__ = ["HIGH_WATER", "LIVENESS_AFTER", "Http1Transport", "default_transport"]


class StreamedResponse(contextlib.AbstractAsyncContextManager["StreamedResponse"]):
    """One streamed POST (`Http1Transport.stream`), the `StreamReply` its caller reads: sent on
    entry, its body read as it arrives, its connection released or closed on exit."""

    __slots__ = (
        "_body",
        "_conn",
        "_headers",
        "_response",
        "_transport",
        "_url",
        "headers",
        "status",
    )

    def __init__(
        self, transport: Http1Transport, url: str, body: bytes, headers: Mapping[str, str]
    ) -> None:
        self._transport = transport
        self._url = url
        self._body = body
        self._headers = headers
        self._conn: Connection | None = None
        self._response: ResponseParser | None = None
        self.status = 0
        self.headers: Mapping[str, str] = {}

    async def __aenter__(self) -> StreamedResponse:
        transport = self._transport
        try:
            self._conn, self._response = await transport.send(self._url, self._body, self._headers)
        except (TransportFailure, OSError) as exc:
            self._close()
            raise error_for_exception(exc, provider=transport.provider) from exc
        except BaseException:
            self._close()
            raise
        self.status = self._response.status
        self.headers = self._response.headers
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        conn, response = self._conn, self._response
        if conn is None or response is None:
            return
        if response.is_consumed and response.keep_alive:
            conn.pool.release(conn)
        else:
            conn.close()  # Rule 2: a response not read to its end closes its connection

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive; failures as ProviderError after the bytes before."""
        conn, response = self._exchange()
        while True:
            if response.chunks:
                data = response.take()
                conn.resume()
                yield data
            elif response.error is not None:
                error = response.error
                raise error_for_exception(error, provider=self._transport.provider) from error
            elif response.done:
                return
            else:
                try:
                    await conn.wait()
                except ReadTimeout as exc:
                    raise error_for_exception(exc, provider=self._transport.provider) from exc

    async def read(self) -> bytes:
        """The whole remaining body (for an error status); failures as ProviderError."""
        conn, response = self._exchange()
        try:
            return await conn.read_all(response)
        except TransportFailure as exc:
            raise error_for_exception(exc, provider=self._transport.provider) from exc

    def _exchange(self) -> tuple[Connection, ResponseParser]:
        conn, response = self._conn, self._response
        if conn is None or response is None:
            raise RuntimeError("a streamed response is read inside its `async with` block")
        return conn, response

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
        self._pools: dict[Origin, Pool] = {}
        self._parsed_urls: dict[str, ParsedURL] = {}
        # The encoded header lines of the last header set sent: most calls send the same (the
        # provider's own). One set only, so no caller's own credential is kept past its turn.
        self._block_of: tuple[tuple[str, str], ...] = ()
        self._block = b""

    def _pool_for(self, origin: Origin) -> Pool:
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
            pool = self._pools[origin] = Pool(
                origin,
                limit=self._max_connections,
                keepalive=self._keepalive,
                connect_timeout=self.timeouts.connect,
                read_timeout=self.timeouts.read,
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
    ) -> tuple[Connection, ResponseParser]:
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
            response = conn.send(head, body, self.max_response_bytes)
            try:
                await conn.wait_head(response)
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
        conn: Connection | None = None
        try:
            conn, response = await self.send(url, body, headers, method=method)
            payload = await conn.read_all(response)
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

    def stream(self, url: str, body: bytes, headers: Mapping[str, str]) -> StreamedResponse:
        """POST `body` and yield the response as it arrives (released on exit)."""
        return StreamedResponse(self, url, body, headers)

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


def _abandon(pools: dict[Origin, Pool], loop: asyncio.AbstractEventLoop | None) -> None:
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
