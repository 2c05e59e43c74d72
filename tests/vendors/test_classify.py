"""Classification of failed calls, Retry-After parsing and vendor error bodies."""

from __future__ import annotations

import asyncio
import calendar
import json

import pytest

from turnout.errors import (
    ProviderError,
    QuotaExhausted,
    RateLimited,
    RouteExhausted,
    RouteIneligible,
    StreamBroken,
)
from turnout.vendors.classify import (
    DEFAULT_RETRY_ON,
    ERROR_CLASSES,
    RETRYABLE,
    classify_exception,
    classify_http,
    classify_status,
    is_retryable,
    parse_retry_after,
    vendor_error,
)

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def test_error_class_sets() -> None:
    """Nine classes; four retryable; the default retry_on is the retryable four."""
    assert len(ERROR_CLASSES) == 9
    assert {"timeout", "rate_limited", "provider_error", "quota_exhausted"} == RETRYABLE
    assert set(DEFAULT_RETRY_ON) == RETRYABLE
    assert is_retryable("timeout")
    assert not is_retryable("auth")
    assert not is_retryable("cancelled")


# ---- the table -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_type", "message", "expected"),
    [
        (408, None, "", "timeout"),
        (402, None, "Insufficient Balance", "quota_exhausted"),
        (429, "insufficient_quota", "You exceeded your current quota", "quota_exhausted"),
        (429, "rate_limit_exceeded", "Rate limit reached for gpt-4o", "rate_limited"),
        (500, None, "", "provider_error"),
        (502, None, "", "provider_error"),
        (503, None, "", "provider_error"),
        (529, "overloaded_error", "Overloaded", "provider_error"),
        (409, None, "conflict", "provider_error"),
        (501, None, "", "invalid_request"),
        (400, "context_length_exceeded", "", "context_length"),
        (413, None, "This model's maximum context length is 8192 tokens", "context_length"),
        (422, None, "prompt is too long: 208310 tokens > 200000 maximum", "context_length"),
        (403, None, "prompt is too long", "context_length"),
        (400, "content_policy_violation", "", "content_filtered"),
        (403, None, "triggering Azure OpenAI's content management policy", "content_filtered"),
        (401, None, "invalid x-api-key", "auth"),
        (403, None, "forbidden", "auth"),
        (400, None, "bad field", "invalid_request"),
        (404, None, "model not found", "invalid_request"),
        (413, "request_too_large", "Request exceeds the maximum allowed bytes", "invalid_request"),
        (422, None, "schema", "invalid_request"),
    ],
)
def test_status_table(status: int, error_type: str | None, message: str, expected: str) -> None:
    """Each HTTP error status, with or without a vendor signal, maps to its class."""
    assert classify_status(status, error_type=error_type, message=message) == expected


def test_first_match_wins() -> None:
    """The earlier class in the order wins: a 408 with a quota message is timeout; quota beats
    429, 5xx and auth; context beats content; a 500 naming the context is still provider_error."""
    assert classify_status(408, message="exceeded your current quota") == "timeout"
    assert classify_status(403, error_type="exceeded_current_quota_error") == "quota_exhausted"
    assert classify_status(500, error_type="insufficient_quota") == "quota_exhausted"
    assert classify_status(400, message="prompt is too long; flagged as potentially violating") == (
        "context_length"
    )
    assert classify_status(500, message="maximum context length") == "provider_error"
    assert classify_status(401, message="content management policy") == "auth"


def test_retryable_statuses_narrow_row_5() -> None:
    """With retryable_statuses {502, 503, 504}, a 500 or 409 becomes terminal invalid_request."""
    narrow = frozenset({502, 503, 504})
    assert classify_status(503, retryable_statuses=narrow) == "provider_error"
    assert classify_status(500, retryable_statuses=narrow) == "invalid_request"
    assert classify_status(409, retryable_statuses=narrow) == "invalid_request"
    assert classify_status(429, retryable_statuses=narrow) == "rate_limited"


# ---- vendors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("vendor", "status", "body"),
    [
        (
            "openai",
            429,
            {
                "error": {
                    "type": "insufficient_quota",
                    "code": "insufficient_quota",
                    "message": "You exceeded your current quota, please check your plan.",
                }
            },
        ),
        (
            "anthropic",
            400,
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "Your credit balance is too low to access the Anthropic API.",
                },
            },
        ),
        ("deepseek", 402, {"error": {"message": "Insufficient Balance"}}),
        (
            "kimi",
            403,
            {
                "error": {
                    "type": "exceeded_current_quota_error",
                    "message": "Your account is not active, organization exceeded current quota",
                }
            },
        ),
        (
            "kimi",
            429,
            {
                "error": {
                    "type": "invalid_request_error",
                    "message": "Your account is suspended due to insufficient balance",
                }
            },
        ),
        ("zai", 429, {"error": {"code": "1113", "message": "Your account is in arrears"}}),
        (
            "zai",
            429,
            {
                "error": {
                    "code": "1308",
                    "message": "Usage limit reached for 5 hour. Your limit will reset at "
                    "2026-01-01 10:00:00",
                }
            },
        ),
        (
            "xai",
            429,
            {
                "code": "Some resource has been exhausted",
                "error": "Your team t has either used all available credits or reached its monthly "
                "spending limit.",
            },
        ),
    ],
)
def test_each_vendor_quota_signal(vendor: str, status: int, body: dict[str, object]) -> None:
    """Each vendor's quota or credit signal classifies as quota_exhausted."""
    failure = classify_http(status, {}, json.dumps(body).encode(), now_wall=NOW, vendor=vendor)
    assert failure.error_class == "quota_exhausted"


@pytest.mark.parametrize(
    ("vendor", "message"),
    [
        ("kimi", "Your account is suspended due to insufficient balance, please recharge"),
        ("zai", "Usage limit reached for 5 hour. Your limit will reset at 2026-01-01 10:00:00"),
        ("xai", "Your team has either used all available credits"),
    ],
)
def test_credit_429_is_vendor_specific(vendor: str, message: str) -> None:
    """A credit 429 is quota for Kimi, Z.ai and xAI, but a plain rate limit for another vendor
    and on another status."""
    assert classify_status(429, vendor=vendor, message=message) == "quota_exhausted"
    assert classify_status(429, vendor="groq", message=message) == "rate_limited"
    assert classify_status(429, message=message) == "rate_limited"


@pytest.mark.parametrize("vendor", ["kimi", "zai", "xai"])
def test_credit_429_vendor_rate_limit_stays_rate_limited(vendor: str) -> None:
    """A credit-429 vendor's ordinary rate limit is still rate_limited."""
    assert (
        classify_status(429, vendor=vendor, error_type="1302", message="High concurrency usage")
        == "rate_limited"
    )


@pytest.mark.parametrize(
    ("vendor", "error_type", "message", "expected"),
    [
        ("groq", "context_length_exceeded", "Please reduce the length of the messages",
         "context_length"),
        ("kimi", "invalid_request_error", "Your request exceeded model token limit: 8192",
         "context_length"),
        ("xai", None, "This model's maximum prompt length is 131072 but the request contains",
         "context_length"),
        ("anthropic", "invalid_request_error", "Output blocked by content filtering policy",
         "content_filtered"),
        ("azure-openai", "content_filter", "The response was filtered", "content_filtered"),
        ("zai", "1301", "System detected potentially unsafe or sensitive content",
         "content_filtered"),
        ("openai", "invalid_prompt",
         "Invalid prompt: your prompt was flagged as potentially violating our usage policy",
         "content_filtered"),
    ],
)  # fmt: skip
def test_vendor_context_and_content_reasons(
    vendor: str, error_type: str | None, message: str, expected: str
) -> None:
    """Vendor wording for context length and content filtering is recognised on a 400."""
    assert classify_status(400, vendor=vendor, error_type=error_type, message=message) == expected


def test_zai_reset_time_parks_until_the_stated_time() -> None:
    """Z.ai's "will reset at" (China time) becomes reset_after seconds from now."""
    # 2026-01-01 10:00:00 UTC+8 is 02:00:00 UTC, two hours after NOW.
    body = {"error": {"code": "1308", "message": "Your limit will reset at 2026-01-01 10:00:00"}}
    failure = classify_http(429, {}, json.dumps(body), now_wall=NOW, vendor="zai")
    assert failure.error_class == "quota_exhausted"
    assert failure.reset_after == pytest.approx(7200.0)


def test_zai_reset_parser_forms() -> None:
    """The reset parser reads Chinese wording, explicit zones, and ignores past or absent times."""
    from turnout.vendors.catalog import zai_reset_after

    assert zai_reset_after("您的限额将在 2026-01-01 09:00:00 重置。", NOW) == pytest.approx(3600.0)
    assert zai_reset_after("reset at 2026-01-01T03:00:00Z", NOW) == pytest.approx(10800.0)
    assert zai_reset_after("reset at 2026-01-01 01:00:00+01:00", NOW) is None
    assert zai_reset_after("reset at 2026-01-01 02:30:00-01:00", NOW) == pytest.approx(12600.0)
    assert zai_reset_after("Your limit will reset at 2025-12-31 08:00:00", NOW) is None
    assert zai_reset_after("no time here", NOW) is None
    assert zai_reset_after("reset at 2026-13-45 99:99:99", NOW) is None


def test_reset_after_only_for_quota() -> None:
    """A vendor reset time is read only when the failure is quota_exhausted."""
    body = {"error": {"code": "1302", "message": "limit will reset at 2026-01-01 10:00:00"}}
    failure = classify_http(500, {}, json.dumps(body), now_wall=NOW, vendor="zai")
    assert failure.error_class == "provider_error"
    assert failure.reset_after is None


def test_catalog_entries() -> None:
    """The catalog has one entry per vendor with its family, base URL and embeddings flag."""
    from turnout.vendors.catalog import GENERIC, VENDORS, vendor_entry

    assert set(VENDORS) == {
        "openai", "anthropic", "azure-openai", "gemini", "vertex", "deepseek", "groq", "kimi",
        "zai", "xai", "ollama", "vllm", "mistral", "together", "fireworks", "openrouter",
        "gemini-openai", "cerebras", "perplexity", "lmstudio", "bedrock", "mock",
    }  # fmt: skip
    assert vendor_entry("OpenAI").base_url == "https://api.openai.com/v1"
    assert vendor_entry("anthropic").family == "anthropic"
    assert vendor_entry("anthropic").embeddings is False
    assert vendor_entry("ollama").embeddings is True
    assert {name for name, entry in VENDORS.items() if entry.credit_429} == {"kimi", "zai", "xai"}
    assert vendor_entry("nobody") is GENERIC
    assert vendor_entry(None) is GENERIC


# ---- Retry-After ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "8"}, 8.0),
        ({"retry-after": "2.5"}, 2.5),
        ({"RETRY-AFTER": " 3 "}, 3.0),
        ({"retry-after-ms": "1500", "Retry-After": "9"}, 1.5),
        ({"Retry-After-Ms": "-20"}, 0.0),
        ({"retry-after-ms": "soon", "Retry-After": "4"}, 4.0),
        ({"Retry-After": "-5"}, 0.0),
        ({"Retry-After": "Thu, 01 Jan 2026 00:00:30 GMT"}, 30.0),
        ({"Retry-After": "Wed, 31 Dec 2025 23:00:00 GMT"}, 0.0),
        ({"Retry-After": "soon-ish"}, None),
        ({"Retry-After": "nan"}, None),
        ({"Retry-After": ""}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    """Retry-After forms: seconds, float seconds, HTTP date, ms; past -> 0; garbage -> None."""
    assert parse_retry_after(headers, now_wall=NOW) == expected


def test_retry_after_http_date_matches_epoch() -> None:
    """An HTTP date is read as UTC epoch seconds."""
    when = calendar.timegm((2026, 1, 1, 0, 1, 0))
    assert when - NOW == 60
    assert parse_retry_after({"Retry-After": "Thu, 01 Jan 2026 00:01:00 GMT"}, now_wall=NOW) == 60


# ---- vendor error bodies -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            (
                b'{"error": {"message": "too long", "type": "invalid_request_error", '
                b'"code": "context_length_exceeded"}}'
            ),
            ("context_length_exceeded", "too long"),
        ),
        (
            '{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}',
            ("overloaded_error", "Overloaded"),
        ),
        ({"error": {"code": "1113", "message": "arrears"}}, ("1113", "arrears")),
        ({"error": "model not found"}, (None, "model not found")),
        ({"object": "error", "message": "bad", "type": "BadRequestError", "code": 400},
         ("BadRequestError", "bad")),
        ([{"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}}],
         ("429", "slow down")),
        (b"upstream connect error", (None, "upstream connect error")),
        (b"\xff\xfe{{not json", (None, "\ufffd\ufffd{{not json")),
        (b'{"error": {"message": ', (None, '{"error": {"message":')),
        (None, (None, "HTTP 400")),
        (b"", (None, "HTTP 400")),
        ({"error": {"message": 42}}, (None, "HTTP 400")),
        ({"error": {"type": True, "message": "x"}}, (None, "x")),
    ],
)  # fmt: skip
def test_vendor_error_reads_common_shapes(
    body: bytes | str | dict[str, object] | list[object] | None,
    expected: tuple[str | None, str],
) -> None:
    """vendor_error extracts type/code and message from OpenAI, Anthropic and plain bodies."""
    assert vendor_error(400, body) == expected  # type: ignore[arg-type]


def test_vendor_error_never_raises_on_deep_nesting() -> None:
    """A pathological body (deep nesting) gives a message, not an exception."""
    body = "[" * 100_000 + "]" * 100_000
    error_type, message = vendor_error(502, body)
    assert error_type is None
    assert message


def test_vendor_error_truncates_long_messages() -> None:
    """Messages are whitespace-normalised and capped at 2000 characters."""
    _, message = vendor_error(500, {"error": {"message": "x  \n y " * 1000}})
    assert len(message) == 2000
    assert "\n" not in message


def test_classify_http_builds_the_provider_error() -> None:
    """classify_http gathers class, type, message and Retry-After; to_error builds the subclass."""
    body = b'{"error": {"type": "requests", "code": "rate_limit_exceeded", "message": "slow"}}'
    failure = classify_http(429, {"Retry-After": "8"}, body, now_wall=NOW)
    error = failure.to_error(429, provider="openai")
    assert isinstance(error, RateLimited)
    assert (error.retry_after, error.error_type, error.provider) == (
        8.0,
        "rate_limit_exceeded",
        "openai",
    )
    quota = classify_http(402, {}, b"Insufficient Balance", now_wall=NOW, vendor="deepseek")
    assert isinstance(quota.to_error(402), QuotaExhausted)


# ---- exceptions ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (ProviderError.for_class("rate_limited", "429"), "rate_limited"),
        (asyncio.CancelledError(), "cancelled"),
        (TimeoutError(), "timeout"),
        (ConnectionResetError(), "provider_error"),
        (OSError("network unreachable"), "provider_error"),
        (RouteExhausted("every target failed"), "provider_error"),
        (RouteIneligible("no target can take it"), "invalid_request"),
        (StreamBroken("cut"), "provider_error"),
        (ValueError("bad json"), "provider_error"),
    ],
)
def test_classify_exception(exc: BaseException, expected: str) -> None:
    """Provider errors keep their class; cancellation, timeouts and nested routes map."""
    assert classify_exception(exc) == expected
