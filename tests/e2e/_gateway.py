"""A real gateway for end-to-end tests: uvicorn (httptools) on a free 127.0.0.1 port, in the
test's event loop, over a runtime built from a config dict. The gateway notes the method and
path of every HTTP request it receives (`requests`), so a test can count what a client sent."""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import uvicorn

from turnout.config.load import parse_config
from turnout.gateway.runtime.live import Runtime
from turnout.gateway.server.app import GatewayApp

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
    from contextlib import AbstractAsyncContextManager


class RunningGateway:
    """A started gateway: its `url`, `runtime`, and the `(method, path)` of each HTTP request
    it received so far (`requests`)."""

    def __init__(self, runtime: Runtime, url: str, requests: list[tuple[str, str]]) -> None:
        self.runtime = runtime
        self.url = url
        self.requests = requests

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
    app = GatewayApp(runtime)
    requests: list[tuple[str, str]] = []

    async def noted(
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        if scope["type"] == "http":
            requests.append((scope["method"], scope["path"]))
        await app(scope, receive, send)

    server_config = uvicorn.Config(
        noted,
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
        yield RunningGateway(runtime, f"http://127.0.0.1:{port}", requests)
    finally:
        server.should_exit = True
        await task
        sock.close()
