"""Serving the gateway: uvicorn with uvloop and httptools, one or several worker processes.

With one worker the runtime built (and checked) at start serves directly. With several, each
worker process builds its own runtime from the same configuration through `app_factory`, which
reads the file named by `TURNOUT_CONFIG` (embedded defaults when it is empty), so no live
object crosses a process boundary. Shutdown closes the providers' connection pools (lifespan).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, TextIO

from turnout.config.load import load_config
from turnout.gateway.observe.logs import configure_logging_from_env
from turnout.gateway.observe.metrics import prepare_workers
from turnout.gateway.runtime.live import Runtime
from turnout.gateway.server.app import GatewayApp

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "CONFIG_ENV",
    "ServeOptions",
    "app_factory",
    "banner",
    "load_runtime",
    "serve",
    "worker_warning",
]

CONFIG_ENV: Final = "TURNOUT_CONFIG"
"""The environment variable naming the configuration file of the worker processes."""

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


def app_factory() -> GatewayApp:
    """The app of one worker process: it builds its runtime at lifespan startup."""
    path = os.environ.get(CONFIG_ENV) or None
    configure_logging_from_env()
    return GatewayApp(load=lambda: load_runtime(path, os.environ))


def banner(runtime: Runtime, host: str, port: int) -> str:
    """`turnout serving on http://HOST:PORT (N routes, auth=…)`."""
    shown = f"[{host}]" if ":" in host else host
    auth = runtime.config.server.auth
    count = len(runtime.routes)
    routes = f"{count} route" if count == 1 else f"{count} routes"
    return f"turnout serving on http://{shown}:{port} ({routes}, auth={auth})"


def worker_warning(runtime: Runtime, workers: int) -> str | None:
    """SPEC §10: several workers without Redis keep state per worker."""
    if workers > 1 and not runtime.config.state.startswith(("redis://", "rediss://")):
        return (
            f"warning: {workers} workers without Redis (state: redis://…): session pins, latency"
            " memory, the response cache and health are kept per worker"
        )
    return None


def serve(options: ServeOptions, runtime: Runtime, *, out: TextIO | None = None) -> int:
    """Bind, print the load warnings and the banner to `out` (stdout), and serve until
    interrupted. Returns the exit status (0 after a clean stop)."""
    import uvicorn  # noqa: PLC0415 - only when serving
    from uvicorn.supervisors import Multiprocess  # noqa: PLC0415 - only when serving

    out = out if out is not None else sys.stdout
    server_config = runtime.config.server
    host = options.host if options.host is not None else server_config.host
    port = options.port if options.port is not None else server_config.port
    several = options.workers > 1
    config = uvicorn.Config(
        "turnout.gateway.server.serving:app_factory" if several else GatewayApp(runtime),
        factory=several,
        host=host,
        port=port,
        workers=options.workers,
        loop=_loop(),
        http="httptools",
        lifespan="on",
        access_log=False,
        log_level="warning",
        server_header=False,
        # The gateway reads no client address: skip the per-request proxy header pass.
        proxy_headers=False,
    )
    sock = config.bind_socket()
    # Listening now (the server would only at its start) makes the banner true when printed: a
    # caller that connects at once waits in the backlog instead of being refused.
    sock.listen(config.backlog)
    for warning in runtime.warnings:
        print(f"warning: {warning}", file=out)
    extra = worker_warning(runtime, options.workers)
    if extra is not None:
        print(extra, file=out)
    if server_config.auth == "open" and host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"warning: auth is open and the gateway listens on {host}: anyone can call it", file=out
        )
    # Before the banner: callers may connect as soon as they read it.
    _settle_heap(several=several)
    print(banner(runtime, host, sock.getsockname()[1]), file=out, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        if several:
            os.environ[CONFIG_ENV] = options.config_path or ""
            prepare_workers()
            with contextlib.suppress(Exception):
                asyncio.run(runtime.aclose())
            Multiprocess(config, sockets=[sock]).run()
        else:
            uvicorn.Server(config).run(sockets=[sock])
    return 0


def _settle_heap(*, several: bool) -> None:
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
    accumulates. With several workers (fresh processes that build their own runtime) the parent
    only re-enables the collector.
    """
    if not several:
        gc.freeze()
        _, middle, old = gc.get_threshold()
        gc.set_threshold(_YOUNG_THRESHOLD, middle, old)
    gc.enable()


def _loop() -> str:
    try:
        import uvloop  # noqa: F401, PLC0415 - only to know it is there
    except ImportError:
        return "asyncio"
    return "uvloop"
