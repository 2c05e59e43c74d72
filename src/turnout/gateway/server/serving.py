"""Serving the gateway: its own HTTP/1.1 server (`listener`, on uvloop and httptools) in one
process, or in several pre-forked worker processes (`prefork`).

Serving starts from the store (`open_control`): it is opened and migrated, the config file's
objects are brought into it, and one runtime per project is built from a snapshot of it; the
control plane then keeps the runtimes current as the store changes. With one worker the runtimes
built (and checked) at start serve directly. With several, the parent migrates, syncs and
checks once, and each worker opens the store and builds its own runtimes at its start, so no
live object (a connection pool, a Redis client, a database connection) is shared across a fork.
Shutdown closes the providers' connection pools (lifespan). SIGHUP reloads the configuration
file (`worker.reload_runtime`). With tracing on (`server.tracing`,
`OTEL_TRACES_EXPORTER`), each serving process installs its tracer provider before it serves and
flushes it when it stops (`turnout.gateway.observe.tracing`). Each serving process over a store
audits its requests into it through an audit writer of its own (`turnout.gateway.server.audit`).
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
from pathlib import Path
from typing import TYPE_CHECKING, Final, TextIO

from turnout.config._control_rules import store_url
from turnout.config.load import load_config
from turnout.errors import ConfigError
from turnout.gateway.observe.logs import configure_logging_from_env
from turnout.gateway.observe.tracing import TracingSettings, install_tracing
from turnout.gateway.resolution.lookups import ProjectLookups, build_runtime, embedded_runtime
from turnout.gateway.runtime.control import ControlPlane
from turnout.gateway.runtime.embedded import embedded_config
from turnout.gateway.runtime.served import ServedProjects
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.audit import store_app
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import bind_socket
from turnout.gateway.server.prefork import Supervisor
from turnout.gateway.server.worker import Reload, run_worker

if TYPE_CHECKING:
    import socket
    from collections.abc import Callable, Mapping

    from turnout.gateway.runtime.live import Runtime
    from turnout.schema import FileConfig

__all__ = [
    "ServeOptions",
    "ServePlan",
    "banner",
    "load_runtime",
    "open_control",
    "preflight",
    "run",
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
        return build_runtime(load_config(config_path, env=env))
    return embedded_runtime(env)


async def reload_runtime_file(config_path: str | None, env: Mapping[str, str]) -> Runtime:
    """SIGHUP without a store: `load_runtime` again (no store, so nothing to wait on)."""
    return load_runtime(config_path, env)


def open_control(
    config_path: str | None, env: Mapping[str, str], *, prepare: bool = True
) -> ControlPlane:
    """The control plane of `config_path` (None or empty: the embedded defaults, with the
    store in the working directory); `prepare` migrates the store and brings the file's
    objects into it (once per start, by the parent of several workers; a store that cannot be
    reached then is prepared later, by the control plane). Raises `ConfigError` for a bad file
    or a store that cannot be opened, and `OSError` for an unreadable file."""
    file: FileConfig
    if config_path:
        file = load_config(config_path, env=env)
        base = Path(config_path).resolve().parent
        reload_file = functools.partial(load_config, config_path, env=env)
    else:
        file = embedded_config(env)
        base = Path.cwd()
        reload_file = functools.partial(embedded_config, env)
    url = store_url(file, base)
    # Imported here: `turnout check` and the library never load the database layer.
    from sqlalchemy.engine import make_url  # noqa: PLC0415
    from sqlalchemy.exc import SQLAlchemyError  # noqa: PLC0415

    from turnout.store import open_store  # noqa: PLC0415
    from turnout.store.calls import is_unreachable  # noqa: PLC0415

    shown = make_url(url).render_as_string(hide_password=True)
    try:
        store = open_store(url)
    except SQLAlchemyError as exc:
        rule = f"cannot open the store at {shown}: {type(exc).__name__}"
        raise ConfigError(f"store: {rule}", [("store", rule)]) from None
    control = ControlPlane(
        store,
        file,
        lookups=ProjectLookups,
        embedded=not config_path,
        reload_file=reload_file,
        prepared=not prepare,
    )
    if prepare:
        try:
            control.prepare()
        except SQLAlchemyError as exc:
            if not is_unreachable(exc):
                rule = f"cannot open the store at {shown}: {type(exc).__name__}"
                raise ConfigError(f"store: {rule}", [("store", rule)]) from None
            logger.warning("the store at %s is unreachable (%s)", shown, type(exc).__name__)
    return control


def worker_app(config_path: str | None, *, prepare: bool = True) -> GatewayApp:
    """The app of one worker process: it builds its runtimes from the store and
    `config_path` (None: the embedded defaults) at lifespan startup; `prepare` as for
    `open_control` (the parent of several workers prepared the store already)."""
    configure_logging_from_env()
    control = open_control(config_path, os.environ, prepare=prepare)
    return store_app(control, config_path)


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


@dataclass(frozen=True, slots=True)
class ServePlan:
    """What the preflight settled before anything serves: the projects served (and the control
    plane they come from, if any), the host asked for and the socket listening on it, the worker
    count, the server's limits, how SIGHUP reloads (`reload`, from `path`: None is the embedded
    defaults) and the tracing settings (None: off). `run` owns the socket and closes it."""

    served: ServedProjects
    control: ControlPlane | None
    host: str
    sock: socket.socket
    workers: int
    limits: ServerLimits
    path: str | None
    reload: Reload
    tracing: TracingSettings | None


def preflight(
    options: ServeOptions,
    runtime: Runtime | ControlPlane,
    *,
    out: TextIO | None = None,
) -> ServePlan | None:
    """Everything that can refuse to serve, before anything starts: check the tracing settings,
    bind the address, and print the load warnings to `out` (stdout). Returns the plan `run`
    serves, or None after printing why to stderr (a bad tracing setting, an address that cannot
    be bound)."""
    out = out if out is not None else sys.stdout
    control = runtime if isinstance(runtime, ControlPlane) else None
    served = control.served if control is not None else ServedProjects.of(runtime)  # type: ignore[arg-type]
    runtime = served.primary
    server_config = runtime.config.server
    host = options.host if options.host is not None else server_config.host
    port = options.port if options.port is not None else server_config.port
    try:
        tracing = TracingSettings.of(server_config.tracing, os.environ)
        if tracing is not None:
            tracing.check_sdk()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        for key, message in exc.errors:
            print(f"  {key}: {message}", file=sys.stderr)
        return None
    try:
        # Listening before the banner makes it true when printed: a caller that connects at
        # once waits in the backlog instead of being refused.
        sock = bind_socket(host, port)
    except OSError as exc:
        print(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return None
    for warning in (*runtime.warnings, *served.warnings):
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
    source = path or "the embedded defaults"
    reload: Reload = (source, functools.partial(reload_runtime_file, path, os.environ))
    if control is not None:
        reload = (source, control.reload_file)
    if tracing is not None:
        print(f"tracing: {tracing.exporter}, service {tracing.service_name}", file=out)
    return ServePlan(served, control, host, sock, options.workers, limits, path, reload, tracing)


def run(plan: ServePlan, *, out: TextIO | None = None) -> int:
    """Serve `plan` until SIGTERM or SIGINT: print the banner to `out` (stdout) once the
    process is ready, then serve in this process or in `plan.workers` forked ones. Returns the
    exit status (0 after a clean stop)."""
    out = out if out is not None else sys.stdout
    served, control, sock, limits = plan.served, plan.control, plan.sock, plan.limits
    path, reload, tracing = plan.path, plan.reload, plan.tracing
    _log_to_stderr()
    # Before the banner: callers may connect as soon as they read it.
    _settle_heap()
    print(banner(served.primary, plan.host, sock.getsockname()[1]), file=out, flush=True)
    # A Ctrl-C that lands after the shutdown, while the process ends, is not an error.
    with sock, contextlib.suppress(KeyboardInterrupt):
        if plan.workers <= 1:

            def run_one() -> int:
                # Made once tracing is installed: the app's observer decides then on spans.
                if control is not None:
                    return run_worker(sock, store_app(control, path), limits, reload=reload)
                return run_worker(sock, GatewayApp(served), limits, reload=reload)

            return _traced(tracing, run_one)
        prepared = control is None or control.prepared
        with contextlib.suppress(Exception):
            asyncio.run(_close_before_fork(served, control))
        supervisor = Supervisor(
            plan.workers,
            lambda parent: _traced(
                tracing,
                lambda: _run_one_worker(
                    sock, path, limits, parent, stored=control is not None, prepared=prepared
                ),
            ),
            grace=limits.shutdown_grace,
        )
        return supervisor.run()
    return 0


def serve(
    options: ServeOptions,
    runtime: Runtime | ControlPlane,
    *,
    out: TextIO | None = None,
) -> int:
    """Bind, print the load warnings and the banner to `out` (stdout), and serve until
    SIGTERM or SIGINT, from `runtime` alone or from a loaded control plane's runtimes. Returns
    the exit status (0 after a clean stop, 1 when the address cannot be bound or the tracing
    settings are wrong): `preflight`, then `run`."""
    plan = preflight(options, runtime, out=out)
    return 1 if plan is None else run(plan, out=out)


async def _close_before_fork(served: ServedProjects, control: ControlPlane | None) -> None:
    """The parent's pools, state store and database connections are not the workers'."""
    for runtime in served.runtimes.values():
        await runtime.aclose()
    if control is not None:
        await control.state.close()
        control.store.close()


def _run_one_worker(
    sock: socket.socket,
    path: str | None,
    limits: ServerLimits,
    parent: int,
    *,
    stored: bool,
    prepared: bool = True,
) -> int:
    configure_logging_from_env()
    source = path or "the embedded defaults"
    if not stored:
        load = functools.partial(load_runtime, path, os.environ)
        again = functools.partial(reload_runtime_file, path, os.environ)
        return run_worker(
            sock, GatewayApp(load=load), limits, reload=(source, again), parent=parent
        )
    # A worker prepares the store only when its parent could not reach it.
    control = open_control(path, os.environ, prepare=not prepared)
    app = store_app(control, path)
    return run_worker(sock, app, limits, reload=(source, control.reload_file), parent=parent)


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
