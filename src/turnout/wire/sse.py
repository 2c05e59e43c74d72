"""Server-sent events: an incremental decoder and the encoder (no I/O).

The decoder follows the WHATWG event-stream rules that matter for LLM streams: lines end in
CRLF, LF or CR (a CR at the end of one read and an LF at the start of the next are one line
end); a blank line dispatches the event; lines starting with `:` are comments; several `data:`
lines join with `\\n`; one space after the colon is dropped; a leading UTF-8 BOM is skipped.
Every event keeps `raw`, its exact bytes up to and including the blank line that ended it, so
a same-format stream can be forwarded byte for byte.

Invariants of `SSEDecoder`:
  Rule 1: `_buf` holds only bytes not yet returned in an event's `raw` (it starts at the
          pending event); `_start` marks, during a scan, where the pending event begins, and
          `_pos` where unscanned bytes begin.
  Rule 2: an event is returned once, when its terminating blank line has been read (or by
          `flush()` at end of stream); an event without `data` is never returned.
  Rule 3: a CR that ends the buffer is not consumed until the next byte (or `flush()`) shows
          whether an LF follows it.
  Rule 4: no event grows past `max_event_bytes`: an event (its raw bytes) or the unfinished
          one that passes it raises `EventTooLarge`, so a stream without blank lines cannot
          fill the buffer. The events completed before it are returned first; the error is
          then raised by the next call.
  Rule 5: an event of the common shape (an optional `event:` line, one `data:` line, the
          blank line; LF line ends) is read whole in one step, with the same result as line by
          line.
"""

from __future__ import annotations

import re
import sys
from typing import NamedTuple

__all__ = ["KEEPALIVE", "EventTooLarge", "SSEDecoder", "SSEEvent", "encode_event"]

KEEPALIVE = b": keep-alive\n\n"
"""A comment event: keeps an idle connection open and is ignored by every client."""

_LINE_END = re.compile(rb"\r\n?|\n")
_BOM = b"\xef\xbb\xbf"


class SSEEvent(NamedTuple):
    """One dispatched event: its `event` name (None for the default), joined `data`, last `id`,
    and `raw`, the exact bytes of the event including its terminating blank line."""

    event: str | None
    data: str
    id: str | None
    raw: bytes


class EventTooLarge(ValueError):
    """An event passed the decoder's `max_event_bytes` (Rule 4)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"an event is larger than {limit} bytes")
        self.limit = limit


class SSEDecoder:
    """Incremental event-stream decoder: `feed(bytes) -> list[SSEEvent]`, then `flush()` at EOF.

    Reads may split an event (or a CRLF) anywhere. Undecodable UTF-8 is replaced, never raised.
    `max_event_bytes` (default: no limit) bounds each event, `EventTooLarge` past it (Rule 4).
    """

    __slots__ = ("_buf", "_data", "_event", "_first", "_id", "_max", "_over", "_pos", "_start")

    def __init__(self, max_event_bytes: int | None = None) -> None:
        self._max = sys.maxsize if max_event_bytes is None else max_event_bytes
        self._over = False
        self._buf = b""
        self._start = 0
        self._pos = 0
        self._first = True
        self._event: str | None = None
        self._data: list[bytes] = []
        self._id: str | None = None

    def feed(self, data: bytes) -> list[SSEEvent]:
        """Add bytes read from the stream; return the events they complete, in order."""
        if self._over:
            raise EventTooLarge(self._max)
        if not data:
            return []
        # Rule 1: only an unfinished event is carried over, so most reads are not copied.
        self._buf = self._buf + bytes(data) if self._buf else bytes(data)
        if self._first:
            if len(self._buf) < len(_BOM) and _BOM.startswith(self._buf):
                return []
            self._first = False
            if self._buf.startswith(_BOM):
                self._buf = self._buf[len(_BOM) :]
        return self._scan(final=False)

    def flush(self) -> list[SSEEvent]:
        """End of stream: dispatch a pending event that lacks its final blank line.

        Lenient on purpose (the standard would discard it): an upstream that drops the last
        `\\n\\n` still delivers its final usage or finish event. A cut-off line is kept as is;
        the stream decoder counts it as malformed if it does not parse.
        """
        if self._over:
            raise EventTooLarge(self._max)
        events = self._scan(final=True)
        buf = self._buf
        if self._pos < len(buf):
            self._field(buf[self._pos :])
        if self._data:
            events.append(self._dispatch(buf, len(buf)))
        self._reset_event()
        self._buf = b""
        self._start = self._pos = 0
        return events

    def _scan(self, *, final: bool) -> list[SSEEvent]:
        buf = self._buf
        size = len(buf)
        events: list[SSEEvent] = []
        # bytes.find is an order of magnitude faster than a regex here; CR endings are rare.
        find_end = _find_lf if b"\r" not in buf else _find_any
        pos = self._pos
        # Rule 4: a buffer within the limit holds no event past it, so most scans check nothing.
        over = size > self._max
        simple = find_end is _find_lf
        while True:
            if (
                simple
                and pos == self._start
                and not self._data
                and self._event is None
                and (end := self._whole(buf, pos, events, over=over))
            ):
                pos = self._start = end
                continue
            found = find_end(buf, pos)
            if found is None:
                break
            line_end, end = found
            if end == size and not final and buf[end - 1] == 0x0D:
                break  # Rule 3: a CR at the end may be half of a CRLF.
            if line_end == pos:
                if self._data:
                    if over and end - self._start > self._max:
                        return self._too_large(events)  # an event that came whole in one read
                    events.append(self._dispatch(buf, end))
                else:
                    self._reset_event()
                self._start = end
            elif buf.startswith(b"data: ", pos):  # the common line, inlined
                self._data.append(buf[pos + 6 : line_end])
            else:
                self._field(buf[pos:line_end])
            pos = end
        if self._start:
            self._buf = buf[self._start :]
            pos -= self._start
            self._start = 0
        self._pos = pos
        if over and len(self._buf) > self._max:
            return self._too_large(events)  # the unfinished event
        return events

    def _whole(self, buf: bytes, pos: int, events: list[SSEEvent], *, over: bool) -> int:
        """Rule 5: at an event's start in an LF-only buffer, a whole event of the common
        shape is appended to `events`, and its end returned (0 when there is none at `pos`)."""
        at = pos
        name: str | None = None
        if buf.startswith(b"event: ", at):
            index = buf.find(b"\n", at)
            if index < 0:
                return 0
            name = buf[at + 7 : index].decode("utf-8", "replace")
            at = index + 1
        if not buf.startswith(b"data: ", at):
            return 0
        index = buf.find(b"\n", at)
        end = index + 2
        if index < 0 or buf[index + 1 : end] != b"\n" or (over and end - pos > self._max):
            return 0
        data = buf[at + 6 : index].decode("utf-8", "replace")
        events.append(SSEEvent(name, data, self._id, buf[pos:end]))
        return end

    def _too_large(self, events: list[SSEEvent]) -> list[SSEEvent]:
        """Rule 4: the events before the one too large, or `EventTooLarge` when there are none
        (then at every later call)."""
        self._over = True
        self._buf = b""
        self._reset_event()
        if events:
            return events
        raise EventTooLarge(self._max)

    def _field(self, line: bytes) -> None:
        if line.startswith(b"data:"):
            self._data.append(line[6:] if line[5:6] == b" " else line[5:])
            return
        if line[:1] == b":":
            return
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id" and b"\0" not in value:
            self._id = value.decode("utf-8", "replace")

    def _dispatch(self, buf: bytes, end: int) -> SSEEvent:
        data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
        event = SSEEvent(
            self._event, data.decode("utf-8", "replace"), self._id, buf[self._start : end]
        )
        self._reset_event()
        return event

    def _reset_event(self) -> None:
        self._event = None
        self._data = []


def _find_lf(buf: bytes, pos: int) -> tuple[int, int] | None:
    """`(line end, next line start)` of the line at `pos` when no CR is in `buf`."""
    index = buf.find(b"\n", pos)
    return None if index < 0 else (index, index + 1)


def _find_any(buf: bytes, pos: int) -> tuple[int, int] | None:
    """`(line end, next line start)` of the line at `pos`, for CRLF, LF or CR endings."""
    match = _LINE_END.search(buf, pos)
    return None if match is None else (match.start(), match.end())


def encode_event(data: bytes | str, event: str | None = None) -> bytes:
    """One event's bytes: an optional `event:` line, one `data:` line per line of `data`
    (LF, CRLF or CR separated), and the terminating blank line."""
    payload = data.encode() if isinstance(data, str) else data
    head = b"event: " + event.encode() + b"\n" if event is not None else b""
    if b"\n" not in payload and b"\r" not in payload:
        return head + b"data: " + payload + b"\n\n"
    lines = _LINE_END.split(payload)
    return head + b"".join(b"data: " + line + b"\n" for line in lines) + b"\n"
