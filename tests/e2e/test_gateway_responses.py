"""End to end: the official OpenAI SDK's Responses API against a real gateway socket in front
of `turnout mock-upstream`: forwarded to an `openai` target, translated for an Anthropic one
(whole, streamed, tool calls, structured output), failover between them before commit, the
server-state features that only OpenAI can serve, and retrieval of a stored response; and
LangChain's `ChatOpenAI` with `use_responses_api=True` as a second client."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx
import openai
import orjson
import pydantic
import pytest
import pytest_asyncio
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from tests.e2e._gateway import RunningGateway, running_gateway
from turnout.mock_upstream import MockUpstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.asyncio(loop_scope="module")

WEATHER: Any = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        "strict": True,
    }
]
FORCED: Any = {"type": "function", "name": "get_weather"}


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
                "api_key": "sk-ant-test",
                "base_url": upstream.url,
            },
            {
                "name": "azure",
                "kind": "azure-openai",
                "api_key": "azure-test-key",
                "base_url": upstream.url,
                "wire": "openai-chat",
            },
        ],
        "routes": [
            _route("to-openai", ("openai", "gpt-5-mini")),
            _route("to-claude", ("anthropic", "claude-sonnet-4-5")),
            _route("to-azure", ("azure", "my-deployment")),
            _route(
                "openai-fails",
                ("openai", "fo/fault:status=503"),
                ("anthropic", "claude-backup"),
            ),
            _route(
                "claude-fails",
                ("anthropic", "cf/fault:status=529"),
                ("openai", "gpt-backup"),
            ),
            _route("claude-first", ("anthropic", "claude-x"), ("openai", "gpt-stateful")),
            _route("cut", ("openai", "cut/fault:cut=2")),
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


def _logged(upstream: MockUpstream, model: str) -> list[Any]:
    return [entry for entry in upstream.app.log.entries() if entry.model == model]


async def test_an_openai_target_receives_the_callers_bytes(
    gateway: RunningGateway, upstream: MockUpstream
) -> None:
    """An `openai` target gets the caller's Responses body at `/v1/responses` with only
    `model` replaced, and the caller gets the upstream's response with `routing` added."""
    body = {"model": "to-openai", "input": "hi", "store": True, "custom_field": {"kept": 1}}
    async with httpx.AsyncClient() as client:
        reply = await client.post(f"{gateway.url}/v1/responses", content=orjson.dumps(body))
    assert reply.status_code == 200, reply.text
    answer = reply.json()
    assert answer["object"] == "response"
    assert answer["output"][0]["content"][0]["text"] == "mock answer from gpt-5-mini"
    assert answer["routing"]["attempts"][0]["outcome"] == "answered"
    assert reply.headers["x-turnout-target"] == "openai-0"
    logged = _logged(upstream, "gpt-5-mini")[-1]
    assert logged.path == "/v1/responses"
    assert logged.body == orjson.dumps({**body, "model": "gpt-5-mini"})


@pytest.mark.parametrize(
    ("route", "path", "served"),
    [
        ("to-openai", "/v1/responses", "gpt-5-mini"),
        ("to-claude", "/v1/messages", "claude-sonnet-4-5"),
        ("to-azure", "/openai/v1/responses", "my-deployment"),
    ],
)
async def test_create_through_either_target(
    oai: openai.AsyncOpenAI, upstream: MockUpstream, route: str, path: str, served: str
) -> None:
    """`client.responses.create` is answered in the Responses shape by an OpenAI or Azure
    target (forwarded) and by an Anthropic one (translated), usage included."""
    raw = await oai.responses.with_raw_response.create(
        model=route, input="Why is checkout failing?", instructions="Be brief."
    )
    response = raw.parse()
    assert response.output_text == f"mock answer from {served}"
    assert response.status == "completed"
    assert response.id.startswith("resp_")
    assert response.usage is not None
    assert response.usage.output_tokens > 0
    assert raw.headers["x-turnout-model"] == served
    assert _logged(upstream, served)[-1].path == path


@pytest.mark.parametrize("route", ["to-openai", "to-claude"])
async def test_stream_through_either_target(oai: openai.AsyncOpenAI, route: str) -> None:
    """`client.responses.stream` gets the whole event sequence, numbered, from either target,
    and its final response."""
    async with oai.responses.stream(model=route, input="hello") as stream:
        events = [event async for event in stream]
        final = await stream.get_final_response()
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == final.output_text
    assert final.output_text.startswith("mock answer from ")


@pytest.mark.parametrize("route", ["to-openai", "to-claude"])
async def test_tool_calls_whole_and_streamed(oai: openai.AsyncOpenAI, route: str) -> None:
    """A forced function call comes back as a `function_call` item with its arguments, whole
    and streamed, from either target."""
    whole = await oai.responses.create(
        model=route, input="Weather in Oslo?", tools=WEATHER, tool_choice=FORCED
    )
    call = whole.output[-1]
    assert call.type == "function_call"
    assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "mock"})
    async with oai.responses.stream(
        model=route, input="Weather in Oslo?", tools=WEATHER, tool_choice=FORCED
    ) as stream:
        events = [event async for event in stream]
        final = await stream.get_final_response()
    streamed = final.output[-1]
    assert streamed.type == "function_call"
    assert json.loads(streamed.arguments) == {"city": "mock"}
    assert any(e.type == "response.function_call_arguments.delta" for e in events)


async def test_parse_gives_the_pydantic_model(oai: openai.AsyncOpenAI) -> None:
    """`client.responses.parse` with a pydantic model reads the structured answer."""
    parsed = await oai.responses.parse(
        model="to-openai", input="Forecast for Oslo", text_format=Forecast
    )
    assert parsed.output_parsed == Forecast(summary="mock", celsius=1)


@pytest.mark.parametrize(
    ("route", "served", "path"),
    [("openai-fails", "claude-backup", "/v1/messages"), ("claude-fails", "gpt-backup", None)],
)
async def test_failover_between_families_before_commit(
    oai: openai.AsyncOpenAI, upstream: MockUpstream, route: str, served: str, path: str | None
) -> None:
    """A failed first target hands the request to the other family, whole and streamed."""
    raw = await oai.responses.with_raw_response.create(model=route, input="hi")
    response = raw.parse()
    assert response.output_text == f"mock answer from {served}"
    routing = response.model_extra["routing"]  # type: ignore[index]
    assert [a["outcome"] for a in routing["attempts"]] == ["failed", "answered"]
    async with oai.responses.stream(model=route, input="hi") as stream:
        final = await stream.get_final_response()
    assert final.output_text == f"mock answer from {served}"
    assert _logged(upstream, served)[-1].path == (path or "/v1/responses")


async def test_server_state_makes_other_families_ineligible(oai: openai.AsyncOpenAI) -> None:
    """`previous_response_id` skips the Anthropic target (named in its entry) for the OpenAI
    one; on a route with no OpenAI target it is 400 `route_ineligible`."""
    first = await oai.responses.create(model="to-openai", input="hi")
    follow = await oai.responses.create(
        model="claude-first", input="and then?", previous_response_id=first.id
    )
    attempts = follow.model_extra["routing"]["attempts"]  # type: ignore[index]
    assert [a["outcome"] for a in attempts] == ["ineligible", "answered"]
    assert "previous_response_id" in attempts[0]["reason"]
    with pytest.raises(openai.BadRequestError) as caught:
        await oai.responses.create(
            model="to-claude", input="search", tools=[{"type": "web_search"}]
        )
    assert caught.value.code == "route_ineligible"
    assert "web_search" in str(caught.value.body)


@pytest.mark.parametrize("route", ["to-openai", "to-azure"])
async def test_a_stored_response_is_retrieved_and_deleted(
    oai: openai.AsyncOpenAI, upstream: MockUpstream, route: str
) -> None:
    """A response an OpenAI (or Azure) target created is retrieved and deleted through the
    gateway, at that provider; an unknown or translated one is 404 in OpenAI's envelope."""
    created = await oai.responses.create(model=route, input="keep me")
    again = await oai.responses.retrieve(created.id)
    assert (again.id, again.output_text) == (created.id, created.output_text)
    await oai.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError):
        await oai.responses.retrieve(created.id)
    paths = {(e.method, e.path) for e in upstream.app.log.entries() if created.id in e.path}
    prefix = "/v1" if route == "to-openai" else "/openai/v1"
    assert ("DELETE", f"{prefix}/responses/{created.id}") in paths
    translated = await oai.responses.create(model="to-claude", input="not kept")
    with pytest.raises(openai.NotFoundError) as caught:
        await oai.responses.retrieve(translated.id)
    assert caught.value.code == "NOT_FOUND"


async def test_a_streamed_response_is_remembered(oai: openai.AsyncOpenAI) -> None:
    """A streamed response from an OpenAI target can be retrieved once the stream ended."""
    async with oai.responses.stream(model="to-openai", input="stream me") as stream:
        final = await stream.get_final_response()
    assert (await oai.responses.retrieve(final.id)).output_text == final.output_text


async def test_a_break_after_commit_ends_with_a_numbered_error_event(
    gateway: RunningGateway,
) -> None:
    """A forwarded stream cut after its first tokens ends with an `error` event
    (`stream_broken`) numbered after the last event sent, never `response.completed`."""
    body = {"model": "cut", "input": "hi", "stream": True}
    async with httpx.AsyncClient() as client:
        reply = await client.post(f"{gateway.url}/responses", json=body)
    events = [json.loads(line[6:]) for line in reply.text.splitlines() if line.startswith("data:")]
    assert reply.status_code == 200
    assert events[-1]["type"] == "error"
    assert events[-1]["code"] == "stream_broken"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert all(e["type"] != "response.completed" for e in events)


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


@pytest.mark.parametrize(
    ("route", "served"), [("to-openai", "gpt-5-mini"), ("to-claude", "claude")]
)
async def test_langchain_responses_client(gateway: RunningGateway, route: str, served: str) -> None:
    """LangChain's `ChatOpenAI` on the Responses API gets text, a streamed answer and a tool
    call from either target."""
    llm = ChatOpenAI(
        model_name=route,
        openai_api_base=gateway.openai_base_url,
        openai_api_key=pydantic.SecretStr("anything"),
        use_responses_api=True,
        max_retries=0,
    )
    answer = await llm.ainvoke("hello")
    assert answer.text.startswith(f"mock answer from {served}")
    streamed = "".join([chunk.text async for chunk in llm.astream("hello")])
    assert streamed.startswith(f"mock answer from {served}")
    called = await llm.bind_tools([get_weather], tool_choice="get_weather").ainvoke("Oslo?")
    assert [(c["name"], c["args"]) for c in called.tool_calls] == [
        ("get_weather", {"city": "mock"})
    ]
