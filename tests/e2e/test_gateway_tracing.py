"""End to end: OpenTelemetry spans of a real gateway in front of `turnout mock-upstream`, called
with the official OpenAI SDK: the request's span continues the caller's `traceparent`, the
route's attributes are on it and each upstream call has a span under it, with exact attribute sets
after a scripted failover; a stream's spans end with the stream; a cache hit is marked; no
configured secret, prompt or answer text reaches any span."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import httpx
import openai
import pytest
import pytest_asyncio
from opentelemetry.trace import SpanKind, StatusCode

from tests._spans import attributes, collected_spans, named
from tests.e2e._gateway import RunningGateway, running_gateway
from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator

    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

pytestmark = pytest.mark.asyncio(loop_scope="module")

QUESTION = "Why is checkout failing?"
USER: Any = [{"role": "user", "content": QUESTION}]
SECRETS = ("sk-trace-secret-openai", "sk-trace-secret-backup", "tk-trace-secret-caller")
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"


def _config(upstream: MockUpstream) -> dict[str, Any]:
    def provider(name: str, secret: str) -> dict[str, Any]:
        return {
            "name": name,
            "kind": "openai",
            "api_key": secret,
            "base_url": upstream.openai_base_url,
        }

    return {
        "server": {"auth": "keys"},
        "keys": [{"name": "ops-team", "key": SECRETS[2]}],
        "providers": [provider("openai", SECRETS[0]), provider("backup", SECRETS[1])],
        "routes": [
            {
                "name": "fo",
                "models": ["fo"],
                "targets": [
                    {"provider": "openai", "model": "fo/fault:status=429", "name": "primary"},
                    {"provider": "backup", "model": "fo-backup", "name": "backup"},
                ],
            },
            {
                "name": "cached",
                "models": ["cached"],
                "targets": [{"provider": "openai", "model": "c-model", "name": "primary"}],
                "cache": {"enabled": True, "ttl_seconds": 300},
            },
        ],
    }


@pytest.fixture(scope="module")
def spans() -> Iterator[InMemorySpanExporter]:
    """Every span of the module's requests (the provider is installed before the gateway)."""
    with collected_spans() as exporter:
        yield exporter


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def gateway(spans: InMemorySpanExporter) -> AsyncIterator[RunningGateway]:
    async with MockUpstream() as upstream, running_gateway(_config(upstream)) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def oai(gateway: RunningGateway) -> AsyncIterator[openai.AsyncOpenAI]:
    client = openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=SECRETS[2], max_retries=0)
    yield client
    await client.close()


async def _finished(exporter: InMemorySpanExporter, requests: int = 1) -> list[ReadableSpan]:
    """The spans once `requests` request spans ended (the gateway ends one just after its
    response is sent, so the loop is let run until it has)."""
    for _ in range(1000):
        spans = list(exporter.get_finished_spans())
        if sum(span.kind == SpanKind.SERVER for span in spans) >= requests:
            return spans
        await asyncio.sleep(0)
    raise AssertionError(f"fewer than {requests} request spans ended")


async def test_failover_spans_continue_the_callers_trace(
    oai: openai.AsyncOpenAI, spans: InMemorySpanExporter
) -> None:
    """A 429 then an answer: the request span is the caller's child, the route span its child,
    and one call span each (failed with ERROR, then answered) with exact attributes."""
    spans.clear()
    completion = await oai.chat.completions.create(
        model="fo", messages=USER, extra_headers={"traceparent": TRACEPARENT}
    )
    routing = completion.model_extra["routing"]  # type: ignore[index]
    finished = await _finished(spans)
    assert len(finished) == 3
    (request,) = named(finished, "POST /v1/chat/completions")
    (failed,) = named(finished, "chat fo/fault:status=429")
    (answered,) = named(finished, "chat fo-backup")
    assert {format(span.context.trace_id, "032x") for span in finished} == {CALLER_TRACE}
    assert request.parent is not None
    assert format(request.parent.span_id, "016x") == CALLER_SPAN
    assert request.parent.is_remote
    for call in (failed, answered):
        assert call.parent is not None
        assert call.parent.span_id == request.context.span_id
    assert (request.kind, failed.kind, answered.kind) == (
        SpanKind.SERVER,
        SpanKind.CLIENT,
        SpanKind.CLIENT,
    )
    assert attributes(request) == {
        "http.request.method": "POST",
        "url.path": "/v1/chat/completions",
        "turnout.route": "fo",
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "fo",
        "turnout.outcome": "answered",
        "turnout.all_failed": False,
        "turnout.attempts": 2,
        "turnout.answered": "backup",
        "gen_ai.response.model": completion.model,
        "http.response.status_code": 200,
        "turnout.request_id": routing["request_id"],
        "turnout.key": "ops-team",
    }
    common = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "turnout.route": "fo",
    }
    assert attributes(failed) == {
        **common,
        "turnout.target": "primary",
        "turnout.provider": "openai",
        "turnout.attempt": 1,
        "turnout.hedge": False,
        "gen_ai.request.model": "fo/fault:status=429",
        "turnout.outcome": "failed",
        "turnout.class": "rate_limited",
        "error.type": "rate_limited",
        "http.response.status_code": 429,
    }
    assert failed.status.status_code == StatusCode.ERROR
    usage = completion.usage
    assert usage is not None
    assert attributes(answered) == {
        **common,
        "turnout.target": "backup",
        "turnout.provider": "backup",
        "turnout.attempt": 2,
        "turnout.hedge": False,
        "gen_ai.request.model": "fo-backup",
        "turnout.outcome": "answered",
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
        "gen_ai.response.model": completion.model,
        "gen_ai.response.finish_reasons": ("stop",),
    }
    for span in (request, answered):
        assert span.status.status_code == StatusCode.UNSET


async def test_a_streams_spans_end_with_the_stream(
    oai: openai.AsyncOpenAI, spans: InMemorySpanExporter
) -> None:
    """A streamed request: the serving call's span holds the stream's usage and finish reason
    (known only at its end), and ends before the request's span.
    (That a call span stays open after the first token is pinned on the engine's fake clock.)"""
    spans.clear()
    stream = await oai.chat.completions.create(
        model="fo", messages=USER, stream=True, stream_options={"include_usage": True}
    )
    rest = [chunk async for chunk in stream]
    finished = await _finished(spans)
    (answered,) = named(finished, "chat fo-backup")
    (request,) = named(finished, "POST /v1/chat/completions")
    usage = rest[-1].usage
    assert usage is not None
    got = attributes(answered)
    assert (got["turnout.outcome"], got["gen_ai.response.finish_reasons"]) == (
        "answered",
        ("stop",),
    )
    assert (got["gen_ai.usage.input_tokens"], got["gen_ai.usage.output_tokens"]) == (
        usage.prompt_tokens,
        usage.completion_tokens,
    )
    assert answered.end_time is not None
    assert request.end_time is not None
    assert answered.end_time <= request.end_time
    assert attributes(request)["turnout.answered"] == "backup"


async def test_a_cache_hit_is_marked_and_makes_no_call_span(
    oai: openai.AsyncOpenAI, spans: InMemorySpanExporter
) -> None:
    """The second identical request on a cached route is `turnout.cache: hit` on its request
    span, with no call span; the first is a `miss` with one."""
    spans.clear()
    await oai.chat.completions.create(model="cached", messages=USER)
    await oai.chat.completions.create(model="cached", messages=USER)
    finished = await _finished(spans, requests=2)
    requests = named(finished, "POST /v1/chat/completions")
    assert [attributes(span)["turnout.cache"] for span in requests] == ["miss", "hit"]
    assert [attributes(span)["turnout.route"] for span in requests] == ["cached", "cached"]
    assert len(named(finished, "chat c-model")) == 1


async def test_no_secret_or_text_in_any_span(
    oai: openai.AsyncOpenAI, gateway: RunningGateway, spans: InMemorySpanExporter
) -> None:
    """After answered, failed-over, streamed and refused (401) requests, no span's name,
    attribute, status or event holds a provider key, the caller's key, the prompt or the
    answer."""
    spans.clear()
    completion = await oai.chat.completions.create(model="fo", messages=USER)
    stream = await oai.chat.completions.create(model="fo", messages=USER, stream=True)
    streamed = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    async with httpx.AsyncClient() as client:
        refused = await client.post(
            f"{gateway.openai_base_url}/chat/completions",
            headers={"authorization": f"Bearer {SECRETS[2]}-wrong"},
            json={"model": "fo", "messages": USER},
        )
    assert refused.status_code == 401
    finished = await _finished(spans, requests=3)
    answer = completion.choices[0].message.content
    assert answer
    assert streamed
    assert len(named(finished, "POST /v1/chat/completions")) == 3
    assert {attributes(span).get("turnout.route") for span in finished} == {"fo", None}
    unauthorized = [s for s in finished if attributes(s).get("http.response.status_code") == 401]
    assert len(unauthorized) == 1
    for span in finished:
        text = " ".join(
            [
                span.name,
                repr(span.attributes),
                repr(span.status.description),
                repr([(event.name, event.attributes) for event in span.events]),
            ]
        )
        for forbidden in (*SECRETS, QUESTION, answer, streamed):
            assert forbidden not in text, (span.name, forbidden)
