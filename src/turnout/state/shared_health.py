"""Health shared between replicas: what a gateway process starts when its state is shared.

Rule 1: shared are the transitions with a deadline (cooldowns, parks, breaker trips) and
closes (`HealthPublisher`), and the half-open probe, one across every replica
(`ProbeLeases`). Failure counters, latency windows, in-flight counts and round-robin turns
stay per process; a failure on a caller's own forwarded credential is never counted, so it is
never shared either.
Rule 2: a request reads local health; publishing, freeing leases and the store's watch run in
background tasks. The one wait on a request's path is the claim of a half-open probe's lease,
made by the request that will be the probe and bounded by `ProbeLeases.claim_timeout`; a slow
or failing store then lets this replica probe alone, so it never fails a call.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from turnout.state.health import HealthPublisher
from turnout.state.probe_lease import ProbeLeases

if TYPE_CHECKING:
    from collections.abc import Callable

    from turnout.routing.health import Health
    from turnout.state.base import StateStore

__all__ = ["SharedHealth"]


class SharedHealth:
    """Share `health` over `state` with every replica using the same store and `scope` (the
    project). `replica_id` names this process (default: a random id). `start()` subscribes,
    applies the stored notices and gates probes; `stop()` undoes it."""

    def __init__(
        self,
        health: Health,
        state: StateStore,
        *,
        scope: str = "",
        replica_id: str | None = None,
    ) -> None:
        replica = replica_id if replica_id is not None else uuid.uuid4().hex[:12]
        self.publisher = HealthPublisher(health, state, replica, scope=scope)
        self.leases = ProbeLeases(health, state, replica, scope=scope)
        self.publisher.on_applied.append(self.leases.forget)
        self._running = False

    @property
    def replica_id(self) -> str:
        """This process's name in notices and leases."""
        return self.publisher.replica_id

    def on_store(self, listener: Callable[[bool], None]) -> None:
        """Call `listener(up)` now (once started) and whenever the store's health changes."""
        self.publisher.on_store.append(listener)

    async def start(self) -> None:
        """Gate probes, subscribe and catch up (idempotent)."""
        if self._running:
            return
        self._running = True
        self.leases.install()
        await self.publisher.start()

    async def stop(self) -> None:
        """Stop publishing, applying and gating (queued notices are published first)."""
        if not self._running:
            return
        self._running = False
        await self.leases.aclose()
        await self.publisher.stop()

    def describe(self) -> dict[str, Any]:
        """For `/readyz`: `shared`, the counts of notices and probe leases."""
        publisher, leases = self.publisher, self.leases
        return {
            "shared": True,
            "replica": self.replica_id,
            "published": publisher.published,
            "applied": publisher.applied,
            "resyncs": publisher.resyncs,
            "probe_leases_taken": leases.taken,
            "probe_leases_refused": leases.refused,
        }
