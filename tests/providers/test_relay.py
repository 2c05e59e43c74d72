"""Relayed same-format streams: plain content events come as opaque runs of their own bytes,
every other event decoded as always."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import orjson
import pytest

from turnout.errors import ProviderUnavailable
from turnout.providers import HttpTimeouts
from turnout.wire import anthropic_messages, openai_chat
from turnout.wire.sse import SSEDecoder

from .conftest import make_adapter
from .test_provider_conformance import drain

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from turnout.mock_upstream import ThreadedMockUpstream
    from turnout.providers import HttpProvider
    from turnout.wire.model import ChatChunk, ChatRequest

FORMATS = {"openai": openai_chat, "anthropic": anthropic_messages}


@pytest.fixture(params=sorted(FORMATS))
async def provider(
    request: pytest.FixtureRequest, upstream: ThreadedMockUpstream
) -> AsyncIterator[HttpProvider]:
    """An openai and an anthropic provider at the mock upstream."""
    upstream.reset()
    made = make_adapter(request.param, upstream, timeouts=HttpTimeouts(read=5.0))
    yield made
    await made.aclose()


def relayed(provider: HttpProvider, model: str, *, relay: bool = True) -> ChatRequest:
    """A caller's own streaming body in the provider's format, asking to relay (or not)."""
    codec = FORMATS[provider.kind]
    body = orjson.dumps(
        {
            "model": model,
            "max_tokens": 64,
            "stream": True,
            "messages": [{"role": "user", "content": "Why is checkout failing?"}],
        }
    )
    request: ChatRequest = codec.decode_request(body)
    assert request.source is not None
    request.source = dataclasses.replace(request.source, relay=relay)
    return request


def texts(chunks: list[ChatChunk], provider: HttpProvider) -> str:
    """The answer's text, read back from the chunks' own bytes."""
    decoder = FORMATS[provider.kind].StreamDecoder()
    events = SSEDecoder()
    out = []
    for chunk in chunks:
        assert chunk.raw is not None
        for event in events.feed(chunk.raw):
            out += [c.delta for c in decoder.feed(event)]
    return "".join(out)


async def test_plain_content_comes_opaque_the_rest_decoded(provider: HttpProvider) -> None:
    """The content events come as opaque chunks carrying content; the opening, the finish
    reason and the usage come decoded; the bytes hold the whole text."""
    chunks = [c async for c in provider.stream(relayed(provider, "m/fault:chunks=6"))]
    opaque = [c for c in chunks if c.opaque]
    assert opaque
    assert all(c.has_content and c.raw and c.model and c.raw_format for c in opaque)
    assert not chunks[0].opaque
    assert not chunks[0].has_content
    assert [c.finish_reason for c in chunks if c.finish_reason] == ["stop"]
    assert any(c.usage is not None and c.usage.output_tokens == 6 for c in chunks)
    assert texts(chunks, provider) == "mock answer from m mock answer"


async def test_without_relay_nothing_is_opaque(provider: HttpProvider) -> None:
    """A stream that does not ask to relay is decoded event by event."""
    chunks = [c async for c in provider.stream(relayed(provider, "m", relay=False))]
    assert not any(c.opaque for c in chunks)
    assert "".join(c.delta for c in chunks) == "mock answer from m"


async def test_a_malformed_event_is_left_out_and_counted(provider: HttpProvider) -> None:
    """A malformed event among relayed ones is in no chunk's bytes, and is counted."""
    chunks = [c async for c in provider.stream(relayed(provider, "m/fault:malformed=2"))]
    assert b"chatcmpl-broken" not in b"".join(c.raw or b"" for c in chunks)
    assert texts(chunks, provider) == "mock answer from m"
    assert provider.malformed_events == 1


async def test_a_stream_cut_after_relayed_content_raises_after_it(
    provider: HttpProvider,
) -> None:
    """The content relayed before a cut arrives first; the cut then raises."""
    seen: list[ChatChunk] = []
    with pytest.raises(ProviderUnavailable):
        await drain(provider.stream(relayed(provider, "m/fault:end=2")), seen)
    assert texts(seen, provider) == "mock answer"
