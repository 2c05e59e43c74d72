"""Answers of the admin API: JSON bodies, and every error in one envelope,
`{"error": {"code", "message", "meta"}}`, from one table.

Rule 1: every 4xx and 5xx answer is the envelope; `meta` is an object (empty when there is
nothing to add). A validation error lists each problem in `meta.errors` as `{path, message}`;
a 405 lists the path's methods in `meta.allowed` and in an `allow` header.
Rule 2: errors of turnout's own carry their status and code (`AdminError`, `ConfigError`,
`StoreError`; a missing `TURNOUT_SECRET_KEY` is 503 `SECRET_KEY_MISSING`, its `meta` naming the
variable); a value the database refuses (too long for its column) is a 400; a store that
cannot be reached (a lost or refused connection, or no answer within the bound of a store
call) is a 503 `store_unavailable`; anything else
is a 500 `internal_error` whose message says nothing of the cause (the log has it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import orjson
from sqlalchemy.exc import DataError

from turnout.errors import ConfigError, SecretKeyMissing, StoreError
from turnout.gateway.responses.respond import Reply
from turnout.store.calls import is_unreachable
from turnout.store.secret_box import SECRET_KEY_VARIABLE

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "NO_CONTENT",
    "AdminError",
    "error_reply",
    "json_body",
    "problems_meta",
    "store_unreachable",
]

_JSON: Final = (b"content-type", b"application/json")


class AdminError(Exception):
    """A refusal of the admin API's own: `status`, `code`, `message` and `meta`."""

    def __init__(
        self, status: int, code: str, message: str, meta: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.meta: dict[str, Any] = dict(meta or {})


NO_CONTENT: Final = Reply(204, [], b"")
"""The answer to a delete."""


def json_body(status: int, body: Any) -> Reply:
    """A JSON answer."""
    return Reply(status, [_JSON], orjson.dumps(body))


def problems_meta(problems: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """`meta` of a validation error: each problem as `{path, message}`."""
    return {"errors": [{"path": path, "message": message} for path, message in problems]}


def error_reply(exc: BaseException) -> Reply:
    """Rule 2: the envelope of `exc`."""
    if isinstance(exc, AdminError):
        reply = _envelope(exc.status, exc.code, exc.message, exc.meta)
        if exc.status == 405:
            reply.headers.append((b"allow", ", ".join(exc.meta.get("allowed", ())).encode()))
        elif exc.status == 429:
            reply.headers.append((b"retry-after", str(exc.meta["retry_after"]).encode()))
        return reply
    if isinstance(exc, StoreError):
        return _envelope(exc.status, exc.code, exc.message, exc.meta)
    if isinstance(exc, SecretKeyMissing):
        return _envelope(exc.status, exc.code, str(exc), {"variable": SECRET_KEY_VARIABLE})
    if isinstance(exc, ConfigError):
        problems = exc.errors or (("body", str(exc)),)
        return _envelope(exc.status, exc.code, str(exc), problems_meta(problems))
    if isinstance(exc, DataError):
        message = "a value is too long for its field, or holds a character the store refuses"
        return _envelope(400, "VALIDATION_FAILED", message, problems_meta([("body", message)]))
    if store_unreachable(exc):
        message = "the store cannot be reached; try again once it answers"
        return _envelope(503, "store_unavailable", message, {})
    return _envelope(500, "internal_error", "the admin API failed; the server log says why", {})


def store_unreachable(exc: BaseException) -> bool:
    """Whether `exc` says the database could not be reached, did not answer in time, or the
    connection was lost."""
    return is_unreachable(exc)


def _envelope(status: int, code: str, message: str, meta: dict[str, Any]) -> Reply:
    return json_body(status, {"error": {"code": code, "message": message, "meta": meta}})
