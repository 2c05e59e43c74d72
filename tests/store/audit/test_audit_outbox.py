"""The pipe's kept frames as plain state: packing, sending, confirming, letting go."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from tests.store.audit._support import NOW, record
from turnout.record import FinishedRequest
from turnout.store.audit_outbox import Outbox
from turnout.store.audit_policy import AuditPolicy

if TYPE_CHECKING:
    import pytest


def _done(request_id: str) -> FinishedRequest:
    return FinishedRequest(record(request_id), NOW, "default", "app", "/v1/chat/completions",
                           200, "answered", 5)  # fmt: skip


def test_requests_are_packed_into_frames_of_frame_size() -> None:
    """Five requests with frames of two make three frames, kept until confirmed written."""
    outbox = Outbox(AuditPolicy(frame_size=2))
    assert [outbox.add(_done(f"r{n}")) for n in range(5)] == [False, True, True, True, True]
    assert outbox.pack(flush=False) == 3
    assert [frame.size for frame in outbox.frames] == [2, 2, 1]
    assert outbox.waiting == 5
    outbox.confirm(written=2, flushed=0)
    assert [frame.seq for frame in outbox.frames] == [3]
    assert outbox.waiting == 1


def test_a_new_audit_process_receives_every_kept_frame_again() -> None:
    """Frames sent to one audit process are unsent again for the next one."""
    outbox = Outbox(AuditPolicy(frame_size=1))
    for n in range(3):
        outbox.add(_done(f"r{n}"))
    outbox.pack(flush=False)
    for frame in list(outbox.unsent())[:2]:
        outbox.sent(frame)
    assert [frame.seq for frame in outbox.unsent()] == [3]
    outbox.restart()
    assert [frame.seq for frame in outbox.unsent()] == [1, 2, 3]


def test_past_max_queue_only_frames_sent_already_are_let_go(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Past `max_queue`, the oldest frames already sent go (counted, one WARNING); unsent ones
    stay; a flush waiting for a frame let go is over once the audit process is lost."""
    outbox = Outbox(AuditPolicy(frame_size=2, max_queue=3))
    for n in range(4):
        outbox.add(_done(f"a{n}"))
    outbox.pack(flush=False)
    assert outbox.held == 4  # nothing sent yet: nothing may go
    for frame in list(outbox.unsent()):
        outbox.sent(frame)
    with caplog.at_level(logging.WARNING, logger="turnout.store"):
        outbox.add(_done("b0"))
        seq = outbox.pack(flush=True)
    assert (outbox.held, outbox.unprotected) == (3, 2)  # the first frame went: 3 left
    assert sum("no longer kept" in r.getMessage() for r in caplog.records) == 1
    assert [frame.seq for frame in outbox.frames] == [2, seq]
    outbox.lost()
    assert outbox.flushed == 1


def test_take_all_hands_over_every_request_held() -> None:
    """Kept frames' requests come back decoded, then those waiting, and nothing stays held."""
    outbox = Outbox(AuditPolicy(frame_size=2))
    outbox.add(_done("r0"))
    outbox.pack(flush=False)
    outbox.add(_done("r1"))
    taken = outbox.take_all()
    assert [done.record["request_id"] for done in taken] == ["r0", "r1"]  # type: ignore[index]
    assert taken[0].usage_id is not None  # minted when it was framed
    assert outbox.waiting == 0
