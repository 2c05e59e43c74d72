"""Running the mock upstream: in the current event loop, in a background thread, or as a command.

Rule 1: a server binds 127.0.0.1 unless told otherwise; port 0 picks a free port, read it back
from `.port` / `.url`.
Rule 2: `stop()` aborts every open connection, so hung and stalled requests end at once.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import threading
from typing import TYPE_CHECKING, Any

import orjson

from turnout.mock_upstream.app import MockUpstreamApp
from turnout.mock_upstream.command import DEFAULT_PORT, add_arguments, parser_options
from turnout.mock_upstream.http import start_http_server

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from contextlib import AbstractAsyncContextManager
    from types import TracebackType
    from typing import Self

    from turnout.mock_upstream.http import _Connection

__all__ = [
    "DEFAULT_PORT",
    "LoopThread",
    "MockUpstream",
    "ThreadedMockUpstream",
    "main",
    "new_event_loop",
]


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A uvloop loop when uvloop is installed, else asyncio's default loop."""
    try:
        import uvloop  # noqa: PLC0415 - optional speed-up
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class MockUpstream:
    """A mock upstream served in the running event loop.

    ::

        async with MockUpstream() as upstream:
            client = OpenAI(api_key="sk-test", base_url=upstream.openai_base_url)

    `host` defaults to 127.0.0.1, `port` to 0 (a free port); `hold_limit` (seconds, default 300)
    bounds hangs and stalls; `log_limit` (default 10,000) bounds the request log;
    `gemini_key` (default none) is the key Gemini requests must carry in `x-goog-api-key`;
    `vertex_token` (default none) a bearer token Vertex requests may carry besides the ones
    its `POST /token` endpoint issues.
    `aws_credentials` (access key id, secret key; default none) are what Bedrock requests
    must be signed with.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        hold_limit: float = 300.0,
        log_limit: int = 10_000,
        gemini_key: str | None = None,
        vertex_token: str | None = None,
        aws_credentials: tuple[str, str] | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.app = MockUpstreamApp(
            log_limit=log_limit,
            hold_limit=hold_limit,
            gemini_key=gemini_key,
            vertex_token=vertex_token,
            aws_credentials=aws_credentials,
        )
        self._server: asyncio.Server | None = None
        self._live: set[_Connection] = set()

    @property
    def url(self) -> str:
        """`http://host:port` (no trailing slash)."""
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """The base URL an OpenAI client takes (`…/v1`)."""
        return f"{self.url}/v1"

    async def start(self) -> None:
        """Start listening (idempotent)."""
        if self._server is not None:
            return
        self._server, self._live = await start_http_server(self.app, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        """Stop listening and abort every open connection."""
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for conn in list(self._live):
            conn.drop()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 5.0)

    async def serve_forever(self) -> None:
        """Start and serve until cancelled."""
        await self.start()
        assert self._server is not None
        try:
            await self._server.serve_forever()
        finally:
            await self.stop()

    async def __aenter__(self) -> MockUpstream:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()


class LoopThread:
    """A server held open on its own event loop in a daemon thread, for sync code and for test
    fixtures that outlive one test's event loop; a subclass says what it serves (`_opened`, an
    async context manager: entered means serving, left means stopped).

    `start()` returns once it is entered (or raises what entering raised, or `RuntimeError`
    after `limit` seconds: `what` names the server in it); `stop()` leaves it and joins the
    thread (at most `limit` seconds); `with` does both. `call` runs a function on that loop.
    """

    def __init__(self, name: str, *, what: str, limit: float = 10.0) -> None:
        self._name = name
        self._what = what
        self._limit = limit
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopped: asyncio.Event | None = None

    def _opened(self) -> AbstractAsyncContextManager[object]:
        """What the thread holds open while it serves."""
        raise NotImplementedError

    def start(self) -> Self:
        """Start the thread and wait until the server is entered (bounded)."""
        ready = threading.Event()
        failure: list[BaseException] = []

        async def run() -> None:
            self._stopped = asyncio.Event()
            try:
                async with self._opened():
                    ready.set()
                    await self._stopped.wait()
            except BaseException as exc:
                if not ready.is_set():
                    failure.append(exc)
                    ready.set()
                raise

        def target() -> None:
            loop = self._loop
            assert loop is not None
            asyncio.set_event_loop(loop)
            with contextlib.suppress(BaseException):
                loop.run_until_complete(run())
            loop.close()

        self._loop = new_event_loop()
        self._thread = threading.Thread(target=target, name=self._name, daemon=True)
        self._thread.start()
        if not ready.wait(self._limit):
            raise RuntimeError(f"{self._what} did not start within {self._limit:g} s")
        if failure:
            raise failure[0]
        return self

    def call(self, function: Callable[..., Any], *args: Any) -> Any:
        """Run `function(*args)` on the thread's loop and return its result."""
        loop = self._loop
        assert loop is not None, f"{self._what} is not started"

        async def run() -> Any:
            return function(*args)

        return asyncio.run_coroutine_threadsafe(run(), loop).result(self._limit)

    def stop(self) -> None:
        """Leave what `_opened` gave and join the thread (bounded)."""
        loop, stopped = self._loop, self._stopped
        if loop is None or stopped is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(stopped.set)
        if self._thread is not None:
            self._thread.join(self._limit)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class ThreadedMockUpstream(LoopThread):
    """A mock upstream on its own event loop in a daemon thread (for sync code and for test
    fixtures that outlive one test's event loop).

    ``start()`` returns once it listens (at most 10 s); ``stop()`` ends it. Reads of the log go
    through the server's loop, so they are safe from any thread.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, **options: Any) -> None:
        super().__init__("mock-upstream", what="the mock upstream")
        self._upstream = MockUpstream(host, port, **options)

    @property
    def url(self) -> str:
        """`http://host:port`."""
        return self._upstream.url

    @property
    def openai_base_url(self) -> str:
        """`http://host:port/v1`."""
        return self._upstream.openai_base_url

    @property
    def app(self) -> MockUpstreamApp:
        """The handler (touch it only through `call`)."""
        return self._upstream.app

    def _opened(self) -> MockUpstream:
        return self._upstream

    def requests(self) -> list[dict[str, Any]]:
        """The request log as JSON-ready dicts (oldest first)."""
        return list(orjson.loads(self.call(self.app.log.to_json)))

    def reset(self) -> None:
        """Clear the log, scripts and sequence positions."""
        self.call(self.app.log.clear)
        self.call(self.app.faults.clear)

    def script(self, model: str, faults: Sequence[str]) -> int:
        """Queue fault steps for `model` (see `FaultBook.script`)."""
        return int(self.call(self.app.faults.script, model, list(faults)))


def _aws_credentials(args: argparse.Namespace) -> tuple[str, str] | None:
    key_id, secret = args.aws_access_key_id, args.aws_secret_access_key
    if bool(key_id) != bool(secret):
        raise SystemExit("--aws-access-key-id and --aws-secret-access-key go together")
    return (key_id, secret) if key_id and secret else None


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM with the parsed `args`; returns the exit status."""
    upstream = MockUpstream(
        args.host,
        args.port,
        hold_limit=args.hold_limit,
        log_limit=args.log_limit,
        gemini_key=args.gemini_key,
        vertex_token=getattr(args, "vertex_token", None),
        aws_credentials=_aws_credentials(args),
    )

    async def serve() -> None:
        await upstream.start()
        print(f"mock upstream listening on {upstream.url}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await upstream.stop()

    loop = new_event_loop()
    try:
        loop.run_until_complete(serve())
    finally:
        loop.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m turnout.mock_upstream [--host H] [--port P]`."""
    parser = argparse.ArgumentParser(prog="turnout mock-upstream", **parser_options())
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
