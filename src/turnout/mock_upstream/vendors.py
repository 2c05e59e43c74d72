"""Vendor-flavoured error bodies and bad bytes, as the mock upstream sends them.

Each vendor's shape and wording follows what that vendor's API is publicly seen to return:
OpenAI `{"error": {"message", "type", "param", "code"}}`; Anthropic `{"type": "error", "error":
{"type", "message"}, "request_id"}`; Moonshot (Kimi) the OpenAI shape without `param`/`code`;
Z.ai `{"error": {"code": "1113", "message"}}` with numeric business codes; xAI `{"code", "error"}`
with the error as a plain string.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from turnout.mock_upstream.faults import Fault

__all__ = ["REASONS", "ErrorReply", "bad_body", "error_reply"]

_OPENAI_LIKE = frozenset({"openai", "azure", "deepseek", "groq", "ollama", "vllm"})

_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "overloaded_error",
    504: "timeout_error",
    529: "overloaded_error",
}

REASONS = {
    400: "Bad request.",
    401: "Incorrect API key provided.",
    402: "Payment required.",
    403: "You are not allowed to access this resource.",
    404: "The model does not exist or you do not have access to it.",
    408: "Request timed out.",
    409: "Conflict: the request could not be completed, please retry.",
    413: "Request entity too large.",
    422: "Unprocessable entity.",
    429: "Rate limit reached. Please try again later.",
    500: "The server had an error while processing your request. Sorry about that!",
    501: "Not implemented.",
    502: "Bad gateway.",
    503: "The engine is currently overloaded, please try again later.",
    504: "Gateway timeout.",
    529: "Overloaded",
}

_ANTHROPIC_CREDIT = (
    "Your credit balance is too low to access the Anthropic API. "
    "Please go to Plans & Billing to upgrade or purchase credits."
)
_KIMI_QUOTA = (
    "Your account org-mock <ak-mock> is suspended due to insufficient balance, "
    "please recharge your account or check your plan and billing details"
)
_XAI_CREDIT = (
    "Your team mock-team has either used all available credits or reached its monthly "
    "spending limit. To continue making API requests, please purchase more credits or "
    "raise your spending limit."
)
_OPENAI_CONTEXT = (
    "This model's maximum context length is 128000 tokens. However, your messages resulted "
    "in 130412 tokens. Please reduce the length of the messages."
)
_AZURE_POLICY = (
    "The response was filtered due to the prompt triggering Azure OpenAI's content "
    "management policy. Please modify your prompt and retry."
)
_OPENAI_POLICY = (
    "Your request was rejected as a result of our safety system. Your prompt may contain "
    "text that is not allowed by our safety system."
)


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """A status, extra headers and a body for an error answer."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


def _openai_type(status: int) -> str:
    if status == 401:
        return "invalid_request_error"
    if status == 429:
        return "requests"
    if status >= 500:
        return "server_error"
    return "invalid_request_error"


def _openai_code(status: int) -> str | None:
    return {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}.get(status)


def _shape(
    vendor: str, api: str, status: int, *, kind: str | None, message: str, request_id: str
) -> dict[str, Any]:
    """Wrap (`kind`, `message`) in the vendor's error shape."""
    if vendor == "anthropic" or (api == "anthropic" and vendor not in {"zai", "xai"}):
        kind = kind or _ANTHROPIC_TYPES.get(status, "api_error")
        return {
            "type": "error",
            "error": {"type": kind, "message": message},
            "request_id": request_id,
        }
    if vendor == "kimi":
        return {"error": {"message": message, "type": kind or _openai_type(status)}}
    if vendor == "zai":
        code = kind or ("1302" if status == 429 else str(status))
        if api == "anthropic":
            return {
                "type": "error",
                "error": {
                    "type": _ANTHROPIC_TYPES.get(status, "api_error"),
                    "code": code,
                    "message": message,
                },
                "request_id": request_id,
            }
        return {"error": {"code": code, "message": message}}
    if vendor == "xai":
        return {"code": kind or "Client specified an invalid argument", "error": message}
    return {
        "error": {
            "message": message,
            "type": kind or _openai_type(status),
            "param": None,
            "code": _openai_code(status) if kind is None else kind,
        }
    }


def _quota(vendor: str, reset_in: float) -> tuple[int, str | None, str]:
    """(status, type/code, message) of the vendor's quota or credit signal."""
    if vendor == "anthropic":
        return (
            400,
            "invalid_request_error",
            _ANTHROPIC_CREDIT,
        )
    if vendor == "deepseek":
        return 402, "invalid_request_error", "Insufficient Balance"
    if vendor == "kimi":
        return (
            429,
            "exceeded_current_quota_error",
            _KIMI_QUOTA,
        )
    if vendor == "zai":
        if reset_in > 0:
            # Z.ai states the reset as a naive wall time in China Standard Time (UTC+8).
            at = time.gmtime(time.time() + reset_in + 8 * 3600)
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", at)
            return 429, "1308", f"Usage limit reached for 5 hour. Your limit will reset at {stamp}"
        return 429, "1113", "Insufficient balance or no resource package. Please recharge."
    if vendor == "xai":
        return (
            429,
            "Some resource has been exhausted",
            _XAI_CREDIT,
        )
    return (
        429,
        "insufficient_quota",
        "You exceeded your current quota, please check your plan and billing details.",
    )


def _context_length(vendor: str, api: str) -> tuple[str | None, str]:
    if vendor == "anthropic" or (api == "anthropic" and vendor not in {"zai", "xai"}):
        return "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"
    return (
        "context_length_exceeded",
        _OPENAI_CONTEXT,
    )


def _content_policy(vendor: str, api: str) -> tuple[str | None, str]:
    if vendor == "anthropic" or (api == "anthropic" and vendor not in {"zai", "xai"}):
        return "invalid_request_error", "Output blocked by content filtering policy"
    if vendor == "azure":
        return (
            "content_filter",
            _AZURE_POLICY,
        )
    return (
        "content_policy_violation",
        _OPENAI_POLICY,
    )


def error_reply(fault: Fault, *, api: str, model: str, request_id: str) -> ErrorReply:
    """The error answer `fault` asks for, in the flavour of `fault.vendor` (default: by `api`).

    `api` is `openai` or `anthropic` (which endpoint was called).
    """
    vendor = fault.vendor or ("anthropic" if api == "anthropic" else "openai")
    if fault.quota:
        status, kind, message = _quota(vendor, fault.reset_in)
    elif fault.context_length:
        status, (kind, message) = 400, _context_length(vendor, api)
    elif fault.content_policy:
        status, (kind, message) = 400, _content_policy(vendor, api)
    else:
        status = fault.status or 500
        kind = None
        message = REASONS.get(status, f"HTTP {status}")
        if status == 429 and vendor == "kimi":
            kind = "rate_limit_reached_error"
            message = "We're receiving too many requests at the moment. Please wait a moment."
        elif status == 429 and vendor in _OPENAI_LIKE:
            message = f"Rate limit reached for {model} on requests per min (RPM). Please retry."
    status = fault.status or status
    kind = fault.error_type or kind
    message = fault.message or message
    body = _shape(vendor, api, status, kind=kind, message=message, request_id=request_id)
    return ErrorReply(status, orjson.dumps(body))


_HTML_502 = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n"
)


def bad_body(kind: str, good: bytes) -> tuple[bytes, str]:
    """Bad bytes of `kind` (see `faults.BAD_BODIES`) and their content type; `good` is the
    answer that would have been sent."""
    if kind == "garbage":
        return b"\x00\x01 this is not json {{{ \xc3\x28 ]]", "application/json"
    if kind == "truncated":
        return good[: max(1, len(good) // 2)], "application/json"
    if kind == "nonutf8":
        return b'{"id": "\xff\xfe\xfd", "choices": [\xc3\x28]}', "application/json"
    if kind == "html":
        return _HTML_502, "text/html"
    if kind == "empty":
        return b"", "application/json"
    return good, "text/html; charset=utf-8"
