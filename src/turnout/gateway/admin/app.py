"""The admin API as an ASGI app: the gateway hands it every request under `/admin/`.

Rule 1: the admin key is checked first (401 `invalid_admin_key` for a missing or unknown
one, whatever the path), then the path and method (404, 405), then the body (415, 413, 400).
Rule 2: whatever a handler raises is answered in the error envelope (`replies`); an
unexpected failure is logged with its traceback and answered 500 `internal_error`, never
with its details.
Rule 3: the OpenAPI document is built once, on first request.
Rule 4: a wrong admin key is a failed sign-in, logged and counted per peer address; a peer with
too many of them gets 429 `too_many_sign_ins` with `Retry-After`, its key unchecked
(`turnout.access.sign_ins`); a request without any key is logged once per burst per peer
(`turnout.gateway.observe.sign_in_log`).
Rule 5: every write is logged once it is answered (`write_log`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from turnout.access.sign_ins import SignInThrottle, peer_of, refused_sign_in
from turnout.errors import ConfigError, SecretKeyMissing, StoreError
from turnout.gateway.admin.audit import audit_operations
from turnout.gateway.admin.auth import admin_key_id, presented_key, verify
from turnout.gateway.admin.dispatch import AdminCall, Operation, Router, check_params, query_of
from turnout.gateway.admin.dispatch import read_body as read_admin_body
from turnout.gateway.admin.health import health_operations
from turnout.gateway.admin.objects import COLLECTIONS, object_operations, project_operations
from turnout.gateway.admin.openapi import openapi_document
from turnout.gateway.admin.replies import (
    AdminError,
    error_reply,
    json_body,
    store_unreachable,
)
from turnout.gateway.admin.routing_test import routing_operations
from turnout.gateway.admin.usage import usage_operations
from turnout.gateway.admin.write_log import is_write, log_write
from turnout.gateway.observe.sign_in_log import KeylessSignIns

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, MutableMapping

    from turnout.gateway.admin.context import AdminContext
    from turnout.gateway.observe.activity import Activity
    from turnout.gateway.responses.respond import Reply

__all__ = ["AdminApp", "admin_operations"]

logger = logging.getLogger("turnout.admin")


def admin_operations() -> tuple[Operation, ...]:
    """Every operation of the admin API but the OpenAPI document's own."""
    return (
        *project_operations(),
        *(operation for c in COLLECTIONS for operation in object_operations(c)),
        *audit_operations(),
        *health_operations(),
        *routing_operations(),
        *usage_operations(),
    )


class AdminApp:
    """The admin API over `context` (see the module rules); `sign_ins` (default: a new
    `SignInThrottle`) counts failed admin keys, shared with the dashboard."""

    def __init__(
        self,
        context: AdminContext,
        *,
        activity: Activity | None = None,
        sign_ins: SignInThrottle | None = None,
    ) -> None:
        self.context = context
        self.activity = activity
        self.sign_ins = sign_ins if sign_ins is not None else SignInThrottle()
        self.keyless = KeylessSignIns()
        """Requests without any admin key, logged once per burst per peer (Rule 4)."""
        self._document: dict[str, Any] | None = None
        operations = admin_operations()
        openapi = Operation(
            "GET",
            "/openapi.json",
            self._openapi,
            "This document",
            "meta",
            (200, None),
            operation_id="get_openapi",
        )
        self.router = Router((*operations, openapi))

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        try:
            reply = await self._answer(scope, receive)
        except Exception as exc:  # Rule 2: every failure is answered
            if store_unreachable(exc):
                logger.warning(
                    "admin API: %s %s: the store cannot be reached (%s)",
                    scope["method"],
                    scope["path"],
                    type(exc).__name__,
                )
            elif isinstance(exc, SecretKeyMissing):
                # The message is the whole story: no traceback.
                logger.error("admin API: %s %s: %s", scope["method"], scope["path"], exc)  # noqa: TRY400
            elif not isinstance(exc, AdminError | ConfigError | StoreError):
                logger.exception("admin API: %s %s failed", scope["method"], scope["path"])
            reply = error_reply(exc)
        if reply is None:
            return
        headers = list(reply.headers)
        if reply.status != 204:
            headers.append((b"content-length", str(len(reply.body)).encode()))
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        await send({"type": "http.response.body", "body": reply.body, "more_body": False})

    async def _answer(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
    ) -> Reply | None:
        headers = {
            name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]
        }
        admin = admin_key_id(self._admin_key(scope, headers))
        operation, params = self.router.match(scope["method"], scope["path"])
        writes = is_write(operation)
        body: dict[str, Any] = {}
        try:
            check_params(params)
            if operation.request is not None:
                read = await read_admin_body(receive, headers, operation)
                if read is None:
                    return None  # the caller left
                body = read
            call = AdminCall(self.context, admin, params, query_of(scope), body, self.activity)
            reply = await operation.handler(call)
        except Exception as exc:
            if writes:  # Rule 5
                log_write(operation, admin, params, body, status=error_reply(exc).status)
            raise
        if writes:
            log_write(operation, admin, params, body, status=reply.status, answer=reply.body)
        return reply

    def _admin_key(self, scope: MutableMapping[str, Any], headers: dict[str, str]) -> str:
        """Rules 1 and 4: the hash of the request's admin key, or the refusal."""
        presented = presented_key(headers)
        peer = peer_of(scope)
        wait = self.sign_ins.retry_after(peer) if presented is not None else None
        if wait is not None:
            message = f"too many failed sign-ins from this address; try again in {wait} s"
            raise AdminError(429, "too_many_sign_ins", message, {"retry_after": wait})
        key_hash = verify(presented, self.context.admin_key_hashes())
        if key_hash is None:
            if presented is not None:
                refused_sign_in(self.sign_ins, peer, presented, "admin_api")
            else:
                self.keyless.refused("admin_api", peer)
            raise AdminError(401, "invalid_admin_key", "a valid admin key is required")
        return key_hash

    async def _openapi(self, call: AdminCall) -> Reply:
        if self._document is None:
            self._document = openapi_document(self.router.operations)
        return json_body(200, self._document)
