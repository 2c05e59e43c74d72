"""A real gateway for end-to-end tests: the gateway's own HTTP server on a free 127.0.0.1
port, in the test's event loop, over a runtime built from a config dict."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from turnout.config.load import parse_config
from turnout.gateway.runtime.live import Runtime
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import Listener, bind_socket, serving

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


class RunningGateway:
    """A started gateway: its `url`, `runtime`, `app` and `listener`."""

    def __init__(self, runtime: Runtime, app: GatewayApp, listener: Listener, url: str) -> None:
        self.runtime = runtime
        self.app = app
        self.listener = listener
        self.url = url

    @property
    def openai_base_url(self) -> str:
        """What an OpenAI client takes (`…/v1`)."""
        return f"{self.url}/v1"


@asynccontextmanager
async def running_gateway(
    config: dict[str, Any], limits: ServerLimits | None = None
) -> AsyncIterator[RunningGateway]:
    """Serve the runtime of `config` until the block ends (the lifespan closes its pools)."""
    runtime = Runtime.from_config(parse_config(config, env={}))
    app = GatewayApp(runtime)
    with bind_socket("127.0.0.1", 0) as sock:
        async with serving(app, sock, limits or ServerLimits(shutdown_grace=0.0)) as listener:
            port = sock.getsockname()[1]
            yield RunningGateway(runtime, app, listener, f"http://127.0.0.1:{port}")
