"""Health registry: cooldowns, breaker, parking, probes, snapshot, events."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING

import pytest

from turnout.errors import ConfigError
from turnout.routing.clock import FakeClock
from turnout.routing.health import (
    Admission,
    Breaker,
    Health,
    HealthEvent,
    Skip,
    key_text,
)

if TYPE_CHECKING:
    from collections.abc import Hashable

LEASE = 30.0
KEY = ("northwind", "large")


def make(
    breaker: Breaker | None = None, key_by: str = "provider_model"
) -> tuple[Health, FakeClock]:
    clock = FakeClock(start=1000.0)
    chosen = breaker if breaker is not None else Breaker()
    return Health(chosen, key_by=key_by, clock=clock), clock


def admitted(health: Health, key: Hashable = KEY, breaker: Breaker | None = None) -> Admission:
    verdict = health.admit(key, lease=LEASE, breaker=breaker)
    assert isinstance(verdict, Admission), verdict
    return verdict


def skipped(health: Health, key: Hashable = KEY, breaker: Breaker | None = None) -> Skip:
    verdict = health.admit(key, lease=LEASE, breaker=breaker)
    assert isinstance(verdict, Skip), verdict
    return verdict


def fail(health: Health, key: Hashable = KEY, times: int = 1, cls: str = "provider_error") -> None:
    for _ in range(times):
        health.record_failure(admitted(health, key), cls)


# ---- policy and keys -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field", "rule"),
    [
        ({"failures": 0}, "Breaker.failures", "from 1 to 1000"),
        ({"failures": 2.5}, "Breaker.failures", "whole number"),
        ({"failures": True}, "Breaker.failures", "whole number"),
        ({"open_for": 0}, "Breaker.open_for", "> 0"),
        ({"open_for": float("inf")}, "Breaker.open_for", "> 0"),
        ({"window": -1}, "Breaker.window", "null or a number"),
        ({"enabled": "yes"}, "Breaker.enabled", "true or false"),
    ],
)
def test_breaker_validation_names_field_and_rule(
    kwargs: dict[str, object], field: str, rule: str
) -> None:
    """An invalid Breaker raises ConfigError naming the field and the rule."""
    with pytest.raises(ConfigError, match=field) as caught:
        Breaker(**kwargs)  # type: ignore[arg-type]
    assert rule in str(caught.value)
    assert caught.value.errors[0][0] == field


def test_breaker_from_config_uses_config_names() -> None:
    """Breaker.from_config maps config names and reports errors under the config path."""
    breaker = Breaker.from_config(
        {"enabled": True, "failure_threshold": 5, "cooldown_seconds": 10}, path="routes[0].cb"
    )
    assert breaker == Breaker(failures=5, open_for=10)
    with pytest.raises(ConfigError, match=r"routes\[0\]\.cb\.failure_threshold must be from 1"):
        Breaker.from_config({"failure_threshold": 0}, path="routes[0].cb")
    with pytest.raises(ConfigError, match=r"circuit_breaker\.threshold: unknown option"):
        Breaker.from_config({"threshold": 3})


def test_health_rejects_unknown_key_by() -> None:
    """health_key_by outside provider/provider_model/target is a ConfigError."""
    with pytest.raises(ConfigError, match="health_key_by must be one of"):
        Health(key_by="model")


def test_key_for_by_policy_and_per_target_override() -> None:
    """key_for: per-target health_key wins; else provider, (provider, model) or (route, target)."""
    args = {"provider": "p1", "model": "m", "route": "r", "target": "t"}
    assert Health(key_by="provider").key_for(**args) == "p1"
    assert Health().key_for(**args) == ("p1", "m")
    assert Health(key_by="target").key_for(**args) == ("r", "t")
    assert Health(key_by="target").key_for(**args, health_key="eu") == "eu"


def test_key_text_reads_like_the_dashboard() -> None:
    """Keys read as provider, provider/model or route/target."""
    assert key_text("local") == "local"
    assert key_text(("openai", "gpt-4o")) == "openai/gpt-4o"
    assert key_text(("openai", None)) == "openai"


def test_skip_reason_rounds_seconds_up() -> None:
    """A skip's reason is the whole seconds left, rounded up, ignoring float noise."""
    assert Skip("breaker_open", 1060.0).reason(1000.0) == "60 s"
    assert Skip("breaker_open", 1060.0000000001).reason(1000.0) == "60 s"
    assert Skip("cooling_down", 1002.2).reason(1000.0) == "3 s"
    assert Skip("parked", 990.0).seconds_left(1000.0) == 0.0


# ---- the breaker ---------------------------------------------------------------------------


def test_healthy_key_gets_a_reused_plain_admission() -> None:
    """A healthy key is admitted without a probe, reusing one Admission object."""
    health, _ = make()
    first = admitted(health)
    health.record_success(first)
    assert first == Admission(KEY, probe=False, lease_until=None, token=0)
    assert admitted(health) is first


def test_three_failures_open_the_breaker_for_open_for() -> None:
    """Three retryable failures in a row open the breaker until last failure + 60 s."""
    health, clock = make()
    fail(health, times=2)
    assert admitted(health).probe is False
    clock.advance(5)
    fail(health)
    skip = skipped(health)
    assert skip == Skip("breaker_open", 1065.0)
    assert skip.reason(clock.now()) == "60 s"


def test_deadline_equal_to_now_has_passed() -> None:
    """At exactly open_for after the last failure the key is half-open, not open."""
    health, clock = make()
    fail(health, times=3)
    clock.advance(59.999)
    assert skipped(health).outcome == "breaker_open"
    clock.advance(0.001)
    assert admitted(health).probe is True


def test_half_open_admits_exactly_one_probe() -> None:
    """Half-open: one probe; other admits skip as breaker_open, the probe in flight here, until
    the probe's lease ends."""
    health, clock = make()
    fail(health, times=3)
    clock.advance(60)
    probe = admitted(health)
    assert probe.probe
    assert probe.lease_until == clock.now() + LEASE
    assert skipped(health) == Skip("breaker_open", clock.now() + LEASE, "here")


def test_probe_success_closes_and_resets() -> None:
    """A successful probe closes the breaker and resets failures in a row to 0."""
    health, clock = make()
    fail(health, times=3)
    clock.advance(60)
    health.record_success(admitted(health))
    assert admitted(health).probe is False
    entry = health.snapshot().get(KEY)
    assert entry is not None
    assert (entry.state, entry.failures) == ("available", 0)


def test_probe_failure_reopens_for_a_full_open_for() -> None:
    """A failed probe reopens the breaker for another full open_for from the failure."""
    health, clock = make()
    fail(health, times=3)
    clock.advance(60)
    probe = admitted(health)
    clock.advance(10)
    health.record_failure(probe, "timeout")
    assert skipped(health) == Skip("breaker_open", clock.now() + 60)


def test_success_resets_the_row() -> None:
    """A success between failures resets the count, so 2 + 2 failures never open."""
    health, _ = make()
    fail(health, times=2)
    health.record_success(admitted(health))
    fail(health, times=2)
    assert admitted(health).probe is False


def test_success_of_a_call_admitted_before_the_trip_leaves_the_breaker_open() -> None:
    """A call in flight when the breaker opens that then answers closes nothing: only the
    half-open probe's result may."""
    health, clock = make()
    in_flight = admitted(health)
    fail(health, times=3)
    opened = skipped(health)
    clock.advance(0.002)
    health.record_success(in_flight)
    assert skipped(health) == opened
    assert health.snapshot().get(KEY).failures == 3  # type: ignore[union-attr]


def test_failure_of_a_call_admitted_before_the_trip_neither_extends_nor_counts() -> None:
    """A call in flight when the breaker opens that then fails leaves the row and the open
    period as they were."""
    health, clock = make()
    in_flight = admitted(health)
    fail(health, times=3)
    opened = skipped(health)
    clock.advance(10)
    health.record_failure(in_flight, "provider_error")
    assert skipped(health) == opened
    assert health.snapshot().get(KEY).failures == 3  # type: ignore[union-attr]


def test_retry_after_of_a_call_admitted_before_the_trip_still_cools_the_key() -> None:
    """The provider's Retry-After on such a late failure is its word about now: it cools."""
    health, clock = make()
    in_flight = admitted(health)
    fail(health, times=3)
    health.record_failure(in_flight, "rate_limited", retry_after=120)
    assert skipped(health) == Skip("cooling_down", clock.now() + 120)
    assert health.snapshot().get(KEY).failures == 3  # type: ignore[union-attr]


def test_calls_admitted_before_a_trip_stay_stale_after_the_probe_closes_it() -> None:
    """After the probe closed the breaker, new calls count as usual and a call admitted before
    the trip still counts for nothing."""
    health, clock = make()
    in_flight = admitted(health)
    fail(health, times=3)
    clock.advance(60)
    health.record_success(admitted(health))
    health.record_failure(in_flight, "provider_error")
    assert health.snapshot().get(KEY).failures == 0  # type: ignore[union-attr]
    fail(health, times=1)
    assert health.snapshot().get(KEY).failures == 1  # type: ignore[union-attr]


def test_a_learned_trip_makes_calls_admitted_before_it_stale() -> None:
    """A trip learned from another replica opens a new epoch too: a call admitted before it
    that fails afterwards counts no failure."""
    health, clock = make()
    in_flight = admitted(health)
    health.apply_remote(KEY, "open", until=clock.now() + 60, at=clock.now())
    health.record_failure(in_flight, "provider_error")
    assert health.snapshot().get(KEY).failures == 0  # type: ignore[union-attr]


def test_a_route_s_own_trip_makes_calls_admitted_before_it_stale() -> None:
    """A route whose breaker trips below the registry's threshold starts an epoch when it
    skips the key: a call admitted before then that answers late closes nothing, so the key
    stays open for that route until its probe's result."""
    health, clock = make(Breaker(failures=5))
    route = Breaker(failures=2, open_for=60)
    in_flight = admitted(health, breaker=route)
    fail(health, times=2)
    opened = skipped(health, breaker=route)
    clock.advance(1)
    health.record_success(in_flight)
    assert skipped(health, breaker=route) == opened
    assert health.snapshot().get(KEY).failures == 2  # type: ignore[union-attr]


def test_a_route_s_own_probe_still_closes_its_trip() -> None:
    """After a route-level trip, the route's probe (admitted once its open period ends)
    closes the key, and later calls count as usual."""
    health, clock = make(Breaker(failures=5))
    route = Breaker(failures=2, open_for=60)
    fail(health, times=2)
    skipped(health, breaker=route)
    clock.advance(60)
    probe = admitted(health, breaker=route)
    assert probe.probe is True
    health.record_success(probe)
    assert admitted(health, breaker=route).probe is False
    assert health.snapshot().get(KEY).failures == 0  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "cls", ["cancelled", "context_length", "content_filtered", "auth", "invalid_request"]
)
def test_non_retryable_failures_count_nothing(cls: str) -> None:
    """Non-retryable classes neither count nor cool, and free the probe slot."""
    health, clock = make()
    fail(health, times=3)
    clock.advance(60)
    probe = admitted(health)
    health.record_failure(probe, cls, retry_after=30)
    entry = health.snapshot().get(KEY)
    assert entry is not None
    assert (entry.state, entry.failures) == ("half_open", 3)
    assert admitted(health).probe is True


def test_window_counts_only_recent_failures() -> None:
    """With a 60 s window, failures at 0, 50 and 110 s never make three in the window."""
    health, clock = make(Breaker(failures=3, window=60))
    fail(health)
    clock.advance(50)
    fail(health)
    clock.advance(60)  # the first failure is now 110 s old, the second 60 s: neither is newer
    fail(health)
    assert admitted(health).probe is False
    entry = health.snapshot().get(KEY)
    assert entry is not None
    assert entry.failures == 1
    clock.advance(1)
    fail(health, times=2)
    assert skipped(health).outcome == "breaker_open"


def test_window_still_reopens_on_failed_probe() -> None:
    """A failed probe reopens the breaker even when the older failures left the window."""
    health, clock = make(Breaker(failures=3, open_for=60, window=30))
    fail(health, times=3)
    clock.advance(60)
    health.record_failure(admitted(health), "provider_error")
    assert skipped(health).outcome == "breaker_open"


def test_route_override_uses_its_own_thresholds_on_the_same_counters() -> None:
    """A route with Breaker(5, 10) skips at its thresholds; the default route skips at 3."""
    health, clock = make()
    override = Breaker(failures=5, open_for=10)
    fail(health, times=3)
    assert skipped(health).outcome == "breaker_open"
    assert admitted(health, breaker=override).probe is False
    for _ in range(2):
        health.record_failure(admitted(health, breaker=override), "rate_limited")
    assert skipped(health, breaker=override) == Skip("breaker_open", clock.now() + 10)
    clock.advance(10)
    assert admitted(health, breaker=override).probe is True
    assert skipped(health) == Skip("breaker_open", 1060.0)
    entry = health.snapshot().get(KEY)
    assert entry is not None
    assert (entry.state, entry.failures) == ("open", 5)


def test_route_override_disabled_never_skips_on_breaker() -> None:
    """A route whose own breaker is disabled ignores the breaker (cooldowns still apply)."""
    health, _ = make()
    fail(health, times=3)
    assert admitted(health, breaker=Breaker(enabled=False)).probe is False


# ---- probes --------------------------------------------------------------------------------


def test_probe_lease_expiry_frees_the_slot() -> None:
    """A probe that never reports frees the slot after its lease; its late release is ignored."""
    health, clock = make()
    fail(health, times=3)
    clock.advance(60)
    lost = admitted(health)
    clock.advance(LEASE - 0.001)
    assert skipped(health).outcome == "breaker_open"
    clock.advance(0.001)
    fresh = admitted(health)
    assert fresh.probe
    assert fresh.token != lost.token
    health.release(lost)
    assert skipped(health).until == fresh.lease_until


def test_released_probe_frees_the_slot_without_counting() -> None:
    """A cancelled probe (release) frees the slot and leaves failures as they were."""
    health, clock = make()
    fail(health, times=3)
    clock.advance(60)
    health.release(admitted(health))
    second = admitted(health)
    assert second.probe
    entry = health.snapshot().get(KEY)
    assert entry is not None
    assert entry.failures == 3


async def test_concurrent_admits_on_half_open_key_give_one_probe() -> None:
    """100 concurrent admits on a half-open key yield exactly one probe admission."""
    health, clock = make()
    fail(health, times=3)
    clock.advance(60)

    async def ask() -> Admission | Skip:
        await asyncio.sleep(0)
        return health.admit(KEY, lease=LEASE)

    verdicts = await asyncio.gather(*(ask() for _ in range(100)))
    probes = [v for v in verdicts if isinstance(v, Admission)]
    assert len(probes) == 1
    assert probes[0].probe


def test_threaded_admits_on_half_open_key_give_one_probe() -> None:
    """100 threads admitting a half-open key at once yield exactly one probe."""
    health, clock = make()
    fail(health, times=3)
    clock.advance(60)
    barrier = threading.Barrier(100)
    verdicts: list[Admission | Skip] = []

    def ask() -> None:
        barrier.wait()
        verdicts.append(health.admit(KEY, lease=LEASE))

    threads = [threading.Thread(target=ask) for _ in range(100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(isinstance(v, Admission) for v in verdicts) == 1


def test_admit_forced_allows_one_probe_per_key() -> None:
    """admit_forced admits despite a skip, but only one in flight per key."""
    health, clock = make()
    fail(health, times=3)
    forced = health.admit_forced(KEY, lease=LEASE)
    assert forced is not None
    assert forced.probe
    assert health.admit_forced(KEY, lease=LEASE) is None
    health.release(forced)
    again = health.admit_forced(KEY, lease=LEASE)
    assert again is not None
    clock.advance(LEASE)
    assert health.admit_forced(KEY, lease=LEASE) is not None


def test_forced_probe_success_clears_park_and_breaker() -> None:
    """A forced probe that succeeds closes the breaker and ends a park."""
    health, _ = make()
    fail(health, times=2)
    health.record_failure(admitted(health), "quota_exhausted")
    assert skipped(health).outcome == "parked"
    forced = health.admit_forced(KEY, lease=LEASE)
    assert forced is not None
    health.record_success(forced)
    assert admitted(health).probe is False


def test_lease_must_be_positive() -> None:
    """A probe lease of zero seconds is refused."""
    health, _ = make()
    with pytest.raises(ValueError, match="lease"):
        health.admit_forced(KEY, lease=0)


# ---- cooldowns and parking -----------------------------------------------------------------


def test_retry_after_cools_each_key_for_its_own_time() -> None:
    """Retry-After 8 s on one key and 3 s on another skip until +8 and +3."""
    health, clock = make()
    health.record_failure(admitted(health, "a"), "rate_limited", retry_after=8)
    health.record_failure(admitted(health, "b"), "rate_limited", retry_after=3)
    assert skipped(health, "a") == Skip("cooling_down", 1008.0)
    assert skipped(health, "b") == Skip("cooling_down", 1003.0)
    clock.advance(3)
    assert admitted(health, "b").probe is False
    assert skipped(health, "a").reason(clock.now()) == "5 s"
    clock.advance(5)
    assert admitted(health, "a").probe is False


@pytest.mark.parametrize("retry_after", [None, 0.0, -5.0])
def test_zero_or_missing_retry_after_cools_nothing(retry_after: float | None) -> None:
    """Retry-After 0, negative (a past date) or absent sets no cooldown."""
    health, _ = make()
    health.record_failure(admitted(health), "rate_limited", retry_after=retry_after)
    assert admitted(health).probe is False


def test_cooldown_is_capped_at_24_hours() -> None:
    """A huge Retry-After cools for at most 24 h."""
    health, clock = make()
    health.record_failure(admitted(health), "provider_error", retry_after=10**9)
    assert skipped(health).until == clock.now() + 86_400


def test_cooldown_stays_on_with_breaker_disabled() -> None:
    """With the breaker disabled, cooldowns still apply but failures never open it or park."""
    health, _ = make(Breaker(enabled=False))
    fail(health, times=10)
    assert admitted(health).probe is False
    health.record_failure(admitted(health), "quota_exhausted")
    assert admitted(health).probe is False
    health.record_failure(admitted(health), "rate_limited", retry_after=5)
    assert skipped(health).outcome == "cooling_down"


def test_breaker_none_means_disabled() -> None:
    """Health(breaker=None) is a registry with the breaker off."""
    assert Health(None).breaker.enabled is False


@pytest.mark.parametrize(
    ("retry_after", "reset_after", "parked_for"),
    [
        (120.0, 3600.0, 120.0),
        (None, 3600.0, 3600.0),
        (None, None, 900.0),
        (None, 3 * 86_400.0, 86_400.0),
    ],
)
def test_quota_parks_by_retry_after_then_reset_then_15_minutes(
    retry_after: float | None, reset_after: float | None, parked_for: float
) -> None:
    """quota_exhausted parks until Retry-After, else the vendor reset, else 15 min; max 24 h."""
    health, clock = make()
    health.record_failure(
        admitted(health), "quota_exhausted", retry_after=retry_after, reset_after=reset_after
    )
    assert skipped(health) == Skip("parked", clock.now() + parked_for)


def test_quota_with_retry_after_zero_parks_nothing() -> None:
    """Retry-After: 0 on a quota failure parks nothing: the next request probes."""
    health, _ = make()
    health.record_failure(admitted(health), "quota_exhausted", retry_after=0.0, reset_after=60.0)
    assert admitted(health).probe is False


def test_park_end_admits_one_probe() -> None:
    """When a park ends exactly one request probes the key; its success makes it available."""
    health, clock = make()
    health.record_failure(admitted(health), "quota_exhausted", retry_after=60)
    clock.advance(60)
    probe = admitted(health)
    assert probe.probe
    assert skipped(health) == Skip("parked", clock.now() + LEASE, "here")
    health.record_success(probe)
    assert admitted(health).probe is False


def test_skip_order_parked_then_cooling_then_breaker() -> None:
    """A key both parked and cooling reads parked; cooling and open reads cooling_down."""
    health, clock = make()
    health.record_failure(admitted(health), "quota_exhausted", retry_after=100)
    assert skipped(health).outcome == "parked"
    other, _ = make()
    fail(other, times=2)
    other.record_failure(admitted(other), "rate_limited", retry_after=100)
    assert skipped(other) == Skip("cooling_down", clock.now() + 100)


# ---- snapshot, events, merge ---------------------------------------------------------------


def test_snapshot_reads_like_strata() -> None:
    """str(snapshot) lists keys sorted by text with state and failures in a row."""
    health, clock = make(Breaker(failures=2, open_for=60), key_by="provider")
    health.record_success(admitted(health, "local"))
    fail(health, "northwind", times=2)
    entry = health.snapshot().get("northwind")
    assert entry is not None
    assert (entry.state, entry.until, entry.seconds_left) == ("open", 1060.0, 60.0)
    clock.advance(60)
    assert str(health.snapshot()) == "local=Available(0), northwind=HalfOpen(2)"


def test_snapshot_shows_cooling_and_parked_with_time_left() -> None:
    """The snapshot gives cooling_down and parked keys their deadline and seconds left."""
    health, _ = make()
    health.record_failure(admitted(health, "a"), "rate_limited", retry_after=8)
    health.record_failure(admitted(health, "b"), "quota_exhausted")
    snap = health.snapshot()
    assert [(e.text, e.state, e.seconds_left) for e in snap] == [
        ("a", "cooling_down", 8.0),
        ("b", "parked", 900.0),
    ]
    assert str(snap) == "a=CoolingDown(1), b=Parked(1)"


def test_observe_reports_transitions() -> None:
    """Listeners see cooldown, open, half-open and closed transitions in order."""
    health, clock = make()
    events: list[HealthEvent] = []
    health.observe(events.append)
    health.record_failure(admitted(health), "rate_limited", retry_after=1)
    clock.advance(1)
    fail(health, times=2)
    clock.advance(60)
    health.record_success(admitted(health))
    assert [e.to for e in events] == ["cooling_down", "open", "half_open", "closed"]
    assert events[1] == HealthEvent(KEY, "open", 1001.0, 1061.0, 3)


def test_observe_reports_parking() -> None:
    """A quota failure emits a parked event with its deadline."""
    health, clock = make()
    events: list[HealthEvent] = []
    health.observe(events.append)
    health.record_failure(admitted(health), "quota_exhausted", reset_after=60)
    assert events == [HealthEvent(KEY, "parked", clock.now(), clock.now() + 60, 1)]


def test_raising_listener_is_logged_and_ignored(caplog: pytest.LogCaptureFixture) -> None:
    """A listener that raises is logged; later listeners still run and health still changes."""
    health, _ = make()
    seen: list[str] = []

    def broken(event: HealthEvent) -> None:
        raise RuntimeError("boom")

    health.observe(broken)
    health.observe(lambda event: seen.append(event.to))
    with caplog.at_level(logging.ERROR, logger="turnout.routing.health"):
        health.record_failure(admitted(health), "rate_limited", retry_after=5)
    assert seen == ["cooling_down"]
    assert "health listener" in caplog.text
    assert skipped(health).outcome == "cooling_down"


def test_merge_never_shortens_a_deadline() -> None:
    """A cooldown learned from another replica lengthens, never shortens, the one held."""
    health, clock = make()
    health.record_failure(admitted(health), "rate_limited", retry_after=8)
    health.merge(KEY, "cooling_down", clock.now() + 3)
    assert skipped(health).until == clock.now() + 8
    health.merge(KEY, "cooling_down", clock.now() + 20)
    assert skipped(health).until == clock.now() + 20


def test_merge_applies_parks_and_trips() -> None:
    """Merged parks and trips skip the key until their deadlines; past deadlines are ignored."""
    health, clock = make()
    health.merge("p", "parked", clock.now() + 50)
    health.merge("o", "breaker_open", clock.now() + 40)
    health.merge("old", "parked", clock.now() - 1)
    assert skipped(health, "p") == Skip("parked", clock.now() + 50)
    assert skipped(health, "o") == Skip("breaker_open", clock.now() + 40)
    assert admitted(health, "old").probe is False
    with pytest.raises(ValueError, match="cannot merge"):
        health.merge("x", "melted", clock.now() + 1)


def test_merge_ignores_parks_with_breaker_disabled() -> None:
    """With the breaker off, merged parks are ignored (parking is off too)."""
    health, clock = make(Breaker(enabled=False))
    health.merge(KEY, "parked", clock.now() + 50)
    assert admitted(health).probe is False


def test_snapshot_with_breaker_disabled_shows_only_cooldowns() -> None:
    """With the breaker off, a failing key reads available, or cooling_down while cooled."""
    health, clock = make(Breaker(enabled=False))
    fail(health, times=5)
    entry = health.snapshot().get(KEY)
    assert entry is not None
    assert (entry.state, entry.failures, entry.until) == ("available", 5, None)
    health.record_failure(admitted(health), "rate_limited", retry_after=4)
    assert str(health.snapshot()) == "northwind/large=CoolingDown(6)"
    clock.advance(4)
    assert str(health.snapshot()) == "northwind/large=Available(6)"


def test_snapshot_shows_a_merged_trip_as_open() -> None:
    """A trip learned from another replica reads open until its deadline."""
    health, clock = make()
    health.merge(KEY, "open", clock.now() + 30)
    entry = health.snapshot().get(KEY)
    assert entry is not None
    assert (entry.state, entry.seconds_left) == ("open", 30.0)
    assert health.snapshot().get("unknown") is None


def test_release_of_a_plain_admission_changes_nothing() -> None:
    """Releasing a non-probe admission leaves counters and probes untouched."""
    health, clock = make()
    fail(health, times=3)
    clock.advance(60)
    probe = admitted(health)
    health.release(Admission(KEY))
    assert skipped(health).until == probe.lease_until
    entry = health.snapshot().get(KEY)
    assert entry is not None
    assert entry.failures == 3
