"""The gateway's HTTP/1.1 connections: an asyncio protocol that carries out what its
`connection_state.ConnectionState` asks for. It feeds the state the caller's bytes, the app's
progress and the loop's time, and does the rest: writes, pauses and resumes reading, keeps one
timer at the deadline the state names, closes, and runs each request (a `cycle.RequestCycle`)
in a task of its own, through ASGI or, for an app that offers it, directly
(`ConnectionHost.direct`). The rules are the state's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, MutableMapping
from typing import TYPE_CHECKING, Any, Protocol, cast

from turnout.gateway.server._tracebacks import release_frames
from turnout.gateway.server.connection_state import (
    ABORT,
    ARM,
    CLOSE,
    ENDS,
    HALF_CLOSE,
    READ,
    RUN,
    TOUCH,
    WRITE,
    ConnectionState,
)
from turnout.gateway.server.cycle import RequestCycle
from turnout.gateway.server.deadlines import LINGER
from turnout.gateway.server.reader import PIPELINE_DEPTH

if TYPE_CHECKING:
    from turnout.gateway.server.limits import ServerLimits

__all__ = [
    "LINGER",
    "PIPELINE_DEPTH",
    "ASGIApp",
    "ConnectionHost",
    "CycleApp",
    "HttpConnection",
]

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
    """One caller's connection: the asyncio side of its `ConnectionState`."""

    def __init__(self, host: ConnectionHost) -> None:
        self._host = host
        self._limits = host.limits
        self._loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport = None  # type: ignore[assignment] # set on accept
        self._state: ConnectionState = None  # type: ignore[assignment] # made on accept
        self._addresses: tuple[Any, Any] = (None, None)
        self._task: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._reading = True
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
        """True once the connection half-closed after its last answer."""
        return self._state.lingering

    @property
    def is_idle(self) -> bool:
        """No request is running or waiting to run (the server may close it to make room)."""
        return not self.closed and self._state.is_idle

    # -- asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport, but have its methods.
        self.transport = cast("asyncio.Transport", transport)
        addresses = self._addresses = (
            _address(transport, "sockname"),
            _address(transport, "peername"),
        )
        state = self._state = ConnectionState(
            self,
            self._limits,
            addresses,
            now=self._loop.time(),
            half_close=self.transport.can_write_eof(),
        )
        if not self._host.admit(self):
            self.closed = True
            state.lost()
            transport.close()
            return
        self._apply(state.accepted())

    def data_received(self, data: bytes) -> None:
        acts = self._state.received(data, self._loop.time())
        if acts:
            self._apply(acts)

    def eof_received(self) -> bool | None:
        return None  # the caller half-closed: treated as gone

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._host.release(self)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._state.lost()
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

    # -- carrying out the state's actions

    def _apply(self, acts: int) -> None:
        """Do what `acts` asks, in the order of its bits (see `connection_state`)."""
        state = self._state
        if acts & RUN:
            cycle = state.running
            assert cycle is not None
            self._task = self._loop.create_task(self._run(cycle))
        if acts & WRITE:
            self.write(state.take_output())
        if acts & ENDS:
            self._end(acts)
        if acts & READ and state.reading != self._reading:
            self._reading = state.reading
            if self._reading:
                self.transport.resume_reading()
            else:
                self.transport.pause_reading()
        if acts & ARM:
            self._arm(state.deadline)
        if acts & TOUCH:
            self._host.touch(self)

    def _end(self, acts: int) -> None:
        if acts & ABORT:
            self.abort()
        elif acts & CLOSE:
            self.transport.close()
        elif acts & HALF_CLOSE:
            self.transport.write_eof()
            self._host.quiet(self)

    def _arm(self, when: float | None) -> None:
        """Keep the one timer no later than `when` (it asks the state again when it fires)."""
        timer = self._timer
        if when is not None and (timer is None or when < self._timer_at):
            if timer is not None:
                timer.cancel()
            self._timer = self._loop.call_at(when, self._deadline_due)
            self._timer_at = when

    def _deadline_due(self) -> None:
        self._timer = None
        acts = self._state.due(self._loop.time())
        if acts:
            self._apply(acts)

    # -- running requests

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
        self._task = None
        acts = self._state.finished(cycle, failure, self._loop.time())
        if acts:
            self._apply(acts)
        release_frames(failure)  # its frames hold the request's body

    def want_body(self, cycle: RequestCycle) -> None:
        """The app waits for body bytes: ask for them (Rule 1 of the cycle)."""
        acts = self._state.want_body(cycle, self._loop.time())
        if acts:
            self._apply(acts)

    def body_taken(self) -> None:
        """The app took the body read so far: read on."""
        state = self._state
        if not state.reading:
            acts = state.body_taken(self._loop.time())
            if acts:
                self._apply(acts)

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

    # -- ending

    def drain(self) -> None:
        """The server is shutting down: close now if idle, else after the running request."""
        if not self.closed:
            self._apply(self._state.drain(self._loop.time()))

    def close(self) -> None:
        """Close now (to make room for another connection)."""
        if not self.closed:
            self._apply(self._state.close(self._loop.time()))

    def abort(self) -> None:
        """Close at once, whatever is in flight, and stop the running request's task."""
        if not self.closed:
            self.transport.abort()
        task = self._task
        if task is not None and not task.done():
            task.cancel()


def _address(transport: asyncio.BaseTransport, name: str) -> tuple[str, int] | None:
    info = transport.get_extra_info(name)
    if isinstance(info, tuple) and len(info) >= 2:
        return (str(info[0]), int(info[1]))
    return None
