"""The requests a serving process holds for its audit process, as frames: sans-IO (no pipe, no
process, no clock), so the pipe's rules on what is kept and sent again are plain state.

Rule 1: requests wait (`add`) until they are packed into frames of at most `frame_size`
requests each (`pack`), numbered from 1; a frame is kept until the audit process reports it
written (`confirm`).
Rule 2: `unsent` lists the frames the current audit process has not received yet; `sent`
marks them received; a new audit process (`restart`) receives every frame kept again.
Rule 3: past `max_queue` requests kept, the oldest frames sent already are let go
(`unprotected` counts their requests; a WARNING line marks each time that starts).
Rule 4: `flushed` is the last frame asked to be flushed that the audit process went through,
or that was let go (a flush waiting for it is over either way).
"""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING, NamedTuple

from turnout.store.audit_frames import encode_batch, held_requests
from turnout.store.audit_rows import IdMint

if TYPE_CHECKING:
    from collections.abc import Iterator

    from turnout.record import FinishedRequest
    from turnout.store.audit_policy import AuditPolicy

__all__ = ["Frame", "Outbox"]

logger = logging.getLogger("turnout.store")


class Frame(NamedTuple):
    """One batch frame kept: its number, its requests' count and its bytes."""

    seq: int
    size: int
    data: bytes


class Outbox:
    """The requests waiting for the audit process and the frames kept for it (the rules
    above), bounded by `policy` (`frame_size`, `max_queue`)."""

    def __init__(self, policy: AuditPolicy) -> None:
        self.frame_size = policy.frame_size
        self.max_queue = policy.max_queue
        self.pending: list[FinishedRequest] = []
        """Requests not packed yet."""
        self.frames: deque[Frame] = deque()
        """Frames kept, oldest first."""
        self.held = 0
        """Requests in the frames kept."""
        self.unprotected = 0
        """Requests let go while the audit process had not reported them written (Rule 3)."""
        self.seq = 0
        self.flushed = 0
        self._sent = 0
        self._gone = 0
        self._mint = IdMint()
        self._letting_go = False

    @property
    def waiting(self) -> int:
        """Requests not confirmed written."""
        return len(self.pending) + self.held

    def add(self, done: FinishedRequest) -> bool:
        """Rule 1: queue `done`; whether a frame's worth waits."""
        pending = self.pending
        pending.append(done)
        return len(pending) >= self.frame_size

    def pack(self, *, flush: bool) -> int:
        """Rule 1: the waiting requests as the next frame(s) (at least one, maybe empty, so
        a flush has a frame to wait for); the last one's seq."""
        pending, self.pending = self.pending, []
        size = self.frame_size
        for start in range(0, max(len(pending), 1), size):
            part = pending[start : start + size]
            self.seq += 1
            last = start + size >= len(pending)
            data = encode_batch(self.seq, flush and last, part, self._mint)
            self.frames.append(Frame(self.seq, len(part), data))
            self.held += len(part)
        self._let_go()
        return self.seq

    def _let_go(self) -> None:
        """Rule 3: past `max_queue` requests kept, forget the oldest frames already sent."""
        frames = self.frames
        while self.held > self.max_queue and frames and frames[0].seq <= self._sent:
            gone = frames.popleft()
            self.held -= gone.size
            self.unprotected += gone.size
            self._gone = gone.seq
            if not self._letting_go:
                self._letting_go = True
                logger.warning(
                    "audit: more than %d requests wait for the audit process; the oldest are "
                    "no longer kept to be sent again",
                    self.max_queue,
                )

    def unsent(self) -> Iterator[Frame]:
        """Rule 2: the frames kept that the audit process has not received yet, in order."""
        frames = self.frames
        if frames:
            for index in range(max(self._sent + 1 - frames[0].seq, 0), len(frames)):
                yield frames[index]

    def sent(self, frame: Frame) -> None:
        """Rule 2: the audit process received `frame`."""
        self._sent = frame.seq

    def restart(self) -> None:
        """Rule 2: a new audit process, which has received nothing yet."""
        self._sent = self.frames[0].seq - 1 if self.frames else self.seq

    def confirm(self, written: int, flushed: int) -> None:
        """Rules 1 and 4: the audit process wrote every frame up to `written` and went through
        the flush of `flushed`."""
        frames = self.frames
        while frames and frames[0].seq <= written:
            self.held -= frames.popleft().size
        if self.held <= self.max_queue:
            self._letting_go = False
        self.flushed = max(self.flushed, flushed)

    def lost(self) -> None:
        """Rule 4: the audit process ended; frames let go will never be sent again."""
        self.flushed = max(self.flushed, self._gone)

    def take_all(self) -> list[FinishedRequest]:
        """Every request held (kept frames first, then those waiting), now no longer held."""
        kept = [done for frame in self.frames for done in held_requests(frame.data)]
        kept += self.pending
        self.frames.clear()
        self.held, self.pending = 0, []
        return kept
