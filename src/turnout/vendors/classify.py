"""Classification of a failed call into one of nine error classes (first match wins).

Providers call `classify_http` (or its parts: `vendor_error`, `classify_status`,
`parse_retry_after`) for an HTTP error and `classify_exception` for anything raised; the
vendor-specific signals live in the catalog (`turnout.vendors.catalog`).
"""

from __future__ import annotations

import json
import math
from asyncio import CancelledError
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from turnout.errors import ProviderError, RoutingError
from turnout.vendors.catalog import vendor_entry

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "DEFAULT_RETRYABLE_STATUSES",
    "DEFAULT_RETRY_ON",
    "ERROR_CLASSES",
    "RETRYABLE",
    "RETRY_ON_ALLOWED",
    "HttpFailure",
    "classify_exception",
    "classify_http",
    "classify_status",
    "is_retryable",
    "parse_retry_after",
    "vendor_error",
]

RETRYABLE: frozenset[str] = frozenset(
    {"timeout", "rate_limited", "provider_error", "quota_exhausted"}
)
"""The classes health counts and a route may fail over on, whatever its `retry_on`."""

ERROR_CLASSES: frozenset[str] = frozenset(
    {
        "cancelled",
        "timeout",
        "quota_exhausted",
        "rate_limited",
        "provider_error",
        "context_length",
        "content_filtered",
        "auth",
        "invalid_request",
    }
)
"""All nine error classes."""

DEFAULT_RETRY_ON: tuple[str, ...] = ("provider_error", "timeout", "rate_limited", "quota_exhausted")
"""A route's default `retry_on`."""

RETRY_ON_ALLOWED: frozenset[str] = RETRYABLE | {"auth"}
"""The values `retry_on` may hold."""

DEFAULT_RETRYABLE_STATUSES: frozenset[int] = frozenset({409, *range(500, 600)} - {501})
"""Statuses that are `provider_error` by default: every 5xx except 501, and 409."""

_FILTER_STATUSES = frozenset({400, 403, 413, 422})
_MAX_MESSAGE = 2000


def is_retryable(error_class: str) -> bool:
    """Whether `error_class` is retryable (counts for health, may fail over)."""
    return error_class in RETRYABLE


def classify_status(
    status: int,
    *,
    vendor: str | None = None,
    error_type: str | None = None,
    message: str = "",
    retryable_statuses: frozenset[int] | None = None,
    quota: bool | None = None,
    refused_key: bool = False,
) -> str:
    """The error class of an HTTP error response; the first match wins, in this order:
    408 is `timeout`; a 402, a vendor quota signal or a 429 the vendor uses for exhausted
    credit `quota_exhausted`; 429 `rate_limited`; a retryable status `provider_error` (see
    `retryable_statuses`); a 400, 403, 413 or 422 naming a context-length or content-filter
    reason `context_length` or `content_filtered`; 401 and 403 `auth`; anything else
    `invalid_request`.

    `vendor` names the catalog entry whose signals apply (None: the common signals only);
    `error_type` and `message` are the vendor's error type/code and message (`vendor_error`);
    `retryable_statuses` narrows the statuses that are `provider_error` for a route (default:
    every 5xx except 501, and 409). `quota` is the vendor's structured verdict, when its error
    body gives one (Google's quota details): True is `quota_exhausted`, False rules the
    message signals out. `refused_key` (a structured "invalid key" on a 400) is `auth`.
    """
    entry = vendor_entry(vendor)
    statuses = DEFAULT_RETRYABLE_STATUSES if retryable_statuses is None else retryable_statuses
    if status == 408:
        return "timeout"
    if quota is None:
        quota = status == 402 or entry.is_quota(error_type, message)
        quota = quota or (status == 429 and entry.is_credit_429(error_type, message))
    if quota or status == 402:
        return "quota_exhausted"
    if status == 429:
        return "rate_limited"
    if status in statuses:
        return "provider_error"
    if status in _FILTER_STATUSES and entry.is_context_length(error_type, message):
        return "context_length"
    if status in _FILTER_STATUSES and entry.is_content_filtered(error_type, message):
        return "content_filtered"
    if status in (401, 403) or (refused_key and status == 400):
        return "auth"
    return "invalid_request"


def parse_retry_after(headers: Mapping[str, str], *, now_wall: float) -> float | None:
    """Seconds to wait from `retry-after-ms`, else `Retry-After` (seconds, int or float, or an
    HTTP date read against `now_wall`, epoch seconds). Header names are case-insensitive.
    A negative value or a past date gives 0.0; a missing or unreadable value gives None."""
    lowered = {str(name).lower(): value for name, value in headers.items()}
    millis = _seconds(lowered.get("retry-after-ms"))
    if millis is not None:
        return max(0.0, millis / 1000.0)
    raw = lowered.get("retry-after")
    seconds = _seconds(raw)
    if seconds is not None:
        return max(0.0, seconds)
    if not isinstance(raw, str) or not raw.strip():
        return None
    try:
        moment = parsedate_to_datetime(raw.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if moment.tzinfo is None:  # "-0000": a UTC time from an unknown zone
        moment = moment.replace(tzinfo=UTC)
    return max(0.0, moment.timestamp() - now_wall)


def _seconds(value: object) -> float | None:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def vendor_error(
    status: int, body: bytes | str | Mapping[str, Any] | None
) -> tuple[str | None, str]:
    """The vendor's error type (or code) and message from an error body.

    Reads OpenAI-style `{"error": {"type", "code", "message"}}` (the code wins over the type:
    it is the more specific), Anthropic `{"type": "error", "error": {"type", "message"}}`,
    `{"error": "text"}`, top-level `{"message", "type"/"code"}` and plain text. Never raises;
    without a usable message the message is `HTTP <status>`.
    """
    try:
        error_type, message = _read_error(_decode(body), status)
    except (TypeError, ValueError, AttributeError, RecursionError):
        error_type, message = None, ""
    message = " ".join(message.split())[:_MAX_MESSAGE]
    return error_type, message or f"HTTP {status}"


def _decode(body: bytes | str | Mapping[str, Any] | None) -> object:
    if body is None:
        return None
    if isinstance(body, bytes | bytearray | memoryview):
        body = bytes(body).decode("utf-8", errors="replace")
    if not isinstance(body, str):
        return body
    text = body.strip()
    if text[:1] in ("{", "["):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def _read_error(data: object, status: int) -> tuple[str | None, str]:
    if isinstance(data, list) and data:
        data = data[0]
    if isinstance(data, str):
        return None, data
    if not isinstance(data, dict):
        return None, ""
    inner = data.get("error")
    if isinstance(inner, str):
        return _label(data, status), inner
    source = inner if isinstance(inner, dict) else data
    message = source.get("message")
    return _label(source, status), message if isinstance(message, str) else ""


def _label(source: Mapping[str, object], status: int) -> str | None:
    """The error's code, else its type, else its status name (Google's `RESOURCE_EXHAUSTED`);
    an echo of the HTTP status or Anthropic's envelope type `error` says nothing and is
    skipped."""
    for name in ("code", "type", "status"):
        value = source.get(name)
        if isinstance(value, bool) or not isinstance(value, str | int):
            continue
        text = str(value).strip()
        if text and text != str(status) and text != "error":
            return text
    return None


@dataclass(frozen=True, slots=True)
class HttpFailure:
    """A classified HTTP error: `error_class`, the vendor's `error_type` and `message`,
    `retry_after` (seconds, from the headers) and `reset_after` (seconds until a vendor quota
    resets, read from the message; only for `quota_exhausted`)."""

    error_class: str
    error_type: str | None
    message: str
    retry_after: float | None = None
    reset_after: float | None = None

    def to_error(self, status: int, **kwargs: Any) -> ProviderError:
        """The matching `ProviderError` subclass (extra keyword arguments pass through)."""
        return ProviderError.for_class(
            self.error_class,
            self.message,
            status=status,
            retry_after=self.retry_after,
            reset_at=self.reset_after,
            error_type=self.error_type,
            **kwargs,
        )


def classify_http(
    status: int,
    headers: Mapping[str, str],
    body: bytes | str | Mapping[str, Any] | None,
    *,
    now_wall: float,
    vendor: str | None = None,
    retryable_statuses: frozenset[int] | None = None,
) -> HttpFailure:
    """Everything a provider needs from an HTTP error response, in one call. A vendor whose
    catalog entry reads structured errors (`VendorEntry.error_reader`) has its verdict on
    quota and a refused key applied, and its retry delay used when no header gives one."""
    entry = vendor_entry(vendor)
    error_type, message = vendor_error(status, body)
    structured = None
    if entry.error_reader is not None:
        try:
            structured = entry.read_error(_decode(body))
        except (ValueError, RecursionError):
            structured = None
    error_class = classify_status(
        status,
        vendor=vendor,
        error_type=error_type,
        message=message,
        retryable_statuses=retryable_statuses,
        quota=structured.quota if structured is not None else None,
        refused_key=structured is not None and structured.auth,
    )
    reset_after = None
    if error_class == "quota_exhausted":
        reset_after = entry.reset_after(message, now_wall)
    retry_after = parse_retry_after(headers, now_wall=now_wall)
    if retry_after is None and structured is not None:
        retry_after = structured.retry_after
    return HttpFailure(error_class, error_type, message, retry_after, reset_after)


def classify_exception(exc: BaseException) -> str:
    """The error class of anything a call raised: a `ProviderError` keeps its class; the
    caller's cancellation is `cancelled`; `TimeoutError` is `timeout`; a nested route's
    failure is `provider_error` for a 5xx (e.g. `RouteExhausted`) and `invalid_request`
    otherwise (e.g. `RouteIneligible`); connection errors and anything else `provider_error`."""
    if isinstance(exc, ProviderError):
        return exc.error_class
    if isinstance(exc, CancelledError):
        return "cancelled"
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, RoutingError):
        return "provider_error" if exc.status >= 500 else "invalid_request"
    return "provider_error"
