"""Serving the gateway: its own HTTP/1.1 server (`listener`, on uvloop and httptools) in one
process, or in several pre-forked worker processes (`prefork`).

With one worker the runtime built (and checked) at start serves directly. With several, each
worker builds its own runtime from the same configuration file at its start (`worker_app`),
so no live object (a connection pool, a Redis client) is shared across a fork. Shutdown
closes the providers' connection pools (lifespan). SIGHUP reloads the configuration file
(`worker.reload_runtime`). With tracing on (`server.tracing`, `OTEL_TRACES_EXPORTER`), each
serving process installs its tracer provider before it serves and flushes it when it stops
(`turnout.gateway.observe.tracing`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TextIO

from turnout.config.load import load_config
from turnout.errors import ConfigError
from turnout.gateway.observe.logs import configure_logging_from_env
from turnout.gateway.observe.tracing import TracingSettings, install_tracing
from turnout.gateway.runtime.live import Runtime
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import bind_socket
from turnout.gateway.server.prefork import Supervisor
from turnout.gateway.server.worker import run_worker

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = [
    "ServeOptions",
    "banner",
    "load_runtime",
    "serve",
    "worker_app",
    "worker_warning",
]

logger = logging.getLogger("turnout.gateway")

_YOUNG_THRESHOLD: Final = 10_000
"""Container allocations (net of frees) between young-generation collections while serving."""


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """What `turnout serve` was asked for: the config file (None = embedded defaults), the
    address (None = the config's `server.host` / `server.port`) and the worker count."""

    config_path: str | None = None
    host: str | None = None
    port: int | None = None
    workers: int = 1


def load_runtime(config_path: str | None, env: Mapping[str, str]) -> Runtime:
    """The runtime of a configuration file (`${VAR}` read from `env`), or of the embedded
    defaults when `config_path` is None or empty. Raises `ConfigError` listing every problem."""
    if config_path:
        return Runtime.from_config(load_config(config_path, env=env))
    return Runtime.embedded(env)


def worker_app(config_path: str | None) -> GatewayApp:
    """The app of one worker process: it builds its runtime from `config_path` (None: the
    embedded defaults) at lifespan startup."""
    configure_logging_from_env()
    return GatewayApp(load=functools.partial(load_runtime, config_path, os.environ))


def banner(runtime: Runtime, host: str, port: int) -> str:
    """`turnout serving on http://HOST:PORT (N routes, auth=…)`."""
    shown = f"[{host}]" if ":" in host else host
    auth = runtime.config.server.auth
    count = len(runtime.routes)
    routes = f"{count} route" if count == 1 else f"{count} routes"
    return f"turnout serving on http://{shown}:{port} ({routes}, auth={auth})"


def worker_warning(runtime: Runtime, workers: int) -> str | None:
    """Several workers without Redis keep health, pins and the cache per worker (with Redis each
    worker shares them as a replica does; latency windows stay per worker either way)."""
    if workers > 1 and not runtime.is_shared:
        return (
            f"warning: {workers} workers without Redis (state: redis://…): health, session pins"
            " and the response cache are kept per worker"
        )
    return None


def serve(options: ServeOptions, runtime: Runtime, *, out: TextIO | None = None) -> int:
    """Bind, print the load warnings and the banner to `out` (stdout), and serve until
    SIGTERM or SIGINT. Returns the exit status (0 after a clean stop, 1 when the address
    cannot be bound)."""
    out = out if out is not None else sys.stdout
    server_config = runtime.config.server
    host = options.host if options.host is not None else server_config.host
    port = options.port if options.port is not None else server_config.port
    several = options.workers > 1
    try:
        tracing = TracingSettings.of(server_config.tracing, os.environ)
        if tracing is not None:
            tracing.check_sdk()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        for key, message in exc.errors:
            print(f"  {key}: {message}", file=sys.stderr)
        return 1
    try:
        # Listening before the banner makes it true when printed: a caller that connects at
        # once waits in the backlog instead of being refused.
        sock = bind_socket(host, port)
    except OSError as exc:
        print(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    for warning in runtime.warnings:
        print(f"warning: {warning}", file=out)
    extra = worker_warning(runtime, options.workers)
    if extra is not None:
        print(extra, file=out)
    if server_config.auth == "open" and host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"warning: auth is open and the gateway listens on {host}: anyone can call it", file=out
        )
    limits = ServerLimits.from_config(server_config)
    path = options.config_path or None
    reload = (path or "the embedded defaults", functools.partial(load_runtime, path, os.environ))
    if tracing is not None:
        print(f"tracing: {tracing.exporter}, service {tracing.service_name}", file=out)
    _log_to_stderr()
    # Before the banner: callers may connect as soon as they read it.
    _settle_heap()
    print(banner(runtime, host, sock.getsockname()[1]), file=out, flush=True)
    # A Ctrl-C that lands after the shutdown, while the process ends, is not an error.
    with sock, contextlib.suppress(KeyboardInterrupt):
        if not several:
            return _traced(
                tracing, lambda: run_worker(sock, GatewayApp(runtime), limits, reload=reload)
            )
        with contextlib.suppress(Exception):
            asyncio.run(runtime.aclose())
        supervisor = Supervisor(
            options.workers,
            lambda parent: _traced(
                tracing,
                lambda: run_worker(sock, worker_app(path), limits, reload=reload, parent=parent),
            ),
            grace=limits.shutdown_grace,
        )
        return supervisor.run()
    return 0


def _traced(tracing: TracingSettings | None, run: Callable[[], int]) -> int:
    """Run one serving process, its tracer provider installed first (when tracing is on) and
    shut down, flushing its spans, after."""
    if tracing is None:
        return run()
    shutdown = install_tracing(tracing)
    try:
        return run()
    finally:
        shutdown()


def _log_to_stderr() -> None:
    """Send turnout's log lines (INFO and up) to stderr, unless logging is set up already."""
    package = logging.getLogger("turnout")
    if logging.getLogger().handlers or package.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    package.addHandler(handler)
    package.setLevel(logging.INFO)


def _settle_heap() -> None:
    """Tune the cyclic garbage collector for serving (and enable it: `turnout serve` starts
    with it off). Measured: about a tenth of the gateway's CPU per request went to it at 64
    concurrent requests.

    What start-up built (modules, the configuration, the routes) lives as long as the process,
    so it is frozen out of the collector's sight instead of being walked again by every full
    collection; the little start-up garbage frozen with it (at most a few MiB) is not worth the
    full collection that would find it, which costs as much as start-up's collections saved. The
    young-generation threshold is raised from 700 to `_YOUNG_THRESHOLD` container objects: the
    objects of requests in flight no longer trigger collections that find nothing (reference
    counting frees them when each request ends), while cyclic garbage still triggers one as it
    accumulates. With several workers the parent does the same before it forks them: they
    inherit the tuning, and the frozen objects' pages stay shared with the parent instead of
    being copied by their first collection.
    """
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(_YOUNG_THRESHOLD, middle, old)
    gc.enable()
