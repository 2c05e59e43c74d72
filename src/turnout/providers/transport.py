"""The HTTP layer of the providers: one pooled keep-alive client per provider, its timeouts, and
THE one place where transport exceptions and error statuses become `ProviderError`s.

The client is `turnout.providers.http1.Http1Transport` (`http1.default_transport`), a lean
HTTP/1.1 client on an asyncio protocol and `httptools`. bench/client.py measured it at 64
concurrent calls on uvloop: 0.015 ms of client CPU per request against aiohttp's 0.052 (aiohttp
was the client before it; httpx costs 0.9 ms). The provider adapters never see the client: they
call `Transport.post` / `.stream` and get bytes, statuses and `ProviderError`s; any `Transport`
can be passed instead (tests do). A client reports its failures with the exceptions below
(`TransportFailure` and its subclasses); `error_for_exception` maps them. This module imports no
client: the clients import it.

Rule 1: a transport's connections belong to the event loop that first used it; used from
another loop, it starts new ones there (close each with `aclose()` before its loop ends).
Rule 2: no retries here: the route is the only retry authority. The one resend a
client may make is of a request that never left: one whose write the socket refused
(`http1` Rule 7). A request written whole is never sent twice.
Rule 3: every wait on the network is bounded: `HttpTimeouts.connect` for the connection,
`HttpTimeouts.read` for each silence while reading, so a hung upstream never holds a socket for
ever even when no route deadline is running.
Rule 4: cancellation is never mapped: it propagates, and the response is released (a partly
read response closes its connection instead of returning it to the pool).
Rule 5: a failure before anything was sent is never the provider's: it is the request's
(`invalid_request`, 400: input that cannot be encoded, a bad URL or header) or turnout's own
(`local_error`: `invalid_request` with status 500, reason `internal error`, logged with its
traceback), so health never counts it and the route does not fail over as if the provider
had failed.
Rule 6: every answer is bounded: a whole answer, once decompressed, and each event of a stream
hold at most `HttpOptions.max_response_bytes` (default 32 MiB); a larger one fails the call as
`provider_error` ("answer larger than 32 MiB"), so the route moves on. So does a response head
of more than 100 header lines or 64 KiB (the bounds the gateway's own server puts on a
caller's request head).
Rule 7: no secret an upstream echoes reaches a caller or a routing record: every error made
from an upstream's words (`error_for_status`, `redact_error`) has the provider's secrets and
anything shaped like a key or token scrubbed (`turnout.vendors.redact`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple, Protocol

from turnout.errors import ProviderError
from turnout.vendors.classify import classify_http
from turnout.vendors.redact import redact

if TYPE_CHECKING:
    import contextlib
    from collections.abc import AsyncIterator, Collection, Mapping

__all__ = [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "AnswerTooLarge",
    "BodyCutShort",
    "ConnectFailed",
    "ConnectTimeout",
    "HeadTooLarge",
    "HttpOptions",
    "HttpReply",
    "HttpTimeouts",
    "InvalidHeader",
    "InvalidURL",
    "LocalFailure",
    "ReadTimeout",
    "StreamReply",
    "Transport",
    "TransportFailure",
    "UnreadableResponse",
    "UpstreamClosed",
    "error_for_exception",
    "error_for_status",
    "local_error",
    "redact_error",
    "request_id_of",
    "size_text",
    "too_large_error",
]

logger = logging.getLogger("turnout.providers")

_REQUEST_ID_HEADERS = (
    "x-request-id",
    "request-id",
    "apim-request-id",
    "x-ms-request-id",
    "x-amzn-requestid",
)

DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024
"""The largest answer (decompressed) or stream event a provider takes by default: 32 MiB."""


@dataclass(frozen=True, slots=True)
class HttpTimeouts:
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
                raise ValueError(f"HttpTimeouts.{name} must be a positive number of seconds")


@dataclass(frozen=True, slots=True)
class HttpOptions:
    """How a provider makes its HTTP calls; one object may serve any number of providers.

    `headers` (default none): sent with every call, after the provider's own defaults and
    before its credential headers (names are case-insensitive); `timeouts` (default
    `HttpTimeouts()`: 10 s to connect, 600 s of read silence); `max_connections` (default
    100): open connections to each origin; `max_response_bytes` (default 32 MiB): the largest
    whole answer (after decompression) and the largest single event of a stream, in bytes (a
    larger one fails the call as `provider_error`). `timeouts` and `max_connections` configure
    the provider's own client: a provider given its own `transport` sends `headers` but uses
    neither, and bounds only its streams' events by `max_response_bytes`. `secrets` (default
    none; never shown in the repr) are scrubbed from the provider's errors besides its own key
    and header values, e.g. the other providers' keys (Rule 7).
    """

    headers: Mapping[str, str] = field(default_factory=dict, hash=False)
    timeouts: HttpTimeouts = HttpTimeouts()
    max_connections: int = 100
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    secrets: tuple[str, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        # A frozen value: a copy, read-only, so a caller's later change to its dict is not seen.
        object.__setattr__(self, "headers", MappingProxyType(dict(self.headers)))
        if self.max_response_bytes < 1:
            raise ValueError("HttpOptions.max_response_bytes must be at least 1")


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


class TransportFailure(Exception):
    """A transport's own failure, before `error_for_exception` classifies it; its text is the
    message the `ProviderError` carries."""


class ConnectTimeout(TransportFailure, TimeoutError):
    """No connection (TLS included, or a free pooled one) within `HttpTimeouts.connect`."""


class ReadTimeout(TransportFailure, TimeoutError):
    """No response bytes within `HttpTimeouts.read` of silence."""


class ConnectFailed(TransportFailure):
    """The connection could not be opened (refused, unreachable, TLS refused)."""


class UpstreamClosed(TransportFailure):
    """The connection closed or was reset before the response headers."""


class BodyCutShort(TransportFailure):
    """The connection closed or was reset before the end of the response body."""


class UnreadableResponse(TransportFailure):
    """The response bytes are not HTTP/1.1 (or its compressed body does not decode)."""


class HeadTooLarge(UnreadableResponse):
    """The response head has more header lines, or more bytes, than a client takes."""


class AnswerTooLarge(TransportFailure):
    """The answer (after decompression) is larger than the transport's `max_response_bytes`."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"answer larger than {size_text(limit)}")
        self.limit = limit


class LocalFailure(TransportFailure):
    """The call could not be made for a reason of this machine's (no file descriptors left, a
    bug in the client) before anything was sent (Rule 5)."""


class InvalidURL(TransportFailure, ValueError):
    """The URL is not an absolute `http://` or `https://` URL with a host."""


class InvalidHeader(TransportFailure, ValueError):
    """A header name or value holds a line break or a character outside Latin-1."""


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
    secrets: Collection[str] = (),
) -> ProviderError:
    """The `ProviderError` for an error response: its error class (from the status, the body and
    the vendor's catalog signals), with `Retry-After` (seconds, HTTP date or `retry-after-ms`),
    the vendor's quota reset time and the request id; `secrets` and anything shaped like a key
    are scrubbed from what it says (Rule 7). Bad or non-JSON bodies never raise here."""
    failure = classify_http(
        status,
        headers,
        body,
        now_wall=time.time() if now_wall is None else now_wall,
        vendor=vendor,
    )
    error = failure.to_error(
        status,
        provider=provider,
        provider_request_id=request_id_of(headers),
        body=body,
    )
    return redact_error(error, secrets)


def redact_error(error: ProviderError, secrets: Collection[str] = ()) -> ProviderError:
    """Rule 7: `error` with `secrets` and key-shaped strings scrubbed from its message, reason,
    error type and the vendor's body (changed in place, and returned). Each text is kept up
    to its first 64 KiB: scrubbing more would hold the event loop for an upstream's whim."""
    error.message = _scrubbed(error.message, secrets)
    error.args = (error.message,)
    if error.reason:
        error.reason = _scrubbed(error.reason, secrets)
    if error.error_type:
        error.error_type = _scrubbed(error.error_type, secrets)
    error.body = _scrubbed_body(error.body, secrets)
    return error


_KEPT_TEXT = 64 * 1024
"""The most of any one text of an upstream's that an error keeps (Rule 7)."""


def _scrubbed(text: str, secrets: Collection[str]) -> str:
    return redact(text[:_KEPT_TEXT], secrets)


def _scrubbed_body(body: object, secrets: Collection[str]) -> object:
    if isinstance(body, str):
        return _scrubbed(body, secrets)
    if isinstance(body, bytes | bytearray):
        kept = bytes(body[:_KEPT_TEXT])
        text = kept.decode("utf-8", "replace")
        clean = redact(text, secrets)
        return kept if clean == text else clean.encode()
    if isinstance(body, dict):
        return {key: _scrubbed_body(value, secrets) for key, value in body.items()}
    if isinstance(body, list):
        return [_scrubbed_body(value, secrets) for value in body]
    return body


def error_for_exception(exc: BaseException, *, provider: str) -> ProviderError:
    """The `ProviderError` for a transport failure (never for a cancellation: re-raise those).

    Timeouts are `timeout` (reason `connect timeout` / `read timeout`); refused, reset or dropped
    connections and bodies cut short are `provider_error` with reason `connection`; an answer
    over the limit, or a response head over the client's bounds, is `provider_error` (Rule 6);
    a `LocalFailure` is `local_error` (Rule 5).
    """
    if isinstance(exc, ProviderError):
        return exc
    if isinstance(exc, ConnectTimeout):
        return ProviderError.for_class(
            "timeout", f"connect timeout: {exc}", reason="connect timeout", provider=provider
        )
    if isinstance(exc, TimeoutError):
        message = str(exc) or "no bytes from the upstream within the read timeout"
        return ProviderError.for_class("timeout", message, reason="read timeout", provider=provider)
    if isinstance(exc, InvalidURL):
        return ProviderError.for_class(
            "invalid_request", f"invalid URL: {exc}", reason="invalid url", provider=provider
        )
    if isinstance(exc, InvalidHeader):
        return ProviderError.for_class(
            "invalid_request", str(exc), reason="invalid header", provider=provider
        )
    if isinstance(exc, AnswerTooLarge):
        return too_large_error(exc.limit, provider=provider)
    if isinstance(exc, HeadTooLarge):
        return ProviderError.for_class(
            "provider_error", str(exc), reason="response head too large", provider=provider
        )
    if isinstance(exc, LocalFailure):
        return local_error(exc, provider=provider)
    message = _connection_message(exc)
    return ProviderError.for_class(
        "provider_error", message, reason="connection", provider=provider
    )


def local_error(exc: BaseException, *, provider: str) -> ProviderError:
    """Rule 5: the error for a call that failed here before anything was sent, for no fault of
    the request's: `invalid_request` (never counted for health, no failover) with status 500
    and reason `internal error`. `exc` is logged with its traceback; the message names only
    its type, since its text may hold parts of the request."""
    logger.error("a call to provider %r failed before it was sent", provider, exc_info=exc)
    what = str(exc) if isinstance(exc, LocalFailure) else type(exc).__name__
    return ProviderError.for_class(
        "invalid_request",
        f"turnout could not make the call to provider {provider!r}: {what}; nothing was sent",
        status=500,
        reason="internal error",
        error_type="internal_error",
        provider=provider,
    )


def too_large_error(limit: int, *, provider: str) -> ProviderError:
    """The `provider_error` for an answer, or one stream event, over `limit` bytes (Rule 6)."""
    reason = f"answer larger than {size_text(limit)}"
    return ProviderError.for_class(
        "provider_error",
        f"the answer passed the provider's max_response_bytes ({size_text(limit)})",
        reason=reason,
        provider=provider,
    )


def size_text(size: int) -> str:
    """`size` bytes in words: `32 MiB`, `64 KiB`, `1.5 MiB`, `1000 bytes`."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.4g} {unit}"
    return f"{size} bytes"


def _connection_message(exc: BaseException) -> str:
    if isinstance(exc, TransportFailure):
        return str(exc)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
