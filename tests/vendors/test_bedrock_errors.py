"""Bedrock's errors, classified: the type from `x-amzn-ErrorType` or the body's `__type`, each
golden error's class, and exception frames of a stream."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from turnout.vendors.aws_errors import bedrock_error, exception_type
from turnout.vendors.classify import classify_http

CASES: list[dict[str, Any]] = orjson.loads(
    (Path(__file__).parent.parent / "fixtures" / "bedrock" / "errors.json").read_bytes()
)


def classify(status: int, headers: dict[str, str], body: bytes, kind: str | None = None) -> str:
    """The error class the bedrock provider gives an error answer."""
    classed, normal = bedrock_error(status, headers, body, kind=kind)
    failure = classify_http(classed, headers, orjson.dumps(normal), now_wall=0.0, vendor="bedrock")
    return failure.error_class


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['type']}-{c['class']}")
def test_each_error_type_in_the_header(case: dict[str, Any]) -> None:
    """With the type in `x-amzn-ErrorType` (as Bedrock sends it), each error has its class."""
    header = {
        "x-amzn-ErrorType": f"{case['type']}:http://internal.amazon.com/coral/com.amazon.bedrock/"
    }
    body = orjson.dumps({"message": case["message"]})
    assert classify(case["status"], header, body) == case["class"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['type']}-{c['class']}")
def test_each_error_type_in_the_body(case: dict[str, Any]) -> None:
    """With the type only in the body's `__type`, the class is the same."""
    body = orjson.dumps(
        {"__type": f"com.amazon.coral.service#{case['type']}", "Message": case["message"]}
    )
    assert classify(case["status"], {}, body) == case["class"]


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("throttlingException", "rate_limited"),
        ("serviceUnavailableException", "provider_error"),
        ("internalServerException", "provider_error"),
        ("modelStreamErrorException", "provider_error"),
        ("modelTimeoutException", "timeout"),
        ("validationException", "invalid_request"),
        ("somethingNewException", "provider_error"),
    ],
)
def test_exception_frames(kind: str, expected: str) -> None:
    """An in-stream exception frame is classified by its `:exception-type` as a whole call's
    error of that type would be (an unknown type is the provider's fault)."""
    assert classify(200, {}, b'{"message": "x"}', kind=kind) == expected


def test_type_spellings() -> None:
    """Header, `__type` and frame spellings all read as the capitalised type name."""
    assert exception_type("ThrottlingException:http://x/") == "ThrottlingException"
    assert exception_type("com.amazon.coral.validate#ValidationException") == "ValidationException"
    assert exception_type("throttlingException") == "ThrottlingException"
    assert exception_type("") is None
    assert exception_type(None) is None
