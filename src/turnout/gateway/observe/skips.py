"""The failover lines of targets skipped for their health, once per burst per health key.

Rule 1: a target skipped because its breaker is open, it cools down or it is parked is named by
the `failover` line of the first request that skipped it; further requests that skip the same
health key (`provider/model`) while the burst lasts are counted, not logged.
Rule 2: the burst ends when the key's breaker half-opens or closes (before that `health` line),
or when no request has skipped the key for `quiet` seconds (10; noticed by the next request
this process finishes, looked for at most once a second). When more than one request skipped
it, one `skips` WARNING line then says how many requests did, over how many seconds.
Rule 3: a failover from a failed call is logged for every request, as before; health
transitions keep their own lines. The state is this process's own, one entry per health key.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Final

from turnout.gateway.observe.bursts import Bursts
from turnout.gateway.observe.logs import log_failover, log_skips
from turnout.record import SKIP_OUTCOMES

if TYPE_CHECKING:
    from collections.abc import Callable

    from turnout.record import AttemptEntry, RoutingRecord

__all__ = ["SWEEP", "SkipLog", "skip_key"]

SWEEP: Final = 1.0
"""Seconds between two looks for quiet bursts."""
_ENDS: Final = frozenset({"half_open", "closed"})
"""Health transitions that end a key's burst of skips."""


def skip_key(entry: AttemptEntry) -> str:
    """The health key a skipped entry names: `provider/model` (its target without them)."""
    if entry.provider is None:
        return entry.target
    return entry.provider if entry.model is None else f"{entry.provider}/{entry.model}"


class SkipLog:
    """Failover lines, with skips folded into bursts (see the module rules); `clock` gives
    monotonic seconds."""

    __slots__ = ("_clock", "_next_sweep", "bursts")

    def __init__(self, *, quiet: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.bursts = Bursts(quiet=quiet, clock=clock)
        self._clock = clock
        self._next_sweep = 0.0

    def failovers(
        self, record: RoutingRecord, moves: list[tuple[AttemptEntry, AttemptEntry]]
    ) -> None:
        """Rules 1 and 3: the lines of one request's moves."""
        skipped: set[str] = set()
        for left, to in moves:
            if left.outcome not in SKIP_OUTCOMES:
                log_failover(record, left, to)
                continue
            key = skip_key(left)
            if key in skipped:  # the same key twice in one request counts once
                continue
            skipped.add(key)
            if self.bursts.hit(key):
                log_failover(record, left, to)

    def health_changed(self, key: str, to: str) -> None:
        """Rule 2: a half-open or closed breaker ends its key's burst."""
        if to in _ENDS and self.bursts:
            burst = self.bursts.end(key)
            if burst is not None and burst.count > 1:
                log_skips(burst.key, burst.count, burst.seconds)

    def sweep(self) -> None:
        """Rule 2: log the bursts that went quiet (at most one look a second)."""
        if not self.bursts:
            return
        now = self._clock()
        if now < self._next_sweep:
            return
        self._next_sweep = now + SWEEP
        for burst in self.bursts.ended():
            if burst.count > 1:
                log_skips(burst.key, burst.count, burst.seconds)
