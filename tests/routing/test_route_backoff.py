"""Backoff between same-target retries (docs/timeouts-and-health.md)."""

from __future__ import annotations

import random

from turnout.routing.backoff import backoff_ceiling, retry_wait


def test_the_ceiling_starts_at_250_ms_doubles_and_caps_at_8_s() -> None:
    """0.25, 0.5, 1, 2, 4, 8, 8 … seconds."""
    assert [backoff_ceiling(n) for n in range(1, 8)] == [0.25, 0.5, 1, 2, 4, 8, 8]


def test_waits_are_full_jitter_below_the_ceiling() -> None:
    """Every drawn wait lies in [0, ceiling]."""
    rng = random.Random(1)
    waits = [retry_wait(3, retry_after=None, rng=rng) for _ in range(200)]
    assert all(w is not None and 0 <= w <= 1.0 for w in waits)
    assert len({round(w or 0, 6) for w in waits}) > 100


def test_a_longer_retry_after_replaces_the_backoff() -> None:
    """Retry-After 3 s beats a drawn wait under 0.25 s."""
    assert retry_wait(1, retry_after=3, rng=random.Random(0)) == 3


def test_a_wait_over_8_s_or_past_the_deadline_is_refused() -> None:
    """Retry-After 9 s, or a wait reaching the time left, means no retry (None)."""
    assert retry_wait(1, retry_after=9, rng=random.Random(0)) is None
    assert retry_wait(1, retry_after=2, rng=random.Random(0), time_left=1.5) is None
    assert retry_wait(1, retry_after=2, rng=random.Random(0), time_left=2.5) == 2
