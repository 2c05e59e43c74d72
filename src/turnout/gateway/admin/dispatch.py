"""The admin API's own small router: operations by method and path template, the request as
a handler sees it (`AdminCall`), and the body rules.

Rule 1: a path template is literal segments and `{name}` segments; a request path matches a
template segment by segment (no trailing slash, no empty segment). A path that matches no
template is 404; one that matches with another method is 405 naming the allowed methods.
HEAD is GET.
Rule 2: a path parameter is 1 to 128 visible ASCII characters (a request id's bounds; stored
ids are shorter), else the object cannot exist: 404 before any store read.
Rule 3: an operation with a body takes only its content types (`application/json`; a PATCH
also `application/merge-patch+json`), parameters ignored: any other is 415. The body is read
up to `MAX_BODY_BYTES` (413 beyond) and must be one JSON object (400 `invalid_request`
naming the problem); no string in it may hold a NUL character.
Rule 4: a query parameter given twice counts once, the last value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import parse_qsl

import orjson

from turnout.gateway.admin.replies import AdminError

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, MutableMapping

    from turnout.gateway.admin.context import AdminContext
    from turnout.gateway.observe.activity import Activity
    from turnout.gateway.responses.respond import Reply

__all__ = [
    "JSON_TYPE",
    "MAX_BODY_BYTES",
    "MERGE_PATCH_TYPE",
    "PREFIX",
    "AdminCall",
    "Operation",
    "Router",
    "read_body",
]

PREFIX: Final = "/admin/v1"
MAX_BODY_BYTES: Final = 1024 * 1024
"""The largest admin request body (1 MiB)."""
JSON_TYPE: Final = "application/json"
MERGE_PATCH_TYPE: Final = "application/merge-patch+json"
_PARAM: Final = re.compile(r"[!-~]{1,128}")


@dataclass(frozen=True, slots=True)
class AdminCall:
    """One admin request as a handler sees it: the context, the admin key's id (`actor`),
    the path parameters, the query, the parsed body (an empty object without one) and what
    this process served lately (`activity`, None when the app keeps none)."""

    context: AdminContext
    actor: str
    params: Mapping[str, str]
    query: Mapping[str, str]
    body: dict[str, Any] = field(default_factory=dict)
    activity: Activity | None = None


@dataclass(frozen=True, slots=True)
class Operation:
    """One endpoint: method, path template (after `/admin/v1`), handler, and what the OpenAPI
    document says of it: `summary`, `tag`, `request` (the body schema's name, None: no body),
    `ok` (the success status and its schema name, None: no body), `query` parameters as
    `(name, schema, description)`, the error statuses it may answer besides 401 (`errors`),
    and its `operation_id` (default: the handler's name)."""

    method: str
    path: str
    handler: Callable[[AdminCall], Awaitable[Reply]]
    summary: str
    tag: str
    ok: tuple[int, str | None]
    request: str | None = None
    query: tuple[tuple[str, dict[str, Any], str], ...] = ()
    errors: tuple[int, ...] = ()
    operation_id: str = ""

    @property
    def name(self) -> str:
        """The OpenAPI `operationId`: `operation_id`, else the handler's name."""
        return self.operation_id or self.handler.__name__

    @property
    def content_types(self) -> tuple[str, ...]:
        """Rule 3: the body's accepted content types."""
        return (MERGE_PATCH_TYPE, JSON_TYPE) if self.method == "PATCH" else (JSON_TYPE,)


class Router:
    """Operations by path template (Rule 1)."""

    def __init__(self, operations: tuple[Operation, ...]) -> None:
        self.operations = operations
        self._templates: dict[tuple[str, ...], dict[str, Operation]] = {}
        for operation in operations:
            segments = tuple(operation.path.strip("/").split("/"))
            self._templates.setdefault(segments, {})[operation.method] = operation

    def match(self, method: str, path: str) -> tuple[Operation, dict[str, str]]:
        """The operation for `method` and the full request path, and its parameters."""
        method = "GET" if method == "HEAD" else method
        if not path.startswith(PREFIX + "/"):
            raise _not_found(path)
        segments = path[len(PREFIX) + 1 :].split("/")
        for template, methods in self._templates.items():
            params = _bind(template, segments)
            if params is None:
                continue
            operation = methods.get(method)
            if operation is None:
                allowed = ", ".join(sorted(methods))
                raise AdminError(
                    405,
                    "method_not_allowed",
                    f"{path} does not accept {method} (allowed: {allowed})",
                    {"allowed": sorted(methods)},
                )
            return operation, params
        raise _not_found(path)


def _bind(template: tuple[str, ...], segments: list[str]) -> dict[str, str] | None:
    if len(template) != len(segments):
        return None
    params: dict[str, str] = {}
    for part, segment in zip(template, segments, strict=True):
        if part.startswith("{"):
            if not segment:
                return None
            params[part[1:-1]] = segment
        elif part != segment:
            return None
    return params


def _not_found(path: str) -> AdminError:
    return AdminError(404, "NOT_FOUND", f"no admin endpoint {path}")


def check_params(params: Mapping[str, str]) -> None:
    """Rule 2: a malformed id names no object."""
    for name, value in params.items():
        if _PARAM.fullmatch(value) is None:
            raise AdminError(404, "NOT_FOUND", f"no object with that {name}")


def query_of(scope: MutableMapping[str, Any]) -> dict[str, str]:
    """Rule 4: the query string's parameters."""
    raw: bytes = scope.get("query_string", b"")
    text = raw.decode("latin-1")
    return dict(parse_qsl(text, keep_blank_values=True))


async def read_body(
    receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
    headers: Mapping[str, str],
    operation: Operation,
) -> dict[str, Any] | None:
    """Rule 3: the body's JSON object (None when the caller left first)."""
    declared = headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise _too_large()
    media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media not in operation.content_types:
        accepted = " or ".join(operation.content_types)
        got = f"{media!r}" if media else "none"
        raise AdminError(
            415,
            "unsupported_media_type",
            f"the body's content-type must be {accepted} (got {got})",
            {"accepted": list(operation.content_types)},
        )
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        part = message.get("body", b"")
        size += len(part)
        if size > MAX_BODY_BYTES:
            raise _too_large()
        parts.append(part)
        if not message.get("more_body", False):
            break
    return parse_object(b"".join(parts))


def parse_object(raw: bytes) -> dict[str, Any]:
    """Rule 3: `raw` as one JSON object without NUL characters."""
    if not raw.strip():
        raise AdminError(400, "invalid_request", "the body is empty: send a JSON object")
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise AdminError(400, "invalid_request", f"the body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        kind = "an array" if isinstance(body, list) else f"a JSON {type(body).__name__}"
        raise AdminError(400, "invalid_request", f"the body must be a JSON object, not {kind}")
    path = _nul_path(body, "")
    if path is not None:
        raise AdminError(
            400,
            "invalid_request",
            f"{path or 'body'}: a string may not hold a NUL character",
        )
    return body


def _nul_path(value: Any, path: str) -> str | None:
    """The path of the first string (key or value) holding a NUL character, else None."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if "\x00" in key:
                return where
            found = _nul_path(item, where)
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _nul_path(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def _too_large() -> AdminError:
    return AdminError(
        413,
        "request_too_large",
        f"the request body is larger than the admin API's limit of {MAX_BODY_BYTES} bytes",
    )
