"""The HTTP layer of the providers: one pooled keep-alive client per provider, its timeouts, and
THE one place where transport exceptions and error statuses become `ProviderError`s.

aiohttp is the client (bench/client.py measured it against httpx on the mock upstream: about a
tenth of the CPU per request, and it keeps its latency at 64 concurrent calls where httpx's pool
does not). The provider adapters never see aiohttp: they call `Transport.post` / `.stream` and
get bytes, statuses and `ProviderError`s.

Rule 1: a transport's session belongs to the event loop that first used it; used from another
loop, it starts a new session there (close each with `aclose()` before its loop ends).
Rule 2: no retries here, ever: the route is the only retry authority (SPEC §3.2).
Rule 3: every wait on the network is bounded: `Timeouts.connect` for the connection,
`Timeouts.read` for each silence while reading, so a hung upstream never holds a socket for
ever even when no route deadline is running.
Rule 4: cancellation is never mapped: it propagates, and the response is released (a partly
read response closes its connection instead of returning it to the pool).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import aiohttp

from turnout.errors import ProviderError
from turnout.routing.classify import classify_http

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

__all__ = [
    "AiohttpTransport",
    "HttpReply",
    "StreamReply",
    "Timeouts",
    "Transport",
    "error_for_exception",
    "error_for_status",
    "request_id_of",
]

_REQUEST_ID_HEADERS = ("x-request-id", "request-id", "apim-request-id", "x-ms-request-id")


@dataclass(frozen=True, slots=True)
class Timeouts:
    """A provider's own network deadlines, in seconds.

    `connect` (default 10): to open a connection; `read` (default 600, the OpenAI SDK's own
    default): the longest silence while waiting for headers or body bytes. A route's `timeout`
    and `first_token_timeout` bound whole calls on top of these.
    """

    connect: float = 10.0
    read: float = 600.0

    def __post_init__(self) -> None:
        for name in ("connect", "read"):
            if not getattr(self, name) > 0:
                raise ValueError(f"Timeouts.{name} must be a positive number of seconds")


class HttpReply(NamedTuple):
    """A whole HTTP response: status, headers (lower-case names) and body bytes."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class StreamReply(Protocol):
    """A response being read: status and headers now, the body as it arrives."""

    status: int
    headers: Mapping[str, str]

    def chunks(self) -> AsyncIterator[bytes]:
        """The body's bytes as they arrive (transport failures raised as ProviderError)."""
        ...

    async def read(self) -> bytes:
        """The whole remaining body (for an error status)."""
        ...


class Transport(Protocol):
    """What a provider needs of HTTP: a whole POST, a streamed POST, and closing."""

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> HttpReply:
        """POST and read the whole response (any status)."""
        ...

    def stream(
        self, url: str, body: bytes, headers: Mapping[str, str]
    ) -> contextlib.AbstractAsyncContextManager[StreamReply]:
        """POST and hand back the response as it arrives."""
        ...

    async def aclose(self) -> None:
        """Close pooled connections."""
        ...


def request_id_of(headers: Mapping[str, str]) -> str | None:
    """The vendor's request id (`x-request-id`, `request-id`, Azure's `apim-request-id` …)."""
    for name in _REQUEST_ID_HEADERS:
        value = headers.get(name)
        if value:
            return value
    return None


def error_for_status(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    provider: str,
    vendor: str | None,
    now_wall: float | None = None,
) -> ProviderError:
    """The `ProviderError` for an error response: classified by SPEC §3.2 with the vendor's
    catalog signals, with `Retry-After` (seconds, HTTP date or `retry-after-ms`), the vendor's
    quota reset time and the request id. Bad or non-JSON bodies never raise here."""
    failure = classify_http(
        status,
        headers,
        body,
        now_wall=time.time() if now_wall is None else now_wall,
        vendor=vendor,
    )
    return failure.to_error(
        status,
        provider=provider,
        provider_request_id=request_id_of(headers),
        body=body,
    )


def error_for_exception(exc: BaseException, *, provider: str) -> ProviderError:
    """The `ProviderError` for a transport failure (never for a cancellation: re-raise those).

    Timeouts are `timeout` (reason `connect timeout` / `read timeout`); refused, reset or dropped
    connections and bodies cut short are `provider_error` with reason `connection`.
    """
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, aiohttp.ConnectionTimeoutError):
        return ProviderError.for_class(
            "timeout", f"connect timeout: {exc}", reason="connect timeout", provider=provider
        )
    if isinstance(exc, TimeoutError):
        message = str(exc) or "no bytes from the upstream within the read timeout"
        return ProviderError.for_class("timeout", message, reason="read timeout", provider=provider)
    if isinstance(exc, aiohttp.InvalidURL):
        return ProviderError.for_class(
            "invalid_request", f"invalid URL: {exc}", reason="invalid url", provider=provider
        )
    message = _connection_message(exc)
    return ProviderError.for_class(
        "provider_error", message, reason="connection", provider=provider
    )


def _connection_message(exc: BaseException) -> str:
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"cannot connect: {exc.os_error}"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "the upstream closed the connection"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return "the response body was cut short"
    if isinstance(exc, aiohttp.ClientResponseError):
        return f"unreadable response: {exc.message}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class _AiohttpStream:
    """An aiohttp response seen as a `StreamReply`."""

    __slots__ = ("_provider", "_response", "headers", "status")

    def __init__(self, response: aiohttp.ClientResponse, provider: str) -> None:
        self._response = response
        self._provider = provider
        self.status = response.status
        self.headers: Mapping[str, str] = _lower(response.headers)

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            async for data in self._response.content.iter_any():
                yield data
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise error_for_exception(exc, provider=self._provider) from exc

    async def read(self) -> bytes:
        try:
            return await self._response.read()
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise error_for_exception(exc, provider=self._provider) from exc


def _lower(headers: Mapping[str, str]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}


class AiohttpTransport:
    """A pooled keep-alive aiohttp session for one provider.

    `provider` names it in errors; `timeouts` bound connecting and each read; `max_connections`
    (default 100) caps the pool; idle connections are kept `keepalive` seconds (default 30).
    """

    def __init__(
        self,
        *,
        provider: str,
        timeouts: Timeouts | None = None,
        max_connections: int = 100,
        keepalive: float = 30.0,
    ) -> None:
        self.provider = provider
        self.timeouts = timeouts if timeouts is not None else Timeouts()
        self._max_connections = max_connections
        self._keepalive = keepalive
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timeout = aiohttp.ClientTimeout(
            total=None,
            connect=self.timeouts.connect,
            sock_connect=self.timeouts.connect,
            sock_read=self.timeouts.read,
        )

    def _session_now(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        session = self._session
        if session is not None and self._loop is loop and not session.closed:
            return session
        if session is not None and not session.closed:
            _abandon(session)
        connector = aiohttp.TCPConnector(
            limit=self._max_connections,
            keepalive_timeout=self._keepalive,
            enable_cleanup_closed=False,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            timeout=self._timeout,
            auto_decompress=True,
            skip_auto_headers=("User-Agent",),
            # One session carries every caller's calls: a cookie set by an answer to one caller
            # must never ride along on another's call (and no jar is cheaper per request).
            cookie_jar=aiohttp.DummyCookieJar(),
        )
        self._loop = loop
        return self._session

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> HttpReply:
        """POST `body` and read the whole response; transport failures as ProviderError."""
        session = self._session_now()
        try:
            async with session.post(url, data=body, headers=headers) as response:
                payload = await response.read()
                return HttpReply(response.status, _lower(response.headers), payload)
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise error_for_exception(exc, provider=self.provider) from exc

    @contextlib.asynccontextmanager
    async def stream(
        self, url: str, body: bytes, headers: Mapping[str, str]
    ) -> AsyncIterator[StreamReply]:
        """POST `body` and yield the response as it arrives (released on exit)."""
        session = self._session_now()
        try:
            response = await session.post(url, data=body, headers=headers)
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise error_for_exception(exc, provider=self.provider) from exc
        try:
            yield _AiohttpStream(response, self.provider)
        finally:
            if response.content.is_eof():
                response.release()  # read to the end: the connection goes back to the pool
            else:
                response.close()  # Rule 4: a partly read response never returns to the pool

    async def aclose(self) -> None:
        """Close the session and its pooled connections."""
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()


def _abandon(session: aiohttp.ClientSession) -> None:
    """Drop a session of another event loop without touching that loop."""
    connector: Any = session.connector
    session.detach()
    if connector is not None:
        with contextlib.suppress(Exception):
            connector.close()
