"""The bytes of one HTTP/1.1 exchange, with no I/O: the request head written once per URL, and
the response read from its bytes (`ResponseParser`: bytes in, status, headers and body out),
its body decompressed. `turnout.providers.http1` feeds it from a socket; tests feed it by hand.

Rule 1: a response is read by one `httptools` parser: 1xx heads are skipped, chunked trailers
ignored, and a body without length (nor chunked, nor a 204 or 304) ends with the connection.
Rule 2: bytes after the response, or a second response, take away its `keep_alive`: the
connection is not used again. What came after the response is never read as part of it.
Rule 2b: a response head holds at most `MAX_HEAD_LINES` header lines and `MAX_HEAD_BYTES` bytes
(1xx heads included); past either it fails as `HeadTooLarge` as soon as the bound is passed,
before the rest arrives. A header sent on several lines reads as one comma-joined value, joined
once the head is complete.
Rule 3: body bytes wait in `chunks` (`unread` of them) until taken; the reader of a stream
pauses its socket once `HIGH_WATER` bytes wait unread.
Rule 4: a connection that closes before the response head is a `RequestNotSent` when its socket
refused the request's write (the server cannot have read it: the caller may send it once more,
`http1` Rule 7); once the request was written it is `UpstreamClosed`, however soon it came: the
server may have read the request and started work on it.
Rule 5: a whole answer (`read_whole`) never holds more than the parser's `limit` of decoded
bytes: past it (or past `HIGH_WATER`, when its Content-Length says it will pass the limit) it
fails as `AnswerTooLarge` and its bytes are dropped. A compressed body is inflated piece by
piece with at most the room left under the limit as output, so a small bomb is never inflated
whole, streamed or not. A stream's bytes are handed over as they come (the provider bounds each
of its events).
"""

from __future__ import annotations

import sys
import zlib
from typing import TYPE_CHECKING, NamedTuple, TypeAlias
from urllib.parse import quote, urlsplit

import httptools

from turnout.providers.transport import (
    AnswerTooLarge,
    BodyCutShort,
    HeadTooLarge,
    InvalidHeader,
    InvalidURL,
    TransportFailure,
    UnreadableResponse,
    UpstreamClosed,
)

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "HIGH_WATER",
    "MAX_HEAD_BYTES",
    "MAX_HEAD_LINES",
    "Origin",
    "ParsedURL",
    "RequestNotSent",
    "ResponseParser",
    "head_with",
    "header_block",
    "parse_url",
    "request_head",
]

HIGH_WATER = 256 * 1024
"""Unread body bytes (per response) above which a stream's socket stops being read."""

MAX_HEAD_LINES = 100
"""Header lines a response head may hold (Rule 2b): as many as the gateway's own server takes
from a caller by default."""

MAX_HEAD_BYTES = 64 * 1024
"""Bytes a response head may hold, status line included (Rule 2b): as many as the gateway's
own server takes from a caller by default."""

_OVER_BYTES = f"more than {MAX_HEAD_BYTES // 1024} KiB"
_LINE_ENDS = 4  # ": " and CRLF around a header line's name and value

_FRAMING = frozenset({"host", "content-length", "transfer-encoding", "connection"})
"""Headers the client writes itself; the caller's copies are dropped."""

_URL_SAFE = "".join(chr(code) for code in range(0x21, 0x7F))
"""Printable ASCII stays as it is in a request target; anything else is percent-encoded."""

Origin: TypeAlias = tuple[str, str, int]


class RequestNotSent(UpstreamClosed):
    """Rule 4: the socket refused the request's write; the server cannot have read it."""


_NEVER = sys.maxsize
"""The mark of a stream: its unread bytes are the reader's business, not the parser's."""


class ParsedURL(NamedTuple):
    """A URL read once for sending: its origin (the pool it goes to) and the request line with
    the Host header, already encoded."""

    origin: Origin
    prefix: bytes


def parse_url(url: str) -> ParsedURL:
    """Parse an absolute http(s) URL (InvalidURL otherwise)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidURL(f"{url!r}: {exc}") from None
    scheme = parts.scheme.lower()
    host = parts.hostname
    if scheme not in ("http", "https") or not host:
        raise InvalidURL(f"{url!r}: expected http:// or https:// and a host")
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise InvalidURL(f"{url!r}: {exc}") from None
    default_port = 443 if scheme == "https" else 80
    port = port or default_port
    shown = f"[{host}]" if ":" in host else host
    authority = shown if port == default_port else f"{shown}:{port}"
    path = quote(parts.path or "/", safe=_URL_SAFE)
    if parts.query:
        path += "?" + quote(parts.query, safe=_URL_SAFE)
    prefix = f"POST {path} HTTP/1.1\r\nhost: {authority}\r\n".encode("ascii")
    return ParsedURL((scheme, host, port), prefix)


def request_head(prefix: bytes, length: int, headers: Mapping[str, str]) -> bytes:
    """The request's head: request line, Host, Content-Length, then the caller's headers."""
    return head_with(prefix, length, header_block(headers))


def header_block(headers: Mapping[str, str]) -> bytes:
    """The caller's header lines of a request head, encoded (without the framing headers the
    client writes itself); `InvalidHeader` for one that cannot be sent."""
    lines = [f"{name}: {value}" for name, value in headers.items() if name.lower() not in _FRAMING]
    text = "\r\n".join(lines)
    breaks = len(lines) - 1 if lines else 0  # the separators' own
    if text.count("\n") != breaks or text.count("\r") != breaks:
        raise bad_header(headers)
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        raise bad_header(headers) from None


def head_with(prefix: bytes, length: int, block: bytes) -> bytes:
    """A request head from its request line and Host (`prefix`), the body's length and the
    caller's encoded header lines (`header_block`)."""
    if block:
        return b"%scontent-length: %d\r\n%s\r\n\r\n" % (prefix, length, block)
    return b"%scontent-length: %d\r\n\r\n" % (prefix, length)


def bad_header(headers: Mapping[str, str]) -> InvalidHeader:
    """The error naming the first header that cannot be sent (its value is never shown)."""
    for name, value in headers.items():
        line = f"{name}{value}"
        if "\r" in line or "\n" in line:
            return InvalidHeader(f"invalid header {name!r}: a name or value holds a line break")
        if not line.isascii():
            try:
                line.encode("latin-1")
            except UnicodeEncodeError:
                return InvalidHeader(
                    f"invalid header {name!r}: a name or value holds a character outside Latin-1"
                )
    return InvalidHeader("invalid header: a header cannot be sent")


def idle_limit(hint: str) -> float | None:
    """`Keep-Alive: timeout=N, max=M` -> how long to keep the connection idle (N - 1 s, at
    least 0.5 s; None when the header names no timeout)."""
    for item in hint.split(","):
        name, _, value = item.strip().partition("=")
        if name.strip().lower() == "timeout":
            try:
                seconds = float(value.strip())
            except ValueError:
                return None
            return max(seconds - 1.0, 0.5)
    return None


class Inflater:
    """Decodes a gzip or deflate body as it arrives (deflate with or without its zlib header)."""

    __slots__ = ("_decoder", "_deflate", "_fed")

    def __init__(self, encoding: str) -> None:
        self._deflate = encoding == "deflate"
        self._decoder = zlib.decompressobj(zlib.MAX_WBITS if self._deflate else 16 + zlib.MAX_WBITS)
        self._fed = False

    def feed(self, data: bytes, room: int) -> bytes | None:
        """The bytes `data` decodes to, or None when they would be more than `room` bytes
        (Rule 5: zlib stops one byte past `room`, whatever the ratio)."""
        try:
            out = self._decoder.decompress(data, max(room, 0) + 1)
        except zlib.error as exc:
            if not (self._deflate and not self._fed):
                message = f"unreadable response: bad compressed body ({exc})"
                raise UnreadableResponse(message) from None
            self._decoder = zlib.decompressobj(-zlib.MAX_WBITS)  # a raw deflate stream
            return self.feed(data, room)
        self._fed = True
        return None if len(out) > room else out

    def flush(self) -> bytes:
        return self._decoder.flush()


class ResponseParser:
    """One response read from its bytes, with no I/O: `feed` them as they arrive and `end` when
    the connection closes; `head_done`, `status`, `headers`, `chunks`, `done` and `error` say
    what was read. Its `limit` bounds a whole answer's decoded bytes (Rule 5); it is a stream
    until `read_whole` is called. It is the `httptools` parser's callback target."""

    __slots__ = (
        "_head_bytes",
        "_head_lines",
        "_head_size",
        "_inflater",
        "_informational",
        "_limit",
        "_mark",
        "_parser",
        "_repeats",
        "_until_eof",
        "chunks",
        "done",
        "error",
        "head_done",
        "headers",
        "keep_alive",
        "status",
        "unread",
        "whole",
    )

    def __init__(self, limit: int) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.head_done = False
        self.keep_alive = False
        self.chunks: list[bytes] = []
        self.unread = 0
        self.done = False
        self.error: TransportFailure | None = None
        self.whole = False
        self._limit = limit
        # Unread bytes past which `on_body` looks closer: never for a stream, at HIGH_WATER and
        # then at the limit for a whole answer, where every byte stays unread until the end.
        self._mark = _NEVER
        self._repeats: dict[str, list[str]] | None = None  # headers sent on several lines
        self._head_lines = 0
        self._head_size = 0  # the header lines' bytes, as counted for the bound
        self._head_bytes = 0  # every byte fed before the head was complete
        self._informational = False
        self._until_eof = False
        self._inflater: Inflater | None = None
        self._parser: httptools.HttpResponseParser | None = httptools.HttpResponseParser(self)

    # fed by the connection ---------------------------------------------------------------
    def feed(self, data: bytes) -> None:
        """Read the next bytes of the connection."""
        parser = self._parser
        if parser is None:  # the response has ended: these bytes come after it
            self.keep_alive = False
            return
        try:
            parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as exc:
            if self.done:
                self.keep_alive = False  # bytes after the response: never reuse
            else:
                self._fail(UnreadableResponse(f"unreadable response: {exc}"))
        if not self.head_done and self.error is None:
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                self._head_too_large(_OVER_BYTES)  # Rule 2b: not waited for to its end
        if self.done or self.error is not None:
            # The parser holds this object's methods: dropped now, neither waits for the
            # cyclic garbage collector.
            self._parser = None

    def end(self, *, clean: bool, request_refused: bool) -> None:
        """The connection closed, `clean`ly or not; `request_refused`: its socket refused the
        request's write (Rule 4)."""
        self._parser = None
        if self.done or self.error is not None:
            return
        if not self.head_done:
            if request_refused:
                self._fail(RequestNotSent("the connection closed before the request was sent"))
            else:
                self._fail(UpstreamClosed("the upstream closed the connection"))
        elif self._until_eof and clean:
            self.keep_alive = False
            self._finish()  # a close-delimited body ends here
        else:
            self._fail(BodyCutShort("the response body was cut short"))

    # read by the caller ------------------------------------------------------------------
    def read_whole(self) -> None:
        """From now on the body is kept until its end, bounded by the limit (Rule 5)."""
        self.whole = True
        # Small answers are never looked at; a large one is, once, past HIGH_WATER.
        self._mark = min(self._limit, HIGH_WATER)
        if self.unread > self._mark:
            self._past_mark()

    def take(self) -> bytes:
        """The body bytes that wait unread, taken."""
        chunks = self.chunks
        data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        self.unread = 0
        return data

    @property
    def is_consumed(self) -> bool:
        """True when the whole response arrived and every byte of it was taken."""
        return self.done and not self.chunks

    # parser callbacks ---------------------------------------------------------------------
    def on_message_begin(self) -> None:
        if self.done:
            self.keep_alive = False  # a second response nobody asked for

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.head_done or self.error is not None:
            return  # a trailer of a chunked body, or a head already refused
        self._head_lines += 1
        self._head_size += len(name) + len(value) + _LINE_ENDS
        if self._head_lines > MAX_HEAD_LINES:
            self._head_too_large(f"more than {MAX_HEAD_LINES} header lines")
            return
        if self._head_size > MAX_HEAD_BYTES:
            self._head_too_large(_OVER_BYTES)
            return
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        fields = self.headers
        if key not in fields:
            fields[key] = text
            return
        repeats = self._repeats
        if repeats is None:
            repeats = self._repeats = {}
        values = repeats.get(key)
        if values is None:
            repeats[key] = [fields[key], text]
        else:
            values.append(text)  # Rule 2b: joined once, when the head is complete

    def on_headers_complete(self) -> None:
        assert self._parser is not None  # a parser callback
        if self.error is not None or self.done:
            return  # a head refused, or a second response's (Rule 2)
        status = self._parser.get_status_code()
        if status < 200:
            self._informational = True  # 1xx: skipped, the real head follows
            self.headers.clear()
            self._repeats = None
            return
        self.status = status
        self.head_done = True
        headers = self.headers
        if self._repeats is not None:
            for key, values in self._repeats.items():
                headers[key] = ", ".join(values)
            self._repeats = None
        encoding = headers.get("transfer-encoding")
        if (
            (encoding is None or "chunked" not in encoding.lower())
            and "content-length" not in headers
            and status not in (204, 304)
        ):
            self._until_eof = True
        coding = headers.get("content-encoding")
        if coding is not None:
            coding = coding.strip().lower()
            if coding in ("gzip", "x-gzip", "deflate"):
                self._inflater = Inflater(coding)

    def on_body(self, body: bytes) -> None:
        if self.error is not None or self.done:
            return
        if self._inflater is not None:
            try:
                inflated = self._inflater.feed(body, self._limit - self.unread)
            except TransportFailure as exc:
                self._fail(exc)
                return
            if inflated is None:
                self._too_large()
                return
            if not inflated:
                return
            body = inflated
        self.chunks.append(body)
        self.unread += len(body)
        if self.unread > self._mark:
            self._past_mark()

    def on_message_complete(self) -> None:
        if self._informational:
            self._informational = False
            return
        if self.done or self.error is not None:
            return
        assert self._parser is not None  # a parser callback
        self.keep_alive = self._parser.should_keep_alive()
        self._finish()

    # the rules -----------------------------------------------------------------------------
    def _past_mark(self) -> None:
        if self.unread > self._limit or self._declares_too_much():
            self._too_large()  # a whole answer over the limit, or about to be
        else:
            self._mark = self._limit  # a large answer within the limit: look again past it

    def _declares_too_much(self) -> bool:
        """Whether the Content-Length of an uncompressed body is over the limit already."""
        length = self.headers.get("content-length")
        if length is None or self._inflater is not None:
            return False
        length = length.strip()
        return length.isdigit() and int(length) > self._limit

    def _finish(self) -> None:
        if self._inflater is not None:
            rest = self._inflater.flush()  # all input was taken: at most a few bytes
            if rest:
                self.chunks.append(rest)
                self.unread += len(rest)
                if self.unread > self._limit:
                    self._too_large()
                    return
        self.done = True

    def _head_too_large(self, what: str) -> None:
        """Rule 2b: fail with `what` the head holds too much of, and drop what was read."""
        self.headers.clear()
        self._repeats = None
        self._fail(HeadTooLarge(f"unreadable response: its head holds {what}"))

    def _fail(self, error: TransportFailure) -> None:
        if self.error is None and not self.done:
            self.error = error

    def _too_large(self) -> None:
        """Rule 5: fail, even after the end, and free the bytes: they are never handed over."""
        self.chunks.clear()
        self.unread = 0
        if self.error is None:
            self.error = AnswerTooLarge(self._limit)
