"""The HTTP/1.1 connection's rules on its pure state: bytes and an explicit `now` in, action
bits out. No event loop, no socket, no sleep: the app's side of a request is driven by
running its (never waiting) coroutines by hand."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import orjson

from turnout.gateway.server.connection_state import (
    ABORT,
    ARM,
    CLOSE,
    HALF_CLOSE,
    READ,
    RUN,
    TOUCH,
    WRITE,
    ConnectionState,
)
from turnout.gateway.server.cycle import HIGH_WATER
from turnout.gateway.server.deadlines import LINGER
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.reader import PIPELINE_DEPTH

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from turnout.gateway.server.cycle import RequestCycle

LIMITS = ServerLimits(header_timeout=10.0, body_timeout=30.0, keepalive_timeout=5.0)
ADDRESSES = (("127.0.0.1", 8080), ("127.0.0.1", 50000))


class Conn:
    """What the cycles answer on: it keeps what they write."""

    write_paused = False
    draining = False

    def __init__(self) -> None:
        self.written = bytearray()

    def write(self, data: bytes) -> None:
        self.written += data

    async def drained(self) -> None:
        return None

    def want_body(self, cycle: RequestCycle) -> None:
        return None

    def body_taken(self) -> None:
        return None


def run(step: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never waits (the app's side of a cycle, with nothing to wait for)."""
    try:
        step.send(None)
    except StopIteration as done:
        return done.value
    raise AssertionError("the coroutine waited")


def opened(limits: ServerLimits = LIMITS, now: float = 0.0) -> tuple[ConnectionState, Conn]:
    conn = Conn()
    state = ConnectionState(conn, limits, ADDRESSES, now=now, half_close=True)
    assert state.accepted() == ARM
    return state, conn


def get(path: str = "/healthz", *, close: bool = False) -> bytes:
    extra = b"connection: close\r\n" if close else b""
    return b"GET %s HTTP/1.1\r\nhost: t\r\n%s\r\n" % (path.encode(), extra)


def post(body: bytes, *, length: int | None = None, headers: bytes = b"") -> bytes:
    size = len(body) if length is None else length
    return b"POST /v1/chat HTTP/1.1\r\nhost: t\r\ncontent-length: %d\r\n%s\r\n%s" % (
        size,
        headers,
        body,
    )


def running(state: ConnectionState) -> RequestCycle:
    """The request running on `state` (there must be one)."""
    cycle = state.running
    assert cycle is not None
    return cycle


def reading(state: ConnectionState) -> bool:
    """Whether `state` reads (read anew each time: a call may change it)."""
    return state.reading


def answer(state: ConnectionState, now: float, status: int = 200) -> int:
    """The app answers the running request whole; what the state then asks for."""
    cycle = running(state)
    run(cycle.respond(status, [], b"ok"))
    return state.finished(cycle, None, now)


def refusal(written: bytes) -> tuple[int, dict[str, Any]]:
    """The status and error object of the whole error response in `written`."""
    head, _, body = written.partition(b"\r\n\r\n")
    assert b"connection: close" in head
    return int(head.split()[1]), orjson.loads(body)["error"]


def test_requests_run_one_at_a_time_in_order() -> None:
    """Rule 1: of two pipelined requests, the second runs once the first is answered."""
    state, _ = opened()
    acts = state.received(get("/one") + get("/two"), now=1.0)
    assert acts & RUN
    assert acts & TOUCH
    assert running(state).path == "/one"
    acts = answer(state, now=2.0)
    assert acts & RUN
    assert acts & TOUCH
    assert running(state).path == "/two"
    assert answer(state, now=3.0) & ARM
    assert state.running is None
    assert state.is_idle


def test_a_deep_pipeline_stops_reading_at_its_bound() -> None:
    """Rule 1: `PIPELINE_DEPTH` requests are read, the last of them the connection's last;
    the ones after it are never read, and the connection closes after the last answer."""
    state, _ = opened()
    state.received(get() * (PIPELINE_DEPTH + 4), now=1.0)
    for served in range(PIPELINE_DEPTH - 1):
        assert running(state).keep_alive, served
        assert answer(state, now=2.0) & RUN
    assert not running(state).keep_alive
    assert state.received(get(), now=3.0) == 0  # no more requests are read
    assert answer(state, now=3.0) == CLOSE


def test_bytes_held_back_past_the_high_water_stop_reading() -> None:
    """Rule 1: bytes that arrive while requests wait stay unparsed; past `HIGH_WATER` the
    connection stops reading, and reads on once no request waits (the bytes are parsed)."""
    state, _ = opened()
    state.received(get("/one") + get("/two"), now=1.0)
    assert state.received(b"x" * (HIGH_WATER // 2), now=1.1) == 0
    assert state.received(b"x" * HIGH_WATER, now=1.2) & READ
    assert not reading(state)
    acts = answer(state, now=2.0)  # /two runs; the held bytes are parsed: not a request
    assert acts & RUN
    assert acts & READ
    assert not acts & WRITE
    assert reading(state)
    assert answer(state, now=3.0) & WRITE
    assert refusal(state.take_output())[0] == 400


def test_a_head_that_never_ends_gets_408_at_the_header_timeout() -> None:
    """Rule 2: a head has `header_timeout` from the accept; the timer asks again if it fires
    early; past the deadline, a 408 and a half-close that lingers `LINGER` seconds."""
    state, conn = opened(now=100.0)
    assert state.deadline == 110.0
    state.received(b"GET /healthz HTTP/1.1\r\nx-a: ", now=101.0)
    assert state.due(now=105.0) == ARM
    acts = state.due(now=110.0)
    assert acts == WRITE | HALF_CLOSE | ARM
    status, error = refusal(state.take_output())
    assert (status, error["code"]) == (408, "request_timeout")
    assert "server.header_timeout" in error["message"]
    assert state.lingering
    assert state.deadline == 110.0 + LINGER
    assert state.received(b"more", now=111.0) == 0  # discarded
    assert state.due(now=110.0 + LINGER) == CLOSE
    assert not conn.written


def test_a_stalled_body_gets_408_after_the_body_timeout() -> None:
    """Rule 2: the running request's body may be silent `body_timeout` at most, counted from
    its last byte."""
    state, _ = opened(dataclasses.replace(LIMITS, min_body_rate=0))
    state.received(post(b'{"model": ', length=100), now=1.0)
    assert state.deadline == 31.0
    state.received(b'"m"', now=5.0)
    assert state.deadline == 35.0
    assert state.due(now=31.0) == ARM
    acts = state.due(now=35.0)
    assert acts & WRITE
    assert acts & HALF_CLOSE
    assert running(state).gone
    status, error = refusal(state.take_output())
    assert status == 408
    assert "server.body_timeout" in error["message"]


def test_a_trickled_body_gets_408_below_the_minimum_rate() -> None:
    """Rule 2: a body never silent for long must still come at `min_body_rate`: N bytes have
    `body_timeout` + N / rate seconds."""
    limits = dataclasses.replace(LIMITS, body_timeout=0.2, min_body_rate=100)
    state, _ = opened(limits)
    state.received(post(b"", length=100), now=0.0)
    for byte in range(1, 4):
        state.received(b" ", now=byte * 0.05)
    assert state.deadline is not None
    assert abs(state.deadline - 0.23) < 1e-9
    assert state.due(now=0.23) & WRITE
    _, error = refusal(state.take_output())
    assert "server.min_body_rate" in error["message"]


def test_the_time_the_connection_does_not_read_is_not_counted() -> None:
    """Rule 2: while the app has not taken a body past `HIGH_WATER`, the connection neither
    reads nor counts the time against the body's rate."""
    rate = 2 * HIGH_WATER  # bytes a second: the rate, not the silence, sets the deadline
    state, _ = opened(dataclasses.replace(LIMITS, min_body_rate=rate))
    state.received(post(b"", length=4 * HIGH_WATER), now=0.0)
    acts = state.received(b"x" * (HIGH_WATER + 1), now=1.0)
    assert acts & READ
    assert not reading(state)
    assert state.deadline is None
    cycle = running(state)
    run(cycle.body_part())  # the app takes the body at 101 s
    acts = state.body_taken(now=101.0)
    assert acts & READ
    assert acts & ARM
    assert reading(state)
    # the body began at 0 s, and the 100 s paused do not count
    assert state.deadline == 100.0 + 30.0 + (HIGH_WATER + 1) / rate


def test_an_idle_connection_closes_after_the_keepalive_timeout() -> None:
    """Rule 2: after an answer, the next request has `keepalive_timeout`; then a quiet close."""
    state, _ = opened()
    state.received(get(), now=1.0)
    assert answer(state, now=2.0) & ARM
    assert state.deadline == 7.0
    assert state.due(now=7.0) == CLOSE


def test_too_many_header_lines_get_431() -> None:
    """Rule 3: past `max_header_count` lines, 431 in the OpenAI envelope, and a half-close."""
    state, _ = opened(dataclasses.replace(LIMITS, max_header_count=3))
    acts = state.received(b"GET / HTTP/1.1\r\na: 1\r\nb: 2\r\nc: 3\r\nd: 4\r\n\r\n", now=1.0)
    assert acts & WRITE
    assert acts & HALF_CLOSE
    assert not acts & RUN
    status, error = refusal(state.take_output())
    assert (status, error["code"]) == (431, "headers_too_large")
    assert "server.max_header_count" in error["message"]


def test_bad_framing_is_answered_400_after_the_requests_before_it() -> None:
    """Rule 3: the request before the bad bytes runs and is answered, then the 400."""
    state, conn = opened()
    acts = state.received(get() + b"G@T / HTTP/1.1\r\n\r\n", now=1.0)
    assert acts & RUN
    assert not acts & WRITE
    acts = answer(state, now=2.0)
    assert acts & WRITE
    assert acts & HALF_CLOSE
    assert conn.written.startswith(b"HTTP/1.1 200 OK")
    status, error = refusal(state.take_output())
    assert status == 400
    assert "malformed HTTP request" in error["message"]


def test_an_answer_before_the_body_is_read_closes_the_connection() -> None:
    """Rule 4: a response started before the body was read says `connection: close`, and the
    connection lingers: what still arrives is discarded, then it closes."""
    state, conn = opened()
    state.received(post(b"", length=1_000_000), now=1.0)
    assert answer(state, now=2.0, status=401) == HALF_CLOSE | ARM
    assert b"connection: close" in conn.written
    assert state.lingering
    assert state.deadline == 2.0 + LINGER
    assert state.received(b"x" * 1000, now=3.0) == 0
    assert state.due(now=2.0 + LINGER) == CLOSE


def test_an_app_that_returns_without_answering_gets_500() -> None:
    """Rule 4: the server answers in the app's place; a started response is cut instead."""
    state, _ = opened()
    state.received(get(), now=1.0)
    cycle = running(state)
    acts = state.finished(cycle, None, now=2.0)
    assert acts & WRITE
    assert acts & HALF_CLOSE
    assert refusal(state.take_output())[0] == 500
    cut, _ = opened()
    cut.received(get(), now=1.0)
    started = running(cut)
    started.started = True
    assert cut.finished(started, RuntimeError("boom"), now=2.0) == ABORT


def test_when_the_caller_leaves_the_running_request_is_told() -> None:
    """Rule 5: the running request learns the caller left; the ones behind it never run."""
    state, _ = opened()
    state.received(get("/one") + get("/two"), now=1.0)
    first = running(state)
    state.lost()
    assert first.gone
    assert answer(state, now=2.0) == 0
    assert state.running is None


def test_an_h2c_upgrade_is_read_as_plain_http11() -> None:
    """Rule 6: a request asking for h2c keeps its body, and the request after it is read."""
    state, _ = opened()
    upgrade = b"connection: Upgrade, HTTP2-Settings\r\nupgrade: h2c\r\nhttp2-settings: AAMAAABk\r\n"
    state.received(post(b'{"a": 1}', headers=upgrade) + get("/after"), now=1.0)
    cycle = running(state)
    assert cycle.message_complete
    assert run(cycle.body_part()) == (b'{"a": 1}', False)
    assert answer(state, now=2.0) & RUN
    assert running(state).path == "/after"


def test_a_shutdown_closes_idle_connections_and_busy_ones_after_their_request() -> None:
    """Rule 7: idle: closed at once; busy: its running request is its last."""
    idle, _ = opened()
    assert idle.drain(now=1.0) == CLOSE
    busy, _ = opened()
    busy.received(get("/one") + get("/two"), now=1.0)
    assert busy.drain(now=1.5) == 0
    assert answer(busy, now=2.0) == CLOSE
