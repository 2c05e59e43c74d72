"""Health applied from other replicas (`apply_remote`) and the probe gate: learned trips end in
one probe, closes clear, stale news is ignored, nothing applied is emitted again."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest

from turnout.routing.clock import FakeClock
from turnout.routing.health import Admission, Breaker, Health, HealthEvent, Skip

if TYPE_CHECKING:
    from collections.abc import Hashable

LEASE = 30.0
KEY = ("northwind", "large")


def make(breaker: Breaker | None = None) -> tuple[Health, FakeClock, list[HealthEvent]]:
    clock = FakeClock(start=1000.0)
    health = Health(breaker if breaker is not None else Breaker(), clock=clock)
    events: list[HealthEvent] = []
    health.observe(events.append)
    return health, clock, events


def verdict(health: Health) -> Admission | Skip:
    return health.admit(KEY, lease=LEASE)


def probe(health: Health) -> Admission:
    admission = verdict(health)
    assert isinstance(admission, Admission), admission
    assert admission.probe, admission
    return admission


class Gate:
    """A probe gate: `held` is a lease known held elsewhere; a claim answers `until` (None:
    taken here), or raises `error`, or waits for `release` when it is set."""

    def __init__(self, until: float | None, held: float | None = None) -> None:
        self.until = until
        self.held = held
        self.error: Exception | None = None
        self.release: asyncio.Event | None = None
        self.asked: list[tuple[Hashable, float]] = []
        self.ended: list[Hashable] = []

    def held_until(self, key: Hashable) -> float | None:
        return self.held

    async def claim(self, key: Hashable, lease: float) -> float | None:
        self.asked.append((key, lease))
        if self.release is not None:
            await self.release.wait()
        if self.error is not None:
            raise self.error
        return self.until

    def probe_ended(self, key: Hashable) -> None:
        self.ended.append(key)


def gated(gate: Gate) -> tuple[Health, FakeClock, list[HealthEvent]]:
    """A registry whose learned trip of KEY has just ended, behind `gate`."""
    health, clock, events = make()
    health.apply_remote(KEY, "open", until=clock.now() + 60, at=clock.now())
    clock.advance(60)
    health.probe_gate = gate
    return health, clock, events


def test_learned_trip_skips_then_lets_one_probe_through() -> None:
    """A trip from another replica skips the key until its deadline, then admits one probe."""
    health, clock, events = make()
    assert health.apply_remote(KEY, "open", until=clock.now() + 60, at=clock.now())
    assert verdict(health) == Skip("breaker_open", clock.now() + 60)
    clock.advance(60)
    assert health.snapshot().get(KEY).state == "half_open"  # type: ignore[union-attr]
    first = probe(health)
    assert verdict(health) == Skip("breaker_open", first.lease_until or 0, "here")
    assert [event.to for event in events] == ["half_open"]


def test_probe_success_of_a_learned_trip_is_a_close() -> None:
    """The probe of a learned trip that answers closes the key and says `closed`."""
    health, clock, events = make()
    health.apply_remote(KEY, "open", until=clock.now() + 60, at=clock.now())
    clock.advance(60)
    health.record_success(probe(health))
    assert [event.to for event in events] == ["half_open", "closed"]
    plain = verdict(health)
    assert isinstance(plain, Admission)
    assert plain.probe is False


def test_failed_probe_of_a_learned_trip_reopens_for_open_for() -> None:
    """The probe of a learned trip that fails opens the key again for the policy's open_for."""
    health, clock, events = make(Breaker(open_for=45))
    health.apply_remote(KEY, "open", until=clock.now() + 10, at=clock.now())
    clock.advance(10)
    health.record_failure(probe(health), "provider_error")
    assert events[-1].to == "open"
    assert events[-1].until == clock.now() + 45
    assert verdict(health) == Skip("breaker_open", clock.now() + 45)


def test_park_probe_success_is_a_close() -> None:
    """A park's probe that answers says `closed`, so other replicas end the park too."""
    health, clock, events = make()
    health.record_failure(health.admit(KEY, lease=LEASE), "quota_exhausted", retry_after=20)  # type: ignore[arg-type]
    clock.advance(20)
    health.record_success(probe(health))
    assert [event.to for event in events] == ["cooling_down", "parked", "closed"]


def test_remote_close_clears_a_local_trip() -> None:
    """A close from another replica after the local trip clears it: the key is called again."""
    health, clock, events = make()
    for _ in range(3):
        health.record_failure(verdict(health), "provider_error")  # type: ignore[arg-type]
    clock.advance(5)
    assert health.apply_remote(KEY, "closed", at=clock.now())
    entry = health.snapshot().get(KEY)
    assert entry is not None
    assert (entry.state, entry.failures) == ("available", 0)
    assert [event.to for event in events] == ["open"]  # applying emits nothing


def test_stale_close_does_not_clear_a_newer_failure() -> None:
    """A close that happened before this replica's own trip is ignored."""
    health, clock, _ = make()
    closed_at = clock.now()
    clock.advance(1)
    for _ in range(3):
        health.record_failure(verdict(health), "provider_error")  # type: ignore[arg-type]
    assert health.apply_remote(KEY, "closed", at=closed_at) is False
    assert isinstance(verdict(health), Skip)


def test_stale_trip_older_than_the_last_close_is_ignored() -> None:
    """A trip that happened before the last close (a late delivery) changes nothing."""
    health, clock, _ = make()
    opened_at = clock.now()
    clock.advance(2)
    health.apply_remote(KEY, "closed", at=clock.now())
    assert health.apply_remote(KEY, "open", until=clock.now() + 58, at=opened_at) is False
    assert isinstance(verdict(health), Admission)


def test_remote_deadlines_never_shorten_local_ones() -> None:
    """A shorter learned trip or cooldown leaves the longer one held."""
    health, clock, _ = make()
    health.apply_remote(KEY, "open", until=clock.now() + 60, at=clock.now())
    assert health.apply_remote(KEY, "open", until=clock.now() + 10, at=clock.now()) is False
    health.apply_remote(KEY, "cooling_down", until=clock.now() + 90)
    assert health.apply_remote(KEY, "cooling_down", until=clock.now() + 30) is False
    assert verdict(health) == Skip("cooling_down", clock.now() + 90)


async def test_the_request_due_for_the_probe_claims_the_lease_and_is_the_probe() -> None:
    """The first request after the open period takes the slot here at once (others skip it,
    the probe in flight here), claims the lease, and, once it holds it, is the probe."""
    gate = Gate(None)
    health, _, _ = gated(gate)
    due = probe(health)
    assert due.needs_lease
    assert verdict(health) == Skip("breaker_open", due.lease_until or 0, "here")
    ready = await health.claim_probe(due, lease=LEASE)
    assert isinstance(ready, Admission)
    assert (ready.probe, ready.needs_lease, ready.token) == (True, False, due.token)
    assert gate.asked == [(KEY, LEASE)]
    health.record_success(ready)
    assert gate.ended == [KEY]
    assert isinstance(verdict(health), Admission)
    assert health.snapshot().get(KEY).state == "available"  # type: ignore[union-attr]


async def test_a_refused_claim_skips_as_probed_elsewhere_and_frees_the_slot() -> None:
    """A lease another replica holds: the request skips the key until that lease ends, with
    the probe in flight elsewhere, and this process's slot is free again."""
    gate = Gate(None)
    health, clock, _ = gated(gate)
    gate.until = clock.now() + 7
    refused = await health.claim_probe(probe(health), lease=LEASE)
    assert refused == Skip("breaker_open", clock.now() + 7, "elsewhere")
    gate.until = None
    assert probe(health).needs_lease  # the slot was freed: the next request may claim
    assert gate.ended == []


def test_a_lease_known_held_elsewhere_skips_without_claiming() -> None:
    """While the gate knows another replica holds the lease, `admit` skips the key until it
    ends (probe in flight elsewhere) without taking the slot; once it ended, it claims."""
    gate = Gate(None)
    health, clock, _ = gated(gate)
    gate.held = clock.now() + 5
    assert verdict(health) == Skip("breaker_open", clock.now() + 5, "elsewhere")
    clock.advance(5)
    assert probe(health).needs_lease
    assert gate.asked == []


async def test_a_claim_cancelled_while_it_waits_frees_the_slot_and_counts_nothing() -> None:
    """A request cancelled while its claim waits frees this process's slot; nothing counts
    and the gate is not told of a probe that never ran."""
    gate = Gate(None)
    gate.release = asyncio.Event()
    health, _, _ = gated(gate)
    task = asyncio.ensure_future(health.claim_probe(probe(health), lease=LEASE))
    await asyncio.sleep(0)
    assert gate.asked == [(KEY, LEASE)]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert probe(health).needs_lease
    assert (gate.ended, health.snapshot().get(KEY).failures) == ([], 0)  # type: ignore[union-attr]


async def test_a_failing_gate_lets_this_process_probe_alone() -> None:
    """A gate whose claim raises decides nothing: the request probes, as without sharing."""
    gate = Gate(None)
    gate.error = RuntimeError("store gone")
    health, _, _ = gated(gate)
    ready = await health.claim_probe(probe(health), lease=LEASE)
    assert isinstance(ready, Admission)
    assert (ready.probe, ready.needs_lease) == (True, False)


def test_without_a_gate_a_probe_needs_no_lease() -> None:
    """Without sharing, the probe is ready at once: nothing to claim, nothing to await."""
    health, clock, _ = make()
    health.apply_remote(KEY, "open", until=clock.now() + 60, at=clock.now())
    clock.advance(60)
    assert probe(health).needs_lease is False


def test_gate_is_not_asked_on_the_hot_path_or_for_forced_probes() -> None:
    """A healthy key and a forced probe never ask the gate."""
    health, _, _ = make()
    gate = Gate(None)
    health.probe_gate = gate
    assert isinstance(verdict(health), Admission)
    assert health.admit_forced(KEY, lease=LEASE) is not None
    assert gate.asked == []


def test_disabled_breaker_ignores_learned_trips_and_parks() -> None:
    """With the breaker off, learned trips and parks are ignored; cooldowns are not."""
    health, clock, _ = make(Breaker(enabled=False))
    assert health.apply_remote(KEY, "open", until=clock.now() + 60) is False
    assert health.apply_remote(KEY, "parked", until=clock.now() + 60) is False
    assert health.apply_remote(KEY, "cooling_down", until=clock.now() + 60) is True
