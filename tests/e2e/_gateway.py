"""A real gateway for end-to-end tests: uvicorn (httptools) on a free 127.0.0.1 port, in the
test's event loop, over a runtime built from a config dict."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import uvicorn

from turnout.config.load import parse_config
from turnout.gateway.runtime.live import Runtime
from turnout.gateway.server.app import GatewayApp

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from contextlib import AbstractAsyncContextManager


class RunningGateway:
    """A started gateway: its `url`, `runtime` and `app`."""

    def __init__(self, runtime: Runtime, url: str) -> None:
        self.runtime = runtime
        self.url = url

    @property
    def openai_base_url(self) -> str:
        """What an OpenAI client takes (`…/v1`)."""
        return f"{self.url}/v1"


def running_gateway(config: dict[str, Any]) -> AbstractAsyncContextManager[RunningGateway]:
    """Serve the runtime of `config` until the block ends (the lifespan closes its pools)."""
    return running_runtime(Runtime.from_config(parse_config(config, env={})))


@asynccontextmanager
async def running_runtime(runtime: Runtime) -> AsyncIterator[RunningGateway]:
    """Serve `runtime` until the block ends (the lifespan closes its pools)."""
    server_config = uvicorn.Config(
        GatewayApp(runtime),
        host="127.0.0.1",
        port=0,
        http="httptools",
        lifespan="on",
        log_level="warning",
        access_log=False,
    )
    sock = server_config.bind_socket()
    server = uvicorn.Server(server_config)
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    try:
        for _ in range(500):
            if server.started:
                break
            await asyncio.sleep(0.01)
        port = sock.getsockname()[1]
        yield RunningGateway(runtime, f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        await task
        sock.close()
