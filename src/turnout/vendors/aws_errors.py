"""AWS Bedrock's errors, read into the shape the classifier takes (no I/O).

Bedrock names an error by its exception type: in the `x-amzn-ErrorType` header
(`ThrottlingException:http://…`), in the body's `__type` (`…#ValidationException`), or, in a
stream, in an exception frame's `:exception-type` (`throttlingException`). The message is the
body's `message` (or `Message`).

Rule 1: the type is read from the header first, then the body, and spelt in its full
capitalised form without any namespace or URL.
Rule 2: the status used to classify is Bedrock's own, except where the type says more:
`ModelNotReadyException` (a 429 that no waiting on the caller's side cures) and
`ModelErrorException` / `ModelStreamErrorException` (424) are provider errors (503, 502);
`ModelTimeoutException` is a timeout (408); `ServiceQuotaExceededException` is exhausted quota
on any status (the catalog's quota type). An exception frame of a stream has no status: it
gets the one its type has on a whole call (`STATUSES`; 500 for a type not listed).
Rule 3: the body handed on is `{"type": <type>, "message": <message>}`, so the catalog's
type and message signals apply (a `ValidationException` about the input being too long is
`context_length`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["STATUSES", "bedrock_error", "exception_type"]

STATUSES = {
    "ThrottlingException": 429,
    "ServiceQuotaExceededException": 429,
    "ModelNotReadyException": 503,
    "ServiceUnavailableException": 503,
    "InternalServerException": 500,
    "ModelErrorException": 502,
    "ModelStreamErrorException": 502,
    "ModelTimeoutException": 408,
    "AccessDeniedException": 403,
    "UnrecognizedClientException": 403,
    "ExpiredTokenException": 403,
    "InvalidSignatureException": 403,
    "IncompleteSignatureException": 403,
    "ValidationException": 400,
    "ResourceNotFoundException": 404,
}
"""Exception type -> the status Bedrock answers it with (Rule 2), for exception frames."""
_REMAPPED = {
    "ModelNotReadyException": 503,
    "ModelErrorException": 502,
    "ModelStreamErrorException": 502,
    "ModelTimeoutException": 408,
}


def exception_type(value: object) -> str | None:
    """Rule 1: the exception type in `value` (a header value, a `__type`, a frame header)."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().split(":", 1)[0].rsplit("#", 1)[-1].rsplit(".", 1)[-1]
    return text[:1].upper() + text[1:] if text else None


def _body(body: bytes | str | Mapping[str, Any] | None) -> Mapping[str, Any]:
    if isinstance(body, bytes | str):
        try:
            body = orjson.loads(body)
        except orjson.JSONDecodeError:
            return {"message": body.decode("utf-8", "replace") if isinstance(body, bytes) else body}
    return body if isinstance(body, dict) else {}


def bedrock_error(
    status: int,
    headers: Mapping[str, str],
    body: bytes | str | Mapping[str, Any] | None,
    *,
    kind: str | None = None,
) -> tuple[int, dict[str, str]]:
    """The status to classify with and the body to classify (Rules 1-3). `kind` is an
    exception frame's type, which wins over the header and body."""
    data = _body(body)
    found = exception_type(kind)
    if found is None:
        lowered = {k.lower(): v for k, v in headers.items()}
        found = exception_type(lowered.get("x-amzn-errortype"))
    if found is None:
        found = exception_type(data.get("__type") or data.get("code"))
    message = data.get("message", data.get("Message"))
    text = message if isinstance(message, str) else ""
    out = {"message": text} if found is None else {"type": found, "message": text}
    if kind is not None:
        return STATUSES.get(found or "", 500), out
    return _REMAPPED.get(found or "", status), out
