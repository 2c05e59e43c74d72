"""The gateway's HTTP server on one listening socket: it accepts connections up to a cap and
shuts down within a bound.

Rule 1: at most `limits.max_connections` connections are open; one accepted over the cap is
closed at once. One WARNING line marks each burst over the cap; a burst ends when the open
connections fall to `_BURST_END` of the cap.
Rule 2: `shutdown()` stops accepting, closes idle connections, and lets the requests in
flight finish for `limits.shutdown_grace` seconds (less if `hurry()` is called). Then the app
is asked to end what is still open (`RequestEnder`: a started stream ends with an error
event, an unstarted answer is a 503), given `_END_WAIT` seconds to write it, and whatever is
left is cut.
Rule 3: `serving()` runs the app's lifespan around the listener: startup before the first
connection is accepted, shutdown after the last one is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable

from turnout.gateway.server.http11 import HttpConnection
from turnout.gateway.server.lifespan import Lifespan

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from turnout.gateway.server.cycle import RequestCycle
    from turnout.gateway.server.http11 import ASGIApp, CycleApp
    from turnout.gateway.server.limits import ServerLimits

__all__ = ["BACKLOG", "CycleServer", "Listener", "RequestEnder", "bind_socket", "serving"]

logger = logging.getLogger("turnout.gateway")

BACKLOG: Final = 2048
"""Connections the kernel queues before they are accepted."""

_BURST_END: Final = 0.9
_END_WAIT: Final = 2.0


def bind_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to `host:port` and listening (port 0: a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


@runtime_checkable
class CycleServer(Protocol):
    """An app that can serve a request without the ASGI messages (`cycle.RequestCycle`)."""

    async def serve_cycle(self, cycle: RequestCycle) -> None:
        """Serve one request (as the app's ASGI call would)."""


@runtime_checkable
class RequestEnder(Protocol):
    """An app that can end its requests in flight when the grace of a shutdown is over."""

    def end_requests(self) -> None:
        """End every request still in flight, in whatever way is right for where it is."""


class Listener:
    """Serves `app` on a socket with `limits` (see the module rules)."""

    def __init__(self, app: ASGIApp, limits: ServerLimits) -> None:
        self.app = app
        self.limits = limits
        self.draining = False
        self.connections: set[HttpConnection] = set()
        subject: object = app
        self._ender = subject if isinstance(subject, RequestEnder) else None
        self.direct: CycleApp | None = (
            subject.serve_cycle if isinstance(subject, CycleServer) else None
        )
        self._over_cap = False
        self._server: asyncio.AbstractServer | None = None
        self._empty = asyncio.Event()
        self._hurry = asyncio.Event()

    async def start(self, sock: socket.socket) -> None:
        """Accept connections on `sock` (bound and listening)."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: HttpConnection(self), sock=sock, backlog=BACKLOG
        )

    def admit(self, conn: HttpConnection) -> bool:
        """Rule 1."""
        cap = self.limits.max_connections
        if self.draining or len(self.connections) >= cap:
            if not self._over_cap and not self.draining:
                self._over_cap = True
                logger.warning(
                    "connection cap reached: %d connections are open (server.max_connections);"
                    " new connections are closed at once until some end",
                    cap,
                )
            return False
        self.connections.add(conn)
        return True

    def release(self, conn: HttpConnection) -> None:
        """Count `conn` out."""
        self.connections.discard(conn)
        count = len(self.connections)
        if self._over_cap and count <= self.limits.max_connections * _BURST_END:
            self._over_cap = False
        if not count and self.draining:
            self._empty.set()

    def hurry(self) -> None:
        """End the shutdown's grace now."""
        self._hurry.set()

    async def shutdown(self) -> None:
        """Rule 2."""
        self.draining = True
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.drain()
        if not self.connections:
            return
        if await self._settled(self.limits.shutdown_grace):
            return
        if self._ender is not None:
            self._ender.end_requests()
            if await self._settled(_END_WAIT):
                return
        for conn in list(self.connections):
            conn.abort()
        await asyncio.sleep(0)  # let the cut requests' tasks end

    async def _settled(self, limit: float) -> bool:
        """Wait until every connection closed (True), `limit` seconds or `hurry()`."""
        waits = [
            asyncio.ensure_future(self._empty.wait()),
            asyncio.ensure_future(self._hurry.wait()),
        ]
        try:
            await asyncio.wait(waits, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
        self._hurry.clear()
        return not self.connections


@contextlib.asynccontextmanager
async def serving(
    app: ASGIApp, sock: socket.socket, limits: ServerLimits
) -> AsyncIterator[Listener]:
    """Rule 3: serve `app` on `sock` for the block; raises `LifespanFailed` when the app
    cannot start."""
    lifespan = Lifespan(app)
    await lifespan.startup()
    listener = Listener(app, limits)
    try:
        await listener.start(sock)
        yield listener
    finally:
        await listener.shutdown()
        await lifespan.shutdown()
