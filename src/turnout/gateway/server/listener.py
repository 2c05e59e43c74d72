"""The gateway's HTTP server on one listening socket: it accepts connections up to a cap and
shuts down within a bound.

Rule 1: at most `limits.max_connections` connections are open, and at most
`limits.per_address` from one peer address; a connection accepted past either takes the place
of the idlest idle connection it competes with, or is closed at once when none is idle (the
policy is `connections.ConnectionTable`'s). One WARNING line marks each burst at the cap (and
one each address's burst at its share); a burst ends when the open connections fall to
`_BURST_END` of the bound.
Rule 2: `shutdown()` stops accepting, closes idle connections, and lets the requests in
flight finish for `limits.shutdown_grace` seconds (less if `hurry()` is called). Then the app
is asked to end what is still open (`RequestEnder`: a started stream ends with an error
event, an unstarted answer is a 503), given `_END_WAIT` seconds to write it, and whatever is
left is cut. A connection that lingers after its last answer (`connection_state` Rule 4) owes
nothing: it is not waited for, and is closed when the rest are.
Rule 3: `serving()` runs the app's lifespan around the listener: startup before the first
connection is accepted, shutdown after the last one is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable

from turnout.gateway.server.connections import ConnectionTable
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
        self._table: ConnectionTable[HttpConnection] = ConnectionTable(
            limits.max_connections, limits.per_address
        )
        self.limits = limits
        self.draining = False
        self.connections: set[HttpConnection] = set()
        subject: object = app
        self._ender = subject if isinstance(subject, RequestEnder) else None
        self.direct: CycleApp | None = (
            subject.serve_cycle if isinstance(subject, CycleServer) else None
        )
        self._over_cap = False
        self._crowded: set[str | None] = set()  # addresses warned about, in their burst
        self._server: asyncio.AbstractServer | None = None
        self._empty = asyncio.Event()
        self._hurry = asyncio.Event()

    async def start(self, sock: socket.socket) -> None:
        """Accept connections on `sock` (bound and listening)."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: HttpConnection(self), sock=sock, backlog=BACKLOG
        )

    @property
    def limits(self) -> ServerLimits:
        """The server's limits (a reload may set new ones)."""
        return self._limits

    @limits.setter
    def limits(self, limits: ServerLimits) -> None:
        self._limits = limits
        self._table.cap = limits.max_connections
        self._table.per_address = limits.per_address

    def admit(self, conn: HttpConnection) -> bool:
        """Rule 1."""
        if self.draining:
            return False
        table = self._table
        address = conn.peer_host
        crowded = table.per_address < table.cap and table.count(address) >= table.per_address
        if crowded or len(table) >= table.cap:
            self._warn(address, crowded=crowded)
        admission = table.admit(conn, address)
        if not admission.admitted:
            return False
        evicted = admission.evicted
        if evicted is not None:
            self.connections.discard(evicted)
            evicted.close()
        self.connections.add(conn)
        return True

    def _warn(self, address: str | None, *, crowded: bool) -> None:
        """Rule 1: one WARNING line per burst."""
        if crowded and address not in self._crowded:
            self._crowded.add(address)
            logger.warning(
                "connection share reached: %s holds %d connections"
                " (server.max_connections_per_address); its idlest are closed to make room for"
                " its new ones, which are closed at once while none is idle",
                address,
                self._table.per_address,
            )
        elif not crowded and not self._over_cap:
            self._over_cap = True
            logger.warning(
                "connection cap reached: %d connections are open (server.max_connections);"
                " the idlest are closed to make room, and new connections are closed at once"
                " while none is idle",
                self._table.cap,
            )

    def touch(self, conn: HttpConnection) -> None:
        """`conn` started a request head or ended a response (Rule 1's idleness)."""
        self._table.touch(conn)

    def quiet(self, conn: HttpConnection) -> None:
        """`conn` lingers after its last answer (Rule 2: the shutdown does not wait for it)."""
        if self.draining and self._settled_now():
            self._empty.set()

    def _settled_now(self) -> bool:
        return all(conn.lingering for conn in self.connections)

    def release(self, conn: HttpConnection) -> None:
        """Count `conn` out."""
        self.connections.discard(conn)
        table = self._table
        table.release(conn)
        count = len(table)
        if self._over_cap and count <= table.cap * _BURST_END:
            self._over_cap = False
        address = conn.peer_host
        if address in self._crowded and table.count(address) <= table.per_address * _BURST_END:
            self._crowded.discard(address)
        if self.draining and self._settled_now():
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
        if not await self._settled(self.limits.shutdown_grace) and self._ender is not None:
            self._ender.end_requests()
            await self._settled(_END_WAIT)
        for conn in list(self.connections):
            if conn.lingering:
                conn.transport.close()  # Rule 2: its answer is written (or being written)
            else:
                conn.abort()  # still not done: cut
        await asyncio.sleep(0)  # let the cut requests' tasks end

    async def _settled(self, limit: float) -> bool:
        """Wait until every connection closed or lingers (True), `limit` seconds or
        `hurry()`."""
        if self._settled_now():
            return True
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
        return self._settled_now()


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
