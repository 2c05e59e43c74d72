"""One serving process: the gateway app on a listening socket, on uvloop, until a signal.

Rule 1: SIGTERM (and SIGINT, unless the process is a pre-forked worker, whose parent takes
Ctrl-C) starts the bounded shutdown of `listener.Listener`; a second one ends its grace at
once. The process then exits 0.
Rule 2: SIGHUP reloads the configuration: the new one is loaded and checked first; on any
problem the old runtime keeps serving and one ERROR line names the problems, else the app
swaps the new runtime in (requests in flight finish on the old one) and one INFO line says so,
with one WARNING line for each changed setting that only a restart applies
(`turnout.config.restart`). Either way the outcome is the app's `status.reload` (`/readyz`,
the metrics).
Rule 3: a pre-forked worker whose parent is gone shuts down as if told to.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from typing import TYPE_CHECKING, Final

from turnout.config.restart import restart_required
from turnout.errors import ConfigError
from turnout.gateway.runtime.served import ServedProjects
from turnout.gateway.server.lifespan import LifespanFailed
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import serving

if TYPE_CHECKING:
    import socket
    from collections.abc import Awaitable, Callable

    from turnout.gateway.runtime.live import Runtime
    from turnout.gateway.server.app import GatewayApp
    from turnout.gateway.server.listener import Listener

__all__ = ["Reload", "new_event_loop", "reload_runtime", "run_worker"]

logger = logging.getLogger("turnout.gateway")

_PARENT_CHECK: Final = 1.0
"""Seconds between a pre-forked worker's checks that its parent is alive."""

Reload = tuple[str, "Callable[[], Awaitable[Runtime | ServedProjects]]"]
"""What SIGHUP reloads: a description of the source (the file's name) and the loader, which
never blocks the event loop on a store (a store's loader bounds its calls)."""


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A uvloop loop when uvloop is installed, else asyncio's default loop."""
    try:
        import uvloop  # noqa: PLC0415 - the event loop when installed
    except ImportError:  # pragma: no cover - Windows
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def run_worker(
    sock: socket.socket,
    app: GatewayApp,
    limits: ServerLimits,
    *,
    reload: Reload | None = None,
    parent: int | None = None,
) -> int:
    """Serve `app` on `sock` until SIGTERM (Rules 1-3); returns the exit status (1 when the
    app cannot start). `parent` is the pre-fork parent's pid (None: not a worker)."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        try:
            runner.run(_serve(sock, app, limits, reload=reload, parent=parent))
        except LifespanFailed as exc:
            logger.error("the gateway could not start: %s", exc)  # noqa: TRY400 - no traceback
            return 1
    return 0


async def _serve(
    sock: socket.socket,
    app: GatewayApp,
    limits: ServerLimits,
    *,
    reload: Reload | None,
    parent: int | None,
) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    async with serving(app, sock, limits) as listener:

        def on_stop() -> None:
            if stop.is_set():
                listener.hurry()
            stop.set()

        signals = [signal.SIGTERM] if parent is not None else [signal.SIGTERM, signal.SIGINT]
        for signum in signals:
            loop.add_signal_handler(signum, on_stop)
        reloads: set[asyncio.Task[bool]] = set()
        if reload is not None:
            source, load = reload

            def on_hup() -> None:
                task = loop.create_task(reload_runtime(app, listener, load, source))
                reloads.add(task)
                task.add_done_callback(reloads.discard)

            loop.add_signal_handler(signal.SIGHUP, on_hup)
        if parent is not None:
            _watch_parent(loop, parent, on_stop)
        try:
            await stop.wait()
        finally:
            for signum in (*signals, signal.SIGHUP):
                loop.remove_signal_handler(signum)
            # A second signal during the shutdown ends its grace (Rule 1).
            for signum in signals:
                loop.add_signal_handler(signum, listener.hurry)


def _watch_parent(
    loop: asyncio.AbstractEventLoop, parent: int, on_stop: Callable[[], None]
) -> None:
    """Rule 3."""

    def check() -> None:
        if os.getppid() != parent:
            on_stop()
        else:
            loop.call_later(_PARENT_CHECK, check)

    loop.call_later(_PARENT_CHECK, check)


async def reload_runtime(
    app: GatewayApp,
    listener: Listener,
    load: Callable[[], Awaitable[Runtime | ServedProjects]],
    source: str,
) -> bool:
    """Rule 2: load and check the configuration again, and serve it if it is valid (True).
    A loader may swap its result in itself (the control plane, between its refreshes)."""
    before = app.runtime
    try:
        loaded = await load()
    except Exception as exc:  # noqa: BLE001 - every failure keeps the previous configuration
        problems = _refusal(exc)
        logger.error(  # noqa: TRY400 - the problems are the message, a traceback adds nothing
            "reload of %s failed, still serving the previous configuration: %s",
            source,
            "; ".join(problems),
        )
        app.status.reloaded(ok=False, problems=problems)
        return False
    served = loaded if isinstance(loaded, ServedProjects) else ServedProjects.of(loaded)
    runtime = served.primary
    for warning in (*runtime.warnings, *served.warnings):
        logger.warning("%s: %s", source, warning)
    restart = () if before is None else restart_required(before.config, runtime.config)
    for path in restart:
        logger.warning(
            "%s: %s changed, which takes effect at the next start; still serving with the"
            " value it started with",
            source,
            path,
        )
    await served.start()  # health shared with other replicas, caught up before serving
    listener.limits = ServerLimits.from_config(runtime.config.server)
    if app.settings is None or app.settings.served is not served:
        app.swap_runtime(served)
    app.status.reloaded(ok=True, restart=restart)
    count = len(runtime.routes)
    logger.info(
        "reloaded %s: %d route%s, auth=%s",
        source,
        count,
        "" if count == 1 else "s",
        runtime.config.server.auth,
    )
    return True


def _refusal(exc: Exception) -> tuple[str, ...]:
    """Why a reload was refused, as the log line and `/readyz` name it."""
    if isinstance(exc, ConfigError):
        problems = tuple(f"{path}: {msg}" if path else msg for path, msg in exc.errors)
        return problems or (str(exc),)
    if isinstance(exc, OSError):
        return (f"cannot read the file ({exc.strerror or exc})",)
    return (f"the store cannot be read ({type(exc).__name__})",)
