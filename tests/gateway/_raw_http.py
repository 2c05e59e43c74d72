"""A raw HTTP/1.1 client for the server tests: bytes in, parsed responses out, every read
bounded in time (a test that waits for a close the server never makes fails, not hangs)."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

WAIT = 2.0
"""Seconds any one read may take."""


@dataclass
class RawResponse:
    """One response: status, lower-case headers (last value wins) and the decoded body."""

    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return orjson.loads(self.body)


class RawClient:
    """One connection to `port` on 127.0.0.1."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int) -> RawClient:
        """Connect."""
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    async def send(self, data: bytes) -> None:
        """Write `data` (a reset by the server is ignored: the server may close first)."""
        with contextlib.suppress(ConnectionError):
            self.writer.write(data)
            await self.writer.drain()

    async def response(self, *, head_only: bool = False, wait: float = WAIT) -> RawResponse:
        """Read one response (`head_only`: the answer to a HEAD, which has no body)."""
        async with asyncio.timeout(wait):
            head = await self.reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split()[1])
            headers: dict[str, str] = {}
            for line in lines[1:]:
                if line:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
            if head_only or status < 200 or status in (204, 304):
                return RawResponse(status, headers, b"")
            if headers.get("transfer-encoding") == "chunked":
                return RawResponse(status, headers, await self._chunks())
            if "content-length" in headers:
                body = await self.reader.readexactly(int(headers["content-length"]))
                return RawResponse(status, headers, body)
            return RawResponse(status, headers, await self.reader.read())

    async def _chunks(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size = int((await self.reader.readuntil(b"\r\n")).strip(), 16)
            if size == 0:
                await self.reader.readuntil(b"\r\n")
                return b"".join(parts)
            parts.append(await self.reader.readexactly(size))
            await self.reader.readexactly(2)

    async def closed(self, wait: float = WAIT) -> bool:
        """True when the server closes the connection within `wait` seconds, sending nothing
        more (a reset counts as closed)."""
        try:
            async with asyncio.timeout(wait):
                return await self.reader.read(1) == b""
        except ConnectionError:
            return True

    def close(self) -> None:
        """Close the client's side."""
        self.writer.close()


@contextlib.asynccontextmanager
async def connected(port: int) -> AsyncIterator[RawClient]:
    """A `RawClient` on `port` for the block, closed after it."""
    client = await RawClient.open(port)
    try:
        yield client
    finally:
        client.close()
        with contextlib.suppress(ConnectionError):
            await client.writer.wait_closed()


def request(
    method: str,
    path: str,
    body: bytes = b"",
    *,
    headers: dict[str, str] | None = None,
    close: bool = False,
) -> bytes:
    """A request's bytes, with `host`, and `content-length` when there is a body."""
    lines = [f"{method} {path} HTTP/1.1", "host: test"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    if body:
        lines.append(f"content-length: {len(body)}")
    if close:
        lines.append("connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def chat(model: str, **extra: Any) -> bytes:
    """A chat completion request body."""
    return orjson.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}], **extra})
