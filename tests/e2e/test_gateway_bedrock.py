"""End to end: the official OpenAI and Anthropic SDKs against a real gateway socket whose routes
mix a `bedrock` provider with `openai` and `anthropic` providers, all on `turnout mock-upstream`
(which checks the Bedrock SigV4 signatures): Bedrock failing over to OpenAI before commit,
whole and streamed; Anthropic failing over to Claude on Bedrock through InvokeModel with the
caller's cache_control, thinking and betas intact; Bedrock's throttling and refusals."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import pytest
import pytest_asyncio

from tests.e2e._gateway import RunningGateway, running_gateway
from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import anthropic
    import openai

pytestmark = pytest.mark.asyncio(loop_scope="module")

USER: Any = [{"role": "user", "content": "Why is checkout failing?"}]
AWS = ("AKIDE2EBEDROCK", "e2e-secret-access-key")
CLAUDE = "us.anthropic.claude-sonnet-4-20250514-v1:0"


def _route(name: str, *targets: tuple[str, str], cross: bool = True) -> dict[str, Any]:
    return {
        "name": name,
        "models": [name],
        "allow_cross_provider": cross,
        "targets": [
            {"provider": provider, "model": model, "name": f"{provider}-{i}"}
            for i, (provider, model) in enumerate(targets)
        ],
    }


def _config(upstream: MockUpstream) -> dict[str, Any]:
    return {
        "server": {"auth": "open"},
        "providers": [
            {
                "name": "aws",
                "kind": "bedrock",
                "region": "us-east-1",
                "base_url": upstream.url,
                "access_key_id": AWS[0],
                "secret_access_key": AWS[1],
            },
            {
                "name": "openai",
                "kind": "openai",
                "api_key": "sk-test-openai",
                "base_url": upstream.openai_base_url,
            },
            {
                "name": "anthropic-api",
                "kind": "anthropic",
                "api_key": "sk-ant-test",
                "base_url": upstream.url,
            },
        ],
        "routes": [
            _route("bedrock-down", ("aws", "bd/fault:status=503"), ("openai", "gpt-4o-mini")),
            _route("bedrock-throttled", ("aws", "bt/fault:status=429"), ("openai", "gpt-4o")),
            _route("bedrock-cut", ("aws", "bc/fault:cut=0"), ("openai", "gpt-4o-mini")),
            _route(
                "bedrock-refuses", ("aws", "mock-refuse"), ("openai", "gpt-4o-mini"), cross=False
            ),
            _route(
                "claude",
                ("anthropic-api", "claude-down/fault:status=529"),
                ("aws", CLAUDE),
                cross=False,
            ),
        ],
    }


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def upstream() -> AsyncIterator[MockUpstream]:
    async with MockUpstream(hold_limit=30, aws_credentials=AWS) as server:
        yield server


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def gateway(upstream: MockUpstream) -> AsyncIterator[RunningGateway]:
    async with running_gateway(_config(upstream)) as running:
        yield running


def _calls(upstream: MockUpstream, model: str) -> list[Any]:
    return [e for e in upstream.app.log.entries() if e.model == model]


@pytest.mark.parametrize(
    ("route", "error_class", "answer"),
    [
        ("bedrock-down", "provider_error", "mock answer from gpt-4o-mini"),
        ("bedrock-throttled", "rate_limited", "mock answer from gpt-4o"),
    ],
)
async def test_openai_sdk_fails_over_from_bedrock_to_openai(
    oai: openai.AsyncOpenAI, route: str, error_class: str, answer: str
) -> None:
    """Whole and streamed, a failing Bedrock target (Converse) is passed over before commit
    with its error classified, and OpenAI answers."""
    completion = await oai.chat.completions.create(model=route, messages=USER)
    assert completion.choices[0].message.content == answer
    extra: Any = completion.model_extra
    attempts = extra["routing"]["attempts"]
    assert [a["outcome"] for a in attempts] == ["failed", "answered"]
    assert attempts[0]["error_class"] == error_class
    stream = await oai.chat.completions.with_raw_response.create(
        model=route, messages=USER, stream=True
    )
    text = "".join([c.choices[0].delta.content or "" async for c in stream.parse() if c.choices])
    assert text == answer
    assert "outcome=failed" in stream.headers["x-turnout-attempts"].split(",")[0]


async def test_a_bedrock_stream_cut_before_its_first_token_fails_over(
    oai: openai.AsyncOpenAI, ant: anthropic.AsyncAnthropic
) -> None:
    """A ConverseStream dropped before any content is no commit: OpenAI answers, whichever SDK
    asked."""
    stream = await oai.chat.completions.create(model="bedrock-cut", messages=USER, stream=True)
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "mock answer from gpt-4o-mini"
    async with ant.messages.stream(model="bedrock-cut", max_tokens=64, messages=USER) as events:
        assert "".join([p async for p in events.text_stream]) == "mock answer from gpt-4o-mini"


async def test_a_bedrock_guardrail_is_a_refusal_that_moves_on(oai: openai.AsyncOpenAI) -> None:
    """A Converse answer stopped by a guardrail is `refused`, and the route moves on."""
    completion = await oai.chat.completions.create(model="bedrock-refuses", messages=USER)
    assert completion.choices[0].message.content == "mock answer from gpt-4o-mini"
    extra: Any = completion.model_extra
    assert [a["outcome"] for a in extra["routing"]["attempts"]] == ["refused", "answered"]


async def test_openai_sdk_reaches_claude_on_bedrock(oai: openai.AsyncOpenAI) -> None:
    """An OpenAI caller's request is translated to Bedrock's Messages body, whole and streamed."""
    completion = await oai.chat.completions.create(model="claude", messages=USER)
    assert completion.choices[0].message.content == f"mock answer from {CLAUDE}"
    stream = await oai.chat.completions.create(model="claude", messages=USER, stream=True)
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == f"mock answer from {CLAUDE}"


CACHED_SYSTEM: Any = [
    {
        "type": "text",
        "text": "You are the checkout runbook.",
        "cache_control": {"type": "ephemeral"},
    }
]
THINKING: Any = {"type": "enabled", "budget_tokens": 1024}


async def test_anthropic_fails_over_to_claude_on_bedrock_keeping_its_features(
    ant: anthropic.AsyncAnthropic, upstream: MockUpstream
) -> None:
    """The Anthropic API failing (529), Claude on Bedrock answers through InvokeModel: the
    caller's body reaches Bedrock with cache_control, thinking and betas kept, only model and
    stream taken out and the Bedrock version added; whole and streamed."""
    betas = "interleaved-thinking-2025-05-14"
    message = await ant.messages.create(
        model="claude",
        max_tokens=2048,
        system=CACHED_SYSTEM,
        thinking=THINKING,
        messages=USER,
        extra_headers={"anthropic-beta": betas},
    )
    assert message.content[-1].type == "text"
    assert message.content[-1].text == f"mock answer from {CLAUDE}"
    async with ant.messages.stream(
        model="claude",
        max_tokens=2048,
        system=CACHED_SYSTEM,
        thinking=THINKING,
        messages=USER,
        extra_headers={"anthropic-beta": betas},
    ) as stream:
        text = "".join([piece async for piece in stream.text_stream])
        final = await stream.get_final_message()
    assert text == f"mock answer from {CLAUDE}"
    assert final.usage.output_tokens > 0
    calls = _calls(upstream, CLAUDE)
    assert [c.path.rsplit("/", 1)[1] for c in calls][-2:] == [
        "invoke",
        "invoke-with-response-stream",
    ]
    for call in calls[-2:]:
        assert call.status == 200
        body = orjson.loads(call.body)
        assert body == {
            "max_tokens": 2048,
            "system": CACHED_SYSTEM,
            "thinking": THINKING,
            "messages": USER,
            "anthropic_version": "bedrock-2023-05-31",
            "anthropic_beta": [betas],
        }
        assert call.request_headers["authorization"].startswith(
            f"AWS4-HMAC-SHA256 Credential={AWS[0]}/"
        )
    assert _calls(upstream, "claude-down/fault:status=529")
