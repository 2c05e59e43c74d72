"""Reading requests off a connection's bytes: the `httptools` parser's callbacks, which turn
request heads into `cycle.RequestCycle`s (in `RequestReader.queue`, in the order they arrived)
and hand each body to its request as it is read. No I/O: bytes in, requests out; what the
connection does about them (running them, its deadline, reading on) is its own business, told
through `ReadingHost`.

Rule 1: at most `PIPELINE_DEPTH` requests wait in the queue; a head past it is not read, and
the request before it is the connection's last. Bytes that arrive while requests wait are held
unread (`held`, which the connection fills) until none waits; the connection should stop
reading while more than `HIGH_WATER` bytes wait, held or of a body the app has not taken
(`backed_up`).
Rule 2: a head over `max_header_count` lines or `max_header_bytes` bytes (request line
included, counted as it arrives, so a head that never ends is refused too) is refused with
`HeadersTooLarge` (431); framing the parser cannot read with `BadHttpRequest` (400). Bytes
after a request that asked to close the connection are not requests: they are never refused.
Rule 3: a request asking to upgrade the connection (`Upgrade: h2c`, as `curl --http2` sends
over plain HTTP) is read as plain HTTP/1.1, its body read as its framing says; a request asking
to upgrade without a body is the connection's last (nothing after it is read).
"""

from __future__ import annotations

import contextlib
from collections import deque
from typing import TYPE_CHECKING, Any, Final, Protocol

import httptools

from turnout.errors import BadHttpRequest, HeadersTooLarge, HttpError, RoutingError
from turnout.gateway.server.cycle import HIGH_WATER, RequestCycle

if TYPE_CHECKING:
    from turnout.gateway.server.cycle import CycleConnection
    from turnout.gateway.server.limits import ServerLimits

__all__ = [
    "PIPELINE_DEPTH",
    "ReadingHost",
    "Refusal",
    "RequestReader",
    "StopReading",
    "head_too_large",
    "too_many_header_lines",
]

PIPELINE_DEPTH: Final = 16
"""Requests a connection holds parsed behind the running one."""

_REQUEST_LINE_SLACK: Final = 16  # the method, the version and the line ends around the URL


class StopReading(Exception):
    """Read no more requests (Rules 1 and 3): raised from the parser's callbacks, and what
    `RequestReader.feed` returns to say so (the last request read is marked the last)."""


Refusal = HttpError | RoutingError | StopReading | None
"""What `RequestReader.feed` found: nothing wrong, `StopReading`, or the error to refuse with."""


class ReadingHost(Protocol):
    """What the reader tells its connection as it reads."""

    def head_began(self) -> None:
        """A request head started."""

    def body_read(self, cycle: RequestCycle, size: int) -> None:
        """`size` bytes of `cycle`'s body were read (and given to it)."""

    def body_ended(self, cycle: RequestCycle) -> None:
        """`cycle`'s body was read whole."""


def too_many_header_lines(limits: ServerLimits) -> HeadersTooLarge:
    """Rule 2's refusal of a head with too many lines."""
    return HeadersTooLarge(
        f"the request has more than {limits.max_header_count} header lines"
        " (server.max_header_count)"
    )


def head_too_large(limits: ServerLimits) -> HeadersTooLarge:
    """Rule 2's refusal of a head with too many bytes."""
    return HeadersTooLarge(
        f"the request head is larger than {limits.max_header_bytes} bytes (server.max_header_bytes)"
    )


class RequestReader:
    """The requests of one connection, read from its bytes (see the module rules)."""

    def __init__(
        self,
        host: ReadingHost,
        conn: CycleConnection,
        limits: ServerLimits,
        addresses: tuple[Any, Any],
    ) -> None:
        self._host = host
        self._conn = conn  # the requests' cycles answer on it
        self._limits = limits
        self._addresses = addresses
        self._parser = httptools.HttpRequestParser(self)
        self.queue: deque[RequestCycle] = deque()
        """Requests read, waiting their turn (the connection takes them from the left)."""
        self.parsing: RequestCycle | None = None
        """The request whose body is being read."""
        self.in_head = False
        """A request head has started and not ended."""
        self.held = bytearray()
        """Rule 1: bytes that arrived while requests waited, not read yet."""
        self._closing = False  # a request asked to close: what follows is not requests
        self._upgrading: RequestCycle | None = None  # Rule 3: asked to upgrade, has a body
        self._resumed: RequestCycle | None = None  # Rule 3: whose body a fresh parser reads
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._expect_continue = False
        self._head_bytes = 0
        self._lines_size = 0  # the header lines of the head being read, as counted for the limit

    def feed(self, data: bytes) -> Refusal:
        """Read `data`: None when it read well, else `StopReading` or the error to refuse with."""
        if self.in_head:
            self._head_bytes += len(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade as exc:
            if self._upgrading is None:
                return self._stop(StopReading())  # Rule 3: nothing after it is read
            return self._ignore_upgrade(data[exc.args[0] :])
        except httptools.HttpParserCallbackError as exc:
            cause = exc.__context__
            if isinstance(cause, StopReading):
                return self._stop(cause)
            if isinstance(cause, HttpError | RoutingError):
                return cause
            return BadHttpRequest(f"malformed HTTP request ({cause or exc})")
        except httptools.HttpParserError as exc:
            return None if self._closing else BadHttpRequest(f"malformed HTTP request: {exc}")
        if self.in_head and self._head_bytes > self._limits.max_header_bytes:
            return head_too_large(self._limits)
        return None

    def _stop(self, stop: StopReading) -> StopReading:
        """The last request read is the connection's last (the one refused or stopped at
        came after it)."""
        if self.queue:
            self.queue[-1].keep_alive = False
        return stop

    def read_held(self) -> Refusal:
        """Read the bytes held (once no request waits), as `feed`."""
        data = bytes(self.held)
        self.held.clear()
        return self.feed(data)

    def backed_up(self) -> bool:
        """Rule 1: over `HIGH_WATER` bytes wait, held or of the body being read."""
        parsing = self.parsing
        return len(self.held) > HIGH_WATER or (
            parsing is not None and parsing.buffered > HIGH_WATER
        )

    def abandon(self) -> RequestCycle | None:
        """Read no more: forget the head being read, and return the request whose body was
        being read when it was not read whole (taken out of the queue if it waited there)."""
        self.in_head = False
        parsing, self.parsing = self.parsing, None
        if parsing is None or parsing.message_complete:
            return None
        with contextlib.suppress(ValueError):
            self.queue.remove(parsing)
        return parsing

    def _ignore_upgrade(self, rest: bytes) -> Refusal:
        """Rule 3: the parser stopped after the head of a request asking for an upgrade; a
        fresh one reads its body, from a stand-in head with the request's own framing."""
        cycle, self._upgrading = self._upgrading, None
        assert cycle is not None
        self._parser = httptools.HttpRequestParser(self)
        self._resumed = cycle
        return self.feed(b"POST / HTTP/1.1\r\n%s\r\n\r\n%s" % (_framing(cycle.headers), rest))

    # -- the parser's callbacks

    def on_message_begin(self) -> None:
        if self._resumed is not None:
            return  # Rule 3: the stand-in head
        if len(self.queue) >= PIPELINE_DEPTH:
            raise StopReading
        self._url = b""
        self._headers = []
        self._expect_continue = False
        self.in_head = True
        self._head_bytes = 0
        self._lines_size = 0
        self._host.head_began()

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        if self._resumed is not None:
            return
        headers = self._headers
        if len(headers) >= self._limits.max_header_count:
            raise too_many_header_lines(self._limits)
        name = name.lower()
        if name == b"expect" and value.lower() == b"100-continue":
            self._expect_continue = True
        headers.append((name, value))
        self._lines_size += len(name) + len(value) + 4

    def on_headers_complete(self) -> None:
        resumed, self._resumed = self._resumed, None
        if resumed is not None:
            self.parsing = resumed
            return
        self.in_head = False
        if len(self._url) + _REQUEST_LINE_SLACK + self._lines_size > self._limits.max_header_bytes:
            raise head_too_large(self._limits)
        parser = self._parser
        cycle = RequestCycle(
            self._conn,
            self._url,
            self._headers,
            method=parser.get_method().decode("ascii"),
            version=parser.get_http_version(),
            addresses=self._addresses,
            keep_alive=parser.should_keep_alive(),
            expect_continue=self._expect_continue,
        )
        self.queue.append(cycle)
        self.parsing = cycle
        if cycle.method != "CONNECT" and parser.should_upgrade() and _framing(self._headers):
            self._upgrading = cycle  # Rule 3: its body follows the parser's stop

    def on_body(self, body: bytes) -> None:
        cycle = self.parsing
        if cycle is None:
            return
        cycle.add_body(body)
        self._host.body_read(cycle, len(body))

    def on_message_complete(self) -> None:
        if self._upgrading is not None:
            return  # Rule 3: the parser took the body for another protocol's; it is not
        cycle, self.parsing = self.parsing, None
        if cycle is None:
            return
        cycle.end_body()
        if not cycle.keep_alive:
            self._closing = True
        self._host.body_ended(cycle)


def _framing(headers: list[tuple[bytes, bytes]]) -> bytes:
    """The header line that frames a request's body (empty: it has none)."""
    for name, value in headers:
        if name == b"transfer-encoding" and b"chunked" in value.lower():
            return b"transfer-encoding: chunked"
        if name == b"content-length" and value.strip() not in (b"", b"0"):
            return b"content-length: " + value.strip()
    return b""
