"""Sign-ins without any admin key: one WARNING per burst per peer, and the count when the
peer has been quiet for the window (on a fake clock); never more than one line per burst."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from turnout.gateway.observe.sign_in_log import KeylessSignIns
from turnout.routing.clock import FakeClock

if TYPE_CHECKING:
    import pytest


def _lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, dict[str, Any]]]:
    return [
        (r.getMessage(), dict(r.fields))  # type: ignore[attr-defined]
        for r in caplog.records
        if r.name == "turnout.admin"
    ]


def test_a_flood_from_one_peer_is_two_lines(caplog: pytest.LogCaptureFixture) -> None:
    """A hundred keyless requests from one peer over 99 s, one from another: a line for each
    peer's first; 60 quiet seconds later, the first peer's count (the other had one alone)."""
    caplog.set_level(logging.WARNING, logger="turnout.admin")
    clock = FakeClock(100.0)
    keyless = KeylessSignIns(clock=clock.now)
    keyless.refused("dashboard", "198.51.100.7")
    for _ in range(100):
        keyless.refused("admin_api", "203.0.113.9")
        clock.advance(1)
    first = {"where": "admin_api", "peer": "203.0.113.9", "credential": "none"}
    other = {"where": "dashboard", "peer": "198.51.100.7", "credential": "none"}
    assert _lines(caplog) == [("sign_in_failed", other), ("sign_in_failed", first)]
    clock.advance(58)
    keyless.sweep()
    assert len(_lines(caplog)) == 2  # 59 s since the last: still under way
    clock.advance(1)
    keyless.sweep()
    assert _lines(caplog)[2:] == [("sign_in_failures", {**first, "requests": 100, "seconds": 99.0})]
    assert len(keyless.bursts) == 0


async def test_a_burst_arms_a_timer_on_the_loop() -> None:
    """Under an event loop, the first keyless sign-in arms one timer for the window."""
    keyless = KeylessSignIns(quiet=0.01)
    keyless.refused("admin_api", "203.0.113.9")
    keyless.refused("admin_api", "203.0.113.9")
    assert keyless._armed
