"""When a connection's one deadline falls, from what it waits for: plain arithmetic on the times
it is given (no clock of its own), and the errors a missed deadline is answered with.

Rule 1: a request head must arrive within `header_timeout` from the accept or from the end of
the previous response; the next request within `keepalive_timeout` of the end of the previous
response (when no head has started).
Rule 2: the body of the running request may go silent for `body_timeout` at most (counted from
its last byte, or from when the connection started waiting for it), and must end no later than
`body_timeout` plus one second per `min_body_rate` bytes read since the body began, while the
connection reads: the time it does not read is not counted.
Rule 3: a connection that half-closed after its last answer lingers `LINGER` seconds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, Protocol

from turnout.errors import RequestTimeout

if TYPE_CHECKING:
    from turnout.gateway.server.limits import ServerLimits

__all__ = ["LINGER", "Deadlines", "Running"]

LINGER: Final = 2.0
"""Seconds a connection closed by the server still discards what the caller sends."""


class Running(Protocol):
    """What the deadlines ask of the running request."""

    @property
    def awaiting_continue(self) -> bool:
        """Its body waits for `100 Continue`."""


class Deadlines:
    """One connection's deadlines (see the module rules)."""

    __slots__ = (
        "_body_since",
        "_limits",
        "_paused_at",
        "_quiet_from",
        "body_bytes",
        "idle_since",
        "served",
    )

    def __init__(self, limits: ServerLimits, now: float) -> None:
        self._limits = limits
        self.idle_since = now
        """The accept, or the end of the last response."""
        self.served = 0
        """Responses ended on the connection."""
        self.body_bytes = 0
        """Bytes of the running request's body read so far."""
        self._body_since: float | None = None  # when the running body began (shifted by pauses)
        self._quiet_from = 0.0  # the last body byte, or when waiting for the body (re)started
        self._paused_at = 0.0

    def served_one(self, now: float) -> None:
        """A response ended at `now`."""
        self.served += 1
        self.idle_since = now

    def next(
        self, now: float, lingering: bool, running: Running | None, body: bool, in_head: bool
    ) -> float | None:
        """The one deadline from what the connection waits for (None: nothing): the end of
        its linger, the `running` request's body while it is read (`body`) and not held back
        for `100 Continue`, or a head (`in_head`: one started)."""
        if lingering:
            return now + LINGER
        if running is not None:
            return self.body(now) if body and not running.awaiting_continue else None
        if in_head or not self.served:  # Rule 1
            return self.idle_since + self._limits.header_timeout
        return now + self._limits.keepalive_timeout

    def body_began(self, read_ahead: int) -> None:
        """A request starts running, `read_ahead` bytes of its body read while it waited."""
        self._body_since = None
        self.body_bytes = read_ahead

    def body(self, now: float) -> float:
        """Rule 2: when the running request's body, read on from `now`, is too late."""
        self._quiet_from = now
        slowest = self._slowest_body()
        idle = now + self._limits.body_timeout
        return idle if slowest is None else min(idle, slowest)

    def paused(self, now: float) -> None:
        """The connection stopped reading at `now`."""
        self._paused_at = now

    def resumed(self, now: float) -> None:
        """The connection reads again from `now` (Rule 2: the pause is not the caller's)."""
        if self._body_since is not None:
            self._body_since += now - self._paused_at

    def _slowest_body(self) -> float | None:
        """Rule 2: the latest the running body may end at its minimum rate (None: no rate)."""
        limits = self._limits
        if not limits.min_body_rate:
            return None
        if self._body_since is None:
            self._body_since = self._quiet_from
        return self._body_since + limits.body_timeout + self.body_bytes / limits.min_body_rate

    def body_late(self) -> RequestTimeout:
        """The answer to a body past its deadline: too slow, or silent."""
        limits = self._limits
        slowest = self._slowest_body()
        if slowest is not None and slowest < self._quiet_from + limits.body_timeout:
            return RequestTimeout(
                f"the request body arrived too slowly: under {limits.min_body_rate} bytes"
                " per second (server.min_body_rate)"
            )
        return RequestTimeout(
            f"the request body stalled: no byte for {limits.body_timeout:g} s (server.body_timeout)"
        )

    def head_late(self) -> RequestTimeout:
        """The answer to a request head past its deadline."""
        return RequestTimeout(
            f"the request head did not arrive within {self._limits.header_timeout:g} s"
            " (server.header_timeout)"
        )
