"""Start-target selection: the try order and one small class per strategy.

Rule 1: a strategy only picks where a request starts; `try_order` gives the rest of the order.
Rule 2: randomness comes from the injected `rng`; session-derived starts come from
`sha256(route_id + ":" + session_id)`, never `hash()`, so replicas and restarts agree.
Rule 3: counters (round-robin turns, in-flight calls, latency windows, session pins) live in the
strategy object, per process.
Rule 4: ties under lowest-cost, lowest-latency and least-busy go to the higher weight, then to
the earlier target in the list.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, TypedDict, Unpack, runtime_checkable

from turnout.routing.latency import LatencyWindow

if TYPE_CHECKING:
    import random
    from collections.abc import Hashable, Iterator, Sequence

__all__ = [
    "Failover",
    "LeastBusy",
    "LowestCost",
    "LowestLatency",
    "RoundRobin",
    "Sampling",
    "Strategy",
    "TargetView",
    "Weighted",
    "session_hash",
    "try_order",
]


@dataclass(frozen=True, slots=True)
class TargetView:
    """What a strategy sees of a target: its `index` in the route's target list, `name`,
    `weight`, `price` (input + output USD per 1M tokens of the model it receives; None when
    unknown) and `key` (the stats key: its health key, or `(route, target)`)."""

    index: int
    name: str
    weight: int
    price: float | None
    key: Hashable


@runtime_checkable
class Strategy(Protocol):
    """Picks the start target of a request. `candidates` are the targets that may start, in
    list order (never empty); the answer is `(chosen candidate's .index, strategy_reason)`."""

    type: str

    def pick_start(
        self,
        candidates: Sequence[TargetView],
        *,
        route_id: str,
        session_id: str | None,
        now: float,
    ) -> tuple[int, str]: ...

    def call_started(self, key: Hashable) -> None:
        """A call to `key` started (in-flight accounting)."""

    def call_finished(self, key: Hashable) -> None:
        """A call to `key` ended, however it ended."""

    def record_latency(self, key: Hashable, seconds: float, now: float) -> None:
        """An answered call to `key` took `seconds` (to the first token for streams)."""


def try_order(n: int, fallback_only: Sequence[bool], start: int) -> list[int]:
    """The try order of `n` targets: `start`, then the other non-fallback-only targets in list
    order from the top (not rotated), then the fallback-only targets in list order."""
    if len(fallback_only) != n or not 0 <= start < n:
        raise ValueError(f"start {start} and {len(fallback_only)} flags do not fit {n} targets")
    rest = [i for i in range(n) if i != start]
    return [
        start,
        *(i for i in rest if not fallback_only[i]),
        *(i for i in rest if fallback_only[i]),
    ]


def session_hash(route_id: str, session_id: str) -> int:
    """`sha256(route_id + ":" + session_id)` read as a big-endian integer."""
    return int.from_bytes(hashlib.sha256(f"{route_id}:{session_id}".encode()).digest(), "big")


def _by_weight_then_order(candidate: TargetView) -> tuple[int, int]:
    return (-candidate.weight, candidate.index)


class _Picking:
    """What the strategies here share: `pick_start` refuses an empty list of candidates and
    asks the strategy's `_pick`; no call statistics unless a strategy keeps them."""

    def pick_start(
        self,
        candidates: Sequence[TargetView],
        *,
        route_id: str,
        session_id: str | None,
        now: float,
    ) -> tuple[int, str]:
        """The chosen candidate's index and the strategy's reason."""
        if not candidates:
            raise ValueError("a strategy needs at least one candidate target")
        return self._pick(candidates, route_id, session_id, now)

    def _pick(
        self, candidates: Sequence[TargetView], route_id: str, session_id: str | None, now: float
    ) -> tuple[int, str]:
        raise NotImplementedError

    def call_started(self, key: Hashable) -> None:
        """Nothing to count."""

    def call_finished(self, key: Hashable) -> None:
        """Nothing to count."""

    def record_latency(self, key: Hashable, seconds: float, now: float) -> None:
        """Nothing to record."""


class Failover(_Picking):
    """Start on the first target."""

    type: str = "failover"

    def _pick(
        self, candidates: Sequence[TargetView], route_id: str, session_id: str | None, now: float
    ) -> tuple[int, str]:
        """The first candidate."""
        return candidates[0].index, "failover: first target"


class RoundRobin(_Picking):
    """Start on the next target in turn (a per-process counter per route); with a session id,
    on the target the session hash names."""

    type: str = "round-robin"

    def __init__(self) -> None:
        self._turns: defaultdict[str, Iterator[int]] = defaultdict(itertools.count)

    def _pick(
        self, candidates: Sequence[TargetView], route_id: str, session_id: str | None, now: float
    ) -> tuple[int, str]:
        """The next candidate in turn, or the session's."""
        if session_id is not None:
            chosen = candidates[session_hash(route_id, session_id) % len(candidates)]
            return chosen.index, "round-robin: session hash"
        turn = next(self._turns[route_id])
        return candidates[turn % len(candidates)].index, f"round-robin: turn {turn + 1}"


class Weighted(_Picking):
    """Start at random in proportion to `weight` (weight 0 never starts); with a session id, the
    session hash mapped onto the cumulative weights."""

    type: str = "weighted"

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def _pick(
        self, candidates: Sequence[TargetView], route_id: str, session_id: str | None, now: float
    ) -> tuple[int, str]:
        """A weighted draw, or the session's share of the weights."""
        total = sum(max(candidate.weight, 0) for candidate in candidates)
        if total <= 0:
            return candidates[0].index, "weighted: no positive weight, first target"
        if session_id is not None:
            point = session_hash(route_id, session_id) % total
            how = "session hash"
        else:
            point = self._rng.randrange(total)
            how = "random"
        for candidate in candidates:
            point -= max(candidate.weight, 0)
            if point < 0:
                return candidate.index, f"weighted: {how} (weight {candidate.weight} of {total})"
        raise AssertionError("a weighted draw fell outside the total weight")  # pragma: no cover


class LowestCost(_Picking):
    """Start on the lowest input + output price; unknown prices go last."""

    type: str = "lowest-cost"

    def _pick(
        self, candidates: Sequence[TargetView], route_id: str, session_id: str | None, now: float
    ) -> tuple[int, str]:
        """The cheapest candidate (ties: higher weight, then list order)."""
        chosen = min(
            candidates,
            key=lambda c: (c.price is None, c.price or 0.0, *_by_weight_then_order(c)),
        )
        if chosen.price is None:
            return chosen.index, "lowest-cost: no target has a known price"
        return chosen.index, f"lowest-cost: {chosen.price:g} USD per 1M tokens"


class Sampling(TypedDict, total=False):
    """The sampling settings of lowest-latency and least-busy (see `_Exploring`)."""

    window_minutes: float
    min_requests: int
    exploration_share: float


class _Exploring(_Picking):
    """The sampling rule shared by lowest-latency and least-busy: targets with fewer than
    `min_requests` (default 20) answered calls in the `window_minutes` (default 15) are
    under-sampled; an `exploration_share` (default 0.05) of requests (an exact running share,
    not a coin flip) starts on one of them in turn."""

    def __init__(
        self,
        *,
        window_minutes: float = 15.0,
        min_requests: int = 20,
        exploration_share: float = 0.05,
    ) -> None:
        self.window_minutes = window_minutes
        self.min_requests = min_requests
        self.exploration_share = exploration_share
        self.latency = LatencyWindow(window_minutes * 60.0)
        self._credit = 0.0
        self._explore_turn = itertools.count()

    def record_latency(self, key: Hashable, seconds: float, now: float) -> None:
        """Add an answered call's latency to the key's window."""
        self.latency.add(key, seconds, now)

    def _explore(
        self, candidates: Sequence[TargetView], now: float, label: str
    ) -> tuple[int, str] | None:
        """Start on an under-sampled target when this request's share of exploration is due."""
        if self.exploration_share <= 0:
            return None
        under = [c for c in candidates if self.latency.count(c.key, now) < self.min_requests]
        if not under:
            return None
        self._credit += self.exploration_share
        if self._credit < 1.0 - 1e-9:  # float sums of e.g. 0.05 land just under 1
            return None
        self._credit -= 1.0
        chosen = under[next(self._explore_turn) % len(under)]
        samples = self.latency.count(chosen.key, now)
        return chosen.index, f"{label}: exploring ({samples} samples < {self.min_requests})"


class LowestLatency(_Exploring):
    """Start on the lowest P95 latency over the rolling window; under-sampled targets rank after
    measured ones, and an exploration share starts on them in turn. A session's start is
    remembered for `session_pin_ttl` seconds after its last request, in this process."""

    type: str = "lowest-latency"

    def __init__(self, *, session_pin_ttl: float = 86_400.0, **sampling: Unpack[Sampling]) -> None:
        super().__init__(**sampling)
        self.session_pin_ttl = session_pin_ttl
        self._pins: dict[tuple[str, str], tuple[str, float]] = {}
        self._picks = itertools.count(1)

    def _pick(
        self, candidates: Sequence[TargetView], route_id: str, session_id: str | None, now: float
    ) -> tuple[int, str]:
        """The session's remembered start, an exploration turn, or the lowest P95."""
        if next(self._picks) % 1024 == 0:
            self._forget_expired(now)
        pin = (route_id, session_id) if session_id is not None else None
        if pin is not None:
            pinned = self._pinned(pin, candidates, now)
            if pinned is not None:
                return pinned.index, "lowest-latency: session pinned"
        picked = self._explore(candidates, now, "lowest-latency") or self._fastest(candidates, now)
        if pin is not None:
            name = next(c.name for c in candidates if c.index == picked[0])
            self._pins[pin] = (name, now + self.session_pin_ttl)
        return picked

    def _fastest(self, candidates: Sequence[TargetView], now: float) -> tuple[int, str]:
        measured: list[tuple[float, int, int, TargetView]] = []
        for c in candidates:
            p95 = self.latency.p95(c.key, now)
            if p95 is not None and self.latency.count(c.key, now) >= self.min_requests:
                measured.append((p95, *_by_weight_then_order(c), c))
        if measured:
            p95, _, _, chosen = min(measured, key=lambda row: row[:3])
            return chosen.index, f"lowest-latency: p95 {p95:.2f} s"
        chosen = min(candidates, key=_by_weight_then_order)
        return chosen.index, (
            f"lowest-latency: no target measured yet (fewer than {self.min_requests} samples)"
        )

    def _pinned(
        self, pin: tuple[str, str], candidates: Sequence[TargetView], now: float
    ) -> TargetView | None:
        held = self._pins.get(pin)
        if held is None or now >= held[1]:
            return None
        chosen = next((c for c in candidates if c.name == held[0]), None)
        if chosen is not None:
            self._pins[pin] = (held[0], now + self.session_pin_ttl)
        return chosen

    @property
    def pinned_sessions(self) -> int:
        """How many session starts are remembered (expired ones are swept every 1024 picks)."""
        return len(self._pins)

    def _forget_expired(self, now: float) -> None:
        for pin in [pin for pin, (_, until) in self._pins.items() if now >= until]:
            del self._pins[pin]


class LeastBusy(_Exploring):
    """Start on the target with the fewest in-flight calls in this process (same exploration
    rule as lowest-latency)."""

    type: str = "least-busy"

    def __init__(self, **sampling: Unpack[Sampling]) -> None:
        super().__init__(**sampling)
        self._in_flight: defaultdict[Hashable, int] = defaultdict(int)

    def call_started(self, key: Hashable) -> None:
        """One more call in flight on `key`."""
        self._in_flight[key] += 1

    def call_finished(self, key: Hashable) -> None:
        """One call fewer in flight on `key` (never below 0)."""
        count = self._in_flight.get(key, 0)
        if count <= 1:
            self._in_flight.pop(key, None)
        else:
            self._in_flight[key] = count - 1

    def in_flight(self, key: Hashable) -> int:
        """Calls in flight on `key` now."""
        return self._in_flight.get(key, 0)

    def _pick(
        self, candidates: Sequence[TargetView], route_id: str, session_id: str | None, now: float
    ) -> tuple[int, str]:
        """An exploration turn, or the least busy candidate."""
        explored = self._explore(candidates, now, "least-busy")
        if explored is not None:
            return explored
        chosen = min(candidates, key=lambda c: (self.in_flight(c.key), *_by_weight_then_order(c)))
        return chosen.index, f"least-busy: {self.in_flight(chosen.key)} in flight"
