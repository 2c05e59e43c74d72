"""AWS event-stream framing (`application/vnd.amazon.eventstream`): an incremental decoder and
a string-header encoder (no I/O).

A frame is a 12-byte prelude (total length, headers length, both big-endian uint32, and the
CRC-32 of those 8 bytes), the headers, the payload, and the CRC-32 of everything before it.
A header is a 1-byte name length, the name, a 1-byte value type and the value.

Rule 1: reads may split a frame anywhere; a frame is returned once, when its last byte has
been read, and bytes of the next frame stay buffered.
Rule 2: a frame whose prelude CRC or message CRC does not match, whose lengths cannot hold
its own parts, or whose header is of an unknown type raises `EventStreamError`, and so does
every later `feed` (a stream that lost its framing cannot be resynchronised).
Rule 3: no frame passes `max_frame_bytes`: a prelude announcing more raises `EventStreamError`
before the frame is buffered.
Rule 4: header values decode to `str` (strings), `bytes` (byte arrays), `bool`, `int`
(byte, short, int, long, timestamp in milliseconds) or the 16 raw bytes of a UUID.
"""

from __future__ import annotations

import struct
import sys
import zlib
from typing import NamedTuple

__all__ = ["EventStreamDecoder", "EventStreamError", "Frame", "encode_frame"]

_PRELUDE = 12
_TRAILER = 4
_INTS = {2: ">b", 3: ">h", 4: ">i", 5: ">q", 8: ">q"}


class EventStreamError(ValueError):
    """The stream's framing is broken (Rule 2) or a frame is too large (Rule 3)."""


class Frame(NamedTuple):
    """One decoded frame: its `headers` by name and its `payload` bytes."""

    headers: dict[str, object]
    payload: bytes

    @property
    def message_type(self) -> str:
        """`:message-type` (`event`, `exception` or `error`); `event` when absent."""
        value = self.headers.get(":message-type")
        return value if isinstance(value, str) else "event"

    @property
    def event_type(self) -> str | None:
        """`:event-type`, or for an exception frame `:exception-type` (None when absent)."""
        name = ":exception-type" if self.message_type == "exception" else ":event-type"
        value = self.headers.get(name)
        if value is None and self.message_type == "error":
            value = self.headers.get(":error-code")
        return value if isinstance(value, str) else None


def _crc(data: bytes | memoryview) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def _headers(data: bytes) -> dict[str, object]:
    out: dict[str, object] = {}
    pos, end = 0, len(data)
    try:
        while pos < end:
            size = data[pos]
            name = data[pos + 1 : pos + 1 + size].decode("utf-8")
            pos += 1 + size
            kind = data[pos]
            pos += 1
            value: object
            if kind in (0, 1):
                value = kind == 0
            elif kind in _INTS:
                fmt = _INTS[kind]
                width = struct.calcsize(fmt)
                (value,) = struct.unpack_from(fmt, data, pos)
                pos += width
            elif kind in (6, 7):
                (length,) = struct.unpack_from(">H", data, pos)
                raw = data[pos + 2 : pos + 2 + length]
                if len(raw) != length:
                    raise EventStreamError("a header value runs past the headers")
                value = raw.decode("utf-8") if kind == 7 else bytes(raw)
                pos += 2 + length
            elif kind == 9:
                value = bytes(data[pos : pos + 16])
                pos += 16
            else:
                raise EventStreamError(f"unknown header value type {kind}")
            out[name] = value
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise EventStreamError(f"malformed headers: {exc}") from None
    if pos != end:
        raise EventStreamError("a header runs past the headers")
    return out


class EventStreamDecoder:
    """Incremental decoder: `feed(bytes) -> list[Frame]`; `pending` says whether an unfinished
    frame is buffered (a stream that ends with one was cut)."""

    __slots__ = ("_broken", "_buf", "_max")

    def __init__(self, max_frame_bytes: int | None = None) -> None:
        self._max = sys.maxsize if max_frame_bytes is None else max_frame_bytes
        self._buf = bytearray()
        self._broken: EventStreamError | None = None

    @property
    def pending(self) -> bool:
        """Whether bytes of an unfinished frame are buffered."""
        return bool(self._buf)

    def feed(self, data: bytes) -> list[Frame]:
        """Add bytes read from the stream; return the frames they complete, in order."""
        if self._broken is not None:
            raise self._broken
        self._buf += data
        frames: list[Frame] = []
        try:
            while len(self._buf) >= _PRELUDE:
                frame = self._next()
                if frame is None:
                    break
                frames.append(frame)
        except EventStreamError as exc:
            self._broken = exc
            self._buf.clear()
            raise
        return frames

    def _next(self) -> Frame | None:
        buf = self._buf
        total, header_size, prelude_crc = struct.unpack_from(">III", buf, 0)
        if _crc(memoryview(buf)[:8]) != prelude_crc:
            raise EventStreamError("the frame's prelude CRC does not match")
        if total < _PRELUDE + _TRAILER + header_size:
            raise EventStreamError(f"a frame of {total} bytes cannot hold its parts")
        if total > self._max:
            raise EventStreamError(f"a frame is larger than {self._max} bytes")
        if len(buf) < total:
            return None
        (message_crc,) = struct.unpack_from(">I", buf, total - _TRAILER)
        if _crc(memoryview(buf)[: total - _TRAILER]) != message_crc:
            raise EventStreamError("the frame's message CRC does not match")
        headers = _headers(bytes(buf[_PRELUDE : _PRELUDE + header_size]))
        payload = bytes(buf[_PRELUDE + header_size : total - _TRAILER])
        del buf[:total]
        return Frame(headers, payload)


def encode_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One frame with string `headers` (in the order given) and `payload`."""
    encoded = bytearray()
    for name, value in headers.items():
        key, text = name.encode("utf-8"), value.encode("utf-8")
        encoded += struct.pack(">B", len(key)) + key + b"\x07" + struct.pack(">H", len(text))
        encoded += text
    total = _PRELUDE + len(encoded) + len(payload) + _TRAILER
    prelude = struct.pack(">II", total, len(encoded))
    head = prelude + struct.pack(">I", _crc(prelude)) + bytes(encoded) + payload
    return head + struct.pack(">I", _crc(head))
