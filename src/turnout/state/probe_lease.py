"""One half-open probe across every replica: a lease per health key in the state store.

When a key's breaker open period (or park, or a trip learned from another replica) ends, every
replica's `Health` would let one probe through. `ProbeLeases` is the `Health.probe_gate` that
makes it one probe in all: the replica that takes the key's lease (`StateStore.claim`, which is
`SET key value NX PX <lease>` on Redis) probes, and the others keep skipping the key until the
probe's result reaches them or the lease expires.

Rule 1: `may_probe` never waits: it answers from what this replica knows. A key nobody is known
to hold starts a claim in the background and stays skipped until the claim is answered (one
request's worth); a held lease is used by the next request, once.
Rule 2: the lease lasts the call's timeout (the `lease` the engine passes), so a probe that never
returns frees the key for another replica when its call would have timed out.
Rule 3: the probe's result is published by `HealthPublisher` (`closed`, or `open` again); once
the probe is over (answered, failed, or released without counting) this replica frees the
lease at once (compare and delete), and a replica that applies a notice about the key forgets
what it knew of the key's lease, so it decides afresh.
Rule 4: while the store is degraded, a replica decides alone (its own probe, as without sharing):
a failing store never keeps a key skipped.
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

__all__ = ["ProbeLeases"]

logger = logging.getLogger(__name__)


class ProbeLeases:
    """The probe gate of `health` over `state` (see the module rules). `replica_id` goes into
    each lease's value; `scope` keeps one project's leases apart (as in `HealthPublisher`).

    `install()` makes it `health.probe_gate` (on the running loop); `claims`, `taken` and
    `refused` count claims started, leases taken and leases found held by another replica.
    """

    def __init__(
        self, health: Health, state: StateStore, replica_id: str, *, scope: str = ""
    ) -> None:
        self.health = health
        self.state = state
        self.replica_id = replica_id
        self.scope = scope
        self.claims = 0
        self.taken = 0
        self.refused = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._held: dict[Hashable, tuple[float, bytes]] = {}  # taken, not used yet
        self._probing: dict[Hashable, bytes] = {}  # used by a probe in flight
        self._waits: dict[Hashable, float] = {}  # claiming, or another replica holds it
        self._tasks: set[asyncio.Task[None]] = set()
        self._numbers = itertools.count(1)

    def install(self) -> None:
        """Gate `health`'s probes (call on the event loop that will run the claims)."""
        self._loop = asyncio.get_running_loop()
        self.health.probe_gate = self

    async def aclose(self) -> None:
        """Stop gating and wait for claims in flight."""
        if self.health.probe_gate is self:
            self.health.probe_gate = None
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- the gate (called under the Health lock: no waiting, no calls back into Health)

    def may_probe(self, key: Hashable, lease: float) -> float | None:
        """None: probe `key` now. Else the `clock.now()` reading to skip it until (Rule 1)."""
        loop = self._loop
        slot = _slot(key, self.scope)
        if loop is None or slot is None or not self.state.healthy:
            return None  # Rule 4, or a key only this process can name
        now = self.health.clock.now()
        with self._lock:
            held = self._held.pop(key, None)
            if held is not None and now < held[0]:
                self._probing[key] = held[1]
                return None
            wait = self._waits.get(key)
            if wait is not None and now < wait:
                return wait
            value = f"{self.replica_id}:{next(self._numbers)}".encode()
            self._waits[key] = now + lease
        self.claims += 1
        try:
            loop.call_soon_threadsafe(self._start_claim, key, slot, value, lease)
        except RuntimeError:  # the loop has closed: decide alone
            return None
        return now + lease

    def _start_claim(self, key: Hashable, slot: str, value: bytes, lease: float) -> None:
        task = asyncio.get_running_loop().create_task(self._claim(key, slot, value, lease))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _claim(self, key: Hashable, slot: str, value: bytes, lease: float) -> None:
        try:
            left = await self.state.claim(slot, value, lease)
        except Exception:
            logger.exception("could not claim the probe of %r", key)
            left = 0.0  # decide alone, as with a degraded store
        now = self.health.clock.now()
        with self._lock:
            if left <= 0:
                self.taken += 1
                self._held[key] = (now + lease, value)
                self._waits.pop(key, None)
            else:
                self.refused += 1
                self._waits[key] = now + left

    # -- results

    def probe_ended(self, key: Hashable) -> None:
        """Rule 3: this replica's probe of `key` is over: free its lease."""
        with self._lock:
            value = self._probing.pop(key, None)
        slot = _slot(key, self.scope)
        loop = self._loop
        if value is None or slot is None or loop is None:
            return
        try:
            loop.call_soon_threadsafe(self._start_unclaim, slot, value)
        except RuntimeError:
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
        """Rule 3: another replica said something about the key: decide afresh next time."""
        with self._lock:
            self._waits.pop(notice.key, None)
            held = self._held.pop(notice.key, None)
        slot = _slot(notice.key, self.scope)
        if held is not None and slot is not None and self._loop is not None:
            self._start_unclaim(slot, held[1])  # not needed any more: let others decide


def _slot(key: Hashable, scope: str) -> str | None:
    """The store key of `key`'s probe lease; None for a key only this process can name."""
    if not is_shareable(key):
        return None
    return "probe:" + slot_of("lease", key, scope).removeprefix("health:")
