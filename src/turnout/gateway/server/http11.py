"""The gateway's HTTP/1.1 connections: an asyncio protocol on the `httptools` parser that runs
one request at a time (each a `cycle.RequestCycle`, served through ASGI or, for an app that
offers it, directly: `ConnectionHost.direct`).

Rule 1: requests on a connection run one at a time, in the order they arrived. Requests
pipelined behind the running one wait, at most `PIPELINE_DEPTH` of them (past it the
connection reads no more requests and closes once those are answered), and bytes that arrive
meanwhile wait unparsed, at most `HIGH_WATER` of them before the socket stops being read.
Rule 2: one deadline runs at a time, set by what the connection waits for: a request head
(`header_timeout` from the accept or from the end of the previous response), the body of the
running request (`body_timeout` since its last byte, and no later than `body_timeout` plus
one second per `min_body_rate` bytes read since the body began, while the connection reads:
the time it does not read is not counted), or the next request (`keepalive_timeout`). Past
it the connection closes, after a 408 when part of a request arrived and nothing was answered
(`_endings` Rule 1).
Rule 3: a head over `max_header_count` lines or `max_header_bytes` bytes gets 431, and
framing that cannot be parsed 400, in the OpenAI error envelope; the connection then closes,
once the requests before the bad one are answered (`_endings` Rule 2).
Rule 4: a response that starts before its request's body was read closes the connection (the
rest of the body is never read). So does every answer the server gives in the app's place:
the connection half-closes and discards what still arrives for at most `LINGER` seconds, so
that the caller reads the answer rather than a reset (`_endings` Rule 3).

How a connection ends (those answers, the deadline's timer, the close) is in `_endings`,
out of the data path.
Rule 5: when the caller leaves, the running request is told (`http.disconnect`, and the app
cancels its work) and the requests waiting behind it are dropped without reaching the app.
Rule 6: a request asking to upgrade the connection (`Upgrade: h2c`, as `curl --http2` sends
over plain HTTP) is served as plain HTTP/1.1, its body read as its framing says; the
connection stays HTTP/1.1.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any, Final, Protocol, cast

import httptools

from turnout.gateway.server import _endings
from turnout.gateway.server._endings import LINGER
from turnout.gateway.server._tracebacks import release_frames
from turnout.gateway.server.cycle import HIGH_WATER, RequestCycle

if TYPE_CHECKING:
    from turnout.errors import HttpError, RoutingError
    from turnout.gateway.server.limits import ServerLimits

__all__ = [
    "LINGER",
    "PIPELINE_DEPTH",
    "ASGIApp",
    "ConnectionHost",
    "CycleApp",
    "HttpConnection",
]

PIPELINE_DEPTH: Final = 16
"""Requests a connection holds parsed behind the running one."""

_REQUEST_LINE_SLACK: Final = 16  # the method, the version and the line ends around the URL

ASGIApp = Callable[
    [
        MutableMapping[str, Any],
        Callable[[], Awaitable[MutableMapping[str, Any]]],
        Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ],
    Awaitable[None],
]
"""An ASGI 3 application: `app(scope, receive, send)`."""

CycleApp = Callable[[RequestCycle], Awaitable[None]]
"""An app that serves a `RequestCycle` directly (without the ASGI messages)."""


class ConnectionHost(Protocol):
    """What a connection needs of its server (`listener.Listener`)."""

    app: ASGIApp
    direct: CycleApp | None
    """Serves each request instead of `app`, when set."""
    limits: ServerLimits
    draining: bool

    def admit(self, conn: HttpConnection) -> bool:
        """Count a new connection in; False when over the cap (it is closed at once)."""

    def release(self, conn: HttpConnection) -> None:
        """Count a closed connection out."""

    def touch(self, conn: HttpConnection) -> None:
        """The connection started a request head or ended a response."""

    def quiet(self, conn: HttpConnection) -> None:
        """The connection lingers after its last answer: it owes nothing more."""


class HttpConnection(asyncio.Protocol):
    """One caller's connection (see the module rules)."""

    def __init__(self, host: ConnectionHost) -> None:
        self._host = host
        self._limits = host.limits
        self._loop = asyncio.get_running_loop()
        self._parser = httptools.HttpRequestParser(self)
        self.transport: asyncio.Transport = None  # type: ignore[assignment] # set on accept
        self._addresses: tuple[Any, Any] = (None, None)
        self._cycle: RequestCycle | None = None  # running
        self._task: asyncio.Task[None] | None = None
        self._queue: deque[RequestCycle] = deque()  # parsed, waiting their turn
        self._parsing: RequestCycle | None = None  # whose body the parser is reading
        self._upgrading: RequestCycle | None = None  # Rule 6: asked to upgrade, has a body
        self._resumed: RequestCycle | None = None  # Rule 6: whose body a fresh parser reads
        self._backlog = bytearray()  # bytes not parsed while requests wait
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._expect_continue = False
        self._in_head = False
        self._head_bytes = 0
        self._lines_size = 0  # the header lines of the head being read, as counted for the limit
        self._served = 0
        self._idle_since = self._loop.time()
        self._deadline: float | None = None
        self._body_since: float | None = None  # Rule 2: when the running body began (shifted)
        self._body_bytes = 0
        self._body_quiet_from = 0.0  # the last body byte, or when reading (re)started
        self._paused_at = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._reading = True
        self._stopped = False  # no more requests are read
        self._rejection: HttpError | RoutingError | None = None
        self._lingering = False
        self.closed = False
        self.write_paused = False
        self._drain: asyncio.Future[None] | None = None

    @property
    def draining(self) -> bool:
        """True once the server is shutting down."""
        return self._host.draining

    @property
    def peer_host(self) -> str | None:
        """The caller's address (without its port), when known."""
        peer = self._addresses[1]
        return None if peer is None else peer[0]

    @property
    def lingering(self) -> bool:
        """True once the connection half-closed after its last answer (Rule 4)."""
        return self._lingering

    @property
    def is_idle(self) -> bool:
        """No request is running or waiting to run (the server may close it to make room)."""
        return self._cycle is None and not self._queue and not self._lingering and not self.closed

    # -- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport, but have its methods.
        self.transport = cast("asyncio.Transport", transport)
        self._addresses = (_address(transport, "sockname"), _address(transport, "peername"))
        if not self._host.admit(self):
            self.closed = True
            transport.close()
            return
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._lingering or self._stopped or self.closed:
            return  # Rule 4, or no more requests will be read
        if self._queue or self._backlog:
            self._backlog += data  # Rule 1: parsed only when the waiting requests have run
            self._update_reading()
            return
        self._feed(data)

    def eof_received(self) -> bool | None:
        return None  # the caller half-closed: treated as gone (Rule 5)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._host.release(self)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._queue.clear()  # Rule 5: never started, never will be
        if self._cycle is not None:
            self._cycle.leave()
        self._resume_writers()

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        self._resume_writers()

    def _resume_writers(self) -> None:
        drain, self._drain = self._drain, None
        if drain is not None and not drain.done():
            drain.set_result(None)

    # -- parsing

    def _feed(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade as exc:
            if self._upgrading is None:
                _endings.unparsed(self, exc)
            else:
                self._ignore_upgrade(data[exc.args[0] :])
        except httptools.HttpParserError as exc:
            _endings.unparsed(self, exc)
        else:
            if self._in_head and self._head_bytes > self._limits.max_header_bytes:
                _endings.reject(self, _endings.head_too_large(self._limits))
        self._start_next()

    def _ignore_upgrade(self, rest: bytes) -> None:
        """Rule 6: the parser stopped after the head of a request asking for an upgrade; a
        fresh one reads its body, from a stand-in head with the request's own framing."""
        cycle, self._upgrading = self._upgrading, None
        assert cycle is not None
        self._parser = httptools.HttpRequestParser(self)
        self._resumed = cycle
        self._feed(b"POST / HTTP/1.1\r\n%s\r\n\r\n%s" % (_framing(cycle.headers), rest))

    def on_message_begin(self) -> None:
        if self._resumed is not None:
            return  # Rule 6: the stand-in head
        if len(self._queue) >= PIPELINE_DEPTH:
            raise _endings.PipelineFull
        self._url = b""
        self._headers = []
        self._expect_continue = False
        self._in_head = True
        self._head_bytes = 0
        self._lines_size = 0
        self._host.touch(self)
        if self._cycle is None:
            self._arm()

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._resumed is not None:
            return
        headers = self._headers
        if len(headers) >= self._limits.max_header_count:
            raise _endings.too_many_header_lines(self._limits)
        name = name.lower()
        if name == b"expect" and value.lower() == b"100-continue":
            self._expect_continue = True
        headers.append((name, value))
        self._lines_size += len(name) + len(value) + 4

    def on_headers_complete(self) -> None:
        resumed, self._resumed = self._resumed, None
        if resumed is not None:
            self._parsing = resumed
            return
        self._in_head = False
        if len(self._url) + _REQUEST_LINE_SLACK + self._lines_size > self._limits.max_header_bytes:
            raise _endings.head_too_large(self._limits)
        parser = self._parser
        cycle = RequestCycle(
            self,
            self._url,
            self._headers,
            method=parser.get_method().decode("ascii"),
            version=parser.get_http_version(),
            addresses=self._addresses,
            keep_alive=parser.should_keep_alive(),
            expect_continue=self._expect_continue,
        )
        self._queue.append(cycle)
        self._parsing = cycle
        if cycle.method != "CONNECT" and parser.should_upgrade() and _framing(self._headers):
            self._upgrading = cycle  # Rule 6: its body follows the parser's stop

    def on_body(self, body: bytes) -> None:
        cycle = self._parsing
        if cycle is None:
            return
        cycle.add_body(body)
        if cycle is self._cycle:
            self._body_bytes += len(body)
        if cycle.buffered > HIGH_WATER:
            self._update_reading()
        elif cycle is self._cycle:
            self._deadline = self._body_deadline(self._loop.time())  # Rule 2

    def on_message_complete(self) -> None:
        if self._upgrading is not None:
            return  # Rule 6: the parser took the body for another protocol's; it is not
        cycle, self._parsing = self._parsing, None
        if cycle is None:
            return
        cycle.end_body()
        if not cycle.keep_alive:
            self._stopped = True
        if cycle is self._cycle:
            self._arm()

    # -- running requests

    def _start_next(self) -> None:
        if self._cycle is not None or self.closed or self._lingering:
            return
        if not self._queue:
            if self._rejection is not None:
                _endings.answer(self, self._rejection)
            return
        cycle = self._cycle = self._queue.popleft()
        self._body_since = None
        self._body_bytes = cycle.buffered  # read ahead while it waited its turn
        self._arm()
        self._task = self._loop.create_task(self._run(cycle))

    async def _run(self, cycle: RequestCycle) -> None:
        failure: Exception | None = None
        direct = self._host.direct
        try:
            if direct is not None:
                await direct(cycle)
            else:
                await self._host.app(cycle.scope, cycle.receive, cycle.send)
        except asyncio.CancelledError:
            return  # the server is stopping and aborted the connection
        except Exception as exc:  # noqa: BLE001 - answered (500) or the connection is cut
            failure = exc
        self._finish(cycle, failure)
        release_frames(failure)  # its frames hold the request's body

    def _finish(self, cycle: RequestCycle, failure: Exception | None) -> None:
        self._task = None
        self._cycle = None
        if self.closed or self._lingering:
            return
        if not cycle.complete:
            _endings.unanswered(self, cycle, failure)
            return
        if not cycle.keep_alive:
            _endings.close(self, linger=not cycle.message_complete)
            return
        self._served += 1
        self._idle_since = self._loop.time()
        self._host.touch(self)
        if self._queue:
            self._start_next()
        elif self._rejection is not None:
            _endings.answer(self, self._rejection)
            return
        else:
            self._arm()
        if self._backlog and not self._queue:
            # Rule 1: the bytes held back belong to the request now running or to later ones.
            data = bytes(self._backlog)
            self._backlog.clear()
            self._feed(data)
        self._update_reading()

    def want_body(self, cycle: RequestCycle) -> None:
        """The app waits for body bytes: ask for them (Rule 1 of the cycle)."""
        line = cycle.continue_line()
        if line:
            self.write(line)
            self._arm()
        self._update_reading()

    def body_taken(self) -> None:
        """The app took the body read so far: read on."""
        if not self._reading:
            self._update_reading()

    def write(self, data: bytes) -> None:
        """Write response bytes (nothing once closed)."""
        if not self.closed:
            self.transport.write(data)

    async def drained(self) -> None:
        """Wait until the write buffer is below its high-water mark (or the caller left)."""
        if not self.write_paused or self.closed:
            return
        if self._drain is None:
            self._drain = self._loop.create_future()
        await asyncio.shield(self._drain)

    # -- flow control and deadlines

    def _update_reading(self) -> None:
        if self.closed:
            return
        parsing = self._parsing
        want = len(self._backlog) <= HIGH_WATER and (
            parsing is None or parsing.buffered <= HIGH_WATER
        )
        if want == self._reading:
            return
        self._reading = want
        if want:
            if self._body_since is not None:  # Rule 2: the pause is not the caller's
                self._body_since += self._loop.time() - self._paused_at
            self.transport.resume_reading()
        else:
            self._paused_at = self._loop.time()
            self.transport.pause_reading()
        self._arm()

    def _arm(self) -> None:
        """Rule 2: set the one deadline from what the connection waits for."""
        cycle = self._cycle
        now = self._loop.time()
        limits = self._limits
        when: float | None
        if self._lingering:
            when = now + LINGER
        elif cycle is not None:
            reading_body = cycle is self._parsing and self._reading and not cycle.awaiting_continue
            when = self._body_deadline(now) if reading_body else None
        elif self._in_head or not self._served:
            when = self._idle_since + limits.header_timeout
        else:
            when = now + limits.keepalive_timeout
        self._deadline = when
        timer = self._timer
        if when is not None and (timer is None or when < self._timer_at):
            if timer is not None:
                timer.cancel()
            self._timer = self._loop.call_at(when, _endings.deadline_due, self)
            self._timer_at = when

    def _body_deadline(self, now: float) -> float:
        """Rule 2: when the running request's body, read on from `now`, is too late."""
        self._body_quiet_from = now
        slowest = self._slowest_body()
        idle = now + self._limits.body_timeout
        return idle if slowest is None else min(idle, slowest)

    def _slowest_body(self) -> float | None:
        """Rule 2: the latest the running body may end at its minimum rate (None: no rate)."""
        limits = self._limits
        if not limits.min_body_rate:
            return None
        if self._body_since is None:
            self._body_since = self._body_quiet_from
        return self._body_since + limits.body_timeout + self._body_bytes / limits.min_body_rate

    def is_body_slow(self) -> bool:
        """Whether the running body missed its minimum rate rather than went silent."""
        slowest = self._slowest_body()
        return slowest is not None and slowest < self._body_quiet_from + self._limits.body_timeout

    # -- ending

    def drain(self) -> None:
        """The server is shutting down: close now if idle, else after the running request."""
        _endings.drain(self)

    def abort(self) -> None:
        """Close at once, whatever is in flight, and stop the running request's task."""
        if not self.closed:
            self.transport.abort()
        task = self._task
        if task is not None and not task.done():
            task.cancel()


def _framing(headers: list[tuple[bytes, bytes]]) -> bytes:
    """The header line that frames a request's body (empty: it has none)."""
    for name, value in headers:
        if name == b"transfer-encoding" and b"chunked" in value.lower():
            return b"transfer-encoding: chunked"
        if name == b"content-length" and value.strip() not in (b"", b"0"):
            return b"content-length: " + value.strip()
    return b""


def _address(transport: asyncio.BaseTransport, name: str) -> tuple[str, int] | None:
    info = transport.get_extra_info(name)
    if isinstance(info, tuple) and len(info) >= 2:
        return (str(info[0]), int(info[1]))
    return None
