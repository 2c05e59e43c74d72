"""One half-open probe across every replica: a lease per health key in the state store.

When a key's breaker open period (or park, or a trip learned from another replica) ends, every
replica's `Health` would let one probe through. `ProbeLeases` is the `Health.probe_gate` that
makes it one probe in all: the replica that takes the key's lease (`StateStore.claim`, which is
`SET key value NX PX <lease>` on Redis) probes, and the others skip the key until the probe's
result reaches them or the lease expires.

Rule 1: the request that finds a key due for its probe claims the lease and waits for the
answer (`claim`, bounded by `claim_timeout`, 0.5 s by default); when it takes the lease, that
same request is the probe, so a lease is never taken by a request that then skips the key.
Rule 2: a lease found held by another replica is remembered (`held_until`, which answers
without waiting) until it ends, but for at most `RECHECK_SECONDS`: requests meanwhile skip the
key with the probe in flight elsewhere as the reason, and the store is asked again about once a
second, so a lease freed without a notice (a probe released without counting, a notice lost)
keeps the key skipped for a second, not for the rest of the call's timeout.
Rule 3: the lease lasts the call's timeout (the `lease` the engine passes), so a probe that never
returns frees the key for another replica when its call would have timed out.
Rule 4: the probe's result is published by `HealthPublisher` (`closed`, or `open` again); once
the probe is over (answered, failed, or released without counting) this replica frees the
lease at once (compare and delete), and a replica that applies a notice about the key forgets
the lease it saw held, so it decides afresh.
Rule 5: a failing store never keeps a key skipped: while the store is degraded, or when a claim
fails or takes longer than `claim_timeout`, the replica probes alone (as without sharing). A
claim cut short this way, or by the request's own cancellation, may still have taken the lease:
it is freed in the background (compare and delete, so another replica's is left alone).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from typing import TYPE_CHECKING

from turnout.state.health import is_shareable, slot_of

if TYPE_CHECKING:
    from collections.abc import Hashable

    from turnout.routing.health import Health
    from turnout.state.base import StateStore
    from turnout.state.health import HealthNotice

__all__ = ["CLAIM_TIMEOUT", "RECHECK_SECONDS", "ProbeLeases"]

CLAIM_TIMEOUT = 0.5
"""How long a request waits for the store to answer its probe claim (seconds)."""
RECHECK_SECONDS = 1.0
"""How long a lease seen held by another replica is taken as held before asking again."""

logger = logging.getLogger(__name__)


class ProbeLeases:
    """The probe gate of `health` over `state` (see the module rules). `replica_id` goes into
    each lease's value; `scope` keeps one project's leases apart (as in `HealthPublisher`);
    `claim_timeout` (seconds, default 0.5) bounds a claim's wait for the store.

    `install()` makes it `health.probe_gate` (on the running loop); `claims`, `taken` and
    `refused` count claims made, leases taken and leases found held by another replica.
    """

    def __init__(
        self,
        health: Health,
        state: StateStore,
        replica_id: str,
        *,
        scope: str = "",
        claim_timeout: float = CLAIM_TIMEOUT,
    ) -> None:
        self.health = health
        self.state = state
        self.replica_id = replica_id
        self.scope = scope
        self.claim_timeout = claim_timeout
        self.claims = 0
        self.taken = 0
        self.refused = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._probing: dict[Hashable, bytes] = {}  # held by this replica's probe in flight
        self._elsewhere: dict[Hashable, float] = {}  # held by another replica until
        self._tasks: set[asyncio.Task[None]] = set()
        self._numbers = itertools.count(1)

    def install(self) -> None:
        """Gate `health`'s probes (call on the event loop that will run the claims)."""
        self._loop = asyncio.get_running_loop()
        self.health.probe_gate = self

    async def aclose(self) -> None:
        """Stop gating and wait for the leases being freed."""
        if self.health.probe_gate is self:
            self.health.probe_gate = None
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- the gate

    def held_until(self, key: Hashable) -> float | None:
        """Rule 2: until when another replica is known to hold `key`'s lease (no waiting)."""
        with self._lock:
            until = self._elsewhere.get(key)
            if until is not None and self.health.clock.now() >= until:
                del self._elsewhere[key]
                return None
        return until

    async def claim(self, key: Hashable, lease: float) -> float | None:
        """Rule 1: take `key`'s lease for `lease` seconds. None: this replica probes now (it
        holds the lease, or decides alone, Rule 5); else the `clock.now()` reading until which
        another replica holds it."""
        slot = _slot(key, self.scope)
        if slot is None or not self.state.healthy:
            return None  # Rule 5, or a key only this process can name
        value = f"{self.replica_id}:{next(self._numbers)}".encode()
        self.claims += 1
        left = await self._ask(key, slot, value, lease)
        if left <= 0:
            with self._lock:
                self._probing[key] = value  # freed when the probe is over, whoever holds it
            return None
        self.refused += 1
        now = self.health.clock.now()
        with self._lock:
            self._elsewhere[key] = now + min(left, RECHECK_SECONDS)
        return now + left

    async def _ask(self, key: Hashable, slot: str, value: bytes, lease: float) -> float:
        """The store's answer to the claim: 0.0 when taken, or when deciding alone (Rule 5: a
        lease the claim took all the same is freed when the probe is over)."""
        try:
            async with asyncio.timeout(self.claim_timeout):
                left = await self.state.claim(slot, value, lease)
        except asyncio.CancelledError:
            self._free(slot, value)  # the request went away; the claim may have gone through
            raise
        except TimeoutError:
            logger.warning("the probe lease of %r took too long to claim: probing alone", key)
            return 0.0
        except Exception:
            logger.exception("could not claim the probe of %r: probing alone", key)
            return 0.0
        if left <= 0:
            self.taken += 1
        return left

    # -- results

    def probe_ended(self, key: Hashable) -> None:
        """Rule 4: this replica's probe of `key` is over: free its lease."""
        with self._lock:
            value = self._probing.pop(key, None)
        slot = _slot(key, self.scope)
        if value is not None and slot is not None:
            self._free(slot, value)

    def _free(self, slot: str, value: bytes) -> None:
        """Delete the lease `slot` in the background if it still holds `value`."""
        loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(self._start_unclaim, slot, value)
        except RuntimeError:  # the loop has closed: the lease expires by itself
            return

    def _start_unclaim(self, slot: str, value: bytes) -> None:
        task = asyncio.get_running_loop().create_task(self._unclaim(slot, value))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _unclaim(self, slot: str, value: bytes) -> None:
        try:
            await self.state.unclaim(slot, value)
        except Exception:
            logger.exception("could not free a probe lease")

    def forget(self, notice: HealthNotice) -> None:
        """Rule 4: another replica said something about the key: decide afresh next time."""
        with self._lock:
            self._elsewhere.pop(notice.key, None)


def _slot(key: Hashable, scope: str) -> str | None:
    """The store key of `key`'s probe lease; None for a key only this process can name."""
    if not is_shareable(key):
        return None
    return "probe:" + slot_of("lease", key, scope).removeprefix("health:")
