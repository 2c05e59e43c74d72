"""What an HTTP/1.1 connection does, without doing it: bytes, the app's progress and the time
(`now`, given with each call) in, actions out. No I/O, no event loop, no timer: the asyncio
protocol (`http11.HttpConnection`) feeds it and carries out what it asks for.

Each call returns an int of action bits, 0 when there is nothing to do, which is what most
calls return: the bits cost nothing to make (no list or object per request) and the shell
tests one int before doing anything. The bits name what to do, in the order the shell does it:
`RUN` (start the task of `running`), `WRITE` (`take_output()`), `ABORT`, `CLOSE` or
`HALF_CLOSE` (end the connection; after a half-close it is quiet: it owes nothing more),
`READ` (pause or resume reading, as `reading` says), `ARM` (the one timer must fire no later
than `deadline`; when it fires, `due`) and `TOUCH` (the connection was active: a head began or
a response ended). The requests are `cycle.RequestCycle`s, read by a `reader.RequestReader`;
the state fills their bodies and tells them when the caller left (`RequestCycle.leave`).

Rule 1: requests on a connection run one at a time, in the order they arrived. Requests
pipelined behind the running one wait, at most `reader.PIPELINE_DEPTH` of them (past it the
connection reads no more requests and closes once those are answered), and bytes that arrive
meanwhile wait unparsed, at most `HIGH_WATER` of them before the connection stops reading.
Rule 2: one deadline runs at a time, set by what the connection waits for: a request head, the
body of the running request while the connection reads it, or the next request (`deadlines`).
Past it the connection closes, after a 408 when part of a request arrived and nothing was
answered; a response already started is cut instead (`ABORT`).
Rule 3: a head over `max_header_count` lines or `max_header_bytes` bytes gets 431, and framing
that cannot be parsed 400, in the OpenAI error envelope (`reader`); the connection then
closes, once the requests before the bad one are answered. When the bad bytes are the running
request's own body, it is answered at once (or cut, if its response started).
Rule 4: a response that starts before its request's body was read closes the connection (the
rest of the body is never read). So does every answer the server gives in the app's place
(and an app that returns without answering gets a 500): the connection half-closes and
discards what still arrives for at most `deadlines.LINGER` seconds, so that the caller reads
the answer rather than a reset.
Rule 5: when the caller leaves, the running request is told and the requests waiting behind it
are dropped without reaching the app.
Rule 6: a request asking to upgrade the connection (`Upgrade: h2c`) is served as plain
HTTP/1.1; the connection stays HTTP/1.1 (`reader`).
Rule 7: when the server shuts down, an idle connection closes at once, a busy one after its
running request (`drain`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

from turnout.gateway.server.cycle import HIGH_WATER, error_response
from turnout.gateway.server.deadlines import Deadlines
from turnout.gateway.server.reader import RequestReader, StopReading

if TYPE_CHECKING:
    from turnout.errors import HttpError, RoutingError
    from turnout.gateway.server.cycle import CycleConnection, RequestCycle
    from turnout.gateway.server.limits import ServerLimits

__all__ = [
    "ABORT",
    "ARM",
    "CLOSE",
    "ENDS",
    "HALF_CLOSE",
    "READ",
    "RUN",
    "TOUCH",
    "WRITE",
    "ConnectionState",
]

logger = logging.getLogger("turnout.gateway")

RUN: Final = 1
"""Start the task of `running`."""
WRITE: Final = 2
"""Write `take_output()`."""
ABORT: Final = 4
"""Cut the connection and cancel the running task."""
CLOSE: Final = 8
"""Close the connection once what was written is sent."""
HALF_CLOSE: Final = 16
"""Half-close (the connection lingers, quiet: it owes nothing more)."""
READ: Final = 32
"""Pause or resume reading, as `reading` says."""
ARM: Final = 64
"""Have the timer fire no later than `deadline` (then call `due`)."""
TOUCH: Final = 128
"""The connection was active: a head began or a response ended."""
ENDS: Final = ABORT | CLOSE | HALF_CLOSE
"""The bits that end the connection."""


class ConnectionState:
    """One connection's state (see the module rules); `conn` is what its requests' cycles
    answer on, `half_close` whether its transport can half-close (else it closes at once).
    The shell reads `running` (the request whose task runs), `deadline` (Rule 2: when `due`
    is to be called), `reading`, `lingering` (half-closed after its last answer) and
    `closed`."""

    def __init__(
        self,
        conn: CycleConnection,
        limits: ServerLimits,
        addresses: tuple[Any, Any],
        *,
        now: float,
        half_close: bool,
    ) -> None:
        self._reader = RequestReader(self, conn, limits, addresses)
        self._queue = self._reader.queue
        self._clock = Deadlines(limits, now)
        self._half_close = half_close
        self._now = now  # the time of the call being handled
        self._acts = 0
        self._output = b""
        self._stopped = False  # no more requests are read
        self._rejection: HttpError | RoutingError | None = None
        self.running: RequestCycle | None = None
        self.deadline: float | None = None
        self.reading = True
        self.lingering = False
        self.closed = False

    @property
    def is_idle(self) -> bool:
        """No request is running or waiting to run."""
        return self.running is None and not self._queue and not self.lingering and not self.closed

    def take_output(self) -> bytes:
        """The bytes `WRITE` is for."""
        output, self._output = self._output, b""
        return output

    def _take(self) -> int:
        acts, self._acts = self._acts, 0
        return acts

    # -- what happens to the connection

    def accepted(self) -> int:
        """The connection was let in: it waits for the first head (Rule 2)."""
        self._arm()
        return self._take()

    def received(self, data: bytes, now: float) -> int:
        """The caller sent `data`."""
        if self.lingering or self._stopped or self.closed:
            return 0  # Rule 4, or no more requests will be read
        self._now = now
        reader = self._reader
        if self._queue or reader.held:
            reader.held += data  # Rule 1: read once the waiting requests have run
            self._update_reading()
        else:
            refusal = reader.feed(data)
            if refusal is not None:
                self._refused(refusal)
            self._start_next()
        acts, self._acts = self._acts, 0  # (inline: the data path's two calls)
        return acts

    def want_body(self, cycle: RequestCycle, now: float) -> int:
        """The app waits for body bytes: ask for them (`100 Continue`) and read on."""
        self._now = now
        line = cycle.continue_line()
        if line:
            self._output += line
            self._acts |= WRITE
            self._arm()
        return self.body_taken(now)

    def body_taken(self, now: float) -> int:
        """The app took the body read so far: read on."""
        self._now = now
        self._update_reading()
        return self._take()

    def finished(self, cycle: RequestCycle, failure: Exception | None, now: float) -> int:
        """The running request's task ended (`failure`: what it raised)."""
        self.running = None
        if self.closed or self.lingering:
            return 0
        self._now = now
        if not cycle.complete and (cycle.started or cycle.gone):
            if failure is not None:
                logger.error("the gateway app failed mid-response", exc_info=failure)
            self._acts |= ABORT  # a cut response: the caller must not take it as whole
        elif not cycle.complete:
            self._give_up(
                cycle, failure or RuntimeError("the gateway app returned without answering")
            )
        elif not cycle.keep_alive:
            self._close(linger=not cycle.message_complete)  # Rule 4
        else:
            self._served()
        acts, self._acts = self._acts, 0
        return acts

    def due(self, now: float) -> int:
        """The timer fired: act on the deadline if it passed (`ARM`: not yet; reading the
        body moves the deadline later without asking for the timer)."""
        when = self.deadline
        if when is None or self.closed:
            return 0
        if now < when:
            return ARM
        self._now = now
        self._expire()
        return self._take()

    def drain(self, now: float) -> int:
        """Rule 7: the server is shutting down."""
        if self.closed:
            return 0
        self._now = now
        running = self.running
        if running is None:
            self._close()
        else:
            self._stopped = True
            self._queue.clear()
            running.keep_alive = False
        return self._take()

    def close(self, now: float) -> int:
        """The server closes the connection (to make room for another)."""
        self._now = now
        self._close()
        return self._take()

    def lost(self) -> None:
        """The connection is gone (Rule 5)."""
        self.closed = True
        self._queue.clear()  # never started, never will be
        if self.running is not None:
            self.running.leave()

    # -- what the reader tells

    def head_began(self) -> None:
        self._acts |= TOUCH
        if self.running is None:
            self._arm()

    def body_read(self, cycle: RequestCycle, size: int) -> None:
        running = self.running
        if cycle is running:
            self._clock.body_bytes += size
        if cycle.buffered > HIGH_WATER:
            self._update_reading()
        elif cycle is running:
            self.deadline = self._clock.body(self._now)  # Rule 2

    def body_ended(self, cycle: RequestCycle) -> None:
        if not cycle.keep_alive:
            self._stopped = True
        if cycle is self.running:
            self._arm()

    # -- running requests

    def _refused(self, refusal: HttpError | RoutingError | StopReading) -> None:
        """Act on what the reader found wrong."""
        if isinstance(refusal, StopReading):
            self._stopped = True  # the last request read is the connection's last
        else:
            self._reject(refusal)

    def _start_next(self) -> None:
        if self.running is not None or self.closed or self.lingering:
            return
        if not self._queue:
            if self._rejection is not None:
                self._answer(self._rejection)
            return
        cycle = self.running = self._queue.popleft()
        self._clock.body_began(cycle.buffered)  # read ahead while it waited its turn
        self._arm()
        self._acts |= RUN

    def _served(self) -> None:
        self._clock.served_one(self._now)
        self._acts |= TOUCH
        if self._queue:
            self._start_next()
        elif self._rejection is not None:
            self._answer(self._rejection)
            return
        else:
            self._arm()
        if self._reader.held and not self._queue:
            # Rule 1: the bytes held back belong to the request now running or to later ones.
            refusal = self._reader.read_held()
            if refusal is not None:
                self._refused(refusal)
            self._start_next()
        self._update_reading()

    def _update_reading(self) -> None:
        if self.closed:
            return
        want = not self._reader.backed_up()
        if want == self.reading:
            return
        self.reading = want
        if want:
            self._clock.resumed(self._now)
        else:
            self._clock.paused(self._now)
        self._acts |= READ
        self._arm()

    def _arm(self) -> None:
        """Rule 2: set the one deadline from what the connection waits for."""
        running = self.running
        body = running is self._reader.parsing and self.reading
        when = self.deadline = self._clock.next(
            self._now, self.lingering, running, body, self._reader.in_head
        )
        if when is not None:
            self._acts |= ARM

    # -- endings

    def _reject(self, error: HttpError | RoutingError) -> None:
        """Rule 3: answer `error` once the requests before the bad one have run."""
        self._stopped = True
        cut = self._reader.abandon()
        if cut is not None and cut is self.running:  # the running request's own body is bad
            self._give_up(cut, error)
            return
        self._rejection = error
        self._start_next()

    def _expire(self) -> None:
        """Rule 2: the deadline passed."""
        running = self.running
        if self.lingering:
            self._acts |= CLOSE
        elif running is not None:
            self._give_up(running, self._clock.body_late())
        elif self._reader.in_head:
            self._answer(self._clock.head_late())
        else:
            self._close()  # idle: nothing is owed

    def _give_up(self, cycle: RequestCycle, error: BaseException) -> None:
        """Tell `cycle` the server answers in the app's place: `error`, or a cut when its
        response already started."""
        cycle.leave()
        if cycle.started:
            self._acts |= ABORT
        else:
            self._answer(error)

    def _answer(self, error: BaseException) -> None:
        """Write the error response in the app's place, then close (Rule 4)."""
        self._output += error_response(error)
        self._acts |= WRITE
        self._close(linger=True)

    def _close(self, *, linger: bool = False) -> None:
        """Close the connection, once: at once, or when `linger`, by lingering (Rule 4)."""
        if self.closed or self.lingering:
            return
        self._stopped = True
        self._queue.clear()
        if not linger or not self._half_close:
            self._acts |= CLOSE
            return
        self.lingering = True
        self._acts |= HALF_CLOSE
        self._reader.held.clear()
        if not self.reading:
            self.reading = True
            self._acts |= READ
        self._arm()
