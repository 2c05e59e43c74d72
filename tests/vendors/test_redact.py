"""Scrubbing secrets from an upstream's words: known secrets and key-shaped strings."""

from __future__ import annotations

import time

import pytest

from turnout.vendors.redact import REDACTED, redact, secrets_of


def test_known_secrets_are_replaced_longest_first() -> None:
    """Each known secret is replaced wherever it appears, a longer one before its prefix."""
    text = "key az-0123456789 and az-0123456789-long, again az-0123456789"
    assert redact(text, ["az-0123456789", "az-0123456789-long"]) == (
        f"key {REDACTED} and {REDACTED}, again {REDACTED}"
    )


def test_short_known_secrets_are_left_alone() -> None:
    """A known value under 8 characters is not scrubbed: it would hit ordinary words."""
    assert redact("the team is a", ["a", "team"]) == "the team is a"


@pytest.mark.parametrize(
    "secret",
    [
        "sk-proj-AbCdEf0123456789AbCdEf0123456789",
        "sk-ant-api03-AbCdEf0123456789_AbCdEf-0123456789",
        "sk-0123456789abcdef0123456789abcdef",
        "xai-AbCdEf0123456789AbCdEf0123456789",
        "gsk_AbCdEf0123456789AbCdEf0123456789",
        "AIzaSyA-0123456789abcdefghijklmnopqrstu",
        "AKIAIOSFODNN7EXAMPLE",
    ],
)
def test_key_shaped_strings_are_replaced(secret: str) -> None:
    """Keys of the known shapes are scrubbed without being configured."""
    assert redact(f"Incorrect API key provided: {secret}.") == (
        f"Incorrect API key provided: {REDACTED}."
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("got Authorization: Bearer eyJhbGciOi.J9xyz-abc", f"got Authorization: Bearer {REDACTED}"),
        ('{"api_key": "0123456789abcdef0123456789abcdef"}', f'{{"api_key": "{REDACTED}"}}'),
        ("token=ZXhhbXBsZS10b2tlbi12YWx1ZS0xMjM0NTY=", f"token={REDACTED}"),
        ("secret 0123456789abcdef0123456789abcdef", f"secret {REDACTED}"),
    ],
)
def test_tokens_after_their_names_are_replaced(text: str, expected: str) -> None:
    """A bearer token, and a long token after `key`, `token` or `secret`, are scrubbed."""
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "This model's maximum context length is 128000 tokens.",
        "Rate limit reached for gpt-4o-mini in organization org-abc on tokens per min.",
        "Invalid value for 'max_tokens': expected an integer.",
        "task-0123456789abcdef0123 failed",
    ],
)
def test_ordinary_error_text_is_kept(text: str) -> None:
    """Messages that hold no secret come back unchanged."""
    assert redact(text) == text


def test_secrets_of_header_values() -> None:
    """Header values give themselves and a bearer's token; short ones are dropped."""
    assert secrets_of(["Bearer sk-own-0123456789", "az-key-0123456789", "v1"]) == (
        "sk-own-0123456789",
        "Bearer sk-own-0123456789",
        "az-key-0123456789",
    )


def test_long_runs_after_a_name_do_not_backtrack() -> None:
    """Long runs of spaces or colons after a name are scrubbed in linear time."""
    texts = [
        "key" + " " * 200_000 + "x",
        '"api_key"' + " " * 200_000 + ":",
        "token" + ":" * 200_000,
    ]
    started = time.perf_counter()
    for text in texts:
        assert redact(text) == text
    assert time.perf_counter() - started < 5.0
