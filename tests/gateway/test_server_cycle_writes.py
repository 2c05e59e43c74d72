"""A started response's body parts: written at once while the caller reads, held back for the
waiting path while the caller's side is full (no byte lost, none out of order)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.gateway.test_server_connection_state import get, opened, running

if TYPE_CHECKING:
    from tests.gateway.test_server_connection_state import Conn
    from turnout.gateway.server.cycle import RequestCycle


async def _started() -> tuple[RequestCycle, Conn]:
    state, conn = opened()
    state.received(get(), now=1.0)
    cycle = running(state)
    await cycle.start(200, [(b"content-type", b"text/event-stream")])
    return cycle, conn


async def test_a_body_part_is_written_at_once_in_chunked_framing() -> None:
    """While the caller reads, `send_body_now` writes the part (after the head) and says so."""
    cycle, conn = await _started()
    assert cycle.send_body_now(b"data: 1\n\n", more=True) is True
    written = bytes(conn.written)
    head, _, body = written.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head
    assert body == b"9\r\ndata: 1\n\n\r\n"


async def test_a_full_caller_side_writes_nothing_and_the_waiting_path_writes_it_in_order() -> None:
    """Caller's side full: `send_body_now` writes nothing and answers False; once drained,
    `send_body` writes the part, and the parts keep their order."""
    cycle, conn = await _started()
    assert cycle.send_body_now(b"one", more=True)
    before = len(conn.written)
    conn.write_paused = True
    assert cycle.send_body_now(b"two", more=True) is False
    assert len(conn.written) == before
    conn.write_paused = False
    await cycle.send_body(b"two", more=False)
    body = bytes(conn.written).partition(b"\r\n\r\n")[2]
    assert body == b"3\r\none\r\n3\r\ntwo\r\n0\r\n\r\n"


async def test_a_part_after_the_caller_left_is_dropped_without_error() -> None:
    """The caller left: a part is dropped (True: nothing to wait for), never raised."""
    cycle, conn = await _started()
    written = len(conn.written)
    cycle.gone = True
    assert cycle.send_body_now(b"late", more=True) is True
    assert len(conn.written) == written


def test_a_part_before_the_response_started_is_refused() -> None:
    """A body part with no response started is a bug in the app: it raises."""
    state, _ = opened()
    state.received(get(), now=1.0)
    with pytest.raises(RuntimeError, match="outside a started response"):
        running(state).send_body_now(b"early", more=True)
