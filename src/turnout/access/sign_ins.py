"""Failed admin sign-ins, counted per peer address, and the throttle they trigger.

Pure logic over a clock: no I/O. The admin API and the dashboard share one `SignInThrottle` per
process; what it says is logged and answered by them.

Rule 1: a failure is a presented admin key that is none of the admin keys (a request without
any key is no sign-in attempt and counts nothing).
Rule 2: a peer with `limit` failures within the last `window` seconds is throttled until the
oldest of them is `window` seconds old: its requests are answered 429 with `Retry-After`, and
its keys are not even checked, so guessing stops there, right keys included.
Rule 3: the state is this process's own: with several workers or replicas each counts the
failures it saw. At most `max_peers` peers are remembered; past that, the peer heard from
least recently is forgotten first.
Rule 4: each failure is one WARNING line `sign_in_failed` on the `turnout.admin` logger
(`refused_sign_in`), its fields `where`, `peer`, `credential` (`admin_key`) and `fingerprint`:
the key only by a few hex digits of its hash, never the key; the failure that throttles a peer
adds one line `sign_ins_throttled` (`where`, `peer`, `failures`, `window`), and a throttled
peer's refused requests add none.
"""

from __future__ import annotations

import logging
import math
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from turnout.access.keys import hash_key
from turnout.routing.clock import LoopClock

if TYPE_CHECKING:
    from collections.abc import MutableMapping

    from turnout.routing.clock import Clock

__all__ = ["SignInPolicy", "SignInThrottle", "fingerprint", "peer_of", "refused_sign_in"]

logger = logging.getLogger("turnout.admin")

_FINGERPRINT_DIGITS: Final = 8


def fingerprint(key: str) -> str:
    """Rule 4: how a log line names a presented key: the first 8 hex digits of its SHA-256."""
    return hash_key(key).removeprefix("sha256:")[:_FINGERPRINT_DIGITS]


@dataclass(frozen=True, slots=True)
class SignInPolicy:
    """How many failed sign-ins (`limit`, 10) a peer may make within `window` seconds (300)
    before it is throttled; `max_peers` (10,000) bounds the peers remembered."""

    limit: int = 10
    window: float = 300.0
    max_peers: int = 10_000


class SignInThrottle:
    """Failed sign-ins per peer address (see the module rules), on `clock` (default: the
    real monotonic clock)."""

    __slots__ = ("_clock", "_failures", "policy")

    def __init__(self, policy: SignInPolicy | None = None, *, clock: Clock | None = None) -> None:
        self.policy = policy if policy is not None else SignInPolicy()
        self._clock: Clock = clock if clock is not None else LoopClock()
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def retry_after(self, peer: str) -> int | None:
        """Rule 2: whole seconds until `peer` may try again, None when it is not throttled."""
        times = self._recent(peer)
        if times is None or len(times) < self.policy.limit:
            return None
        return max(1, math.ceil(times[0] + self.policy.window - self._clock.now()))

    def failed(self, peer: str) -> bool:
        """Count one failed sign-in of `peer`; True when this one throttles it (Rule 2)."""
        times = self._recent(peer)
        if times is None:
            times = self._failures[peer] = deque()
            while len(self._failures) > self.policy.max_peers:
                self._failures.popitem(last=False)
        self._failures.move_to_end(peer)
        times.append(self._clock.now())
        return len(times) == self.policy.limit

    def _recent(self, peer: str) -> deque[float] | None:
        """The times of `peer`'s failures within the window (older ones dropped), if any."""
        times = self._failures.get(peer)
        if times is None:
            return None
        cutoff = self._clock.now() - self.policy.window
        while times and times[0] <= cutoff:
            times.popleft()
        if not times:
            del self._failures[peer]
            return None
        return times


def peer_of(scope: MutableMapping[str, Any]) -> str:
    """The peer address a request came from (the TCP peer: behind a proxy, the proxy's)."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def refused_sign_in(throttle: SignInThrottle, peer: str, key: str, where: str) -> None:
    """Rules 1 and 4: count and log one failed sign-in of `peer` with `key` on `where`
    (`admin_api`, `dashboard`)."""
    throttled = throttle.failed(peer)
    fields: dict[str, Any] = {
        "where": where,
        "peer": peer,
        "credential": "admin_key",
        "fingerprint": fingerprint(key),
    }
    logger.warning("sign_in_failed", extra={"fields": fields})
    if throttled:
        policy = throttle.policy
        fields = {
            "where": where,
            "peer": peer,
            "failures": policy.limit,
            "window": policy.window,
        }
        logger.warning("sign_ins_throttled", extra={"fields": fields})
