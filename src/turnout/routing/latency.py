"""Rolling latency windows per key, for the `lowest-latency` and `least-busy` strategies.

Rule 1: a sample is in the window while `now - at < window`; one exactly `window` old has left.
Rule 2: memory is bounded per key: the P95 is read from the most recent `max_samples` samples in
the window, while the sample count (for `min_requests`) also counts older samples, kept as
per-second counts (exact while under the cap, exact to the second past it).
Rule 3: the P95 is cached per key until a sample arrives or leaves.
Times are float seconds on the engine clock; nothing here reads a clock.
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Hashable

__all__ = ["LatencyWindow", "percentile"]


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile of sorted `values` (`share` 0-1, e.g. 0.95)."""
    rank = max(1, math.ceil(share * len(values)))
    return values[rank - 1]


class _Series:
    """One key's samples: exact `(at, seconds)` pairs for the most recent ones, and per-second
    counts `[second, count, latest at]` for older ones pushed out by the cap."""

    __slots__ = ("older", "older_total", "p95", "samples")

    def __init__(self, max_samples: int) -> None:
        self.samples: deque[tuple[float, float]] = deque(maxlen=max_samples)
        self.older: deque[list[float]] = deque()
        self.older_total = 0
        self.p95: float | None = None

    @property
    def total(self) -> int:
        return len(self.samples) + self.older_total

    def add(self, seconds: float, now: float) -> None:
        if len(self.samples) == self.samples.maxlen:
            self._keep_count(self.samples[0][0])
        self.samples.append((now, seconds))
        self.p95 = None

    def _keep_count(self, at: float) -> None:
        second = math.floor(at)
        if self.older and self.older[-1][0] == second:
            self.older[-1][1] += 1
            self.older[-1][2] = at
        else:
            self.older.append([second, 1, at])
        self.older_total += 1

    def expire(self, horizon: float) -> None:
        """Drop samples at or before `horizon` (= now - window)."""
        samples = self.samples
        if samples and samples[0][0] <= horizon:
            while samples and samples[0][0] <= horizon:
                samples.popleft()
            self.p95 = None
            self.older.clear()  # older than an expired sample: expired too
            self.older_total = 0
        older = self.older
        while older and older[0][2] <= horizon:
            self.older_total -= int(older.popleft()[1])


class LatencyWindow:
    """Latency samples per key over a rolling `window` (seconds), keeping at most `max_samples`
    (default 2048) per key for the P95."""

    def __init__(self, window: float, *, max_samples: int = 2048) -> None:
        self.window = window
        self.max_samples = max_samples
        self._series: dict[Hashable, _Series] = {}

    def add(self, key: Hashable, seconds: float, now: float) -> None:
        """Record one answered call's latency (seconds) at `now`."""
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = _Series(self.max_samples)
        series.expire(now - self.window)
        series.add(seconds, now)

    def count(self, key: Hashable, now: float) -> int:
        """How many samples `key` has in the window at `now`."""
        series = self._series.get(key)
        if series is None:
            return 0
        series.expire(now - self.window)
        return series.total

    def p95(self, key: Hashable, now: float) -> float | None:
        """The P95 latency of `key` in the window at `now`, or None without samples."""
        series = self._series.get(key)
        if series is None:
            return None
        series.expire(now - self.window)
        if series.p95 is None and series.samples:
            series.p95 = percentile(sorted(value for _, value in series.samples), 0.95)
        return series.p95
