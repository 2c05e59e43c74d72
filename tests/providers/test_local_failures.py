"""Failures before anything is sent upstream are never the provider's: whatever step of
preparing a call fails (encoding the request, building headers, applying the caller's
credential, building the URL, opening a connection for a local reason), health counts nothing
and the route does not fail over as if the provider had failed."""

from __future__ import annotations

import asyncio
import errno
import ssl
from typing import TYPE_CHECKING, Any

import pytest

from turnout.errors import MalformedRequest, ProviderError
from turnout.providers import MockProvider, OpenAI
from turnout.providers._http1_pool import Pool
from turnout.routing.health import Breaker, Health
from turnout.routing.plan import CallerCredential
from turnout.routing.route import Route
from turnout.routing.target import Target
from turnout.wire.model import ChatRequest, Message, RawBody, Tool

from ._raw_http import OK, RawServer, answering

if TYPE_CHECKING:
    from collections.abc import Callable


def nested(depth: int) -> dict[str, Any]:
    """A JSON object `depth` levels deep."""
    value: dict[str, Any] = {"leaf": True}
    for _ in range(depth):
        value = {"inner": value}
    return value


def raising(exc: BaseException) -> Callable[..., Any]:
    """A stand-in for a method or function that raises `exc`."""

    def fail(*_: object, **__: object) -> Any:
        raise exc

    return fail


def _break_headers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OpenAI, "call_headers", raising(KeyError("content-type")))


def _break_credential(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OpenAI, "credential_headers", raising(TypeError("not a string")))


def _break_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OpenAI, "chat_url", raising(ValueError("no deployment")))


def _no_descriptors_left(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = asyncio.get_running_loop()
    full = OSError(errno.EMFILE, "Too many open files")
    monkeypatch.setattr(loop, "create_connection", raising(full))


def _break_the_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Pool, "acquire", raising(AttributeError("_idle")))


def _break_tls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ssl, "create_default_context", raising(ssl.SSLError("no CA store")))


STEPS: dict[str, Callable[[pytest.MonkeyPatch], None]] = {
    "header building": _break_headers,
    "credential application": _break_credential,
    "URL building": _break_url,
    "connection: no descriptors left": _no_descriptors_left,
    "connection: a bug in the pool": _break_the_pool,
    "connection: no TLS context": _break_tls,
}


async def ask_route(route: Route, request: ChatRequest, *, stream: bool) -> None:
    """One request through `route`, whole or streamed to its end."""
    if stream:
        async for _ in route.stream(request):
            pass
    else:
        await route.complete(request)


def assert_nothing_counted(route: Route, backup: MockProvider, server: RawServer) -> None:
    """Health holds no failure, the backup was not asked, and nothing reached the upstream."""
    assert all(key.failures == 0 and key.state == "available" for key in route.health.snapshot())
    assert backup.requests == []
    assert (server.connections, server.requests) == (0, [])


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("stream", [False, True])
async def test_a_local_failure_before_the_send_counts_for_nothing(
    monkeypatch: pytest.MonkeyPatch, step: str, stream: bool
) -> None:
    """A local failure at each step before the send is a 500 that health never counts."""
    backup = MockProvider("backup")
    async with RawServer(answering(OK)) as server:
        https = step == "connection: no TLS context"
        url = server.url("/v1").replace("http://", "https://") if https else server.url("/v1")
        if step == "credential application":
            own = OpenAI(base_url=url, credential_mode="passthrough")
            primary = own.with_credential(CallerCredential("sk-caller-0123456789"))
        else:
            primary = OpenAI("sk-test", base_url=url)
        route = Route(
            "r",
            [Target("primary", primary, "gpt-4o"), Target("backup", backup, "gpt-4o")],
            health=Health(breaker=Breaker(failures=1, open_for=60)),
        )
        STEPS[step](monkeypatch)
        with pytest.raises(ProviderError) as caught:
            await ask_route(route, ChatRequest([Message.user("hi")]), stream=stream)
        monkeypatch.undo()
        await primary.aclose()
    error = caught.value
    assert (error.status, error.error_class, error.reason) == (
        500,
        "invalid_request",
        "internal error",
    )
    assert "nothing was sent" in error.message
    for text in ("content-type", "not a string", "no deployment", "_idle", "no CA store"):
        assert text not in error.message
    assert_nothing_counted(route, backup, server)


def _nested_source() -> ChatRequest:
    deep = b'{"inner":' * 300 + b"{}" + b"}" * 300  # more than orjson writes, as a caller may
    body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}], "x": %s}' % deep
    return ChatRequest([Message.user("hi")], source=RawBody("openai-chat", body))


def _nested_tool() -> ChatRequest:
    return ChatRequest([Message.user("hi")], tools=[Tool("t", parameters=nested(300))])


@pytest.mark.parametrize("make", [_nested_source, _nested_tool], ids=["same format", "encoded"])
@pytest.mark.parametrize("stream", [False, True])
async def test_a_request_too_deep_to_encode_is_the_callers_fault(
    make: Callable[[], ChatRequest], stream: bool
) -> None:
    """A request nested 300 deep is 400 `cannot encode`: no failover, no health failure."""
    backup = MockProvider("backup")
    async with RawServer(answering(OK)) as server:
        primary = OpenAI("sk-test", base_url=server.url("/v1"))
        route = Route(
            "r",
            [Target("primary", primary, "gpt-4o"), Target("backup", backup, "gpt-4o")],
            health=Health(breaker=Breaker(failures=1, open_for=60)),
        )
        with pytest.raises(MalformedRequest) as caught:
            await ask_route(route, make(), stream=stream)
        await primary.aclose()
    assert (caught.value.status, caught.value.reason) == (400, "cannot encode")
    assert "nested too deeply" in caught.value.message
    assert_nothing_counted(route, backup, server)


async def test_requests_too_deep_never_open_the_breaker() -> None:
    """Three requests too deep to encode leave the breaker closed for the next caller."""
    backup = MockProvider("backup")
    answer = (
        b'{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},'
        b'"finish_reason":"stop"}]}'
    )
    response = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(answer), answer)
    async with RawServer(answering(response)) as server:
        primary = OpenAI("sk-test", base_url=server.url("/v1"))
        route = Route(
            "r",
            [Target("primary", primary, "gpt-4o"), Target("backup", backup, "gpt-4o")],
            health=Health(breaker=Breaker(failures=3, open_for=60)),
        )
        for _ in range(3):
            with pytest.raises(MalformedRequest):
                await route.complete(_nested_source())
        served = await route.complete(ChatRequest([Message.user("hi")]))
        await primary.aclose()
    assert served.text == "ok"
    assert served.routing is not None
    assert served.routing.answered == "primary"
    assert len(server.requests) == 1
