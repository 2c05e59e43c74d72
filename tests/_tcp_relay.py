"""A TCP relay for tests that take a server away (PostgreSQL behind a gateway): clients connect
to the relay's local port, and the test closes it to play a server that went away, then opens
it again on the same port to bring the server back; or stalls it to play a server that accepts
connections and never answers."""

from __future__ import annotations

import asyncio
import contextlib

__all__ = ["Relay"]


class Relay:
    """A TCP relay to `host:port` on a local port (free, or the one it had before): `start()`
    listens, `close()` refuses new connections and cuts the open ones, as a server that went
    away (a relay already closed stays so); `start()` again listens on the same port.
    `stall()` keeps accepting connections but forwards nothing more, either way, on new and open
    connections alike, until `resume()` or `close()`."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.target = host, port
        self.port = 0
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._flowing = asyncio.Event()
        self._flowing.set()

    def stall(self) -> None:
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for writer in list(self._open):
            writer.close()
        self._flowing.set()  # a stalled connection ends too
        await server.wait_closed()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._open.add(writer)
        await self._flowing.wait()
        try:
            up_reader, up_writer = await asyncio.open_connection(self.host, self.target)
        except OSError:
            writer.close()
            return
        self._open.update((writer, up_writer))
        try:
            await asyncio.gather(
                _pipe(reader, up_writer, self._flowing), _pipe(up_reader, writer, self._flowing)
            )
        finally:
            for each in (writer, up_writer):
                each.close()
                self._open.discard(each)


async def _pipe(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, flowing: asyncio.Event
) -> None:
    with contextlib.suppress(OSError):
        while data := await reader.read(65536):
            await flowing.wait()
            writer.write(data)
            await writer.drain()
    with contextlib.suppress(OSError):
        writer.close()
