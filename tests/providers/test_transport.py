"""The one place transport failures and error statuses become ProviderErrors."""

from __future__ import annotations

import pytest

from turnout.errors import ProviderError, ProviderTimeout, ProviderUnavailable, QuotaExhausted
from turnout.providers.http1 import Http1Transport, default_transport
from turnout.providers.transport import (
    BodyCutShort,
    ConnectFailed,
    ConnectTimeout,
    HttpTimeouts,
    InvalidHeader,
    InvalidURL,
    ReadTimeout,
    UnreadableResponse,
    UpstreamClosed,
    error_for_exception,
    error_for_status,
    request_id_of,
)


@pytest.mark.parametrize(
    ("exc", "error_class", "reason"),
    [
        (TimeoutError(), "timeout", "read timeout"),
        (ConnectionResetError(), "provider_error", "connection"),
        (ConnectTimeout("slow"), "timeout", "connect timeout"),
        (ReadTimeout("quiet"), "timeout", "read timeout"),
        (ConnectFailed("cannot connect: refused"), "provider_error", "connection"),
        (UpstreamClosed("the upstream closed the connection"), "provider_error", "connection"),
        (BodyCutShort("the response body was cut short"), "provider_error", "connection"),
        (UnreadableResponse("unreadable response: x"), "provider_error", "connection"),
        (InvalidURL("nope"), "invalid_request", "invalid url"),
        (InvalidHeader("invalid header: x"), "invalid_request", "invalid header"),
    ],
)
def test_transport_exceptions(exc: BaseException, error_class: str, reason: str) -> None:
    """Each transport failure maps to its class and a short reason, naming the provider."""
    error = error_for_exception(exc, provider="p")
    assert (error.error_class, error.reason, error.provider) == (error_class, reason, "p")
    assert error.status is None


def test_a_provider_error_passes_through() -> None:
    """An error that is already classified is returned as it is."""
    original = ProviderUnavailable("x")
    assert error_for_exception(original, provider="p") is original


def test_error_status_with_vendor_signals_and_headers() -> None:
    """A status is classified with the vendor's catalog; Retry-After and the id are kept."""
    body = b'{"error": {"message": "Your account is suspended due to insufficient balance", '
    body += b'"type": "exceeded_current_quota_error"}}'
    headers = {"retry-after": "12", "x-request-id": "req_9"}
    error = error_for_status(429, headers, body, provider="kimi", vendor="kimi", now_wall=0.0)
    assert isinstance(error, QuotaExhausted)
    assert (error.status, error.retry_after, error.provider_request_id) == (429, 12.0, "req_9")
    assert error.body == body


@pytest.mark.parametrize("body", [b"", b"\xff\xfe", b"<html>502</html>", b"[1, 2", b"null"])
def test_unreadable_error_bodies_never_raise(body: bytes) -> None:
    """Whatever bytes come with an error status, the error is built from the status."""
    error = error_for_status(502, {}, body, provider="p", vendor=None)
    assert isinstance(error, ProviderError)
    assert error.error_class == "provider_error"


def test_request_id_headers() -> None:
    """The request id comes from the first of the vendors' id headers present."""
    assert request_id_of({"request-id": "a", "apim-request-id": "b"}) == "a"
    assert request_id_of({"apim-request-id": "b"}) == "b"
    assert request_id_of({}) is None


def test_timeouts_must_be_positive() -> None:
    """HttpTimeouts default to 10 s connect and 600 s read, and refuse non-positive values."""
    assert (HttpTimeouts().connect, HttpTimeouts().read) == (10.0, 600.0)
    with pytest.raises(ValueError, match=r"HttpTimeouts\.read"):
        HttpTimeouts(read=0)


def test_timeout_errors_are_provider_timeouts() -> None:
    """The timeout class is the ProviderTimeout subclass."""
    assert isinstance(error_for_exception(TimeoutError(), provider="p"), ProviderTimeout)


@pytest.mark.parametrize(
    "exc",
    [
        ConnectFailed("cannot connect: [Errno 111] refused"),
        UpstreamClosed("the upstream closed the connection"),
        BodyCutShort("the response body was cut short"),
    ],
)
def test_transport_failures_keep_their_message(exc: Exception) -> None:
    """A transport failure's text is the message of its ProviderError."""
    assert error_for_exception(exc, provider="p").message == str(exc)


def test_default_transport_is_the_http1_client() -> None:
    """`default_transport` builds an Http1Transport named for the provider, with its options."""
    timeouts = HttpTimeouts(connect=2.0, read=30.0)
    transport = default_transport(provider="acme", timeouts=timeouts, max_connections=7)
    assert isinstance(transport, Http1Transport)
    assert (transport.provider, transport.timeouts) == ("acme", timeouts)
    assert transport._max_connections == 7
