"""An upstream that echoes the credentials it was sent: its words reach the caller and the
routing record with every secret of the call scrubbed."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import orjson
import pytest

from turnout.errors import ProviderError, RouteExhausted
from turnout.providers import HttpOptions, OpenAI
from turnout.routing.plan import CallerCredential
from turnout.routing.route import Route
from turnout.routing.target import Target
from turnout.wire.model import ChatRequest, Message

from ._raw_http import RawServer, chunked

if TYPE_CHECKING:
    from ._raw_http import Answer

OWN_KEY = "live-own-0123456789"
HEADER_SECRET = "team-token-0123456789"
OTHER_KEY = "other-provider-0123456789"


def _sent(request: bytes, name: bytes) -> str:
    """The value of header `name` in a raw request (empty when absent)."""
    for line in request.split(b"\r\n"):
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip().decode()
    return ""


def echoing(status: int, *, stream_event: bool = False) -> Answer:
    """An upstream that answers `status` with an error naming the credential it received, the
    `x-team` header and another provider's key; with `stream_event`, a 200 stream whose
    error event does the same."""

    async def answer(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        while (request := await server.read_request(reader)) is not None:
            key = _sent(request, b"authorization").removeprefix("Bearer ")
            said = f"bad key {key}; x-team {_sent(request, b'x-team')}; also {OTHER_KEY}"
            error = {"message": said, "type": f"invalid_{key}", "code": None}
            body = orjson.dumps({"error": error})
            if stream_event:
                writer.write(chunked(b"data: " + body + b"\n\n"))
            else:
                head = b"HTTP/1.1 %d Nope\r\ncontent-length: %d\r\n\r\n" % (status, len(body))
                writer.write(head + body)

    return answer


def _provider(server: RawServer, **keywords: object) -> OpenAI:
    options = HttpOptions(headers={"x-team": HEADER_SECRET}, secrets=(OTHER_KEY,))
    return OpenAI(base_url=server.url("/v1"), options=options, **keywords)  # type: ignore[arg-type]


def assert_clean(text: str) -> None:
    """None of the call's secrets appear in `text`."""
    for secret in (OWN_KEY, HEADER_SECRET, OTHER_KEY, "caller-own-0123456789"):
        assert secret not in text


@pytest.mark.parametrize("status", [401, 500])
@pytest.mark.parametrize("stream", [False, True])
async def test_an_echoed_key_is_scrubbed_from_the_error(status: int, stream: bool) -> None:
    """An error body echoing the call's secrets raises an error that holds none of them."""
    async with RawServer(echoing(status)) as server:
        provider = _provider(server, api_key=OWN_KEY)
        request = ChatRequest([Message.user("hi")], model="gpt-4o")
        call = anext(provider.stream(request)) if stream else provider.complete(request)
        with pytest.raises(ProviderError) as caught:
            await call
        await provider.aclose()
    error = caught.value
    assert error.status == status
    assert "bad key [redacted]" in error.message
    assert_clean(f"{error} {error.message} {error.error_type} {error.body!r} {error.args}")


async def test_a_callers_echoed_credential_is_scrubbed() -> None:
    """A passthrough call's credential echoed back is scrubbed too."""
    async with RawServer(echoing(401)) as server:
        own = _provider(server, credential_mode="passthrough")
        view = own.with_credential(CallerCredential("caller-own-0123456789"))
        with pytest.raises(ProviderError) as caught:
            await view.complete(ChatRequest([Message.user("hi")], model="gpt-4o"))
        await own.aclose()
    assert "bad key [redacted]" in caught.value.message
    assert_clean(f"{caught.value} {caught.value.body!r}")


async def test_echoed_secrets_never_reach_the_routing_record() -> None:
    """Secrets echoed in error events and statuses never reach the routing record."""
    async with (
        RawServer(echoing(200, stream_event=True)) as events,
        RawServer(echoing(503)) as status,
    ):
        first = _provider(events, api_key=OWN_KEY)
        second = _provider(status, api_key=OWN_KEY)
        route = Route("r", [Target("a", first, "gpt-4o"), Target("b", second, "gpt-4o")])
        with pytest.raises(RouteExhausted) as caught:
            async for _ in route.stream([Message.user("hi")]):
                pass
        await first.aclose()
        await second.aclose()
    exhausted = caught.value
    assert exhausted.routing is not None
    assert exhausted.routing.attempts[0].reason == "upstream error (invalid_[redacted])"
    assert_clean(f"{exhausted} {exhausted.last_error} {exhausted.routing!r}")


async def test_a_huge_echoing_error_body_is_kept_short_and_clean() -> None:
    """An error body of 8 MB is kept to its first 64 KiB, scrubbed, and quickly."""

    async def answer(
        server: RawServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await server.read_request(reader)
        body = f"bad key {OWN_KEY} ".encode() * 300_000
        writer.write(b"HTTP/1.1 500 No\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
        await server.wait_closed(reader)

    async with RawServer(answer) as server:
        provider = _provider(server, api_key=OWN_KEY)
        with pytest.raises(ProviderError) as caught:
            await asyncio.wait_for(
                provider.complete(ChatRequest([Message.user("hi")], model="m")), 10
            )
        await provider.aclose()
    body = caught.value.body
    assert isinstance(body, bytes)
    assert len(body) <= 64 * 1024
    assert_clean(f"{caught.value} {body!r}")
