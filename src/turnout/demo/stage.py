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

import contextlib
from typing import TYPE_CHECKING, Any

from turnout.config.load import parse_config
from turnout.gateway.resolution.lookups import build_runtime
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import bind_socket, serving
from turnout.mock_upstream import MockUpstream
from turnout.mock_upstream.server import LoopThread

if TYPE_CHECKING:
    import socket
    from collections.abc import AsyncIterator, Callable, Sequence

__all__ = ["DemoStage"]

_START_LIMIT = 10.0  # seconds the stage may take to listen


class DemoStage(LoopThread):
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
        super().__init__("turnout-demo", what="the demo gateway", limit=_START_LIMIT)
        self._config = config
        self._admin_hashes = admin_hashes
        self.upstream = MockUpstream(hold_limit=hold_limit)
        self.url = ""

    @property
    def openai_base_url(self) -> str:
        """The gateway's base URL for OpenAI clients (`…/v1`)."""
        return f"{self.url}/v1"

    @contextlib.asynccontextmanager
    async def _opened(self) -> AsyncIterator[None]:
        """Rule 1: both servers, entered once the gateway accepts requests."""
        await self.upstream.start()
        sock: socket.socket | None = None
        try:
            config = parse_config(self._config(self.upstream.url), env={})
            hashes = self._admin_hashes
            app = GatewayApp(
                build_runtime(config),
                admin_hashes=None if hashes is None else (lambda: hashes),
            )
            sock = bind_socket("127.0.0.1", 0)
            # Rule 2: leaving the block ends the gateway (its lifespan closes the pools).
            async with serving(app, sock, ServerLimits(shutdown_grace=0.0)):
                self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
                yield
        finally:
            if sock is not None:
                sock.close()
            await self.upstream.stop()

    def script(self, model: str, faults: Sequence[str]) -> None:
        """Queue fault steps for the next requests the mock upstream gets for `model`."""
        self.call(self.upstream.app.faults.script, model, list(faults))

    def upstream_calls(self, model: str) -> int:
        """How many requests for `model` reached the mock upstream so far."""
        entries = self.call(self.upstream.app.log.entries)
        return sum(1 for entry in entries if entry.model == model)
