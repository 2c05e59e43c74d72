"""The ASGI lifespan protocol, from the server's side: startup before the socket is served,
shutdown after the last connection closed.

Rule 1: `startup()` returns once the app said `lifespan.startup.complete`, or returned without
a word (an app without a lifespan); it raises `LifespanFailed` with the app's message when the
app said `failed` or raised.
Rule 2: `shutdown()` waits at most `limit` seconds for `lifespan.shutdown.complete`.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import MutableMapping

    from turnout.gateway.server.http11 import ASGIApp

__all__ = ["Lifespan", "LifespanFailed"]


class LifespanFailed(RuntimeError):
    """The app could not start (its message says why)."""


class Lifespan:
    """One app's lifespan (see the module rules)."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self._inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        self._started: asyncio.Future[None] = loop.create_future()
        self._stopped: asyncio.Future[None] = loop.create_future()
        self._task: asyncio.Task[None] | None = None

    async def startup(self) -> None:
        """Rule 1."""
        self._task = asyncio.get_running_loop().create_task(self._main())
        self._inbox.put_nowait({"type": "lifespan.startup"})
        await self._started

    async def shutdown(self, limit: float = 10.0) -> None:
        """Rule 2."""
        if self._task is None or self._task.done():
            return
        self._inbox.put_nowait({"type": "lifespan.shutdown"})
        with contextlib.suppress(TimeoutError, LifespanFailed):
            await asyncio.wait_for(asyncio.shield(self._stopped), limit)
        if not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _main(self) -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}}
        try:
            await self._app(scope, self._receive, self._send)
        except Exception as exc:  # noqa: BLE001 - reported to whoever waits
            self._settle(LifespanFailed(f"the app's lifespan failed: {exc!r}"))
        else:
            if not self._started.done():
                self._started.set_result(None)  # an app without a lifespan
            if not self._stopped.done():
                self._stopped.set_result(None)

    def _settle(self, error: LifespanFailed) -> None:
        for future in (self._started, self._stopped):
            if not future.done():
                future.set_exception(error)
                future.exception()  # retrieved: nobody may be waiting on it

    async def _receive(self) -> dict[str, Any]:
        return await self._inbox.get()

    async def _send(self, message: MutableMapping[str, Any]) -> None:
        kind = message["type"]
        if kind == "lifespan.startup.complete":
            self._started.set_result(None)
        elif kind == "lifespan.startup.failed":
            self._settle(LifespanFailed(message.get("message", "")))
        elif kind == "lifespan.shutdown.complete":
            self._stopped.set_result(None)
        elif kind == "lifespan.shutdown.failed":
            self._settle(LifespanFailed(message.get("message", "")))
