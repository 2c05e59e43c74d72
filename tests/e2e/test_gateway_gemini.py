"""End to end: the official OpenAI and Anthropic SDKs against a real gateway socket whose routes
mix a `gemini` provider and an `openai` provider, both on `turnout mock-upstream` (which checks
the Gemini test key): failover from Gemini to OpenAI and back, whole and streamed, before
commit; Google's quota parking the key; a Gemini refusal; tool calls across formats."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
GEMINI_KEY = "gm-e2e-test-key"


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
            {"name": "gemini", "kind": "gemini", "api_key": GEMINI_KEY, "base_url": upstream.url},
            {
                "name": "openai",
                "kind": "openai",
                "api_key": "sk-test-openai",
                "base_url": upstream.openai_base_url,
            },
        ],
        "routes": [
            _route("gemini-down", ("gemini", "gd/fault:status=503"), ("openai", "gpt-4o-mini")),
            _route(
                "openai-down", ("openai", "od/fault:status=500"), ("gemini", "gemini-2.5-flash")
            ),
            _route("gemini-cut", ("gemini", "gc/fault:cut=0"), ("openai", "gpt-4o-mini")),
            _route("gemini-quota", ("gemini", "gq/fault:quota"), ("openai", "gpt-4o-mini")),
            _route(
                "gemini-refuses", ("gemini", "mock-refuse"), ("openai", "gpt-4o-mini"), cross=False
            ),
            _route("gemini-only", ("gemini", "gemini-2.5-pro")),
            _route(
                "embed-mixed",
                ("openai", "emb/fault:status=503"),
                ("gemini", "gemini-embedding-001"),
                cross=False,
            ),
        ],
    }


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def upstream() -> AsyncIterator[MockUpstream]:
    async with MockUpstream(hold_limit=30, gemini_key=GEMINI_KEY) as server:
        yield server


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def gateway(upstream: MockUpstream) -> AsyncIterator[RunningGateway]:
    async with running_gateway(_config(upstream)) as running:
        yield running


def _gemini_calls(upstream: MockUpstream, model: str) -> list[Any]:
    return [e for e in upstream.app.log.entries() if e.model == model]


@pytest.mark.parametrize(
    ("route", "answer"),
    [
        ("gemini-down", "mock answer from gpt-4o-mini"),
        ("openai-down", "mock answer from gemini-2.5-flash"),
    ],
)
async def test_openai_sdk_fails_over_between_gemini_and_openai(
    oai: openai.AsyncOpenAI, route: str, answer: str
) -> None:
    """Whole and streamed, the failing first target (Gemini or OpenAI) is passed over before
    commit and the other family's target answers in the caller's own format."""
    raw = await oai.chat.completions.with_raw_response.create(model=route, messages=USER)
    completion = raw.parse()
    assert completion.choices[0].message.content == answer
    extra: Any = completion.model_extra
    routing = extra["routing"]
    assert [a["outcome"] for a in routing["attempts"]] == ["failed", "answered"]
    assert routing["attempts"][0]["error_class"] == "provider_error"
    assert completion.usage is not None
    assert completion.usage.prompt_tokens > 0
    stream = await oai.chat.completions.with_raw_response.create(
        model=route, messages=USER, stream=True
    )
    text = "".join([c.choices[0].delta.content or "" async for c in stream.parse() if c.choices])
    assert text == answer
    assert "outcome=failed" in stream.headers["x-turnout-attempts"].split(",")[0]


@pytest.mark.parametrize(
    ("route", "answer"),
    [
        ("gemini-down", "mock answer from gpt-4o-mini"),
        ("openai-down", "mock answer from gemini-2.5-flash"),
    ],
)
async def test_anthropic_sdk_fails_over_between_gemini_and_openai(
    ant: anthropic.AsyncAnthropic, route: str, answer: str
) -> None:
    """The Anthropic SDK over the same routes: translated both ways, whole and streamed."""
    message = await ant.messages.create(model=route, max_tokens=64, messages=USER)
    assert message.content[0].type == "text"
    assert message.content[0].text == answer
    assert message.stop_reason == "end_turn"
    async with ant.messages.stream(model=route, max_tokens=64, messages=USER) as stream:
        text = "".join([piece async for piece in stream.text_stream])
        final = await stream.get_final_message()
    assert text == answer
    assert final.usage.output_tokens > 0


async def test_a_gemini_stream_cut_before_its_first_token_fails_over(
    oai: openai.AsyncOpenAI, ant: anthropic.AsyncAnthropic
) -> None:
    """A Gemini stream dropped before any content is no commit: the OpenAI target answers."""
    stream = await oai.chat.completions.create(model="gemini-cut", messages=USER, stream=True)
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "mock answer from gpt-4o-mini"
    async with ant.messages.stream(model="gemini-cut", max_tokens=64, messages=USER) as events:
        assert "".join([p async for p in events.text_stream]) == "mock answer from gpt-4o-mini"


async def test_googles_daily_quota_parks_the_gemini_key(
    oai: openai.AsyncOpenAI, upstream: MockUpstream
) -> None:
    """A per-day QuotaFailure is quota_exhausted: the next request skips Gemini as parked,
    without calling it."""
    first: Any = (
        await oai.chat.completions.create(model="gemini-quota", messages=USER)
    ).model_extra
    calls = len(_gemini_calls(upstream, "gq/fault:quota"))
    second: Any = (
        await oai.chat.completions.create(model="gemini-quota", messages=USER)
    ).model_extra
    assert first["routing"]["attempts"][0]["error_class"] == "quota_exhausted"
    assert "60 s" in first["routing"]["attempts"][0]["reason"]
    assert [a["outcome"] for a in second["routing"]["attempts"]] == ["parked", "answered"]
    assert len(_gemini_calls(upstream, "gq/fault:quota")) == calls


async def test_a_gemini_safety_block_is_a_refusal_that_moves_on(oai: openai.AsyncOpenAI) -> None:
    """A prompt Gemini blocks for safety is `refused`, and the route moves on to OpenAI."""
    completion = await oai.chat.completions.create(model="gemini-refuses", messages=USER)
    assert completion.choices[0].message.content == "mock answer from gpt-4o-mini"
    extra: Any = completion.model_extra
    attempts = extra["routing"]["attempts"]
    assert [a["outcome"] for a in attempts] == ["refused", "answered"]


async def test_tool_calls_cross_into_gemini_and_back(
    oai: openai.AsyncOpenAI, ant: anthropic.AsyncAnthropic, upstream: MockUpstream
) -> None:
    """A forced tool from either SDK reaches Gemini as a function declaration and comes back
    as the caller's own tool call, with the key sent only in x-goog-api-key."""
    tool_schema = {"type": "object", "properties": {"order": {"type": "string"}}}
    oai_tools: Any = [
        {"type": "function", "function": {"name": "lookup", "parameters": tool_schema}}
    ]
    oai_choice: Any = {"type": "function", "function": {"name": "lookup"}}
    completion = await oai.chat.completions.create(
        model="gemini-only", messages=USER, tools=oai_tools, tool_choice=oai_choice
    )
    calls: Any = completion.choices[0].message.tool_calls
    assert (calls[0].function.name, calls[0].function.arguments) == ("lookup", '{"order":"mock"}')
    assert completion.choices[0].finish_reason == "tool_calls"
    sent = upstream.app.log.entries()[-1]
    assert sent.path == "/v1beta/models/gemini-2.5-pro:generateContent"
    assert sent.as_dict()["credentials"] == {"x-goog-api-key": GEMINI_KEY}
    assert sent.as_dict()["body"]["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["lookup"]}
    }
    ant_tools: Any = [{"name": "lookup", "input_schema": tool_schema}]
    ant_choice: Any = {"type": "tool", "name": "lookup"}
    message = await ant.messages.create(
        model="gemini-only",
        max_tokens=64,
        messages=USER,
        tools=ant_tools,
        tool_choice=ant_choice,
    )
    block = message.content[0]
    assert block.type == "tool_use"
    assert (block.name, block.input) == ("lookup", {"order": "mock"})
    assert message.stop_reason == "tool_use"


async def test_embeddings_fail_over_to_gemini(oai: openai.AsyncOpenAI) -> None:
    """An embeddings route fails over from OpenAI to Gemini's batchEmbedContents; the SDK
    reads the vectors in OpenAI's shape (it asks for base64), one per input, in order."""
    result = await oai.embeddings.create(model="embed-mixed", input=["alpha", "beta"])
    assert [item.index for item in result.data] == [0, 1]
    assert [len(item.embedding) for item in result.data] == [8, 8]
    assert result.data[0].embedding != result.data[1].embedding
    extra: Any = result.model_extra
    assert [a["outcome"] for a in extra["routing"]["attempts"]] == ["failed", "answered"]
