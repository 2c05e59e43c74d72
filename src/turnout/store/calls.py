"""Calls into the store from the event loop: each on a thread of its own, bounded as a whole,
and whether the store answered the last one.

Rule 1: a call that does not return within `timeout` seconds fails as `StoreUnavailable` at
once; its thread (a daemon thread of its own, never one of the event loop's default pool, which
resolves upstream host names among other things) goes on waiting on the database without
holding its caller. While 16 such calls are still waiting, new calls fail at once.
Rule 2: a call that fails because the database cannot be reached (a refused, lost or timed-out
connection) fails as `StoreUnavailable` too; any other error is raised as it is.
Rule 3: `answering` is the outcome of the last call that reached a verdict: False after an
unreachable one, True after any other; each change is told to the watchers once.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from typing import TYPE_CHECKING, Any, Final, TypeVar

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from turnout.errors import StoreUnavailable

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["CALL_SECONDS", "StoreCalls", "is_unreachable"]

CALL_SECONDS: Final = 5.0
"""The default bound on one call from the event loop, in seconds."""
_MOST_WAITING: Final = 16
"""Calls past their bound still waiting on the database beyond which new calls fail at once."""

_T = TypeVar("_T")


def is_unreachable(exc: BaseException) -> bool:
    """Whether `exc` says the database could not be reached or the connection was lost."""
    if isinstance(exc, StoreUnavailable | OperationalError | InterfaceError | PoolTimeout):
        return True
    return isinstance(exc, DBAPIError) and exc.connection_invalidated


class StoreCalls:
    """Bounded store calls (see the module rules); `timeout` in seconds (`CALL_SECONDS`)."""

    def __init__(self, timeout: float = CALL_SECONDS) -> None:
        self.timeout = timeout
        self.answering = True
        self.failure: str | None = None
        """Why the last call failed to reach the store (None while it answers)."""
        self._waiting = 0
        self._watchers: list[Callable[[bool], object]] = []

    def watch(self, watcher: Callable[[bool], object]) -> None:
        """Call `watcher(answering)` now and at each change (Rule 3)."""
        self._watchers.append(watcher)
        watcher(self.answering)

    async def run(self, function: Callable[..., _T], *args: Any, within: float | None = None) -> _T:
        """`function(*args)` on a thread of its own, bounded by `within` seconds (default:
        `timeout`) (Rules 1 and 2)."""
        bound = self.timeout if within is None else within
        if self._waiting >= _MOST_WAITING:
            self.mark(f"{self._waiting} calls still waiting")
            raise StoreUnavailable(f"{self._waiting} calls are still waiting on the store")
        future = _on_thread(functools.partial(function, *args))
        try:
            result = await asyncio.wait_for(asyncio.shield(future), bound)
        except TimeoutError:
            self._waiting += 1
            future.add_done_callback(self._ended)
            self.mark(f"no answer within {bound:g} s")
            raise StoreUnavailable(f"the store did not answer within {bound:g} s") from None
        except Exception as exc:
            if not is_unreachable(exc):
                self.mark(None)
                raise
            self.mark(type(exc).__name__)
            raise StoreUnavailable(f"the store cannot be reached ({type(exc).__name__})") from exc
        self.mark(None)
        return result

    def mark(self, failure: str | None) -> None:
        """Record the verdict of a store call (None: it answered), Rule 3."""
        self.failure = failure
        answering = failure is None
        if answering != self.answering:
            self.answering = answering
            for watcher in self._watchers:
                watcher(answering)

    def _ended(self, future: asyncio.Future[Any]) -> None:
        self._waiting -= 1
        if not future.cancelled():
            future.exception()  # retrieved: a late failure is not "never retrieved"


def _on_thread(work: Callable[[], _T]) -> asyncio.Future[_T]:
    """`work()` on a daemon thread (one that never answers does not hold the process at its
    exit), its outcome in the returned future."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[_T] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def target() -> None:
        try:
            outcome: tuple[Any, BaseException | None] = (work(), None)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            outcome = (None, exc)
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=target, name="turnout-store", daemon=True).start()
    return future
