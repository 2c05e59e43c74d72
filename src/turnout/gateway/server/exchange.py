"""One HTTP request in flight: its headers and body, the caller, and what has been sent back.

Rule 1: a response is started once (`start`) and ended once (`end`); `reply` does both. After
`end`, nothing more is sent.
Rule 2: `gone` is set when the caller disconnected before the response ended; the app then
cancels the handler (and with it the upstream call) instead of answering.
Rule 3: a caller's `x-request-id` of 1 to 128 visible ASCII characters is the request's id
(`request_id`): the routing record takes it (`adopt`) and every response echoes it. Without
one (or with one that breaks the rule) the routing record's own id is used, or a fresh one.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from turnout.access.keys import (
    Caller,
    Credentials,
    authenticate,
    presented_caller,
    split_credentials,
)
from turnout.errors import RequestTooLarge
from turnout.routing.request_state import new_request_id

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence

    from turnout.gateway.client_formats import ClientFormat
    from turnout.gateway.exchange import Header, Reply
    from turnout.gateway.handlers.settings import GatewaySettings
    from turnout.gateway.runtime.live import Runtime
    from turnout.gateway.server.cycle import RequestCycle
    from turnout.record import RoutingRecord

__all__ = ["HttpExchange", "caller_request_id"]

_REQUEST_ID = re.compile("[!-~]{1,128}")


def caller_request_id(value: str | None) -> str | None:
    """A caller's `x-request-id` when it is 1 to 128 visible ASCII characters, else None."""
    if value is None or _REQUEST_ID.fullmatch(value) is None:
        return None
    return value


class HttpExchange:
    """One request, the `ServedExchange` the handlers answer: `scope`, lower-case `headers`
    (latin-1 text), the `body` once read, and the response side (see the module rules).
    `began` is when it arrived (`perf_counter`), `status` the status sent (0 before), `record`
    the routing record adopted, if any.

    Made from ASGI's `scope`, `receive` and `send`, or (`HttpExchange.direct`) from the server's
    `RequestCycle`, whose calls it then makes without the ASGI messages."""

    __slots__ = (
        "_caller",
        "_credentials",
        "_cycle",
        "_fresh_id",
        "_revoked",
        "_scope",
        "began",
        "body",
        "ended",
        "failure",
        "fmt",
        "gone",
        "headers",
        "receive",
        "record",
        "request_id",
        "send",
        "settings",
        "started",
        "status",
    )

    def __init__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
        settings: GatewaySettings,
        fmt: ClientFormat,
    ) -> None:
        self._init(scope["headers"], receive, send, settings, fmt)
        self._scope: MutableMapping[str, Any] | None = scope
        self._cycle: RequestCycle | None = None

    @classmethod
    def direct(
        cls, cycle: RequestCycle, settings: GatewaySettings, fmt: ClientFormat
    ) -> HttpExchange:
        """The exchange of a request the server hands over directly."""
        exchange = cls.__new__(cls)
        exchange._init(cycle.headers, cycle.receive, cycle.send, settings, fmt)
        exchange._scope = None
        exchange._cycle = cycle
        return exchange

    def _init(
        self,
        raw_headers: Iterable[tuple[bytes, bytes]],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
        settings: GatewaySettings,
        fmt: ClientFormat,
    ) -> None:
        self.began = time.perf_counter()
        self.receive = receive
        self.send = send
        self.settings = settings
        self.fmt = fmt
        headers: dict[str, str] = {}
        for raw_name, raw_value in raw_headers:
            name, value = raw_name.decode("latin-1"), raw_value.decode("latin-1")
            # A header sent twice (two `anthropic-beta` lines) reads as one comma-joined value.
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        self.headers = headers
        self.request_id = caller_request_id(headers.get("x-request-id"))
        self._credentials: Credentials | None = None
        self._caller: Caller | None = None
        self._revoked: Caller | None = None
        self.body = b""
        self.started = False
        self.ended = False
        self.gone = False
        self.status = 0
        self.record: RoutingRecord | None = None
        self.failure: BaseException | None = None
        """What the request was answered with an error for (set as it is answered)."""
        self._fresh_id: str | None = None

    @property
    def scope(self) -> MutableMapping[str, Any]:
        """The request's ASGI scope."""
        scope = self._scope
        if scope is None:
            assert self._cycle is not None
            scope = self._scope = self._cycle.scope
        return scope

    @property
    def method(self) -> str:
        """The request's method."""
        cycle = self._cycle
        return cycle.method if cycle is not None else self.scope["method"]

    @property
    def path(self) -> str:
        """The request's path, without its query."""
        cycle = self._cycle
        return cycle.path if cycle is not None else self.scope["path"]

    @property
    def cycle(self) -> RequestCycle | None:
        """The server's request, when the exchange was made from it (`direct`)."""
        return self._cycle

    @property
    def runtime(self) -> Runtime:
        """The runtime of the caller's project (with several projects, the caller is
        authenticated first)."""
        settings = self.settings
        served = settings.served
        if served.is_single:
            return settings.runtime
        return served.runtime_for(self.caller())

    def caller(self) -> Caller:
        """Who is calling: the anonymous caller under `auth: open`, else the key's
        caller (of any served project); a missing or unknown key raises `InvalidApiKey`.
        Checked once."""
        found = self._caller
        if found is None:
            settings = self.settings
            if settings.keys is None:
                found = settings.anonymous
            else:
                found = authenticate(self.credentials(), settings.runtime.project)
            self._caller = found
        return found

    def credentials(self) -> Credentials:
        """What the request's headers say about its caller (the key and the
        caller's own provider credential), read once."""
        found = self._credentials
        if found is None:
            found = split_credentials(self.headers, self.settings.keys)
            self._credentials = found
        return found

    def key_name(self) -> str | None:
        """The name of the key the request is logged and audited under (`accounted_caller`;
        never the key itself)."""
        found = self.accounted_caller()
        return None if found is None else found.key

    def accounted_caller(self) -> Caller | None:
        """Who the request is logged and audited under, once its credentials were read: the
        key's caller; for a key refused as revoked, the caller it stood for (the store
        remembers it); None for a missing or unknown key, and under `auth: open`."""
        found = self._credentials
        if found is None:
            return None
        if found.caller is not None or not found.key_presented or found.is_open:
            return found.caller
        if self._revoked is None:
            self._revoked = presented_caller(self.headers, self.settings.served.revoked)
        return self._revoked

    def project(self) -> str | None:
        """The project the request is logged and audited in: its caller's (a revoked key's
        too); for a missing or unknown key, the gateway's only project, or None when it
        serves several (the request names none of them)."""
        settings = self.settings
        caller = self._caller
        if caller is None:
            caller = settings.anonymous if settings.keys is None else self.accounted_caller()
        if caller is not None:
            return caller.project
        return settings.runtime.project if settings.served.is_single else None

    def reply_id(self) -> str:
        """The id a response without a routing record carries: the caller's, else a new one
        (the same one each time it is asked for)."""
        if self.request_id is not None:
            return self.request_id
        if self._fresh_id is None:
            self._fresh_id = new_request_id()
        return self._fresh_id

    @property
    def sent_id(self) -> str | None:
        """The id the response carried when it had no routing record: the caller's, or the one
        `reply_id` made (None when it made none)."""
        return self.request_id if self.request_id is not None else self._fresh_id

    def adopt(self, record: RoutingRecord | None) -> None:
        """Rule 3: give `record` (and its calls' ids) the caller's request id, if any."""
        if record is not None:
            self.record = record
        request_id = self.request_id
        if record is None or request_id is None or record.request_id == request_id:
            return
        record.request_id = request_id
        for entry in record.attempts:
            if entry.call_id is not None:
                entry.call_id = f"{request_id}.{entry.index}"

    async def read_body(self, limit: int) -> bool:
        """Read the whole body into `body` (False when the caller left first). A body over
        `limit` bytes raises `RequestTooLarge`, before reading it when its
        `content-length` says so."""
        declared = self.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise _too_large(limit)
        parts: list[bytes] = []
        size = 0
        cycle = self._cycle
        while True:
            if cycle is not None:
                got = await cycle.body_part()
                if got is None:
                    self.gone = True
                    return False
                part, more = got
            else:
                message = await self.receive()
                if message["type"] == "http.disconnect":
                    self.gone = True
                    return False
                part, more = message.get("body", b""), message.get("more_body", False)
            if part:
                size += len(part)
                if size > limit:
                    raise _too_large(limit)
                parts.append(part)
            if not more:
                break
        self.body = parts[0] if len(parts) == 1 else b"".join(parts)
        return True

    async def start(self, status: int, headers: Sequence[Header]) -> None:
        """Send the status line and headers."""
        self.started = True
        self.status = status
        if self._cycle is not None:
            await self._cycle.start(status, headers)
            return
        await self.send({"type": "http.response.start", "status": status, "headers": headers})

    async def write(self, data: bytes) -> None:
        """Send part of the body."""
        cycle = self._cycle
        if cycle is not None:
            if not cycle.send_body_now(data, more=True):
                await cycle.send_body(data, more=True)
            return
        await self.send({"type": "http.response.body", "body": data, "more_body": True})

    async def end(self, data: bytes = b"") -> None:
        """Send the last part of the body."""
        self.ended = True
        if self._cycle is not None:
            await self._cycle.send_body(data, more=False)
            return
        await self.send({"type": "http.response.body", "body": data, "more_body": False})

    async def reply(self, reply: Reply) -> None:
        """Send a whole response (with its `content-length`)."""
        self.started = True
        self.status = reply.status
        if self._cycle is not None:
            self.ended = True
            await self._cycle.respond(reply.status, reply.headers, reply.body)
            return
        headers = [*reply.headers, (b"content-length", str(len(reply.body)).encode())]
        await self.send({"type": "http.response.start", "status": reply.status, "headers": headers})
        self.ended = True
        await self.send({"type": "http.response.body", "body": reply.body, "more_body": False})


def _too_large(limit: int) -> RequestTooLarge:
    return RequestTooLarge(
        f"the request body is larger than the limit of {limit} bytes (server.max_body_bytes)"
    )
