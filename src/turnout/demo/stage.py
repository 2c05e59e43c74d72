"""The stage of `turnout demo`: a mock upstream and a gateway on real 127.0.0.1 sockets.

Both run on one event loop in a background thread, so the demo's calls can go through the
official SDKs' synchronous clients exactly as an application would make them.

Rule 1: `start()` returns only once both servers accept connections (or raises); every wait
is bounded.
Rule 2: `stop()` ends the gateway first (its lifespan closes the provider pools), then the
mock upstream, then joins the thread.
Rule 3: the mock upstream's state (scripts, request log) is touched only on the stage's loop,
through `call`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import TYPE_CHECKING, Any

from turnout.config.load import parse_config
from turnout.gateway.resolution.lookups import build_runtime
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import bind_socket, serving
from turnout.mock_upstream import MockUpstream
from turnout.mock_upstream.server import new_event_loop

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import TracebackType

__all__ = ["DemoStage"]

_START_LIMIT = 10.0  # seconds the stage may take to listen


class DemoStage:
    """A mock upstream and a gateway serving `config(upstream_url)`, in a daemon thread.

    `config` builds the gateway's configuration (a dict in config-file shape) from the mock
    upstream's URL (`http://127.0.0.1:PORT`). After `start()`: `url` is the gateway's address,
    `openai_base_url` its `/v1` base. `hold_limit` (seconds, default 10) bounds any hang the
    mock upstream is asked for. With `admin_hashes`, the gateway serves its dashboard at `/ui`
    to those admin keys.
    """

    def __init__(
        self,
        config: Callable[[str], dict[str, Any]],
        *,
        hold_limit: float = 10.0,
        admin_hashes: frozenset[str] | None = None,
    ) -> None:
        self._config = config
        self._admin_hashes = admin_hashes
        self.upstream = MockUpstream(hold_limit=hold_limit)
        self.url = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped: asyncio.Event | None = None

    @property
    def openai_base_url(self) -> str:
        """The gateway's base URL for OpenAI clients (`…/v1`)."""
        return f"{self.url}/v1"

    def start(self) -> DemoStage:
        """Start both servers; returns once the gateway accepts requests (Rule 1)."""
        ready = threading.Event()
        failure: list[BaseException] = []
        loop = self._loop = new_event_loop()

        def target() -> None:
            asyncio.set_event_loop(loop)
            with contextlib.suppress(BaseException):
                loop.run_until_complete(self._serve(ready, failure))
            loop.close()

        self._thread = threading.Thread(target=target, name="turnout-demo", daemon=True)
        self._thread.start()
        if not ready.wait(_START_LIMIT):
            raise RuntimeError(f"the demo gateway did not start within {_START_LIMIT:g} s")
        if failure:
            raise failure[0]
        return self

    async def _serve(self, ready: threading.Event, failure: list[BaseException]) -> None:
        self._stopped = asyncio.Event()
        try:
            await self.upstream.start()
            config = parse_config(self._config(self.upstream.url), env={})
            hashes = self._admin_hashes
            app = GatewayApp(
                build_runtime(config),
                admin_hashes=None if hashes is None else (lambda: hashes),
            )
            sock = bind_socket("127.0.0.1", 0)
        except BaseException as exc:
            failure.append(exc)
            ready.set()
            await self.upstream.stop()
            raise
        try:
            # Rule 2: leaving the block ends the gateway (its lifespan closes the pools).
            async with serving(app, sock, ServerLimits(shutdown_grace=0.0)):
                self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
                ready.set()
                await self._stopped.wait()
        except BaseException as exc:
            if not ready.is_set():
                failure.append(exc)
                ready.set()
            raise
        finally:
            sock.close()
            await self.upstream.stop()

    def call(self, function: Callable[..., Any], *args: Any) -> Any:
        """Rule 3: run `function(*args)` on the stage's loop and return its result."""
        loop = self._loop
        assert loop is not None, "the stage is not started"

        async def run() -> Any:
            return function(*args)

        return asyncio.run_coroutine_threadsafe(run(), loop).result(_START_LIMIT)

    def script(self, model: str, faults: Sequence[str]) -> None:
        """Queue fault steps for the next requests the mock upstream gets for `model`."""
        self.call(self.upstream.app.faults.script, model, list(faults))

    def upstream_calls(self, model: str) -> int:
        """How many requests for `model` reached the mock upstream so far."""
        entries = self.call(self.upstream.app.log.entries)
        return sum(1 for entry in entries if entry.model == model)

    def stop(self) -> None:
        """Rule 2: stop both servers and join the thread (bounded)."""
        loop, stopped = self._loop, self._stopped
        if loop is None or stopped is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(stopped.set)
        if self._thread is not None:
            self._thread.join(_START_LIMIT)

    def __enter__(self) -> DemoStage:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
