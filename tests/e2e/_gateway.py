"""A real gateway for end-to-end tests: the gateway's own HTTP server on a free 127.0.0.1
port, in the test's event loop, over a runtime built from a config dict. The gateway notes the
method and path of every HTTP request it receives (`requests`), so a test can count what a
client sent."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from turnout.config.load import parse_config
from turnout.gateway.resolution.lookups import build_runtime
from turnout.gateway.server.app import GatewayApp
from turnout.gateway.server.limits import ServerLimits
from turnout.gateway.server.listener import Listener, bind_socket, serving

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
    from contextlib import AbstractAsyncContextManager

    from turnout.gateway.runtime.live import Runtime


class RunningGateway:
    """A started gateway: its `url`, `runtime`, `app`, `listener`, and the `(method, path)` of
    each HTTP request it received so far (`requests`)."""

    def __init__(
        self,
        runtime: Runtime,
        app: GatewayApp,
        listener: Listener,
        url: str,
        requests: list[tuple[str, str]],
    ) -> None:
        self.runtime = runtime
        self.app = app
        self.listener = listener
        self.url = url
        self.requests = requests

    @property
    def openai_base_url(self) -> str:
        """What an OpenAI client takes (`…/v1`)."""
        return f"{self.url}/v1"


class _NotingApp:
    """The gateway app, noting each HTTP request's method and path first; it ends requests
    in flight at shutdown as the app does."""

    def __init__(self, app: GatewayApp, requests: list[tuple[str, str]]) -> None:
        self.app = app
        self.requests = requests

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        if scope["type"] == "http":
            self.requests.append((scope["method"], scope["path"]))
        await self.app(scope, receive, send)

    def end_requests(self) -> None:
        """The app's own shutdown of its requests in flight."""
        self.app.end_requests()


def running_gateway(
    config: dict[str, Any], limits: ServerLimits | None = None
) -> AbstractAsyncContextManager[RunningGateway]:
    """Serve the runtime of `config` until the block ends (the lifespan closes its pools)."""
    return running_runtime(build_runtime(parse_config(config, env={})), limits)


@asynccontextmanager
async def running_runtime(
    runtime: Runtime, limits: ServerLimits | None = None
) -> AsyncIterator[RunningGateway]:
    """Serve `runtime` until the block ends (the lifespan closes its pools)."""
    app = GatewayApp(runtime)
    requests: list[tuple[str, str]] = []
    with bind_socket("127.0.0.1", 0) as sock:
        noted = _NotingApp(app, requests)
        async with serving(noted, sock, limits or ServerLimits(shutdown_grace=0.0)) as listener:
            port = sock.getsockname()[1]
            yield RunningGateway(runtime, app, listener, f"http://127.0.0.1:{port}", requests)
