"""The log lines of sign-ins without any admin key, once per burst per peer address.

A wrong admin key is a failed sign-in with a line of its own each time (`turnout.access.
sign_ins`, bounded by its throttle). A request that sends no key at all is not throttled (it
guesses nothing), so a scanner could send any number of them: they are folded into bursts.

Rule 1: the first keyless sign-in of a peer on the admin API (401) or the dashboard's sign-in
form has one WARNING line `sign_in_failed` on the `turnout.admin` logger with `where`
(`admin_api`, `dashboard`), `peer` and `credential` (`none`); further ones from that peer are
counted while the burst lasts.
Rule 2: a burst ends when the peer has sent none for `quiet` seconds (60); then, when it held
more than one, one WARNING line `sign_in_failures` says how many (`requests`) over how many
`seconds`. A timer on the running event loop looks for ended bursts; `sweep` is that look.
Rule 3: bounded memory: at most `LIMIT` peers with a burst under way (`Bursts`); the state is
this process's own.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Final

from turnout.gateway.observe.bursts import Bursts

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["QUIET", "KeylessSignIns"]

logger = logging.getLogger("turnout.admin")

QUIET: Final = 60.0
"""Seconds without a keyless sign-in from a peer that end its burst."""


class KeylessSignIns:
    """Keyless sign-ins per `where` and peer (see the module rules), on `clock` (monotonic
    seconds)."""

    __slots__ = ("_armed", "bursts")

    def __init__(
        self, *, quiet: float = QUIET, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.bursts = Bursts(quiet=quiet, clock=clock)
        self._armed = False

    def refused(self, where: str, peer: str) -> None:
        """Rule 1: one keyless sign-in of `peer` on `where`."""
        if self.bursts.hit(f"{where} {peer}"):
            fields = {"where": where, "peer": peer, "credential": "none"}
            logger.warning("sign_in_failed", extra={"fields": fields})
            self._arm()
        self._log_ended()

    def sweep(self) -> None:
        """Rule 2: log the bursts that ended; look again later while some go on."""
        self._armed = False
        self._log_ended()
        if self.bursts:
            self._arm()

    def _log_ended(self) -> None:
        for burst in self.bursts.ended():
            if burst.count > 1:
                where, _, peer = burst.key.partition(" ")
                fields = {
                    "where": where,
                    "peer": peer,
                    "credential": "none",
                    "requests": burst.count,
                    "seconds": burst.seconds,
                }
                logger.warning("sign_in_failures", extra={"fields": fields})

    def _arm(self) -> None:
        if self._armed:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop (a test calling in): `sweep` is called by hand
            return
        loop.call_later(self.bursts.quiet, self.sweep)
        self._armed = True
