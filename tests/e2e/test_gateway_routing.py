"""End to end: the official OpenAI and Anthropic SDKs against a real gateway socket in front of
`turnout mock-upstream`: failover on every retryable class, pass-through of a deterministic
400, cooldowns, the breaker, streams before and after commit, translation both ways,
embeddings, headers, cost, and a disconnect that cancels the upstream call."""

from __future__ import annotations

import asyncio
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

    from turnout.record import RoutingRecord

pytestmark = pytest.mark.asyncio(loop_scope="module")

USER: Any = [{"role": "user", "content": "Why is checkout failing?"}]
PRICES = {"gpt-4o-mini": {"input": 0.15, "output": 0.60}}


def _route(name: str, first: str, *, backup: bool = True, **options: Any) -> dict[str, Any]:
    targets: list[dict[str, Any]] = [{"provider": "openai", "model": first, "name": "primary"}]
    if backup:
        targets.append({"provider": "backup", "model": f"{name}-backup", "name": "backup"})
    return {"name": name, "models": [name], "targets": targets, **options}


def _config(upstream: MockUpstream) -> dict[str, Any]:
    return {
        "server": {"auth": "open"},
        "providers": [
            {
                "name": "openai",
                "kind": "openai",
                "api_key": "sk-test-openai",
                "base_url": upstream.openai_base_url,
                "prices": PRICES,
            },
            {
                "name": "backup",
                "kind": "openai-compatible",
                "api_key": "sk-test-backup",
                "base_url": upstream.openai_base_url,
            },
            {
                "name": "anthropic",
                "kind": "anthropic",
                "api_key": "sk-ant-test",
                "base_url": upstream.url,
            },
        ],
        "routes": [
            _route("priced", "gpt-4o-mini", backup=False),
            _route("fo-rate-limited", "fo1/fault:status=429"),
            _route("fo-provider-error", "fo2/fault:status=500"),
            _route("fo-timeout", "fo3/fault:latency=5", targets_timeout=None),
            _route("fo-reset", "fo4/fault:reset"),
            _route("fo-quota", "fo5/fault:quota"),
            _route(
                "pass-400",
                "p400/fault:status=400;message=max_tokens is too large",
                allow_cross_provider=True,
            ),
            _route("cooldown", "cd/fault:status=429;retry_after=30"),
            _route(
                "breaker",
                "br/fault:status=500",
                circuit_breaker={"failure_threshold": 2, "cooldown_seconds": 60},
            ),
            _route("stream-failover", "sf/fault:status=503"),
            _route("stream-cut", "sc/fault:cut=2"),
            _route("hang", "hang/fault:hang", backup=False),
            {
                "name": "agent",
                "models": ["agent-model"],
                "allow_cross_provider": True,
                "targets": [{"provider": "openai", "model": "gpt-for-agent"}],
            },
            {
                "name": "claude",
                "models": ["claude-*"],
                "targets": [{"provider": "anthropic"}],
            },
            {
                "name": "embed",
                "models": ["text-embedding-*"],
                "targets": [
                    {"provider": "openai", "model": "emb/fault:status=503", "name": "primary"},
                    {"provider": "backup", "name": "backup"},
                ],
            },
        ],
    }


def _with_timeout(config: dict[str, Any]) -> dict[str, Any]:
    """`fo-timeout`'s first target waits 5 s upstream; its timeout is 0.3 s."""
    for route in config["routes"]:
        if route.pop("targets_timeout", "absent") is None:
            route["targets"][0]["timeout"] = 0.3
    return config


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def upstream() -> AsyncIterator[MockUpstream]:
    async with MockUpstream(hold_limit=30) as server:
        yield server


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def gateway(upstream: MockUpstream) -> AsyncIterator[RunningGateway]:
    async with running_gateway(_with_timeout(_config(upstream))) as running:
        yield running


async def _chat(oai: openai.AsyncOpenAI, model: str) -> Any:
    return await oai.chat.completions.with_raw_response.create(model=model, messages=USER)


@pytest.mark.parametrize(
    ("route", "error_class"),
    [
        ("fo-rate-limited", "rate_limited"),
        ("fo-provider-error", "provider_error"),
        ("fo-timeout", "timeout"),
        ("fo-reset", "provider_error"),
        ("fo-quota", "quota_exhausted"),
    ],
)
async def test_failover_on_each_retryable_class(
    oai: openai.AsyncOpenAI, route: str, error_class: str
) -> None:
    """Each retryable failure of the first target moves on to the backup, which answers."""
    raw = await _chat(oai, route)
    completion = raw.parse()
    assert completion.choices[0].message.content == f"mock answer from {route}-backup"
    routing = completion.model_extra["routing"]
    assert [a["outcome"] for a in routing["attempts"]] == ["failed", "answered"]
    assert routing["attempts"][0]["error_class"] == error_class
    assert raw.headers["x-turnout-target"] == "backup"


async def test_deterministic_400_passes_through(
    oai: openai.AsyncOpenAI, ant: anthropic.AsyncAnthropic, upstream: MockUpstream
) -> None:
    """A 400 is the caller's fault: its own status and message, no failover."""
    with pytest.raises(openai.BadRequestError) as caught:
        await oai.chat.completions.create(model="pass-400", messages=USER)
    assert caught.value.status_code == 400
    assert caught.value.body == {
        "message": "max_tokens is too large",
        "type": "invalid_request_error",
        "code": "invalid_request",
        "param": None,
        "meta": caught.value.body["meta"],  # type: ignore[index]
    }
    assert caught.value.response.headers["x-turnout-attempts"].endswith("backup;outcome=not_tried")
    with pytest.raises(anthropic.BadRequestError) as refused:
        await ant.messages.create(model="pass-400", max_tokens=64, messages=USER)
    assert refused.value.body["error"]["message"] == "max_tokens is too large"  # type: ignore[index]
    assert refused.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    logged = [r.model for r in upstream.app.log.entries()]
    assert "pass-400-backup" not in logged


async def test_retry_after_cools_the_key_and_the_next_request_skips_it(
    oai: openai.AsyncOpenAI,
) -> None:
    """A 429 with Retry-After 30 cools the target; the next request skips it (cooling_down)."""
    first = (await _chat(oai, "cooldown")).parse().model_extra["routing"]
    second = (await _chat(oai, "cooldown")).parse().model_extra["routing"]
    assert [a["outcome"] for a in first["attempts"]] == ["failed", "answered"]
    assert [a["outcome"] for a in second["attempts"]] == ["cooling_down", "answered"]
    assert first["attempts"][0]["reason"] == "429 rate limited, Retry-After 30 s"
    assert second["attempts"][0]["reason"].startswith("cooling down, ")
    assert second["attempts"][0]["reason"].endswith(" s left")


async def test_breaker_opens_across_requests(oai: openai.AsyncOpenAI) -> None:
    """Two 500s in a row open the breaker: the third request skips the target."""
    outcomes = []
    for _ in range(3):
        routing = (await _chat(oai, "breaker")).parse().model_extra["routing"]
        outcomes.append(routing["attempts"][0]["outcome"])
    assert outcomes == ["failed", "failed", "breaker_open"]


async def test_stream_fails_over_before_commit(oai: openai.AsyncOpenAI) -> None:
    """The first target fails before its first token; the caller sees only the backup."""
    raw = await oai.chat.completions.with_raw_response.create(
        model="stream-failover", messages=USER, stream=True
    )
    text = "".join([c.choices[0].delta.content or "" async for c in raw.parse() if c.choices])
    assert text == "mock answer from stream-failover-backup"
    assert raw.headers["x-turnout-target"] == "backup"
    assert raw.headers["x-turnout-attempts"].startswith("primary;outcome=failed")


async def test_stream_cut_after_commit_is_stream_broken(oai: openai.AsyncOpenAI) -> None:
    """A stream cut after its first tokens raises in the SDK with `stream_broken`."""
    stream = await oai.chat.completions.create(model="stream-cut", messages=USER, stream=True)
    received: list[str] = []

    async def drain() -> None:
        async for chunk in stream:  # a loop: the pieces before the error must be kept
            received.append(chunk.choices[0].delta.content or "")  # noqa: PERF401

    with pytest.raises(openai.APIError) as caught:
        await drain()
    assert "".join(received) == "mock answer"
    assert caught.value.code == "stream_broken"


async def test_anthropic_sdk_to_an_openai_target(ant: anthropic.AsyncAnthropic) -> None:
    """The Anthropic SDK over a cross-provider route served by an OpenAI-kind target."""
    message = await ant.messages.create(model="agent-model", max_tokens=64, messages=USER)
    assert message.content[0].type == "text"
    assert message.content[0].text == "mock answer from gpt-for-agent"
    assert message.model == "gpt-for-agent"
    async with ant.messages.stream(model="agent-model", max_tokens=64, messages=USER) as stream:
        text = "".join([piece async for piece in stream.text_stream])
    assert text == "mock answer from gpt-for-agent"


async def test_openai_sdk_to_an_anthropic_target(
    oai: openai.AsyncOpenAI, upstream: MockUpstream
) -> None:
    """And back: the OpenAI SDK served by an Anthropic-kind target."""
    completion = await oai.chat.completions.create(model="claude-haiku-test", messages=USER)
    assert completion.choices[0].message.content == "mock answer from claude-haiku-test"
    assert upstream.app.log.entries()[-1].path == "/v1/messages"
    stream = await oai.chat.completions.create(
        model="claude-haiku-test", messages=USER, stream=True
    )
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "mock answer from claude-haiku-test"


async def test_anthropic_sdk_to_an_anthropic_target_counts_tokens(
    ant: anthropic.AsyncAnthropic,
) -> None:
    """count_tokens goes to the route's Anthropic target and returns its count."""
    count = await ant.messages.count_tokens(model="claude-haiku-test", messages=USER)
    assert count.input_tokens > 0


async def test_embeddings_fail_over(oai: openai.AsyncOpenAI) -> None:
    """Embeddings follow the route: a 503 from the first target, the backup's vectors."""
    raw = await oai.embeddings.with_raw_response.create(
        model="text-embedding-3-small", input=["a", "b"]
    )
    result = raw.parse()
    assert len(result.data) == 2
    assert len(result.data[0].embedding) > 0
    assert raw.headers["x-turnout-target"] == "backup"
    assert raw.headers["x-turnout-attempts"].startswith("primary;outcome=failed")


async def test_headers_and_cost_on_a_priced_answer(oai: openai.AsyncOpenAI) -> None:
    """Every routing header, and the cost of the serving call at the provider's prices; no
    `x-turnout-cache` on a route without the response cache."""
    raw = await _chat(oai, "priced")
    completion = raw.parse()
    headers = raw.headers
    assert headers["x-turnout-route"] == "priced"
    assert headers["x-turnout-target"] == "primary"
    assert headers["x-turnout-model"] == completion.model == "gpt-4o-mini"
    assert "x-turnout-cache" not in headers
    assert headers["x-request-id"] == completion.model_extra["routing"]["request_id"]
    usage = completion.usage
    assert usage is not None
    expected = (usage.prompt_tokens * 0.15 + usage.completion_tokens * 0.60) / 1e6
    assert float(headers["x-turnout-cost"]) == pytest.approx(expected)


async def test_disconnect_cancels_the_upstream_call(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """A caller that hangs up cancels the hanging upstream call: recorded `cancelled`."""
    records: list[RoutingRecord] = []
    gateway.runtime.routes["hang"].route.on_routed = records.append
    body = {"model": "hang", "messages": USER}
    async with httpx.AsyncClient() as client:
        call = asyncio.ensure_future(
            client.post(f"{gateway.openai_base_url}/chat/completions", json=body)
        )
        for _ in range(500):
            if any((r.model or "").startswith("hang") for r in upstream.app.log.entries()):
                break
            await asyncio.sleep(0.01)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
    for _ in range(500):
        if records:
            break
        await asyncio.sleep(0.01)
    assert [r.outcomes() for r in records] == [[("primary", "cancelled")]]
    assert records[0].error is not None
    assert records[0].error["code"] == "cancelled"
