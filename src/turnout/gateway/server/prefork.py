"""`--workers N`: N worker processes forked from one parent that holds the listening socket.

The parent binds once and forks; every worker accepts on the inherited socket. One socket,
rather than a socket per worker with SO_REUSEPORT, because port 0 then names one port (the
banner's), connections waiting in the accept queue survive a worker's death instead of being
reset with its socket, and it behaves the same on macOS, where SO_REUSEPORT does not spread
connections.

Rule 1: the parent keeps `count` workers alive: a worker that exits while the parent is not
stopping is replaced, after `_RESTART_DELAY` seconds when it lived less than that (a worker
that cannot start does not spin).
Rule 2: SIGTERM or SIGINT to the parent is passed on as SIGTERM (each worker then shuts down
within its grace; a second signal hurries them); SIGHUP is passed on as is (each worker
reloads). Workers ignore SIGINT themselves, so Ctrl-C reaches them once, through the parent.
Rule 3: a worker still alive `_KILL_AFTER` seconds past its grace is killed; the parent exits 0
once every worker has exited.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import time
import traceback
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Supervisor"]

logger = logging.getLogger("turnout.gateway")

_RESTART_DELAY: Final = 1.0
_KILL_AFTER: Final = 5.0
_TICK: Final = 1.0  # seconds between the parent's checks when no signal wakes it
_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGCHLD)


class Supervisor:
    """Forks `count` workers, each running `work(parent_pid)` (its exit status), and keeps them
    (see the module rules); `grace` is the workers' shutdown grace in seconds."""

    def __init__(self, count: int, work: Callable[[int], int], *, grace: float) -> None:
        self._count = count
        self._work = work
        self._grace = grace
        self._workers: dict[int, float] = {}  # pid -> start time
        self._restarts: list[float] = []  # when each replacement is due
        self._pending: list[int] = []  # signals received, oldest first
        self._stop_at: float | None = None

    def run(self) -> int:
        """Serve until stopped; returns 0."""
        wake_read, wake_write = os.pipe()
        os.set_blocking(wake_read, False)
        os.set_blocking(wake_write, False)
        previous = {signum: signal.signal(signum, self._on_signal) for signum in _SIGNALS}
        old_wakeup = signal.set_wakeup_fd(wake_write)
        try:
            for _ in range(self._count):
                self._spawn((wake_read, wake_write))
            while self._workers or (self._stop_at is None and self._restarts):
                self._step((wake_read, wake_write))
                select.select([wake_read], [], [], _TICK)
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_read, 512)
        finally:
            signal.set_wakeup_fd(old_wakeup)
            for signum, handler in previous.items():
                signal.signal(signum, handler)
            os.close(wake_read)
            os.close(wake_write)
        return 0

    def _on_signal(self, signum: int, frame: object) -> None:
        self._pending.append(signum)

    def _step(self, pipe: tuple[int, int]) -> None:
        pending, self._pending = self._pending, []
        for signum in pending:
            if signum in (signal.SIGTERM, signal.SIGINT):
                self._stop()
            elif signum == signal.SIGHUP:
                self._signal_all(signal.SIGHUP)
        self._reap()
        now = time.monotonic()
        if self._stop_at is not None:
            if now >= self._stop_at:
                self._signal_all(signal.SIGKILL)  # Rule 3
            return
        due = [when for when in self._restarts if when <= now]
        self._restarts = [when for when in self._restarts if when > now]
        for _ in due:
            self._spawn(pipe)

    def _stop(self) -> None:
        """Rule 2: pass the stop on (again, to hurry them, if already stopping)."""
        if self._stop_at is None:
            self._stop_at = time.monotonic() + self._grace + _KILL_AFTER
            self._restarts.clear()
        self._signal_all(signal.SIGTERM)

    def _signal_all(self, signum: int) -> None:
        for pid in list(self._workers):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def _reap(self) -> None:
        """Rule 1: collect exited workers and plan their replacements."""
        while self._workers:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self._workers.clear()
                return
            if pid == 0:
                return
            started = self._workers.pop(pid, None)
            if started is None or self._stop_at is not None:
                continue
            lived = time.monotonic() - started
            logger.warning(
                "worker %d exited (status %d) after %.1f s; starting another",
                pid,
                os.waitstatus_to_exitcode(status),
                lived,
            )
            delay = _RESTART_DELAY if lived < _RESTART_DELAY else 0.0
            self._restarts.append(time.monotonic() + delay)

    def _spawn(self, pipe: tuple[int, int]) -> None:
        parent = os.getpid()
        pid = os.fork()
        if pid:
            self._workers[pid] = time.monotonic()
            return
        status = 1
        try:
            signal.set_wakeup_fd(-1)
            for fd in pipe:
                os.close(fd)
            for signum in _SIGNALS:
                signal.signal(signum, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Rule 2: Ctrl-C comes via the parent
            status = self._work(parent)
        except BaseException:  # noqa: BLE001 - a worker never returns into the parent's code
            traceback.print_exc()
        finally:
            # `os._exit` skips the exit handlers: write out the log lines still buffered.
            logging.shutdown()
            os._exit(status)
