"""End to end: the response cache through a real gateway socket, with the official
OpenAI and Anthropic SDKs as callers and `turnout mock-upstream` as the vendor, whose request
log proves that a hit made no upstream call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anthropic
import httpx
import openai
import pytest
import pytest_asyncio

from tests.e2e._gateway import RunningGateway, running_gateway
from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.asyncio(loop_scope="module")

USER: Any = [{"role": "user", "content": "Why is checkout failing?"}]
CACHE = {"enabled": True, "ttl_seconds": 300}
FULL_KEY = "tk_e2e_full_0001"
USAGE_ONLY_KEY = "tk_e2e_usage_only"
OUTSIDER_KEY = "tk_e2e_outsider1"
SALES_KEY = "tk_e2e_sales_001"


def _config(upstream: MockUpstream) -> dict[str, Any]:
    return {
        "server": {"auth": "keys"},
        "providers": [
            {
                "name": "openai",
                "kind": "openai",
                "api_key": "sk-test-openai",
                "base_url": upstream.openai_base_url,
                "prices": {"c-priced": {"input": 0.15, "output": 0.60}},
            },
            {
                "name": "anthropic",
                "kind": "anthropic",
                "api_key": "sk-ant-test",
                "base_url": upstream.url,
            },
        ],
        "routes": [
            {
                "name": "cached",
                "models": ["c-*"],
                "targets": [{"provider": "openai", "name": "primary"}],
                "cache": CACHE,
            },
            {
                "name": "claude",
                "models": ["claude-*"],
                "targets": [{"provider": "anthropic", "name": "direct"}],
                "cache": CACHE,
            },
            {
                "name": "refusing",
                "models": ["refusing"],
                "targets": [{"provider": "openai", "model": "refusal/fault:refuse"}],
                "fail_over_on_refusal": False,
                "cache": CACHE,
            },
            {
                "name": "flaky",
                "models": ["flaky"],
                "targets": [{"provider": "openai", "model": "flaky/fault:status=500|ok"}],
                "cache": CACHE,
            },
            {
                "name": "cut",
                "models": ["cut"],
                "targets": [{"provider": "openai", "model": "cut/fault:cut=2"}],
                "cache": CACHE,
            },
        ],
        "keys": [
            {"name": "full", "key": FULL_KEY, "teams": ["eng"]},
            {
                "name": "usage-only",
                "key": USAGE_ONLY_KEY,
                "teams": ["eng"],
                "recording": "usage_only",
            },
            {"name": "outsider", "key": OUTSIDER_KEY, "teams": ["visitors"]},
            {"name": "sales", "key": SALES_KEY, "teams": ["eng", "sales"]},
        ],
        "bindings": [
            {"name": "eng", "subjects": [{"team": "eng"}], "grants": [{"models": "*"}]},
            {
                "name": "no-opus-for-sales",
                "mode": "deny",
                "subjects": [{"team": "sales"}],
                "grants": [{"models": "claude-opus*"}],
            },
        ],
    }


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def upstream() -> AsyncIterator[MockUpstream]:
    async with MockUpstream(hold_limit=30) as server:
        yield server


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def gateway(upstream: MockUpstream) -> AsyncIterator[RunningGateway]:
    async with running_gateway(_config(upstream)) as running:
        yield running


def _openai(gateway: RunningGateway, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.openai_base_url, api_key=key, max_retries=0)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def oai(gateway: RunningGateway) -> AsyncIterator[openai.AsyncOpenAI]:
    client = _openai(gateway, FULL_KEY)
    yield client
    await client.close()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def ant(gateway: RunningGateway) -> AsyncIterator[anthropic.AsyncAnthropic]:
    client = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=FULL_KEY, max_retries=0)
    yield client
    await client.close()


async def _upstream_calls(upstream: MockUpstream, model: str) -> int:
    """How many requests for `model` the mock upstream's request log holds."""
    async with httpx.AsyncClient() as client:
        reply = await client.get(f"{upstream.url}/_mock/requests", params={"model": model})
    reply.raise_for_status()
    entries: list[dict[str, Any]] = reply.json()
    return len(entries)


async def test_hit_makes_no_upstream_call_and_costs_nothing(
    oai: openai.AsyncOpenAI, upstream: MockUpstream
) -> None:
    """The same question twice through the OpenAI SDK: one upstream call; the second answer
    is the first, with `x-turnout-cache: hit`, `x-turnout-cost: 0` and `routing.cache`."""
    first = await oai.chat.completions.with_raw_response.create(model="c-priced", messages=USER)
    second = await oai.chat.completions.with_raw_response.create(model="c-priced", messages=USER)
    assert await _upstream_calls(upstream, "c-priced") == 1
    assert first.headers["x-turnout-cache"] == "miss"
    assert float(first.headers["x-turnout-cost"]) > 0
    assert second.headers["x-turnout-cache"] == "hit"
    assert second.headers["x-turnout-cost"] == "0"
    one, two = first.parse(), second.parse()
    assert two.choices[0].message.content == one.choices[0].message.content
    assert two.choices[0].message.content == "mock answer from c-priced"
    assert two.usage is not None
    assert one.usage is not None
    assert two.usage.completion_tokens == one.usage.completion_tokens
    assert two.model_extra is not None
    assert two.model_extra["routing"]["cache"] == "hit"
    assert two.model_extra["routing"]["attempts"] == []


async def test_hit_is_streamed_to_a_streaming_openai_caller(
    oai: openai.AsyncOpenAI, upstream: MockUpstream
) -> None:
    """A whole answer cached first reaches a streaming caller as a proper stream: text
    chunks, the finish reason and the usage chunk it asked for, with no upstream call."""
    whole = await oai.chat.completions.create(model="c-streamed", messages=USER)
    stream = await oai.chat.completions.create(
        model="c-streamed",
        messages=USER,
        stream=True,
        stream_options={"include_usage": True},
    )
    assert stream.response.headers["x-turnout-cache"] == "hit"
    text, finishes, usage = [], [], None
    async for chunk in stream:
        for choice in chunk.choices:
            text.append(choice.delta.content or "")
            if choice.finish_reason is not None:
                finishes.append(choice.finish_reason)
        if chunk.usage is not None:
            usage = chunk.usage
    assert "".join(text) == whole.choices[0].message.content
    assert finishes == ["stop"]
    assert usage is not None
    assert whole.usage is not None
    assert usage.completion_tokens == whole.usage.completion_tokens
    assert await _upstream_calls(upstream, "c-streamed") == 1


async def test_streamed_answer_is_stored_and_served_whole(
    oai: openai.AsyncOpenAI, ant: anthropic.AsyncAnthropic, upstream: MockUpstream
) -> None:
    """An Anthropic stream that finished cleanly is stored; a non-streaming caller of the
    same question then gets it whole, with no upstream call."""
    async with ant.messages.stream(model="claude-streamed", max_tokens=64, messages=USER) as stream:
        streamed = await stream.get_final_message()
    hit = await ant.messages.with_raw_response.create(
        model="claude-streamed", max_tokens=64, messages=USER
    )
    assert hit.headers["x-turnout-cache"] == "hit"
    message = await hit.parse()
    assert message.content[0].type == "text"
    assert streamed.content[0].type == "text"
    assert message.content[0].text == streamed.content[0].text
    assert message.stop_reason == "end_turn"
    assert await _upstream_calls(upstream, "claude-streamed") == 1


async def test_anthropic_stream_hit_and_format_independence(
    oai: openai.AsyncOpenAI, ant: anthropic.AsyncAnthropic, upstream: MockUpstream
) -> None:
    """An answer cached for an OpenAI caller is a streamed hit for an Anthropic caller asking
    the same (the key leaves out `stream` and the client format)."""
    first = await oai.chat.completions.create(model="claude-shared", messages=USER, max_tokens=64)
    async with ant.messages.stream(model="claude-shared", max_tokens=64, messages=USER) as stream:
        assert stream.response.headers["x-turnout-cache"] == "hit"
        text = "".join([piece async for piece in stream.text_stream])
        final = await stream.get_final_message()
    assert text == first.choices[0].message.content
    assert final.stop_reason == "end_turn"
    assert await _upstream_calls(upstream, "claude-shared") == 1


async def test_temperature_and_model_are_in_the_key(
    oai: openai.AsyncOpenAI, upstream: MockUpstream
) -> None:
    """Another temperature or another model is another question: each calls upstream."""
    await oai.chat.completions.create(model="c-param", messages=USER, temperature=0.1)
    await oai.chat.completions.create(model="c-param", messages=USER, temperature=0.9)
    await oai.chat.completions.create(model="c-param-2", messages=USER, temperature=0.1)
    again = await oai.chat.completions.with_raw_response.create(
        model="c-param", messages=USER, temperature=0.1
    )
    assert again.headers["x-turnout-cache"] == "hit"
    assert await _upstream_calls(upstream, "c-param") == 2
    assert await _upstream_calls(upstream, "c-param-2") == 1


async def test_hit_only_after_the_grant_check(
    gateway: RunningGateway, ant: anthropic.AsyncAnthropic, upstream: MockUpstream
) -> None:
    """A cached answer is not served to a caller the grants refuse: no grant is 400
    MODEL_DENIED, a deny binding 403 POLICY_DENIED, both before any call."""
    await ant.messages.create(model="claude-opus-9", max_tokens=64, messages=USER)
    outsider = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=OUTSIDER_KEY, max_retries=0)
    sales = _openai(gateway, SALES_KEY)
    try:
        with pytest.raises(anthropic.BadRequestError) as no_grant:
            await outsider.messages.create(model="claude-opus-9", max_tokens=64, messages=USER)
        with pytest.raises(openai.PermissionDeniedError) as denied:
            await sales.chat.completions.create(model="claude-opus-9", messages=USER, max_tokens=64)
    finally:
        await outsider.close()
        await sales.close()
    assert no_grant.value.status_code == 400
    assert no_grant.value.body["error"]["code"] == "MODEL_DENIED"  # type: ignore[index]
    assert denied.value.status_code == 403
    assert denied.value.body["code"] == "POLICY_DENIED"  # type: ignore[index]
    assert await _upstream_calls(upstream, "claude-opus-9") == 1


async def test_usage_only_key_reads_but_never_writes(
    gateway: RunningGateway, oai: openai.AsyncOpenAI, upstream: MockUpstream
) -> None:
    """A `usage_only` key asking twice calls twice (its answers are not stored); once a full
    key stored the answer, the `usage_only` key is served the hit."""
    usage_only = _openai(gateway, USAGE_ONLY_KEY)
    try:
        await usage_only.chat.completions.create(model="c-usage-only", messages=USER)
        stream = await usage_only.chat.completions.create(
            model="c-usage-only", messages=USER, stream=True
        )
        _ = [chunk async for chunk in stream]
        assert await _upstream_calls(upstream, "c-usage-only") == 2
        await oai.chat.completions.create(model="c-usage-only", messages=USER)
        hit = await usage_only.chat.completions.with_raw_response.create(
            model="c-usage-only", messages=USER
        )
    finally:
        await usage_only.close()
    assert hit.headers["x-turnout-cache"] == "hit"
    assert await _upstream_calls(upstream, "c-usage-only") == 3


async def test_endings_are_never_stored(oai: openai.AsyncOpenAI, upstream: MockUpstream) -> None:
    """A refusal handed to the caller is not stored: the next request calls again."""
    first = await oai.chat.completions.create(model="refusing", messages=USER)
    second = await oai.chat.completions.with_raw_response.create(model="refusing", messages=USER)
    assert first.choices[0].finish_reason == "content_filter"
    assert second.headers["x-turnout-cache"] == "miss"
    assert await _upstream_calls(upstream, "refusal/fault:refuse") == 2


async def test_errors_are_never_stored(oai: openai.AsyncOpenAI, upstream: MockUpstream) -> None:
    """A failed request stores nothing: after a 500 the next request calls upstream, and only
    its answer is served from the cache afterwards."""
    with pytest.raises(openai.InternalServerError):
        await oai.chat.completions.create(model="flaky", messages=USER)
    served = await oai.chat.completions.with_raw_response.create(model="flaky", messages=USER)
    hit = await oai.chat.completions.with_raw_response.create(model="flaky", messages=USER)
    assert served.headers["x-turnout-cache"] == "miss"
    assert hit.headers["x-turnout-cache"] == "hit"
    assert await _upstream_calls(upstream, "flaky/fault:status=500|ok") == 2


async def test_broken_streams_are_never_stored(
    oai: openai.AsyncOpenAI, upstream: MockUpstream
) -> None:
    """A stream the upstream cut short fails (an error reply or event) and is not stored:
    asking again calls upstream again (and fails again, where a hit would have answered)."""
    for _ in range(2):
        with pytest.raises(openai.APIError):
            await _stream_text(oai, "cut")
    assert await _upstream_calls(upstream, "cut/fault:cut=2") == 2


async def _stream_text(client: openai.AsyncOpenAI, model: str) -> str:
    stream = await client.chat.completions.create(model=model, messages=USER, stream=True)
    pieces = [chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices]
    return "".join(pieces)
