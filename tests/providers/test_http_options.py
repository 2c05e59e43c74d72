"""`HttpOptions`: one value for a provider's HTTP settings, and the keywords that still set it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from turnout.providers import HttpOptions, HttpTimeouts, MockProvider, OpenAI
from turnout.providers.http1 import Http1Transport
from turnout.wire.model import ChatRequest, Message

from .conftest import make_adapter

if TYPE_CHECKING:
    from turnout.mock_upstream import ThreadedMockUpstream

HTTP_KINDS = ("openai", "anthropic", "openai-compatible", "azure-openai", "azure-anthropic")


def test_defaults() -> None:
    """No extra headers, 10 s connect, 600 s read, 100 connections, answers up to 32 MiB."""
    options = HttpOptions()
    assert dict(options.headers) == {}
    assert options.timeouts == HttpTimeouts(connect=10.0, read=600.0)
    assert options.max_connections == 100
    assert options.max_response_bytes == 32 * 1024 * 1024


def test_max_response_bytes_must_be_positive() -> None:
    """A `max_response_bytes` below 1 is refused when the options are made."""
    with pytest.raises(ValueError, match="max_response_bytes"):
        HttpOptions(max_response_bytes=0)


def test_headers_are_a_read_only_copy() -> None:
    """A later change to the caller's dict is not seen, the mapping refuses writes, and options
    still compare and hash."""
    given = {"x-team": "a"}
    options = HttpOptions(headers=given)
    given["x-team"] = "b"
    assert options.headers == {"x-team": "a"}
    with pytest.raises(TypeError):
        options.headers["x-team"] = "c"  # type: ignore[index]
    assert options == HttpOptions(headers={"x-team": "a"})
    assert hash(options) == hash(HttpOptions(headers={"x-team": "b"}))


@pytest.mark.parametrize("kind", HTTP_KINDS)
def test_options_configure_every_http_kind(kind: str, upstream: ThreadedMockUpstream) -> None:
    """Every HTTP kind sends the options' headers; its client takes their other settings."""
    timeouts = HttpTimeouts(connect=3.0, read=30.0)
    options = HttpOptions(
        headers={"X-Team": "a"}, timeouts=timeouts, max_connections=7, max_response_bytes=4096
    )
    provider = make_adapter(kind, upstream, options=options)
    assert provider.options is options
    assert provider.timeouts is timeouts
    assert provider.call_headers(ChatRequest([Message.user("hi")], model="m"))["x-team"] == "a"
    transport = provider._transport
    assert isinstance(transport, Http1Transport)
    assert (transport.timeouts, transport._max_connections) == (timeouts, 7)
    assert transport.max_response_bytes == 4096


@pytest.mark.parametrize("kind", HTTP_KINDS)
def test_loose_keywords_make_the_same_options(kind: str, upstream: ThreadedMockUpstream) -> None:
    """`headers`, `timeouts` and `max_connections` as keywords set those fields of the options;
    one left out keeps its default."""
    timeouts = HttpTimeouts(read=30.0)
    given = make_adapter(
        kind, upstream, headers={"x-team": "a"}, timeouts=timeouts, max_connections=7
    )
    assert given.options == HttpOptions({"x-team": "a"}, timeouts, 7)
    assert make_adapter(kind, upstream, timeouts=timeouts).options == HttpOptions(timeouts=timeouts)
    assert make_adapter(kind, upstream, timeouts=None).options == HttpOptions()


def test_options_and_loose_keywords_together_are_refused() -> None:
    """Which of the two should win is a guess, so giving both is a TypeError naming the keyword."""
    with pytest.raises(TypeError, match="max_connections: give these in `options`"):
        OpenAI("k", options=HttpOptions(), max_connections=5)


def test_an_unknown_keyword_is_refused() -> None:
    """A misspelt keyword is a TypeError naming it, as for any Python function."""
    with pytest.raises(
        TypeError, match=r"OpenAI.__init__\(\) got an unexpected keyword argument 'timeout'"
    ):
        OpenAI("k", timeout=HttpTimeouts())  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'headers'"):
        MockProvider(headers={"x": "y"})  # type: ignore[call-arg]
