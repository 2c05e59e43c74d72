"""Waits between same-target retries.

Exponential backoff from 0.25 s, doubling, capped at 8 s, with full jitter (a uniform draw
between 0 and the cap of that retry). A `Retry-After` longer than the drawn wait replaces it. No
in-request wait exceeds 8 s or the time left before the request's deadline: such a retry is not
made, and the route moves on at once (the key is cooling down meanwhile).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import random

__all__ = ["BACKOFF_BASE", "BACKOFF_CAP", "backoff_ceiling", "retry_wait"]

BACKOFF_BASE: Final = 0.25
"""Seconds: the ceiling of the first retry's wait."""
BACKOFF_CAP: Final = 8.0
"""Seconds: no backoff ceiling, and no in-request wait, goes past this."""


def backoff_ceiling(retry_number: int) -> float:
    """The jitter ceiling of retry `retry_number` (1 for the first retry): 0.25 s doubling,
    capped at 8 s."""
    return min(BACKOFF_CAP, BACKOFF_BASE * 2.0 ** max(retry_number - 1, 0))


def retry_wait(
    retry_number: int,
    *,
    retry_after: float | None,
    rng: random.Random,
    time_left: float | None = None,
) -> float | None:
    """Seconds to wait before same-target retry `retry_number` (1-based), or None when the retry
    must not be made because the wait would pass 8 s or `time_left` (seconds to the request's
    deadline, None = no deadline). `retry_after` (seconds) replaces a shorter drawn wait."""
    wait = rng.uniform(0.0, backoff_ceiling(retry_number))
    if retry_after is not None and retry_after > wait:
        wait = retry_after
    if wait > BACKOFF_CAP or (time_left is not None and wait >= time_left):
        return None
    return wait
