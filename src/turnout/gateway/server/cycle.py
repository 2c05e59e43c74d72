"""One request on a connection, as the ASGI app sees it: its scope (`http_scope`), then
`receive()`, which hands out the body as it arrives, and `send()`, which turns the response
messages into HTTP/1.1 bytes; and the whole responses the server gives in the app's place
(`error_response`).

Rule 1: the body is read only when the app asks for it: `receive()` is what sends
`100 Continue` and lets a connection read on, and no more than `HIGH_WATER` bytes of body
wait unread before the connection stops reading.
Rule 2: a response is one `http.response.start`, then `http.response.body` messages up to one
without `more_body`. Its head goes out with its first body part, or on the next turn of the
event loop when no part follows at once. A body without `content-length` is sent chunked
(HTTP/1.0: ended by the close); a HEAD response sends no body.
Rule 3: once the caller is gone, or the server answered in the app's place (a timeout, a
framing error), `receive()` says `http.disconnect` and `send()` drops what it is given.
Rule 4: `send()` waits while the connection's write buffer is over its high-water mark.
Rule 5: the gateway's own endpoints skip the ASGI messages: `read_body()` returns the whole
body, `respond()` writes a whole response in one write, `start()` and `send_body()` are
`send()` without the message dicts, and `on_leave` is called (once) when the caller goes, so
nothing has to poll `receive()` for the disconnect. They keep Rules 1 to 4; the ASGI scope is
made only when something asks for it.
"""

from __future__ import annotations

import asyncio
import time
from email.utils import formatdate
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Final, Protocol
from urllib.parse import unquote

import httptools

from turnout.gateway.client_formats import OPENAI
from turnout.gateway.responses.respond import error_reply
from turnout.routing.request_state import new_request_id

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, MutableMapping

__all__ = [
    "HIGH_WATER",
    "CycleConnection",
    "RequestCycle",
    "date_line",
    "error_response",
    "http_scope",
    "split_target",
    "status_line",
]

HIGH_WATER: Final = 64 * 1024
"""Bytes of a request body (or of requests waiting their turn) read ahead of the app."""

_SEPARATE_WRITE: Final = 64 * 1024
"""A body part at least this large is written apart from the head instead of copied onto it."""

_STATUS_LINES: dict[int, bytes] = {
    s.value: b"HTTP/1.1 %d %s\r\n" % (s.value, s.phrase.encode()) for s in HTTPStatus
}
_NO_BODY_STATUSES = frozenset((204, 304))
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_date_cache: list[Any] = [0, b""]  # [second, b"date: …\r\n"]
_ASGI: Final = {"version": "3.0", "spec_version": "2.3"}


def status_line(status: int) -> bytes:
    """`HTTP/1.1 200 OK\\r\\n` for `status`."""
    line = _STATUS_LINES.get(status)
    return line if line is not None else b"HTTP/1.1 %d Unknown\r\n" % status


def date_line() -> bytes:
    """The `date` header line of this second (computed once a second)."""
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache[0] = now
        _date_cache[1] = b"date: %s\r\n" % formatdate(now, usegmt=True).encode()
    line: bytes = _date_cache[1]
    return line


def split_target(url: bytes) -> tuple[str, bytes, bytes]:
    """A request target's decoded path, raw path and query string."""
    if url[:1] == b"/":
        raw_path, _, query = url.partition(b"?")
    else:  # absolute form (`http://host/path`) or `*`
        parsed = httptools.parse_url(url)
        raw_path, query = parsed.path or b"/", parsed.query or b""
    path = raw_path.decode("ascii")
    if "%" in path:
        path = unquote(path)
    return path, raw_path, query


def http_scope(
    url: bytes,
    headers: list[tuple[bytes, bytes]],
    *,
    method: str,
    version: str,
    addresses: tuple[Any, Any],
) -> dict[str, Any]:
    """The ASGI `http` scope of a request (`addresses`: the server's and the client's)."""
    return _scope(split_target(url), headers, method=method, version=version, addresses=addresses)


def _scope(
    target: tuple[str, bytes, bytes],
    headers: list[tuple[bytes, bytes]],
    *,
    method: str,
    version: str,
    addresses: tuple[Any, Any],
) -> dict[str, Any]:
    path, raw_path, query = target
    server, client = addresses
    return {
        "type": "http",
        "asgi": _ASGI,
        "http_version": version,
        "server": server,
        "client": client,
        "scheme": "http",
        "method": method,
        "root_path": "",
        "path": path,
        "raw_path": raw_path,
        "query_string": query,
        "headers": headers,
    }


def error_response(error: BaseException) -> bytes:
    """A whole `connection: close` response for `error`, in the OpenAI error envelope: what
    the server answers in the app's place."""
    reply = error_reply(error, OPENAI, request_id=new_request_id())
    head = [status_line(reply.status), date_line()]
    head += [b"%s: %s\r\n" % (name, value) for name, value in reply.headers]
    head.append(b"content-length: %d\r\nconnection: close\r\n\r\n" % len(reply.body))
    return b"".join(head) + reply.body


class CycleConnection(Protocol):
    """What a request's cycle needs of its connection (`http11.HttpConnection`)."""

    write_paused: bool
    """The write buffer is over its high-water mark (Rule 4)."""

    @property
    def draining(self) -> bool:
        """The server is shutting down."""

    def write(self, data: bytes) -> None:
        """Write response bytes (nothing once closed)."""

    async def drained(self) -> None:
        """Wait until the write buffer is below its high-water mark (or the caller left)."""

    def want_body(self, cycle: RequestCycle) -> None:
        """The app waits for body bytes (Rule 1)."""

    def body_taken(self) -> None:
        """The app took the body read so far."""


class RequestCycle:
    """One request: its method, path and headers (and its ASGI `scope`, made when asked for),
    its body as read so far, and its response's progress.

    The connection fills the body (`add_body`, `end_body`) and says when the caller left
    (`leave`); the app calls `receive` and `send`, or the direct calls of Rule 5.
    `keep_alive` starts as the request asked and is settled when the response starts.
    """

    __slots__ = (
        "_addresses",
        "_body",
        "_buffered",
        "_conn",
        "_delivered",
        "_head",
        "_scope",
        "_target",
        "_waiter",
        "awaiting_continue",
        "chunked",
        "complete",
        "gone",
        "head_only",
        "headers",
        "http10",
        "keep_alive",
        "message_complete",
        "method",
        "on_leave",
        "path",
        "started",
        "version",
    )

    def __init__(
        self,
        conn: CycleConnection,
        url: bytes,
        headers: list[tuple[bytes, bytes]],
        *,
        method: str,
        version: str,
        addresses: tuple[Any, Any],
        keep_alive: bool,
        expect_continue: bool,
    ) -> None:
        self._conn = conn
        self._target = split_target(url)
        self.path = self._target[0]
        self.method = method
        self.version = version
        self.headers = headers
        """The request's header lines, names lower-cased, as sent (bytes)."""
        self._addresses = addresses
        self._scope: dict[str, Any] | None = None
        self.keep_alive = keep_alive
        self.awaiting_continue = expect_continue
        self.head_only = method == "HEAD"
        self.http10 = version == "1.0"
        self._body: list[bytes] = []
        self._buffered = 0
        self._delivered = False
        self._waiter: asyncio.Future[None] | None = None
        self._head: bytes | None = None
        self.on_leave: Callable[[], object] | None = None
        """Called once when the caller goes (or the server answers in the app's place)."""
        self.message_complete = False
        self.started = False
        self.complete = False
        self.chunked = False
        self.gone = False

    @property
    def scope(self) -> dict[str, Any]:
        """The request's ASGI `http` scope (made on first use)."""
        scope = self._scope
        if scope is None:
            scope = self._scope = _scope(
                self._target,
                self.headers,
                method=self.method,
                version=self.version,
                addresses=self._addresses,
            )
        return scope

    # -- the connection's side

    @property
    def buffered(self) -> int:
        """Body bytes read and not yet handed to the app."""
        return self._buffered

    def add_body(self, data: bytes) -> None:
        """Body bytes from the parser."""
        self._body.append(data)
        self._buffered += len(data)
        self._wake()

    def end_body(self) -> None:
        """The whole body has been read."""
        self.message_complete = True
        self._wake()

    def leave(self) -> None:
        """Rule 3: the caller is gone, or the server answers in the app's place."""
        self.gone = True
        self._wake()
        on_leave, self.on_leave = self.on_leave, None
        if on_leave is not None:
            on_leave()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- the app's side

    async def body_part(self) -> tuple[bytes, bool] | None:
        """The next part of the body and whether more follows; None once the caller left or
        the response has ended (Rule 1)."""
        while True:
            if self.gone or self.complete:
                return None
            if self._body or (self.message_complete and not self._delivered):
                return self._take()
            if not self.message_complete:
                self._conn.want_body(self)
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                self._waiter = None

    async def receive(self) -> dict[str, Any]:
        """The next ASGI message: body parts, then `http.disconnect` once the caller leaves or
        the response has ended."""
        part = await self.body_part()
        if part is None:
            return {"type": "http.disconnect"}
        return {"type": "http.request", "body": part[0], "more_body": part[1]}

    def _take(self) -> tuple[bytes, bool]:
        body = self._body
        data = body[0] if len(body) == 1 else b"".join(body)
        body.clear()
        self._buffered = 0
        more = not self.message_complete
        self._delivered = not more
        self._conn.body_taken()
        return data, more

    def continue_line(self) -> bytes:
        """`100 Continue`, the first time the app waits for a body the caller holds back."""
        if not self.awaiting_continue:
            return b""
        self.awaiting_continue = False
        return _CONTINUE

    async def send(self, message: MutableMapping[str, Any]) -> None:
        """Write one ASGI response message (Rules 2-4)."""
        kind = message["type"]
        if kind == "http.response.body":
            await self.send_body(message.get("body", b""), more=message.get("more_body", False))
        elif kind == "http.response.start":
            await self.start(message["status"], message.get("headers", ()))
        else:
            raise RuntimeError(f"unexpected ASGI message {kind!r}")

    async def start(self, status: int, headers: Iterable[tuple[bytes, bytes]]) -> None:
        """Start the response: its head goes out with the first body part (Rule 2)."""
        if self._conn.write_paused and not self.gone:
            await self._conn.drained()
        if self.gone:
            return
        if self.started:
            raise RuntimeError("http.response.start sent twice")
        self.started = True
        self._head = self._render_head(status, headers, None)
        asyncio.get_running_loop().call_soon(self._flush_head)

    async def send_body(self, data: bytes, *, more: bool) -> None:
        """Write a part of the started response's body (the last one when not `more`)."""
        if self._conn.write_paused and not self.gone:
            await self._conn.drained()
        if not self.gone:
            self._write_started(data, more=more)

    def send_body_now(self, data: bytes, *, more: bool) -> bool:
        """`send_body` when the connection takes bytes now: False (nothing written) when the
        caller's side is full and the write must wait for `send_body`. A stream's events go
        this way, without a coroutine each."""
        if self.gone:
            return True
        if self._conn.write_paused:
            return False
        self._write_started(data, more=more)
        return True

    def _write_started(self, data: bytes, *, more: bool) -> None:
        if not self.started or self.complete:
            raise RuntimeError("http.response.body outside a started response")
        self._write_body(data, more=more)

    async def respond(
        self, status: int, headers: Iterable[tuple[bytes, bytes]], body: bytes
    ) -> None:
        """Write a whole response with its `content-length` (Rule 5)."""
        conn = self._conn
        if conn.write_paused and not self.gone:
            await conn.drained()
        if self.gone:
            return
        if self.started:
            raise RuntimeError("http.response.start sent twice")
        self.started = True
        head = self._render_head(status, headers, len(body))
        if self.head_only or not body:
            conn.write(head)
        elif len(body) < _SEPARATE_WRITE:
            conn.write(head + body)
        else:
            conn.write(head)
            conn.write(body)
        self.complete = True
        self._wake()

    def _render_head(
        self, status: int, headers: Iterable[tuple[bytes, bytes]], length: int | None
    ) -> bytes:
        lines = [status_line(status), date_line()]
        has_length = length is not None
        for name, value in headers:
            lowered = name.lower()
            if lowered == b"content-length":
                has_length = True
            elif lowered in (b"connection", b"transfer-encoding"):
                continue  # framing is the server's business
            lines.append(b"%s: %s\r\n" % (name, value))
        if length is not None:
            lines.append(b"content-length: %d\r\n" % length)
        body_allowed = status >= 200 and status not in _NO_BODY_STATUSES and not self.head_only
        if not has_length and body_allowed:
            if self.http10:
                self.keep_alive = False  # the close ends the body
            else:
                self.chunked = True
                lines.append(b"transfer-encoding: chunked\r\n")
        if not self.message_complete or self._conn.draining:
            self.keep_alive = False  # Rule 4 of the connection: an unread body closes it
        if not self.keep_alive:
            lines.append(b"connection: close\r\n")
        elif self.http10:
            lines.append(b"connection: keep-alive\r\n")
        lines.append(b"\r\n")
        return b"".join(lines)

    def _flush_head(self) -> None:
        head, self._head = self._head, None
        if head is not None and not self.gone:
            self._conn.write(head)

    def _write_body(self, data: bytes, *, more: bool) -> None:
        if self.head_only:
            data = b""
        if self.chunked:
            out = b"%x\r\n%s\r\n" % (len(data), data) if data else b""
            if not more:
                out += b"0\r\n\r\n"
        else:
            out = data
        head, self._head = self._head, None
        conn = self._conn
        if head is not None:
            if len(out) < _SEPARATE_WRITE:
                out = head + out
            else:
                conn.write(head)
        if out:
            conn.write(out)
        if not more:
            self.complete = True
            self._wake()
