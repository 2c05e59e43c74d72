"""Bursts of one repeated event per key (a health key skipped, a peer failing to sign in), so a
log says "it started" once and "it came to N over S s" once, instead of a line per event.

Rule 1: `hit(key)` counts one event of `key`; it is True for the first event of a burst (the
caller logs its line then) and False while the burst lasts (counted, not logged).
Rule 2: a burst ends when `end(key)` is called (the caller knows it is over: a breaker closed),
or when `quiet` seconds pass without an event of its key; `ended()` hands back the bursts that
ended so, each once, for the caller to log how many events it held.
Rule 3: memory is bounded: one entry per key with a burst under way, at most `limit` of them;
a new key past that ends the oldest burst at once (it is handed back by the next `ended()`).
Rule 4: pure logic over `clock` (monotonic seconds): no I/O and no thread of its own.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["LIMIT", "QUIET", "Burst", "Bursts"]

QUIET: Final = 10.0
"""Seconds without an event that end a burst."""
LIMIT: Final = 1024
"""Bursts under way at most."""


@dataclass(slots=True)
class Burst:
    """One key's burst: its first and last event (clock seconds) and how many it held."""

    key: str
    first: float
    last: float
    count: int = 1

    @property
    def seconds(self) -> float:
        """From its first event to its last, rounded to the millisecond."""
        return round(self.last - self.first, 3)


class Bursts:
    """The bursts under way, per key (see the module rules)."""

    __slots__ = ("_clock", "_ended", "_open", "limit", "quiet")

    def __init__(
        self,
        *,
        quiet: float = QUIET,
        limit: int = LIMIT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.quiet = quiet
        self.limit = limit
        self._clock = clock
        self._open: dict[str, Burst] = {}
        self._ended: list[Burst] = []

    def __len__(self) -> int:
        return len(self._open)

    def hit(self, key: str) -> bool:
        """Rule 1: count one event of `key`; True when it starts a burst."""
        now = self._clock()
        burst = self._open.get(key)
        if burst is not None and now - burst.last < self.quiet:
            burst.last = now
            burst.count += 1
            return False
        if burst is not None:  # quiet long enough: that burst is over, this one starts
            self._ended.append(self._open.pop(key))
        elif len(self._open) >= self.limit:  # Rule 3: the oldest burst makes room
            oldest = next(iter(self._open))
            self._ended.append(self._open.pop(oldest))
        self._open[key] = Burst(key, now, now)
        return True

    def end(self, key: str) -> Burst | None:
        """Rule 2: end `key`'s burst now; the burst, or None when none was under way."""
        return self._open.pop(key, None)

    def ended(self) -> list[Burst]:
        """Rule 2: the bursts that ended since the last call (quiet ones, or made room)."""
        now = self._clock()
        quiet = [burst for burst in self._open.values() if now - burst.last >= self.quiet]
        for burst in quiet:
            del self._open[burst.key]
        done, self._ended = self._ended + quiet, []
        return done
