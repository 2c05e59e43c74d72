"""Gemini's error bodies (Google's `google.rpc.Status`) classified through the vendor catalog,
against golden fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

from turnout.vendors.classify import classify_http
from turnout.vendors.google_errors import read_google_error

FIXTURES = Path(__file__).parent.parent / "fixtures" / "gemini"
NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("name", "status", "error_class", "retry_after"),
    [
        ("error_quota_daily.json", 429, "quota_exhausted", 37.0),
        ("error_rate_minute.json", 429, "rate_limited", 12.5),
        ("error_rate_plain.json", 429, "rate_limited", None),
        ("error_context.json", 400, "context_length", None),
        ("error_invalid.json", 400, "invalid_request", None),
        ("error_key_invalid.json", 400, "auth", None),
        ("error_unauthenticated.json", 401, "auth", None),
        ("error_permission.json", 403, "auth", None),
        ("error_internal.json", 500, "provider_error", None),
        ("error_unavailable.json", 503, "provider_error", None),
    ],
)
def test_gemini_errors_classify(
    name: str, status: int, error_class: str, retry_after: float | None
) -> None:
    """Each Gemini error body gets its error class, its status name as the error type, and
    `RetryInfo.retryDelay` as its retry-after."""
    body = (FIXTURES / name).read_bytes()
    failure = classify_http(status, {}, body, now_wall=NOW, vendor="gemini")
    assert failure.error_class == error_class
    assert failure.retry_after == retry_after
    assert failure.error_type is not None
    assert failure.error_type.isupper()
    assert failure.message != f"HTTP {status}"


def test_a_retry_after_header_wins_over_retry_info() -> None:
    """A Retry-After header, when Google sends one, is used rather than the body's delay."""
    body = (FIXTURES / "error_quota_daily.json").read_bytes()
    failure = classify_http(429, {"retry-after": "5"}, body, now_wall=NOW, vendor="gemini")
    assert (failure.error_class, failure.retry_after) == ("quota_exhausted", 5.0)


def test_quota_message_alone_is_a_rate_limit_for_gemini() -> None:
    """Gemini words every 429 'You exceeded your current quota': without per-day quota
    details it stays rate_limited (the common message signal would park the key)."""
    body = (FIXTURES / "error_rate_minute.json").read_bytes()
    assert classify_http(429, {}, body, now_wall=NOW, vendor="gemini").error_class == (
        "rate_limited"
    )
    assert classify_http(429, {}, body, now_wall=NOW, vendor=None).error_class == (
        "quota_exhausted"
    )


def test_gemini_openai_preset_reads_googles_list_envelope() -> None:
    """Google's OpenAI-compatible endpoint wraps the same error in a list: read alike."""
    body = b"[" + (FIXTURES / "error_rate_minute.json").read_bytes() + b"]"
    failure = classify_http(429, {}, body, now_wall=NOW, vendor="gemini-openai")
    assert (failure.error_class, failure.retry_after) == ("rate_limited", 12.5)


@pytest.mark.parametrize(
    ("delay", "seconds"),
    [("37s", 37.0), ("0.5s", 0.5), ({"seconds": 3, "nanos": 500000000}, 3.5), ("soon", None)],
)
def test_retry_delay_forms(delay: object, seconds: float | None) -> None:
    """retryDelay as a duration string or a Duration object; anything else is ignored."""
    body = {
        "error": {
            "code": 429,
            "message": "m",
            "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}],
        }
    }
    found = read_google_error(body)
    assert found is not None
    assert found.retry_after == seconds
    assert found.quota is False


def test_quota_limit_in_error_info_is_quota() -> None:
    """An ErrorInfo whose quota_limit is per day counts as exhausted quota."""
    body = {
        "error": {
            "code": 429,
            "message": "Quota exceeded",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "RATE_LIMIT_EXCEEDED",
                    "metadata": {"quota_limit": "GenerateContentRequestsPerDay"},
                }
            ],
        }
    }
    found = read_google_error(body)
    assert found is not None
    assert found.quota is True


@pytest.mark.parametrize("body", [None, "text", {"error": "x"}, {"error": {"code": 1}}, []])
def test_other_shapes_are_not_google_errors(body: object) -> None:
    """Bodies of other shapes read as no Google error, never raising."""
    assert read_google_error(body) is None
