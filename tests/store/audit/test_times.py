"""The times of the audit as text: an entry's `started_at` and the stored time of a row are
exactly what `datetime` makes of the same epoch seconds, however they round."""

from __future__ import annotations

import datetime as dt
import random

from turnout.record import iso_utc
from turnout.store.audit_sql import stored_time

_EDGES = [
    0.0, -0.0, 1.0, -1.0, 5e-7, -5e-7, 1.5e-6, 2.5e-6, -1.5e-6, 1e-7, -1e-7,
    1_790_000_000.9999995, 1_790_000_000.9999994, 1_790_000_000.0005, -1.9999995,
    253_402_300_799.0, -62_135_596_800.0,
]  # fmt: skip


def _epochs() -> list[float]:
    draw = random.Random(7)
    epochs = list(_EDGES)
    for _ in range(20_000):
        epochs.append(draw.uniform(-3e9, 5e9))
        epochs.append(1.79e9 + draw.randrange(10**7) / 1e6 + draw.choice((0.0, 5e-7, -5e-7)))
        epochs.append(draw.randrange(-(10**9), 10**10) / 2 ** draw.randrange(30))
    return epochs


def test_times_are_the_text_datetime_makes() -> None:
    """Half microseconds round to even, a carry reaches the second, negative times too."""
    for epoch in _epochs():
        moment = dt.datetime.fromtimestamp(epoch, dt.UTC)
        assert iso_utc(epoch) == moment.isoformat(timespec="milliseconds")[:-6] + "Z", epoch
        assert stored_time(epoch) == moment.isoformat(" ", "microseconds")[:26], epoch
