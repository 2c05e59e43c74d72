"""One conformance suite for every provider adapter, against the mock upstream over real sockets
(the `mock` adapter plays the same faults in process)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from turnout.errors import ProviderError, ProviderTimeout, ProviderUnavailable, StreamBroken
from turnout.providers import HttpTimeouts, MockProvider
from turnout.routing.route import Route
from turnout.routing.target import Target
from turnout.wire.model import ChatChunk, ChatRequest, Message, RawBody

from .conftest import VERTEX_TOKEN, logged, make_adapter

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from turnout.mock_upstream import ThreadedMockUpstream
    from turnout.providers import HttpProvider


def ask(model: str, text: str = "Why is checkout failing?") -> ChatRequest:
    """A one-message request for `model`."""
    return ChatRequest([Message.user(text)], model=model)


async def collect(provider: HttpProvider, request: ChatRequest) -> list[ChatChunk]:
    """Every chunk of a stream."""
    return [chunk async for chunk in provider.stream(request)]


async def drain(stream: AsyncIterator[ChatChunk], seen: list[ChatChunk]) -> None:
    """Read `stream` into `seen`, chunk by chunk, so the chunks before a failure are kept."""
    async for chunk in stream:
        seen.append(chunk)  # noqa: PERF401 - kept one by one until the stream fails


async def test_complete_answers(adapter: HttpProvider, upstream: ThreadedMockUpstream) -> None:
    """A whole answer: text, finish reason, usage, and the upstream's request id."""
    response = await adapter.complete(ask("gpt-4o-mini"))
    log = logged(adapter, upstream)
    assert response.text == "mock answer from gpt-4o-mini"
    assert response.finish_reason == "stop"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (6, 4)
    assert response.provider_request_id == log[-1]["request_id"]
    assert response.model == "gpt-4o-mini"


async def test_stream_answers(adapter: HttpProvider, upstream: ThreadedMockUpstream) -> None:
    """A stream: held-back opening chunk (Gemini sends none), the text, then finish and usage;
    request ids kept."""
    chunks = await collect(adapter, ask("gpt-4o-mini"))
    request_id = logged(adapter, upstream)[-1]["request_id"]
    assert chunks[0].has_content is (adapter.wire_format == "gemini-generate")
    assert "".join(c.delta for c in chunks) == "mock answer from gpt-4o-mini"
    assert [c.finish_reason for c in chunks if c.finish_reason] == ["stop"]
    usage = [c.usage for c in chunks if c.usage is not None][-1]
    assert usage.output_tokens == 4
    assert {c.provider_request_id for c in chunks} == {request_id}


ERROR_CASES = [
    ("status=408", "timeout", 408),
    ("quota", "quota_exhausted", None),
    ("status=429", "rate_limited", 429),
    ("status=503", "provider_error", 503),
    ("status=529", "provider_error", 529),
    ("status=409", "provider_error", 409),
    ("context_length", "context_length", 400),
    ("content_policy", "content_filtered", 400),
    ("status=401", "auth", 401),
    ("status=403", "auth", 403),
    ("status=400", "invalid_request", 400),
    ("status=404", "invalid_request", 404),
    ("status=501", "invalid_request", 501),
]


@pytest.mark.parametrize(("spec", "error_class", "status"), ERROR_CASES)
async def test_error_classes(
    adapter: HttpProvider,
    upstream: ThreadedMockUpstream,
    spec: str,
    error_class: str,
    status: int | None,
) -> None:
    """Each error status or signal raises the ProviderError subclass of its error class."""
    with pytest.raises(ProviderError) as caught:
        await adapter.complete(ask(f"m/fault:{spec}"))
    error = caught.value
    assert error.error_class == error_class
    assert type(error) is type(ProviderError.for_class(error_class, ""))
    if status is not None:
        assert error.status == status
    assert error.provider == adapter.provider
    assert error.provider_request_id == logged(adapter, upstream)[-1]["request_id"]


async def test_its_own_key_refused_says_whose_key_it_was(adapter: HttpProvider) -> None:
    """An `auth` failure of a provider calling with its own key says the provider rejected
    its configured key, then the vendor's message, whole answer and stream alike; a 403 that
    names a content-policy reason is no key problem and keeps its message."""
    prefix = f'provider "{adapter.name}" rejected its configured key: '
    for spec in ("status=401", "status=403"):
        with pytest.raises(ProviderError) as whole:
            await adapter.complete(ask(f"m/fault:{spec}"))
        with pytest.raises(ProviderError) as streamed:
            await collect(adapter, ask(f"m/fault:{spec}"))
        for error in (whole.value, streamed.value):
            assert error.message.startswith(prefix), error.message
            assert len(error.message) > len(prefix)
            assert str(error).endswith(error.message)
    with pytest.raises(ProviderError) as filtered:
        await adapter.complete(ask("m/fault:content_policy"))
    assert not filtered.value.message.startswith(prefix)


@pytest.mark.parametrize("spec", ["status=503", "quota", "status=429"])
async def test_stream_errors_before_the_first_byte(adapter: HttpProvider, spec: str) -> None:
    """An error status on a stream raises the same classified error before any chunk."""
    expected = {"status=503": "provider_error", "quota": "quota_exhausted"}.get(
        spec, "rate_limited"
    )
    with pytest.raises(ProviderError) as caught:
        await collect(adapter, ask(f"m/fault:{spec}"))
    assert caught.value.error_class == expected


async def test_reset_is_a_connection_failure(adapter: HttpProvider) -> None:
    """A reset before the headers is provider_error with reason `connection`."""
    for call in (adapter.complete, lambda r: collect(adapter, r)):
        with pytest.raises(ProviderUnavailable) as caught:
            await call(ask("mock-reset"))
        assert caught.value.reason == "connection"
        assert caught.value.status is None


async def test_a_request_reset_after_it_was_read_is_sent_once(
    adapter: HttpProvider, upstream: ThreadedMockUpstream
) -> None:
    """A request the upstream read whole then reset is logged once; the route fails over."""
    await adapter.complete(ask("gpt-4o-mini"))  # leaves a kept-alive connection to reuse
    backup = MockProvider("backup")
    route = Route(
        "reset",
        [Target("primary", adapter, "mock-reset"), Target("backup", backup, "gpt-4o")],
    )
    response = await route.complete([Message.user("hi")])
    assert response.text == "mock answer from gpt-4o"
    assert [entry["model"] for entry in logged(adapter, upstream)].count("mock-reset") == 1
    assert response.routing is not None
    failed = response.routing.attempts[0]
    assert (failed.outcome, failed.error_class) == ("failed", "provider_error")
    assert len(response.routing.attempts) == 2


@pytest.mark.parametrize(
    ("spec", "low", "high"),
    [
        ("retry_after=8", 8.0, 8.0),
        ("retry_after_date=30", 27.0, 31.0),
        ("retry_after_ms=1500", 1.5, 1.5),
    ],
)
async def test_retry_after_forms(adapter: HttpProvider, spec: str, low: float, high: float) -> None:
    """Retry-After as seconds, as an HTTP date, or retry-after-ms, read as seconds."""
    with pytest.raises(ProviderError) as caught:
        await adapter.complete(ask(f"m/fault:status=429;{spec}"))
    assert caught.value.retry_after is not None
    assert low <= caught.value.retry_after <= high


async def test_malformed_chunk_is_skipped_and_counted(adapter: HttpProvider) -> None:
    """A malformed event is skipped (the text is whole) and counted on the provider."""
    chunks = await collect(adapter, ask("m/fault:malformed=2"))
    assert "".join(c.delta for c in chunks) == "mock answer from m"
    assert adapter.malformed_events == 1


async def test_missing_terminator_is_finalised_with_usage(adapter: HttpProvider) -> None:
    """A stream that ends after its finish reason without [DONE]/message_stop is complete."""
    chunks = await collect(adapter, ask("m/fault:no_done"))
    assert [c.finish_reason for c in chunks if c.finish_reason] == ["stop"]
    assert [c.usage for c in chunks if c.usage][-1].output_tokens == 4


async def test_stream_without_finish_reason_fails(adapter: HttpProvider) -> None:
    """A stream that ends cleanly with no finish reason raises provider_error after its text."""
    seen: list[ChatChunk] = []
    with pytest.raises(ProviderUnavailable, match="ended early"):
        await drain(adapter.stream(ask("m/fault:end=2")), seen)
    assert "".join(c.delta for c in seen) == "mock answer"


async def test_cut_stream_raises_after_content(adapter: HttpProvider) -> None:
    """A connection dropped mid-stream raises provider_error after the chunks it sent."""
    seen: list[ChatChunk] = []
    with pytest.raises(ProviderUnavailable) as caught:
        await drain(adapter.stream(ask("m/fault:cut=2")), seen)
    assert "".join(c.delta for c in seen) == "mock answer"
    assert caught.value.reason == "connection"


async def test_stream_cut_after_commit_is_stream_broken(adapter: HttpProvider) -> None:
    """Through a route, a stream cut after its first token ends in StreamBroken, no failover."""
    backup = MockProvider("backup")
    route = Route(
        "cut",
        [Target("primary", adapter, "m/fault:cut=2"), Target("backup", backup, "gpt-4o-mini")],
    )
    seen: list[ChatChunk] = []
    with pytest.raises(StreamBroken):
        await drain(route.stream([Message.user("hi")]), seen)
    assert "".join(c.delta for c in seen) == "mock answer"
    assert backup.requests == []


async def test_stream_cut_before_commit_fails_over(adapter: HttpProvider) -> None:
    """A stream cut before its first token fails over to the next target."""
    backup = MockProvider("backup")
    route = Route(
        "cut", [Target("primary", adapter, "m/fault:cut=0"), Target("backup", backup, "gpt-4o")]
    )
    text = "".join([chunk.delta async for chunk in route.stream([Message.user("hi")])])
    assert text == "mock answer from gpt-4o"


async def test_error_event_before_first_token(adapter: HttpProvider) -> None:
    """An in-stream error event before the first token raises provider_error with its type."""
    with pytest.raises(ProviderUnavailable) as caught:
        await collect(adapter, ask("mock-errorevent"))
    assert caught.value.error_type in {
        "overloaded_error",
        "server_error",
        "UNAVAILABLE",
        "ServiceUnavailableException",
        "InternalServerException",
    }
    assert caught.value.provider == adapter.provider


async def test_refusal_is_an_answer(adapter: HttpProvider) -> None:
    """A refusal is a normal answer whose finish reason is content_filter."""
    response = await adapter.complete(ask("mock-refuse"))
    assert response.finish_reason == "content_filter"
    chunks = await collect(adapter, ask("mock-refuse"))
    assert [c.finish_reason for c in chunks if c.finish_reason] == ["content_filter"]


BAD_BODIES = ["garbage", "truncated", "nonutf8", "html", "empty"]


@pytest.mark.parametrize("kind", BAD_BODIES)
@pytest.mark.parametrize("stream", [False, True])
async def test_bad_upstream_bytes_never_crash(
    adapter: HttpProvider, kind: str, stream: bool
) -> None:
    """Bad bytes (garbage, truncated, non-UTF-8, a proxy's HTML 502, empty) are provider_error."""
    request = ask(f"m/fault:body={kind}")
    call = collect(adapter, request) if stream else adapter.complete(request)
    with pytest.raises(ProviderError) as caught:
        await call
    assert caught.value.error_class == "provider_error"
    assert caught.value.provider == adapter.provider


async def test_wrong_content_type(adapter: HttpProvider) -> None:
    """Right bytes with a wrong content type are read; a JSON body on a stream is an error."""
    response = await adapter.complete(ask("m/fault:body=wrong_type"))
    assert response.text == "mock answer from m"
    # A JSON body is no event stream at all: Bedrock's framing refuses it outright.
    ending = "malformed" if adapter.kind == "bedrock" else "ended early"
    with pytest.raises(ProviderUnavailable, match=ending):
        await collect(adapter, ask("m/fault:body=wrong_type"))


async def test_timeout_through_a_route(adapter: HttpProvider) -> None:
    """A hung upstream becomes ProviderTimeout at the target's `timeout`."""
    route = Route("slow", [Target("only", adapter, "mock-hang", timeout=0.3)])
    started = time.monotonic()
    with pytest.raises(ProviderTimeout):
        await route.complete([Message.user("hi")])
    assert time.monotonic() - started < 3


async def test_first_token_timeout_through_a_route(adapter: HttpProvider) -> None:
    """A slow first token becomes ProviderTimeout at the target's `first_token_timeout`."""
    target = Target("only", adapter, "m/fault:first_token=5", first_token_timeout=0.3)
    route = Route("slow", [target])
    with pytest.raises(ProviderTimeout):
        await collect_route(route)


async def collect_route(route: Route) -> list[ChatChunk]:
    """Every chunk a route streams."""
    return [chunk async for chunk in route.stream([Message.user("hi")])]


def own_body(adapter: HttpProvider) -> RawBody:
    """A caller's body in the adapter's own format, with a field no codec knows."""
    if adapter.wire_format == "anthropic-messages":
        body: dict[str, Any] = {
            "model": "caller-model",
            "max_tokens": 7,
            "messages": [{"role": "user", "content": "hi"}],
            "x_unknown": {"kept": True},
            "routing": {"dropped": True},
        }
        headers = (("anthropic-version", "2099-01-01"), ("anthropic-beta", "tools-2099"))
        return RawBody("anthropic-messages", orjson.dumps(body), headers)
    if adapter.wire_format == "gemini-generate":
        body = {
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "x_unknown": {"kept": True},
            "routing": {"dropped": True},
        }
        return RawBody("gemini-generate", orjson.dumps(body))
    body = {
        "model": "caller-model",
        "messages": [{"role": "user", "content": "hi"}],
        "x_unknown": {"kept": True},
        "routing": {"dropped": True},
    }
    return RawBody("openai-chat", orjson.dumps(body))


async def test_same_format_forwards_the_callers_bytes(
    adapter: HttpProvider, upstream: ThreadedMockUpstream
) -> None:
    """Same format: unknown fields kept, `model` replaced, `routing` dropped; raw comes back."""
    request = ChatRequest([Message.user("hi")], model="wire-model", source=own_body(adapter))
    response = await adapter.complete(request)
    sent = logged(adapter, upstream)[-1]
    if adapter.wire_format == "bedrock-converse":
        # No caller speaks Converse: an OpenAI body is translated, its unknown fields left out.
        assert "x_unknown" not in sent["body"]
        assert sent["body"]["messages"] == [{"role": "user", "content": [{"text": "hi"}]}]
        assert response.raw is None
        return
    assert sent["body"]["x_unknown"] == {"kept": True}
    assert sent["model"] == "wire-model"
    assert "routing" not in sent["body"]
    assert response.raw is not None
    raw = orjson.loads(response.raw)
    assert raw.get("model", raw.get("modelVersion")) == "wire-model"
    if adapter.kind == "vertex" and adapter.wire_format == "anthropic-messages":
        assert sent["body"]["anthropic_beta"] == ["tools-2099"]  # Vertex takes betas in the body
    elif adapter.kind == "bedrock":
        # Bedrock's InvokeModel takes the betas in the body, and no model or stream there.
        assert sent["body"]["anthropic_beta"] == ["tools-2099"]
        assert sent["body"]["anthropic_version"] == "bedrock-2023-05-31"
        assert "model" not in sent["body"]
    elif adapter.wire_format == "anthropic-messages":
        assert sent["headers"]["anthropic-beta"] == "tools-2099"


async def test_other_formats_are_encoded(
    adapter: HttpProvider, upstream: ThreadedMockUpstream
) -> None:
    """A request from code (or another format) is encoded into the adapter's own format."""
    request = ChatRequest([Message.user("hi")], model="wire-model", system=[], max_tokens=9)
    await adapter.complete(request)
    sent = logged(adapter, upstream)[-1]["body"]
    if adapter.wire_format == "gemini-generate":
        assert sent["contents"] == [{"role": "user", "parts": [{"text": "hi"}]}]
        assert sent["generationConfig"] == {"maxOutputTokens": 9}
        return
    if adapter.wire_format == "bedrock-converse":
        assert sent["messages"] == [{"role": "user", "content": [{"text": "hi"}]}]
        assert sent["inferenceConfig"] == {"maxTokens": 9}
        return
    assert sent["messages"][-1]["content"] in ("hi", [{"type": "text", "text": "hi"}])
    if adapter.wire_format == "anthropic-messages":
        assert sent["max_tokens"] == 9
    else:
        assert 9 in (sent.get("max_tokens"), sent.get("max_completion_tokens"))


EXPECTED_CREDENTIALS = {
    "openai": {"authorization": "Bearer sk-openai"},
    "anthropic": {"x-api-key": "sk-ant"},
    "openai-compatible": {"authorization": "Bearer sk-compat"},
    "azure-openai": {"api-key": "az-key"},
    "azure-anthropic": {"x-api-key": "az-ant"},
    "gemini": {"x-goog-api-key": "gm-test-key"},
    "vertex": {"authorization": f"Bearer {VERTEX_TOKEN}"},
    "mock": {},
}


async def test_each_adapter_sends_its_own_credential(
    adapter: HttpProvider, upstream: ThreadedMockUpstream
) -> None:
    """The upstream receives the adapter's credential in the vendor's header."""
    await adapter.complete(ask("gpt-4o-mini"))
    credentials = logged(adapter, upstream)[-1]["credentials"]
    if adapter.kind == "bedrock":
        signed = credentials["authorization"]
        assert signed.startswith("AWS4-HMAC-SHA256 Credential=AKIDTESTBEDROCK/")
        assert "/us-west-2/bedrock/aws4_request" in signed
        return
    assert credentials == EXPECTED_CREDENTIALS[_kind(adapter)]


def _kind(adapter: HttpProvider) -> str:
    if adapter.kind == "azure-openai" and adapter.wire_format == "anthropic-messages":
        return "azure-anthropic"
    return adapter.kind


async def test_embeddings_where_supported(adapter: HttpProvider) -> None:
    """Adapters with embeddings return one vector per input, in order."""
    from turnout.wire.model import EmbeddingRequest

    embed = getattr(adapter, "embed", None)
    if embed is None or not getattr(adapter, "supports_embeddings", False):
        assert adapter.wire_format in ("anthropic-messages", "bedrock-converse") or (
            adapter.kind == "vertex"
        )
        return
    response = await embed(EmbeddingRequest(["a", "b", "c"], model="text-embedding-3-small"))
    assert len(response.data) == 3
    assert response.usage is not None


@pytest.mark.parametrize(
    "kind",
    [
        "openai",
        "anthropic",
        "openai-compatible",
        "azure-openai",
        "gemini",
        "vertex-claude",
        "bedrock",
    ],
)
async def test_read_timeout_frees_a_hung_socket(upstream: ThreadedMockUpstream, kind: str) -> None:
    """With no route deadline, the provider's own read timeout ends a hung call."""
    provider = make_adapter(kind, upstream, timeouts=HttpTimeouts(read=0.3))
    try:
        with pytest.raises(ProviderTimeout) as caught:
            await provider.complete(ask("mock-hang"))
        assert caught.value.reason == "read timeout"
    finally:
        await provider.aclose()


@pytest.mark.parametrize(
    "kind",
    [
        "openai",
        "anthropic",
        "openai-compatible",
        "azure-openai",
        "gemini",
        "vertex-claude",
        "bedrock",
    ],
)
async def test_connection_refused_is_provider_error(kind: str) -> None:
    """A refused connection is provider_error with reason `connection`."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    class Closed:
        url = f"http://127.0.0.1:{port}"
        openai_base_url = f"{url}/v1"

    provider = make_adapter(kind, Closed())  # type: ignore[arg-type]
    try:
        with pytest.raises(ProviderUnavailable) as caught:
            await provider.complete(ask("gpt-4o-mini"))
        assert caught.value.reason == "connection"
    finally:
        await provider.aclose()
