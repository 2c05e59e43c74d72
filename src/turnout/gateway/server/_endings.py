"""How an `http11.HttpConnection` ends: the answers the server gives in the app's place (a
refused request head, unparsable framing, a missed deadline, an app that never answered) and
the errors they carry, the deadline's timer firing, and the close itself (lingering after
those answers; once the running request is answered when the server shuts down).

These run at most a few times per connection, so they live apart from the connection's data
path; they read and set the connection's own state, as its methods would.

Rule 1: a missed deadline closes the connection, after a 408 when part of a request arrived
and nothing was answered; a response already started is cut instead (`abort`).
Rule 2: a head over `max_header_count` lines or `max_header_bytes` bytes gets 431, and framing
that cannot be parsed 400, in the OpenAI error envelope; the connection then closes, once the
requests before the bad one are answered. When the bad bytes are the running request's own
body, it is answered at once (or cut, if its response started).
Rule 3: every answer given in the app's place closes the connection by lingering: it
half-closes and discards what still arrives for at most `LINGER` seconds, so that the caller
reads the answer rather than a reset.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING, Final

import httptools

from turnout.errors import BadHttpRequest, HeadersTooLarge, HttpError, RequestTimeout, RoutingError
from turnout.gateway.server.cycle import error_response

if TYPE_CHECKING:
    from turnout.gateway.server.cycle import RequestCycle
    from turnout.gateway.server.http11 import HttpConnection
    from turnout.gateway.server.limits import ServerLimits

__all__ = [
    "LINGER",
    "PipelineFull",
    "answer",
    "close",
    "deadline_due",
    "drain",
    "expire",
    "head_too_large",
    "stop_reading_requests",
    "too_many_header_lines",
    "unanswered",
    "unparsed",
]

logger = logging.getLogger("turnout.gateway")

LINGER: Final = 2.0
"""Seconds a connection closed by the server still discards what the caller sends (Rule 3)."""


class PipelineFull(Exception):
    """Raised from the parser's callbacks to stop reading requests (the connection's Rule 1)."""


def too_many_header_lines(limits: ServerLimits) -> HeadersTooLarge:
    return HeadersTooLarge(
        f"the request has more than {limits.max_header_count} header lines"
        " (server.max_header_count)"
    )


def head_too_large(limits: ServerLimits) -> HeadersTooLarge:
    return HeadersTooLarge(
        f"the request head is larger than {limits.max_header_bytes} bytes (server.max_header_bytes)"
    )


def unparsed(conn: HttpConnection, exc: Exception) -> None:
    """The parser stopped on `exc` (raised by `feed_data`): stop reading requests, and refuse
    the bad one when the bytes were bad (Rule 2)."""
    if isinstance(exc, httptools.HttpParserUpgrade):
        stop_reading_requests(conn)  # served as a plain request; nothing after it is read
    elif isinstance(exc, httptools.HttpParserCallbackError):
        cause = exc.__context__
        if isinstance(cause, PipelineFull):
            stop_reading_requests(conn)
        elif isinstance(cause, HttpError | RoutingError):
            reject(conn, cause)
        else:
            reject(conn, BadHttpRequest(f"malformed HTTP request ({cause or exc})"))
    elif not conn._stopped:  # bytes after a `Connection: close` request are ignored
        reject(conn, BadHttpRequest(f"malformed HTTP request: {exc}"))


def reject(conn: HttpConnection, error: HttpError | RoutingError) -> None:
    """Rule 2: answer `error` once the requests before the bad one have run."""
    conn._stopped = True
    conn._in_head = False
    parsing, conn._parsing = conn._parsing, None
    if parsing is not None and not parsing.message_complete:
        if parsing is conn._cycle:  # the running request's own body is malformed
            parsing.leave()
            if parsing.started:
                conn.abort()
            else:
                answer(conn, error)
            return
        with contextlib.suppress(ValueError):
            conn._queue.remove(parsing)
    conn._rejection = error
    conn._start_next()


def stop_reading_requests(conn: HttpConnection) -> None:
    """Read no more requests: the last one read is the connection's last."""
    conn._stopped = True
    last = conn._queue[-1] if conn._queue else conn._cycle
    if last is not None:
        last.keep_alive = False


def unanswered(conn: HttpConnection, cycle: RequestCycle, failure: Exception | None) -> None:
    """The app returned (or failed) without completing `cycle`'s response."""
    if cycle.started or cycle.gone:
        if failure is not None:
            logger.error("the gateway app failed mid-response", exc_info=failure)
        conn.abort()  # a cut response: the caller must not take it as whole
        return
    cycle.leave()
    answer(conn, failure or RuntimeError("the gateway app returned without answering"))


def deadline_due(conn: HttpConnection) -> None:
    """The connection's timer fired: act on its deadline if it passed, else wait on for it
    (reading the body moves the deadline without moving the timer)."""
    conn._timer = None
    when = conn._deadline
    if when is None or conn.closed:
        return
    if conn._loop.time() < when:
        conn._timer = conn._loop.call_at(when, deadline_due, conn)
        conn._timer_at = when
        return
    expire(conn)


def expire(conn: HttpConnection) -> None:
    """Rule 1: the connection's deadline passed."""
    limits = conn._limits
    cycle = conn._cycle
    if conn._lingering:
        conn.transport.close()
    elif cycle is not None:
        cycle.leave()
        if cycle.started:
            conn.abort()
        elif conn.is_body_slow():
            answer(
                conn,
                RequestTimeout(
                    f"the request body arrived too slowly: under {limits.min_body_rate} bytes"
                    " per second (server.min_body_rate)"
                ),
            )
        else:
            answer(
                conn,
                RequestTimeout(
                    f"the request body stalled: no byte for {limits.body_timeout:g} s"
                    " (server.body_timeout)"
                ),
            )
    elif conn._in_head:
        answer(
            conn,
            RequestTimeout(
                f"the request head did not arrive within {limits.header_timeout:g} s"
                " (server.header_timeout)"
            ),
        )
    else:
        close(conn)  # idle: nothing is owed


def answer(conn: HttpConnection, error: BaseException) -> None:
    """Write the error response in the app's place, then close (Rule 3)."""
    conn.write(error_response(error))
    close(conn, linger=True)


def drain(conn: HttpConnection) -> None:
    """The server is shutting down: close now if idle, else after the running request."""
    if conn.closed:
        return
    conn._stopped = True
    conn._queue.clear()
    cycle = conn._cycle
    if cycle is None:
        close(conn)
    else:
        cycle.keep_alive = False


def close(conn: HttpConnection, *, linger: bool = False) -> None:
    """Close the connection, once: at once, or when `linger`, by lingering (Rule 3)."""
    if conn.closed or conn._lingering:
        return
    conn._stopped = True
    conn._queue.clear()
    if not linger or not conn.transport.can_write_eof():
        conn.transport.close()
        return
    conn._lingering = True
    conn.transport.write_eof()
    conn._backlog.clear()
    if not conn._reading:
        conn._reading = True
        conn.transport.resume_reading()
    conn._arm()
    conn._host.quiet(conn)
