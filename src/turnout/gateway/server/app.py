"""The gateway's ASGI application: a thin dispatch on (method, path).

Rule 1: each endpoint is one entry of `ENDPOINTS`, every `/v1/...` one also without the `/v1`
prefix (clients such as LiteLLM's proxy provider append paths to a bare base URL); the paths
with a parameter, `GET /v1/models/{id}` and `GET`/`DELETE /v1/responses/{id}`, are looked up
by prefix, and only when no entry matches. An unknown path is 404, a known path with another
method 405, and before the runtime is loaded every endpoint but `/healthz` and `/readyz` is 503.
Rule 2: a POST endpoint checks the caller's key from the headers (401 before any body byte
is read), reads the whole body (bounded by `max_body_bytes`, 413 beyond), then runs its
handler; a caller that disconnects cancels the handler, and so the upstream call (the routing
record says `cancelled`; health counts nothing), and gets no answer. Served by the gateway's
own server (`serve_cycle`), the server says when the caller leaves; served through ASGI, a
watcher task reads `receive()`, started once the handler has run `WATCH_AFTER` seconds.
Rule 3: whatever a handler raises becomes an error response in the endpoint's client format
(`respond.error_reply`, the one table); after a stream has started it is an in-stream event.
Rule 4: HEAD is GET without the body (the server drops it).
Rule 5: `end_requests()` (the server's shutdown, once its grace is over) cancels every request
in flight, which then ends as Rule 3 says with `ShuttingDown`; `swap_runtime()` (a reload)
serves new requests on the new runtimes while those in flight finish on theirs, whose pools
are closed after the last of them (a runtime carried into the new set is not closed).
Rule 6: with an admin context (`admin=`), a path under `/admin/` that no entry matches goes
to the admin API (`turnout.gateway.admin`), imported on the first such request; without one
it is 404 like any unknown path.
Rule 7: with a `control` source (the store), lifespan startup loads from it and lets it swap
runtimes in as the store changes; shutdown stops it first.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from turnout.access.sign_ins import SignInThrottle
from turnout.errors import MethodNotAllowed, NotFound, NotReady, ShuttingDown
from turnout.gateway.client_formats import ANTHROPIC, OPENAI, RESPONSES
from turnout.gateway.handlers import (
    MODEL_PATHS,
    RESPONSE_PATHS,
    handle_chat,
    handle_count_tokens,
    handle_embeddings,
    handle_healthz,
    handle_metrics,
    handle_model,
    handle_models,
    handle_responses,
    handle_stored_response,
    readiness,
)
from turnout.gateway.handlers.settings import GatewaySettings
from turnout.gateway.observe.observer import Observer
from turnout.gateway.responses.respond import error_event, error_reply, json_reply
from turnout.gateway.runtime.status import ControlStatus
from turnout.gateway.server._tracebacks import release_frames
from turnout.gateway.server.exchange import HttpExchange, caller_request_id
from turnout.gateway.ui.app import Dashboard
from turnout.routing.request_state import new_request_id

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, MutableMapping

    from turnout.gateway.admin.context import AdminContext
    from turnout.gateway.client_formats import ClientFormat
    from turnout.gateway.responses.respond import Reply
    from turnout.gateway.runtime.live import Runtime
    from turnout.gateway.runtime.served import ServedProjects
    from turnout.gateway.server.cycle import RequestCycle


class RuntimeSource(Protocol):
    """What keeps an app's runtimes current (the control plane over the store): `start`
    returns what to serve and calls `swap` with each newer set; `aclose` stops it."""

    async def start(self, swap: Callable[[ServedProjects], object]) -> ServedProjects: ...

    async def aclose(self) -> None: ...


__all__ = ["ENDPOINTS", "WATCH_AFTER", "GatewayApp", "PathHandler", "RuntimeSource"]

WATCH_AFTER = 0.02
"""Seconds a handler runs before a task starts watching for the caller's disconnect."""


@dataclass(frozen=True, slots=True)
class PathHandler:
    """What serves one (method, path): its handler, the client format its errors use, and
    whether it reads the body first."""

    handler: Callable[[HttpExchange], Awaitable[None]]
    fmt: ClientFormat
    reads_body: bool


_API: dict[tuple[str, str], PathHandler] = {
    ("POST", "/v1/chat/completions"): PathHandler(handle_chat, OPENAI, reads_body=True),
    ("POST", "/v1/messages"): PathHandler(handle_chat, ANTHROPIC, reads_body=True),
    ("POST", "/v1/messages/count_tokens"): PathHandler(
        handle_count_tokens, ANTHROPIC, reads_body=True
    ),
    ("POST", "/v1/embeddings"): PathHandler(handle_embeddings, OPENAI, reads_body=True),
    ("GET", "/v1/models"): PathHandler(handle_models, OPENAI, reads_body=False),
    ("POST", "/v1/responses"): PathHandler(handle_responses, RESPONSES, reads_body=True),
}
ENDPOINTS: dict[tuple[str, str], PathHandler] = {
    **_API,
    **{(method, path.removeprefix("/v1")): served for (method, path), served in _API.items()},
    ("GET", "/healthz"): PathHandler(handle_healthz, OPENAI, reads_body=False),
    ("GET", "/metrics"): PathHandler(handle_metrics, OPENAI, reads_body=False),
}
_MODEL = PathHandler(handle_model, OPENAI, reads_body=False)
_STORED_RESPONSE = PathHandler(handle_stored_response, RESPONSES, reads_body=False)
_PATHS: dict[str, list[str]] = {}
for _method, _path in ENDPOINTS:
    _PATHS.setdefault(_path, []).append(_method)
_PATHS.setdefault("/readyz", []).append("GET")
_ANTHROPIC_PATHS = ("/v1/messages", "/messages")


def _parameterized(path: str) -> list[str] | None:
    """The methods of a path with a parameter (`/v1/models/{id}`, `/v1/responses/{id}`), None
    for any other."""
    if path.startswith(MODEL_PATHS) and path.partition("/models/")[2]:
        return ["GET"]
    if path.startswith(RESPONSE_PATHS) and path.partition("/responses/")[2]:
        return ["GET", "DELETE"]
    return None


def _parameterized_handler(method: str, path: str) -> PathHandler | None:
    """The handler of a path with a parameter for `method`, None when there is none."""
    methods = _parameterized(path)
    if methods is None or method not in methods:
        return None
    return _MODEL if path.startswith(MODEL_PATHS) else _STORED_RESPONSE


class GatewayApp:
    """The ASGI app. Give it a `Runtime`, or `load` (called at lifespan startup, e.g. by each
    server worker) to build one.

    `max_body_bytes` (default: the config's `server.max_body_bytes`, 32 MiB) and
    `keepalive_seconds` (15) are as in `GatewaySettings`; `observer` (default: a new
    `Observer`) serves every runtime the app installs, so metrics and activity outlive a
    reload. With `admin_hashes` (the admin keys' hashes), the dashboard is served at `/ui`;
    `admin` serves the admin API (Rule 6). `sign_ins` (default: a new `SignInThrottle`)
    counts the failed admin keys both of them see. `status` (default: one without a store) is
    what `/readyz` and the metrics say of the store and of reloads.
    Lifespan shutdown closes the providers' connection pools.
    """

    def __init__(
        self,
        runtime: Runtime | ServedProjects | None = None,
        *,
        load: Callable[[], Runtime] | None = None,
        control: RuntimeSource | None = None,
        max_body_bytes: int | None = None,
        keepalive_seconds: float = 15.0,
        admin_hashes: Callable[[], frozenset[str]] | None = None,
        observer: Observer | None = None,
        admin: AdminContext | None = None,
        sign_ins: SignInThrottle | None = None,
        status: ControlStatus | None = None,
    ) -> None:
        self._load = load
        # One count of failed admin keys for the admin API and the dashboard alike.
        self._sign_ins = sign_ins if sign_ins is not None else SignInThrottle()
        self._control = control
        self._admin_context = admin
        self._admin: Callable[..., Awaitable[None]] | None = None
        self._max_body_bytes = max_body_bytes
        self._keepalive_seconds = keepalive_seconds
        # One observer for the app's life: metrics and activity outlive a reload.
        self.observer = observer if observer is not None else Observer()
        self.status = status if status is not None else ControlStatus()
        self.status.watch(self.observer.metrics)
        self._dashboard = (
            None
            if admin_hashes is None
            else Dashboard(
                runtimes=self._runtimes,
                admin_hashes=admin_hashes,
                activity=self.observer.activity,
                sign_ins=self._sign_ins,
            )
        )
        self.settings: GatewaySettings | None = None
        self._open: dict[HttpExchange, asyncio.Task[Any] | None] = {}  # requests in flight
        self._ending: set[HttpExchange] = set()
        self._retiring: set[asyncio.Task[None]] = set()
        if runtime is not None:
            self._install(runtime)

    def _install(self, runtime: Runtime | ServedProjects) -> None:
        self.settings = GatewaySettings(
            runtime,
            max_body_bytes=self._max_body_bytes,
            keepalive_seconds=self._keepalive_seconds,
            observer=self.observer,
        )
        version = self.settings.served.version
        if version is not None:
            self.observer.metrics.set_config_version(version)

    def _runtimes(self) -> dict[str, Runtime]:
        settings = self.settings
        return {} if settings is None else dict(settings.served.runtimes)

    @property
    def dashboard(self) -> Dashboard | None:
        """The `/ui` app (None without admin keys)."""
        return self._dashboard

    @property
    def control(self) -> RuntimeSource | None:
        """What keeps the runtimes current (None: a runtime served as it was loaded)."""
        return self._control

    @property
    def runtime(self) -> Runtime | None:
        """The runtime being served (None before startup)."""
        return None if self.settings is None else self.settings.runtime

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        kind = scope["type"]
        if kind == "http":
            method = _routed_method(scope)
            served = ENDPOINTS.get((method, scope["path"]))
            if served is None and method in ("GET", "DELETE"):
                served = _parameterized_handler(method, scope["path"])
            settings = self.settings
            if served is None or settings is None:
                beside = self._beside(scope["path"])
                if beside is not None:
                    await beside(scope, receive, send)
                    return
                await _reply(send, await self._unrouted(scope))
                return
            exchange = HttpExchange(scope, receive, send, settings, served.fmt)
            await self._serve(exchange, served, settings)
        elif kind == "lifespan":
            await self._lifespan(receive, send)

    async def serve_cycle(self, cycle: RequestCycle) -> None:
        """Serve one request the server hands over directly: the gateway's endpoints without
        the ASGI messages (the caller's disconnect reaches the handler through
        `RequestCycle.on_leave`); any other path through the ASGI call."""
        method = "GET" if cycle.method == "HEAD" else cycle.method
        path = cycle.path
        served = ENDPOINTS.get((method, path))
        if served is None and method in ("GET", "DELETE"):
            served = _parameterized_handler(method, path)
        settings = self.settings
        if served is None or settings is None:
            await self(cycle.scope, cycle.receive, cycle.send)
            return
        await self._serve(HttpExchange.direct(cycle, settings, served.fmt), served, settings)

    async def _serve(
        self, exchange: HttpExchange, served: PathHandler, settings: GatewaySettings
    ) -> None:
        """Rules 2, 3 and 5 for one request to a gateway endpoint."""
        task = self._open[exchange] = asyncio.current_task()
        observer = settings.observer
        opened = (
            observer.request_started(exchange.method, exchange.path, exchange.headers)
            if served.reads_body
            else None
        )
        try:
            if not served.reads_body:
                await served.handler(exchange)
            else:
                exchange.caller()  # Rule 2: a missing or unknown key is refused unread
                if await exchange.read_body(settings.max_body_bytes):
                    cycle = exchange.cycle
                    if cycle is None:
                        await _watched(served.handler, exchange, task)
                    else:  # Rule 2, the server saying when the caller leaves (inline: no
                        # coroutine between the request's task and the handler)
                        assert task is not None
                        cycle.on_leave = _leaving(exchange, task)
                        try:
                            await served.handler(exchange)
                        except asyncio.CancelledError:
                            if not exchange.gone:
                                raise
                            task.uncancel()
                        finally:
                            cycle.on_leave = None
        except asyncio.CancelledError:
            if exchange not in self._ending:
                raise
            _uncancel()
            await _failed(exchange, ShuttingDown("the gateway is shutting down"))
        except Exception as exc:  # noqa: BLE001 - Rule 3: every failure is answered
            await _failed(exchange, exc)
        finally:
            del self._open[exchange]
            self._ending.discard(exchange)
            observer.request_done(
                exchange.method,
                exchange.path,
                exchange.status,
                exchange.began,
                exchange.record,
                gone=exchange.gone,
                failure=exchange.failure,
                caller_id=exchange.request_id,
                sent_id=exchange.sent_id,
                key=exchange.key_name(),
                project=exchange.project(),
                opened=opened,
            )
            failure, exchange.failure = exchange.failure, None
            release_frames(failure)  # Rule 3: the failure's frames hold the request's body

    def _beside(self, path: str) -> Callable[..., Awaitable[None]] | None:
        """The app beside the gateway's endpoints that serves `path`, if any: the dashboard at
        `/ui`, the admin API under `/admin/` (Rule 6)."""
        if self._dashboard is not None and _is_ui(path):
            return self._dashboard
        if self._admin_context is not None and path.startswith("/admin/"):
            return self._admin_app()
        return None

    def _admin_app(self) -> Callable[..., Awaitable[None]]:
        """Rule 6: the admin API, built on first use."""
        if self._admin is None:
            from turnout.gateway.admin.app import AdminApp  # noqa: PLC0415 - on first use

            assert self._admin_context is not None
            self._admin = AdminApp(
                self._admin_context, activity=self.observer.activity, sign_ins=self._sign_ins
            )
        return self._admin

    async def _unrouted(self, scope: MutableMapping[str, Any]) -> Reply:
        """Rule 1: `/readyz`, 404, 405, or 503 before the runtime is loaded."""
        path, method = scope["path"], _routed_method(scope)
        fmt = ANTHROPIC if path.startswith(_ANTHROPIC_PATHS) else OPENAI
        methods = _PATHS.get(path) or _parameterized(path)
        if path == "/readyz" and method == "GET":
            status, body = await readiness(self.settings, self.status)
            return json_reply(status, body)
        if path == "/healthz" and method == "GET":
            return json_reply(200, {"status": "ok"})
        if methods is None:
            error: Exception = NotFound(f"no endpoint {path}")
        elif method not in methods:
            error = MethodNotAllowed(
                f"{path} does not accept {method} (allowed: {', '.join(methods)})"
            )
        else:
            error = NotReady("the gateway is starting: its configuration is not loaded yet")
        sent = next((v for k, v in scope["headers"] if k == b"x-request-id"), None)
        request_id = caller_request_id(sent.decode("latin-1") if sent is not None else None)
        reply = error_reply(error, fmt, request_id=request_id or new_request_id())
        if methods is not None and method not in methods:
            reply.headers.append((b"allow", ", ".join(methods).encode()))
        return reply

    async def _lifespan(
        self,
        receive: Callable[[], Awaitable[MutableMapping[str, Any]]],
        send: Callable[[MutableMapping[str, Any]], Awaitable[None]],
    ) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                try:
                    if self._control is not None:
                        served = await self._control.start(self.swap_runtime)
                        if self.settings is None:
                            self._install(served)
                    elif self.settings is None and self._load is not None:
                        self._install(self._load())
                    if self.settings is not None:  # health shared with other replicas
                        await self.settings.served.start()
                        for each in self.settings.served.runtimes.values():
                            self.settings.observer.watch_state(each)
                except Exception as exc:  # noqa: BLE001 - reported to the server, which stops
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._control is not None:
                    await self._control.aclose()
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def aclose(self) -> None:
        """Close every runtime's provider connection pools (and add the counts still
        pending to the metrics)."""
        self.observer.metrics.flush()
        if self.settings is not None:
            for runtime in self.settings.served.runtimes.values():
                await runtime.aclose()

    def end_requests(self) -> None:
        """Rule 5: end every request in flight (a stream with an in-stream error event)."""
        for exchange, task in self._open.items():
            if task is not None and not (exchange.ended or exchange.gone):
                self._ending.add(exchange)
                task.cancel()

    def swap_runtime(self, runtime: Runtime | ServedProjects) -> asyncio.Task[None]:
        """Rule 5: serve `runtime` (or every runtime of a served set) from now on; the task
        closes the old runtimes' pools once the requests they serve have ended."""
        old = self.settings
        self._install(runtime)
        assert self.settings is not None
        kept = {id(each) for each in self.settings.served.runtimes.values()}
        before = set() if old is None else {id(each) for each in old.served.runtimes.values()}
        for each in self.settings.served.runtimes.values():
            if id(each) not in before:  # started by the reload (`Runtime.start`)
                self.settings.observer.watch_state(each)
        pending = [
            task
            for exchange, task in self._open.items()
            if task is not None and exchange.settings is old
        ]
        task = asyncio.get_running_loop().create_task(_retire(old, pending, kept))
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)
        return task


async def _retire(
    old: GatewaySettings | None, pending: list[asyncio.Task[Any]], kept: set[int]
) -> None:
    if pending:
        await asyncio.wait(pending)
    if old is not None:
        for runtime in old.served.runtimes.values():
            if id(runtime) not in kept:
                await runtime.aclose()


def _is_ui(path: str) -> bool:
    return path == "/ui" or path.startswith("/ui/")


def _routed_method(scope: MutableMapping[str, Any]) -> str:
    """Rule 4: HEAD is routed as GET."""
    method: str = scope["method"]
    return "GET" if method == "HEAD" else method


def _uncancel() -> None:
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()


async def _reply(send: Callable[[MutableMapping[str, Any]], Awaitable[None]], reply: Reply) -> None:
    headers = [*reply.headers, (b"content-length", str(len(reply.body)).encode())]
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": reply.body, "more_body": False})


async def _watched(
    handler: Callable[[HttpExchange], Awaitable[None]],
    exchange: HttpExchange,
    task: asyncio.Task[Any] | None,
) -> None:
    """Rule 2: run `handler` in `task` (the request's own), cancelled if the caller
    disconnects before the response ends.

    The watcher task starts only once the handler has run `WATCH_AFTER` seconds: most answers
    from a fast upstream are done before, and a timer is far cheaper than a task.
    """
    loop = asyncio.get_running_loop()
    assert task is not None
    watcher: list[asyncio.Task[None]] = []

    def start() -> None:
        if not exchange.ended:
            watcher.append(loop.create_task(_watch(exchange, task)))

    timer = loop.call_later(WATCH_AFTER, start)
    try:
        await handler(exchange)
    except asyncio.CancelledError:
        if not exchange.gone:
            raise
        task.uncancel()
    finally:
        timer.cancel()
        if watcher:
            watcher[0].cancel()


def _leaving(exchange: HttpExchange, task: asyncio.Task[Any]) -> Callable[[], None]:
    """Rule 2 for a request the server handed over directly: what the server calls when the
    caller leaves (the handler is cancelled, unless the response has ended)."""

    def left() -> None:
        if not exchange.ended:
            exchange.gone = True
            task.cancel()

    return left


async def _watch(exchange: HttpExchange, task: asyncio.Task[Any]) -> None:
    while True:
        message = await exchange.receive()
        if message["type"] == "http.disconnect":
            if not exchange.ended:
                exchange.gone = True
                task.cancel()
            return


async def _failed(exchange: HttpExchange, exc: Exception) -> None:
    """Rule 3: answer `exc` in the endpoint's format (or end a started response)."""
    if exchange.gone or exchange.ended:
        return
    exchange.adopt(getattr(exc, "routing", None))
    exchange.failure = exc
    request_id = exchange.reply_id()
    if not exchange.started:
        await exchange.reply(error_reply(exc, exchange.fmt, request_id=request_id))
        return
    await exchange.end(error_event(exc, exchange.fmt, request_id=request_id))
