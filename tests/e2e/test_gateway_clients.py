"""End to end: the request bodies Claude Code and Codex send (`tests/fixtures/clients`), and
structured output, through the official SDKs over a real gateway socket in front of `turnout
mock-upstream`: a mid-conversation system message is served and counted, Codex's request fails
over from a failing OpenAI target to an Anthropic one (namespaced calls put back), and a JSON
schema reaches Claude as `output_config.format`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pydantic
import pytest
import pytest_asyncio

from tests.e2e._gateway import RunningGateway, running_gateway
from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import anthropic
    import openai

pytestmark = pytest.mark.asyncio(loop_scope="module")

CLIENTS = Path(__file__).parent.parent / "fixtures" / "clients"
BETAS = ["claude-code-20250219", "mid-conversation-system-2026-04-07"]
SPAWN = "multi_agent_v1__spawn_agent"  # the flat name of a namespaced function


class Forecast(pydantic.BaseModel):
    summary: str
    celsius: int


def _route(name: str, *targets: tuple[str, str]) -> dict[str, Any]:
    entries = [{"provider": p, "model": m, "name": f"{p}-{i}"} for i, (p, m) in enumerate(targets)]
    return {"name": name, "models": [name], "targets": entries}


def _config(upstream: MockUpstream) -> dict[str, Any]:
    return {
        "server": {"auth": "open"},
        "providers": [
            {
                "name": "openai",
                "kind": "openai",
                "api_key": "sk-test-openai",
                "base_url": upstream.openai_base_url,
            },
            {
                "name": "anthropic",
                "kind": "anthropic",
                "api_key": "sk-ant",
                "base_url": upstream.url,
            },
        ],
        "routes": [
            _route("claude-code", ("anthropic", "claude-opus-4-8")),
            {
                **_route("claude-code-on-gpt", ("openai", "gpt-for-claude-code")),
                "allow_cross_provider": True,
            },
            _route(
                "codex-503",
                ("openai", "codex-a/fault:status=503"),
                ("anthropic", f"claude-a/fault:tool_call={SPAWN}"),
            ),
            _route(
                "codex-429",
                ("openai", "codex-b/fault:status=429"),
                ("anthropic", f"claude-b/fault:tool_call={SPAWN}"),
            ),
            _route("schema-claude", ("anthropic", "claude-schema")),
            {
                **_route("codex-cached", ("anthropic", f"claude-c/fault:tool_call={SPAWN}")),
                "cache": {"enabled": True, "ttl_seconds": 300},
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


def _fixture(name: str) -> dict[str, Any]:
    value: dict[str, Any] = orjson.loads((CLIENTS / name).read_bytes())
    return value


def _last_body(upstream: MockUpstream, model: str) -> dict[str, Any]:
    entries = [e for e in upstream.app.log.entries() if (e.model or "").split("/")[0] == model]
    body: dict[str, Any] = orjson.loads(entries[-1].body)
    return body


def _claude_code(route: str) -> dict[str, Any]:
    body = _fixture("claude_code_messages.json")
    body["model"] = route
    del body["stream"]
    return body


async def test_claude_code_request_is_served_with_its_system_message(
    ant: anthropic.AsyncAnthropic, upstream: MockUpstream
) -> None:
    """Claude Code's newest request (a `role: system` message in `messages`, its beta header)
    is served, streamed, and reaches Anthropic with the message in place."""
    body = _claude_code("claude-code")
    extra = {"temperature": body.pop("temperature")}
    stream = await ant.beta.messages.create(**body, betas=BETAS, stream=True, extra_body=extra)
    kinds = [event.type async for event in stream]
    assert kinds[0] == "message_start"
    assert kinds[-1] == "message_stop"
    sent = _last_body(upstream, "claude-opus-4-8")
    assert [m["role"] for m in sent["messages"]][:2] == ["user", "system"]


async def test_claude_code_request_is_counted(ant: anthropic.AsyncAnthropic) -> None:
    """`count_tokens` takes the same body, system message and all."""
    body = _claude_code("claude-code")
    for key in ("max_tokens", "metadata", "temperature"):
        del body[key]
    counted = await ant.beta.messages.count_tokens(**body, betas=BETAS)
    assert counted.input_tokens > 0


async def test_claude_code_request_translates_to_openai_in_place(
    ant: anthropic.AsyncAnthropic, upstream: MockUpstream
) -> None:
    """Translated to OpenAI Chat, the system message is a system message where it was."""
    body = {**_claude_code("claude-code-on-gpt"), "max_tokens": 4096}
    extra = {"temperature": body.pop("temperature")}
    message = await ant.beta.messages.create(**body, betas=BETAS, extra_body=extra)
    assert message.content[0].type == "text"
    sent = _last_body(upstream, "gpt-for-claude-code")
    assert [m["role"] for m in sent["messages"]][:3] == ["system", "user", "system"]


def _codex(route: str) -> dict[str, Any]:
    body = _fixture("codex_responses.json")
    body["model"] = route
    del body["stream"]
    return body


@pytest.mark.parametrize(("route", "served"), [("codex-503", "a"), ("codex-429", "b")])
async def test_codex_fails_over_to_claude_with_namespaced_calls(
    oai: openai.AsyncOpenAI, upstream: MockUpstream, route: str, served: str
) -> None:
    """Codex's request fails over from a failing OpenAI target to Claude; the call of a
    namespaced function comes back under its namespace; the record names the dropped search."""
    raw = await oai.responses.with_raw_response.create(**_codex(route))
    response = raw.parse()
    call = response.output[-1]
    assert call.type == "function_call"
    assert (call.name, call.namespace) == ("spawn_agent", "multi_agent_v1")
    routing = orjson.loads(raw.http_response.content)["routing"]
    outcomes = [a["outcome"] for a in routing["attempts"]]
    assert outcomes[-1] == "answered"
    assert outcomes[0] != "ineligible"
    assert "tool web_search (web_search)" in routing["attempts"][-1]["reason"]
    sent = _last_body(upstream, f"claude-{served}")
    assert SPAWN in [t["name"] for t in sent["tools"]]


async def test_codex_stream_fails_over_with_namespaced_calls(oai: openai.AsyncOpenAI) -> None:
    """Streamed, the failover is the same and the call item carries its namespace."""
    async with oai.responses.stream(**_codex("codex-503")) as stream:
        events = [event async for event in stream]
        final = await stream.get_final_response()
    call = final.output[-1]
    assert call.type == "function_call"
    assert (call.name, call.namespace) == ("spawn_agent", "multi_agent_v1")
    assert any(e.type == "response.function_call_arguments.delta" for e in events)


@pytest.mark.parametrize("stream", [False, True])
async def test_cached_answer_keeps_the_namespace(oai: openai.AsyncOpenAI, stream: bool) -> None:
    """A translated answer served again from the response cache still calls the namespaced
    function under its namespace, whether the first answer was whole or streamed."""
    body = {**_codex("codex-cached"), "prompt_cache_key": f"cache-{stream}"}
    body["input"] = [*body["input"], {"role": "user", "content": f"again {stream}"}]
    if stream:
        async with oai.responses.stream(**body) as first_stream:
            await first_stream.get_final_response()
    else:
        await oai.responses.create(**body)
    raw = await oai.responses.with_raw_response.create(**body)
    assert raw.headers["x-turnout-cache"] == "hit"
    call = raw.parse().output[-1]
    assert call.type == "function_call"
    assert (call.name, call.namespace) == ("spawn_agent", "multi_agent_v1")


async def test_chat_schema_is_honoured_by_claude(
    oai: openai.AsyncOpenAI, upstream: MockUpstream
) -> None:
    """`chat.completions.parse` with a pydantic model reads a valid answer from Claude: the
    schema travelled as `output_config.format`."""
    completion = await oai.chat.completions.parse(
        model="schema-claude",
        messages=[{"role": "user", "content": "Forecast for Oslo"}],
        response_format=Forecast,
    )
    assert isinstance(completion.choices[0].message.parsed, Forecast)
    sent = _last_body(upstream, "claude-schema")
    assert sent["output_config"]["format"]["type"] == "json_schema"


async def test_responses_schema_is_honoured_by_claude(oai: openai.AsyncOpenAI) -> None:
    """`responses.parse` with `text_format` reads a valid answer from Claude, whole and
    streamed."""
    parsed = await oai.responses.parse(
        model="schema-claude", input="Forecast for Oslo", text_format=Forecast
    )
    assert isinstance(parsed.output_parsed, Forecast)
    async with oai.responses.stream(
        model="schema-claude", input="Forecast for Oslo", text_format=Forecast
    ) as stream:
        final = await stream.get_final_response()
    assert isinstance(final.output_parsed, Forecast)
