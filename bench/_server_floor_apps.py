"""The apps `server_floor.py` serves: the same trivial handler (read the whole request body,
answer a fixed JSON body) for each server interface, and the same handler with one call to the
mock upstream through the providers' client in between.

- `FloorApp`: the gateway's own server, plugged in as the gateway's endpoints are
  (`serve_cycle`: the body through `RequestCycle.body_part`, the answer in one
  `RequestCycle.respond`, no ASGI messages); its ASGI call only sees the lifespan.
- `AsgiOnly`: the gateway's server with `asgi_app`, every request through the ASGI messages
  (as the dashboard and the admin API are served).
- `rsgi_app`: an RSGI app (granian `--interface rsgi`).
- `asgi_app`: a raw ASGI app (granian `--interface asgi`, uvicorn).

`python bench/_server_floor_apps.py ours|ours-asgi PORT` serves the first two.

With `FLOOR_UPSTREAM_PORT` set, each handler POSTs the request body to
`http://127.0.0.1:PORT/v1/chat/completions` with `Http1Transport` and answers the upstream's
body instead of the fixed one. Each serving process tunes its garbage collector as
`turnout serve` does, so that no server pays for collections another is spared.
"""

from __future__ import annotations

import gc
import os
import sys
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, MutableMapping

    from turnout.gateway.server.cycle import RequestCycle
    from turnout.providers.http1 import Http1Transport

ANSWER = (
    b'{"id":"chatcmpl-floor0000000000000000","object":"chat.completion","created":1764633600,'
    b'"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":'
    b'"Checkout fails because the payment token expired before capture."},'
    b'"finish_reason":"stop"}],"usage":{"prompt_tokens":24,"completion_tokens":12,'
    b'"total_tokens":36}}'
)
"""The fixed answer (about 300 bytes)."""

HEADERS = [(b"content-type", b"application/json")]
TEXT_HEADERS = [("content-type", "application/json")]
UPSTREAM_HEADERS = {"content-type": "application/json", "authorization": "Bearer sk-bench"}

_port = os.environ.get("FLOOR_UPSTREAM_PORT")
UPSTREAM_URL = f"http://127.0.0.1:{_port}/v1/chat/completions" if _port else None
_transport: list[Http1Transport] = []


def _settle_heap() -> None:
    """What `turnout serve` does before it serves (`serving._settle_heap`)."""
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(10_000, middle, old)


_settle_heap()


def _client() -> Http1Transport:
    """The providers' client, made in the serving process (its pool binds to the loop that
    first uses it)."""
    if not _transport:
        from turnout.providers.http1 import Http1Transport

        _transport.append(Http1Transport(provider="bench"))
    return _transport[0]


async def _answer(body: bytes) -> tuple[int, bytes]:
    """The status and body to answer a request whose body is `body`."""
    if UPSTREAM_URL is None:
        return 200, ANSWER
    reply = await _client().post(UPSTREAM_URL, body, UPSTREAM_HEADERS)
    return reply.status, reply.body


# -- the gateway's own server ------------------------------------------------------------------


class FloorApp:
    """The handler plugged into the gateway's server as `GatewayApp.serve_cycle` is."""

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        """The lifespan (and any request not served directly): nothing to do."""

    async def serve_cycle(self, cycle: RequestCycle) -> None:
        """Read the whole body as `Exchange.read_body` does, answer as `Exchange.reply` does."""
        parts: list[bytes] = []
        while True:
            got = await cycle.body_part()
            if got is None:
                return  # the caller left
            part, more = got
            if part:
                parts.append(part)
            if not more:
                break
        status, answer = await _answer(parts[0] if len(parts) == 1 else b"".join(parts))
        await cycle.respond(status, HEADERS, answer)


class AsgiOnly:
    """`asgi_app` on the gateway's server: every request through the ASGI messages."""

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        """The lifespan and every request."""
        if scope["type"] == "http":
            await asgi_app(scope, receive, send)


def serve_ours(port: int, *, asgi: bool = False) -> int:
    """The gateway's server (uvloop, httptools) on 127.0.0.1:`port`, one process, as
    `turnout serve` runs one worker (`run_worker`), until SIGTERM; `asgi`: through the ASGI
    messages instead of `serve_cycle`."""
    from turnout.gateway.server.limits import ServerLimits
    from turnout.gateway.server.listener import bind_socket
    from turnout.gateway.server.worker import run_worker

    app = AsgiOnly() if asgi else FloorApp()
    with bind_socket("127.0.0.1", port) as sock:
        return run_worker(sock, app, ServerLimits())  # type: ignore[arg-type]


# -- RSGI and ASGI -----------------------------------------------------------------------------


class RSGIProtocol(Protocol):
    """What the RSGI app uses of granian's HTTP protocol object."""

    def __call__(self) -> Awaitable[bytes]: ...

    def response_bytes(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None: ...


async def rsgi_app(scope: Any, protocol: RSGIProtocol) -> None:
    """The handler as an RSGI app: the whole body in one await, the answer in one call."""
    status, answer = await _answer(await protocol())
    protocol.response_bytes(status, TEXT_HEADERS, answer)


async def asgi_app(
    scope: MutableMapping[str, Any],
    receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
    send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
) -> None:
    """The handler as a raw ASGI app (no framework)."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    parts: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    status, answer = await _answer(b"".join(parts))
    headers = [*HEADERS, (b"content-length", b"%d" % len(answer))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": answer})


if __name__ == "__main__":
    # `python bench/_server_floor_apps.py ours|ours-asgi PORT`
    sys.exit(serve_ours(int(sys.argv[2]), asgi=sys.argv[1] == "ours-asgi"))
