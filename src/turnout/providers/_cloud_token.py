"""A cloud access token kept fresh off the hot path: what a `vertex` provider authenticates with.

Rule 1: a call never waits for a token once one is held: `current()` hands out the cached
token while it is valid, and only a call that finds none (the first, or one after the held
token expired) waits for `ready()`, which joins the one refresh in flight (never two at once).
Rule 2: a background task refreshes the token `margin` seconds before it expires (at most half
its lifetime before), so a busy provider always finds a fresh one; the blocking fetch (the
credentials library does blocking HTTP) runs in a worker thread, never on the event loop.
Rule 3: a failed background refresh keeps the old token until it expires and is tried again
`retry` seconds later; the failure is logged with its type and message only (never the
token). A failed refresh that a call waited on raises to that call (`fail`, which maps it to
a `ProviderError`).
Rule 4: times come from the injected clock (`wall()` seconds, the expiry being wall time), so a
fake clock drives the schedule in tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from turnout.errors import ProviderError
    from turnout.routing.clock import Clock

__all__ = ["CloudToken"]

logger = logging.getLogger("turnout.providers")

_UNKNOWN_LIFETIME = 3000.0
"""Seconds a token whose expiry is unknown is taken to live (Google's last an hour)."""


class CloudToken:
    """One refreshing access token.

    `fetch` gets a new token, `(token, expiry in wall seconds or None)` (blocking; run in a
    thread by `run_blocking`, default `asyncio.to_thread`); `clock` gives wall time and
    sleeps; `margin` (seconds, default 300) is how long before expiry the background refresh
    runs; `retry` (seconds, default 10) the wait after a failed one; `fail(exc)` turns a
    failure a call waited on into the error raised to it; `name` names the provider in logs.
    """

    def __init__(
        self,
        fetch: Callable[[], tuple[str, float | None]],
        *,
        clock: Clock,
        fail: Callable[[Exception], ProviderError],
        name: str,
        margin: float = 300.0,
        retry: float = 10.0,
        run_blocking: Callable[..., Any] | None = None,
    ) -> None:
        self._fetch = fetch
        self._clock = clock
        self._fail = fail
        self._name = name
        self._margin = margin
        self._retry = retry
        self._run_blocking = run_blocking or asyncio.to_thread
        self._token: str | None = None
        self._expiry = 0.0
        self._inflight: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None
        self.refreshes = 0
        """How many fetches succeeded (for tests and stats)."""
        self.failures = 0
        """How many fetches failed."""

    def current(self) -> str | None:
        """Rule 1: the held token while it is valid, else None (never waits, never fetches)."""
        if self._token is not None and self._clock.wall() < self._expiry:
            return self._token
        return None

    @property
    def expiry(self) -> float:
        """The held token's expiry (wall seconds; 0 without one)."""
        return self._expiry

    async def ready(self) -> str:
        """The token, waiting for a refresh only when none is valid (Rule 1); starts the
        background refresher (Rule 2). A failed refresh raises `fail(exc)` (Rule 3)."""
        token = self.current()
        if token is None:
            try:
                await self._refresh()
            except Exception as exc:  # noqa: BLE001 (whatever the fetch raised, mapped by `fail`)
                raise self._fail(exc) from None
            token = self.current()
            if token is None:  # a token that expired on arrival
                raise self._fail(RuntimeError("the new access token has already expired"))
        self._start()
        return token

    def _start(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._refresher())

    async def _refresh(self) -> None:
        """One fetch, shared by everyone who asks while it runs."""
        inflight = self._inflight
        if inflight is None:
            inflight = self._inflight = asyncio.get_running_loop().create_future()
            try:
                token, expiry = await self._run_blocking(self._fetch)
            except BaseException as exc:
                self.failures += 1
                inflight.set_exception(exc)
                inflight.exception()  # retrieved: a refresh nobody else waited on is not "lost"
                raise
            else:
                self.refreshes += 1
                self._token = token
                now = self._clock.wall()
                self._expiry = expiry if expiry is not None else now + _UNKNOWN_LIFETIME
                inflight.set_result(None)
            finally:
                self._inflight = None
            return
        await asyncio.shield(inflight)

    def _next_refresh(self) -> float:
        """Seconds from now until the background refresh (Rule 2)."""
        now = self._clock.wall()
        lifetime = self._expiry - now
        return max(0.0, lifetime - min(self._margin, lifetime / 2))

    async def _refresher(self) -> None:
        """Rule 2 and Rule 3: refresh before expiry, forever, until closed."""
        delay = self._next_refresh()
        while True:
            await self._clock.sleep(delay)
            try:
                await self._refresh()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 (Rule 3: any failure keeps the old token)
                # Rule 3: the message of a refresh failure names no token (it has none yet).
                logger.warning(
                    "provider %r: refreshing its access token failed (%s: %s); the current "
                    "token is kept until it expires",
                    self._name,
                    type(exc).__name__,
                    str(exc)[:300],
                )
                delay = self._retry
                continue
            delay = self._next_refresh()

    async def aclose(self) -> None:
        """Stop the background refresher."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
