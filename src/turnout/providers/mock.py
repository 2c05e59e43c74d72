"""The `mock` provider kind: in-process, scripted, no network.

`MockProvider` runs the mock upstream's own handler (`turnout.mock_upstream`) in memory, behind
the same decoding as the HTTP adapters, so every fault of the mock upstream's grammar works on
it exactly as over a socket: by model name (`mock-429-retry-8`,
`gpt-4o-mini/fault:cut=2`), or by a script of steps (`MockProvider(script=["status=503",
"ok"])`). Delays (`latency`, `first_token`, `chunk_delay`) sleep on the given clock, so a
`FakeClock` runs them instantly.

Rule 1: a call never touches the network; each call's handler runs as its own task and is
cancelled when the call ends, so a hang or a stall ends with the call.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Literal, Protocol
from urllib.parse import urlsplit

from turnout.errors import ConfigError, ProviderError
from turnout.providers.base import (
    ANTHROPIC_MESSAGES,
    OPENAI_CHAT,
    EmbeddingsSupport,
    ProviderKeywords,
    refuse_unknown_keywords,
)
from turnout.providers.settings import ConfigRules, NamedFields
from turnout.providers.transport import HttpReply

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
    from typing import Self, Unpack

    from turnout.mock_upstream.app import MockUpstreamApp
    from turnout.mock_upstream.exchange import Request
    from turnout.mock_upstream.log import LoggedRequest
    from turnout.providers.settings import ProviderBuild
    from turnout.providers.transport import StreamReply
    from turnout.routing.clock import Clock

__all__ = ["MemoryTransport", "MockFields", "MockProvider"]

_END = b""
_HOLD = 86_400.0  # a hang holds a call for a day: in practice until the call is cancelled


def _connection_error(provider: str, message: str) -> ProviderError:
    return ProviderError.for_class(
        "provider_error", message, reason="connection", provider=provider
    )


class _MemoryExchange:
    """The mock upstream's `Exchange` (`turnout.mock_upstream.exchange`), in memory: its
    handler answers into it and `MemoryTransport` reads the answer, where the socket server's
    `HttpExchange` writes it to a connection."""

    def __init__(self, request: Request, provider: str) -> None:
        self.request = request
        self.started = False
        self.finished = False
        self._provider = provider
        loop = asyncio.get_running_loop()
        self._head: asyncio.Future[tuple[int, dict[str, str], bytes | None]] = loop.create_future()
        self._body: asyncio.Queue[bytes | ProviderError] = asyncio.Queue()

    @property
    def closed(self) -> bool:
        return False

    def _start(self, status: int, headers: Iterable[tuple[str, str]], body: bytes | None) -> None:
        if self.started:
            return
        self.started = True
        self._head.set_result((status, {k.lower(): v for k, v in headers}, body))

    def respond(
        self,
        status: int,
        body: bytes,
        *,
        content_type: str = "application/json",
        headers: Iterable[tuple[str, str]] = (),
    ) -> None:
        self._start(status, [("content-type", content_type), *headers], body)
        self.finished = True

    def start_stream(
        self,
        status: int = 200,
        *,
        content_type: str = "text/event-stream",
        headers: Iterable[tuple[str, str]] = (),
    ) -> None:
        self._start(status, [("content-type", content_type), *headers], None)

    async def send(self, data: bytes) -> None:
        if data:
            self._body.put_nowait(data)

    def end_stream(self) -> None:
        if not self.finished:
            self.finished = True
            self._body.put_nowait(_END)

    def cut_body(self, status: int, head: Iterable[tuple[str, str]], body: bytes) -> None:
        self._start(status, head, None)
        self._body.put_nowait(body[: len(body) // 2])

    def reset(self) -> None:
        self.fail(_connection_error(self._provider, "connection reset by the upstream"))

    def drop(self) -> None:
        message = "the response body was cut short" if self.started else "the upstream closed"
        self.fail(_connection_error(self._provider, message))

    def fail(self, error: ProviderError) -> None:
        """End the exchange with `error` (before or after its head)."""
        if not self._head.done():
            self.started = True
            self._head.set_exception(error)
        elif not self.finished:
            self.finished = True
            self._body.put_nowait(error)

    async def hold(self, limit: float) -> None:
        await asyncio.sleep(limit)

    async def head(self) -> tuple[int, dict[str, str], bytes | None]:
        """Status, headers, and the whole body when the answer was not streamed."""
        return await self._head

    async def chunks(self) -> AsyncIterator[bytes]:
        """The streamed body until its end (a cut raises `ProviderError`)."""
        while True:
            item = await self._body.get()
            if isinstance(item, ProviderError):
                raise item
            if item == _END:
                return
            yield item


class _MemoryStream:
    __slots__ = ("_exchange", "_whole", "headers", "status")

    def __init__(
        self, status: int, headers: dict[str, str], whole: bytes | None, exchange: _MemoryExchange
    ) -> None:
        self.status = status
        self.headers: Mapping[str, str] = headers
        self._whole = whole
        self._exchange = exchange

    async def chunks(self) -> AsyncIterator[bytes]:
        if self._whole is not None:
            yield self._whole
            return
        async for data in self._exchange.chunks():
            yield data

    async def read(self) -> bytes:
        return b"".join([data async for data in self.chunks()])


class MemoryTransport:
    """A `Transport` that hands each call to a `MockUpstreamApp` in this process."""

    def __init__(self, app: MockUpstreamApp, *, provider: str) -> None:
        self.app = app
        self.provider = provider
        self._tasks: set[asyncio.Task[None]] = set()

    def _begin(
        self, url: str, body: bytes, headers: Mapping[str, str], method: str = "POST"
    ) -> tuple[_MemoryExchange, asyncio.Task[None]]:
        from turnout.mock_upstream.exchange import Request  # noqa: PLC0415 - see MockProvider

        parts = urlsplit(url)
        request = Request(
            method,
            parts.path,
            query=parts.query,
            headers={k.lower(): v for k, v in headers.items()},
            body=body,
        )
        exchange = _MemoryExchange(request, self.provider)
        task = asyncio.get_running_loop().create_task(self._serve(exchange))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return exchange, task

    async def _serve(self, exchange: _MemoryExchange) -> None:
        try:
            await self.app(exchange)
        except asyncio.CancelledError:
            exchange.drop()  # whoever still reads sees a dropped connection, never a hang
            raise
        except Exception as exc:  # noqa: BLE001 - a broken handler is a broken upstream
            exchange.fail(_connection_error(self.provider, f"mock upstream failed: {exc!r}"))
            return
        if not exchange.finished:
            exchange.drop()

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> HttpReply:
        """Run the handler and collect its whole answer."""
        return await self.request("POST", url, body, headers)

    async def request(
        self, method: str, url: str, body: bytes, headers: Mapping[str, str]
    ) -> HttpReply:
        """Run the handler for `method` and collect its whole answer."""
        exchange, task = self._begin(url, body, headers, method)
        try:
            status, reply_headers, whole = await exchange.head()
            if whole is None:
                whole = b"".join([data async for data in exchange.chunks()])
            return HttpReply(status, reply_headers, whole)
        finally:
            await _stop(task)

    @contextlib.asynccontextmanager
    async def stream(
        self, url: str, body: bytes, headers: Mapping[str, str]
    ) -> AsyncIterator[StreamReply]:
        """Run the handler and hand back its answer as it is produced."""
        exchange, task = self._begin(url, body, headers)
        try:
            status, reply_headers, whole = await exchange.head()
            yield _MemoryStream(status, reply_headers, whole, exchange)
        finally:
            await _stop(task)

    async def aclose(self) -> None:
        """Cancel handlers still running."""
        for task in list(self._tasks):
            await _stop(task)


async def _stop(task: asyncio.Task[None]) -> None:
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


class MockFields(NamedFields, Protocol):
    """What a `mock` provider reads of its configuration besides its name: the `wire` it
    speaks (its `script` comes as `ProviderBuild.script`, in the mock upstream's grammar)."""

    @property
    def wire(self) -> Literal["openai-chat", "anthropic-messages"] | None: ...


class MockProvider(EmbeddingsSupport):
    """An in-process provider answering like the mock upstream (`kind: mock`, family none).

    `name` (default `mock`) is the provider id; `model` the default model; `script` a list of
    fault steps played by the next calls, whatever their model (`"status=429;retry_after=8"`,
    `"ok"`; see `turnout.mock_upstream`); `wire` `openai-chat` (default) or
    `anthropic-messages`; `clock` times the delays faults ask for (default: the loop's);
    `prices` and `credential_mode` as for every provider. `requests` lists what it was asked,
    oldest first.
    """

    kind = "mock"
    config_rules = ConfigRules(options=("wire", "script"))
    vendor = "mock"
    family = "none"

    @classmethod
    def from_config(cls, config: MockFields, build: ProviderBuild) -> Self:
        """The provider `config` describes (wire default `openai-chat`), sleeping on
        `build.clock`."""
        wire = config.wire or "openai-chat"
        return cls(config.name, script=build.script, wire=wire, clock=build.clock, **build.keywords)

    def __init__(
        self,
        name: str = "mock",
        *,
        script: Sequence[str] = (),
        wire: str = "openai-chat",
        clock: Clock | None = None,
        **keywords: Unpack[ProviderKeywords],
    ) -> None:
        refuse_unknown_keywords(self, keywords, ProviderKeywords.__optional_keys__)
        codecs = {"openai-chat": OPENAI_CHAT, "anthropic-messages": ANTHROPIC_MESSAGES}
        if wire not in codecs:
            raise ConfigError(f"wire: must be one of {', '.join(codecs)} (got {wire!r})")
        # Imported here, not with the module: a gateway without a mock provider never loads
        # the mock upstream (it is tens of milliseconds of start-up).
        from turnout.mock_upstream.app import MockUpstreamApp  # noqa: PLC0415
        from turnout.mock_upstream.faults import ANY_MODEL  # noqa: PLC0415

        self.app = MockUpstreamApp(log_limit=1000, hold_limit=_HOLD, clock=clock)
        if script:
            self.app.faults.script(ANY_MODEL, script)
        super().__init__(
            name=name,
            base_url=f"http://mock.invalid/{name}",
            wire=codecs[wire],
            transport=MemoryTransport(self.app, provider=name),
            **keywords,
        )
        self.supports_embeddings = wire == "openai-chat"

    def chat_url(self, model: str) -> str:
        """The mock endpoint of this provider's wire format."""
        if self.wire.format == "anthropic-messages":
            return f"{self.base_url}/v1/messages"
        return f"{self.base_url}/v1/chat/completions"

    def embeddings_url(self, model: str) -> str:
        """The mock embeddings endpoint."""
        return f"{self.base_url}/v1/embeddings"

    def script(self, *steps: str) -> None:
        """Queue more fault steps for the next calls."""
        from turnout.mock_upstream.faults import ANY_MODEL  # noqa: PLC0415 - see __init__

        self.app.faults.script(ANY_MODEL, steps)

    @property
    def requests(self) -> list[LoggedRequest]:
        """The calls received, oldest first (model, body, fault …)."""
        return self.app.log.entries()
