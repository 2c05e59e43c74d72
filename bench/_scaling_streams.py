"""The stream client of `scaling.py`: one asyncio protocol per streamed chat completion, parsed
with `httptools`, counting events and timing stamped ones.

Rule 1: one connection carries one request (`connection: close`); the client never pools, so N
streams are N connections.
Rule 2: a content event whose text is a stamp (the mock upstream's `stamp` fault item: the Unix
time in microseconds it was sent) gives one latency: the client's clock when the bytes arrived
minus the stamp. Both clocks are the same host's.
Rule 3: a stream fails when its status is not 200, an error event arrives, or the connection
ends before the response did; unless the client closed it itself (`close`).
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from typing import cast

import httptools

_STAMP = re.compile(rb'"content":" ?(\d{13,})"')


@dataclass
class Received:
    """What one stream got: status, events, latencies (recv time, ms) and how it ended."""

    status: int = 0
    events: int = 0
    latencies: list[tuple[float, float]] = field(default_factory=list)
    first_event: float | None = None  # perf_counter when the first content event arrived
    error: str | None = None
    complete: bool = False


class StreamProtocol(asyncio.Protocol):
    """Sends `request` and reads one streamed response (Rules 1-3)."""

    def __init__(self, request: bytes, done: asyncio.Future[Received]) -> None:
        self.request = request
        self.done = done
        self.first: asyncio.Future[None] = done.get_loop().create_future()
        self.got = Received()
        self.parser = httptools.HttpResponseParser(self)
        self.buffer = b""
        self.now_us = 0
        self.transport: asyncio.Transport | None = None
        self.closing = False

    # -- asyncio ---------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast("asyncio.Transport", transport)  # uvloop's is no subclass
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        self.now_us = time.time_ns() // 1000
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._finish(f"bad response: {exc}")

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.got.complete and not self.closing:
            self._finish(f"connection lost: {exc}" if exc else "connection closed early")
        self._finish(None)

    # -- httptools ---------------------------------------------------------------------------
    def on_headers_complete(self) -> None:
        self.got.status = self.parser.get_status_code()
        if self.got.status != 200:
            self.got.error = f"status {self.got.status}"

    def on_body(self, body: bytes) -> None:
        self.buffer += body
        *events, self.buffer = self.buffer.split(b"\n\n")
        for event in events:
            self._event(event)

    def on_message_complete(self) -> None:
        self.got.complete = True
        self._finish(None)
        if self.transport is not None:
            self.transport.close()

    def _event(self, event: bytes) -> None:
        if b'"error"' in event[:64] or event.startswith(b"event: error"):
            self.got.error = "error event: " + event[:200].decode(errors="replace")
            return
        if not event.startswith(b"data: ") or event == b"data: [DONE]":
            return
        self.got.events += 1
        match = _STAMP.search(event)
        if match is not None:
            if self.got.first_event is None:
                self.got.first_event = time.perf_counter()
                self.first.set_result(None)
            latency_ms = (self.now_us - int(match.group(1))) / 1000
            self.got.latencies.append((time.perf_counter(), latency_ms))

    def _finish(self, error: str | None) -> None:
        if error is not None and self.got.error is None:
            self.got.error = error
        if not self.done.done():
            self.done.set_result(self.got)
        if not self.first.done():
            self.first.set_result(None)

    def close(self) -> None:
        """End the stream from the client's side (not a failure)."""
        self.closing = True
        if self.transport is not None:
            self.transport.close()


def chat_request(port: int, model: str, headers: str = "") -> bytes:
    """A streamed chat completion request for `model`, one connection (Rule 1)."""
    body = (
        b'{"model": "' + model.encode() + b'", "stream": true, "max_tokens": 64, "messages": '
        b'[{"role": "user", "content": "Tell me a long story."}]}'
    )
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n"
        f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
        f"connection: close\r\n{headers}\r\n"
    )
    return head.encode() + body


async def open_stream(port: int, model: str) -> tuple[StreamProtocol, asyncio.Future[Received]]:
    """Connect to 127.0.0.1:`port` and send the stream request; its protocol and future."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Received] = loop.create_future()
    request = chat_request(port, model)
    _, protocol = await loop.create_connection(
        lambda: StreamProtocol(request, done), "127.0.0.1", port
    )
    return protocol, done


STREAM_LIMIT = 120.0
"""Seconds a whole stream may take."""


async def stream_once(port: int, model: str) -> Received:
    """One whole stream (at most `STREAM_LIMIT` seconds)."""
    _, done = await open_stream(port, model)
    return await asyncio.wait_for(done, STREAM_LIMIT)


async def streams(port: int, model: str, count: int, concurrency: int) -> list[Received]:
    """`count` whole streams, `concurrency` at a time."""
    results: list[Received] = []
    left = iter(range(count))

    async def worker() -> None:
        for _ in left:
            results.append(await stream_once(port, model))  # noqa: PERF401 - one at a time

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return results
