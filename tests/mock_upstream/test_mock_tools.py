"""Tool calls from the mock upstream: choice, arguments, both vendors' shapes through their SDKs."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

import aiohttp
import anthropic
import openai
import orjson
import pytest
from pydantic import BaseModel

from turnout.mock_upstream import MockUpstream
from turnout.mock_upstream.faults import parse_fault, split_model
from turnout.mock_upstream.tools import ToolCall, example_arguments, pick_tool_call

from .test_mock_server import raw_exchange

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


class Place(BaseModel):
    """A nested object, reached through a `$ref` in the generated schema."""

    name: str
    lat: float


class Forecast(BaseModel):
    """The arguments of the `Forecast` tool: every kind of property the builder handles."""

    city: str
    days: int
    unit: Literal["celsius", "fahrenheit"]
    alerts: bool
    hours: list[int]
    where: Place
    note: str | None


FORECAST = openai.pydantic_function_tool(Forecast)
FORECAST_ARGS = {
    "city": "mock",
    "days": 1,
    "unit": "celsius",
    "alerts": True,
    "hours": [],
    "where": {"name": "mock", "lat": 1},
    "note": "mock",
}
WEATHER_SCHEMA = {
    "type": "object",
    "properties": {
        "unit": {"type": "string", "enum": ["c", "f"]},
        "days": {"type": "integer"},
        "city": {"type": "string"},
    },
    "required": ["city"],
}
CLOCK_SCHEMA = {"type": "object", "properties": {"zone": {"type": "string"}}}
OPENAI_TOOLS: list[Any] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": WEATHER_SCHEMA}},
    {"type": "function", "function": {"name": "get_time", "parameters": CLOCK_SCHEMA}},
]
ANTHROPIC_TOOLS: list[Any] = [
    {"name": "get_weather", "description": "Weather", "input_schema": WEATHER_SCHEMA},
    {"name": "get_time", "description": "Time", "input_schema": CLOCK_SCHEMA},
]
WEATHER_ARGS = {"city": "mock", "unit": "c", "days": 1}
MESSAGES: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]


@pytest.fixture
async def upstream() -> AsyncIterator[MockUpstream]:
    """A mock upstream on a free 127.0.0.1 port."""
    async with MockUpstream(hold_limit=5.0) as server:
        yield server


@pytest.fixture
async def oai(upstream: MockUpstream) -> AsyncIterator[openai.AsyncOpenAI]:
    """The official OpenAI client, pointed at the mock."""
    base = upstream.openai_base_url
    async with openai.AsyncOpenAI(base_url=base, api_key="sk-test", max_retries=0) as client:
        yield client


@pytest.fixture
async def claude(upstream: MockUpstream) -> AsyncIterator[anthropic.AsyncAnthropic]:
    """The official Anthropic client, pointed at the mock."""
    async with anthropic.AsyncAnthropic(
        base_url=upstream.url, api_key="ant-test", max_retries=0
    ) as client:
        yield client


# --- pure: arguments, choice, fragments, grammar ------------------------------------------------


def test_arguments_follow_the_schema_required_first() -> None:
    """Required properties come first; enum, integer and string get their example values."""
    arguments = example_arguments(WEATHER_SCHEMA)
    assert arguments == WEATHER_ARGS
    assert list(arguments) == ["city", "unit", "days"]


def test_arguments_of_a_generated_schema_validate() -> None:
    """A pydantic-generated schema ($ref, nullable, list, literal) yields arguments it accepts."""
    schema = FORECAST["function"]["parameters"]
    arguments = example_arguments(schema)
    assert arguments == FORECAST_ARGS
    assert Forecast.model_validate(arguments).where.lat == 1


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (None, {}),
        ({"type": "string"}, {}),
        ({"type": "object"}, {}),
        ({"properties": {"n": {"type": ["null", "number"]}}}, {"n": 1}),
        (
            {"properties": {"k": {"const": "x"}, "o": {"oneOf": [{"type": "boolean"}]}}},
            {"k": "x", "o": True},
        ),
        ({"properties": {"a": {}}, "required": ["b"]}, {"b": "mock", "a": "mock"}),
        (
            {"$ref": "#/$defs/P", "$defs": {"P": {"properties": {"x": {"$ref": "#/nowhere"}}}}},
            {"x": None},
        ),
    ],
)
def test_argument_edge_cases(schema: Any, expected: dict[str, Any]) -> None:
    """Missing and non-object schemas give {}; type lists, const, oneOf, refs are followed."""
    assert example_arguments(schema) == expected


def test_a_schema_that_contains_itself_stops_growing() -> None:
    """A property that refers back to its own object yields a finite example."""
    arguments: Any = example_arguments({"properties": {"next": {"$ref": "#"}}})
    depth = 0
    while isinstance(arguments, dict):
        arguments, depth = arguments["next"], depth + 1
    assert 1 < depth < 20


@pytest.mark.parametrize(
    ("tools", "choice", "directive", "called"),
    [
        (OPENAI_TOOLS, None, None, None),
        (OPENAI_TOOLS, "auto", None, None),
        (OPENAI_TOOLS, "none", None, None),
        (OPENAI_TOOLS, "required", None, "get_weather"),
        (OPENAI_TOOLS, {"type": "function", "function": {"name": "get_time"}}, None, "get_time"),
        (
            OPENAI_TOOLS,
            {
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": "required",
                    "tools": [{"type": "function", "function": {"name": "get_time"}}],
                },
            },
            None,
            "get_time",
        ),
        (ANTHROPIC_TOOLS, {"type": "auto"}, None, None),
        (ANTHROPIC_TOOLS, {"type": "any"}, None, "get_weather"),
        (ANTHROPIC_TOOLS, {"type": "tool", "name": "get_time"}, None, "get_time"),
        (ANTHROPIC_TOOLS, {"type": "none"}, "*", "get_weather"),
        (ANTHROPIC_TOOLS, {"type": "tool", "name": "get_time"}, "*", "get_time"),
        (OPENAI_TOOLS, "auto", "get_time", "get_time"),
        (None, "required", None, None),
        (None, None, "*", None),
        (None, None, "lookup", "lookup"),
        ([{"type": "custom", "custom": {"name": "grep"}}], "required", None, None),
    ],
)
def test_which_tool_is_called(
    tools: Any, choice: Any, directive: str | None, called: str | None
) -> None:
    """A forced choice or a directive calls a tool (named, else first); otherwise no call."""
    body = {"model": "m", "messages": MESSAGES, "tools": tools, "tool_choice": choice}
    call = pick_tool_call(body, directive)
    assert (call.name if call else None) == called


def test_a_tool_not_offered_is_called_with_no_arguments() -> None:
    """A directive naming a tool the request does not offer calls it with `{}`."""
    body = {"model": "m", "messages": MESSAGES, "tools": OPENAI_TOOLS}
    assert pick_tool_call(body, "lookup") == ToolCall("lookup", "{}")
    assert pick_tool_call(body, "get_time") == ToolCall("get_time", '{"zone":"mock"}')


def test_argument_fragments_join_back() -> None:
    """Fragments are one per JSON token run, or `chunks` near-equal pieces; all join back."""
    call = ToolCall("get_weather", '{"city":"mock","days":1}')
    assert call.pieces() == ('{"', "city", '":"', "mock", '","', "days", '":', "1", "}")
    assert [len(p) for p in call.pieces(3)] == [8, 8, 8]
    assert "".join(call.pieces(5)) == call.arguments
    assert call.pieces(30).count("") == 6
    assert call.pieces(0) == ()


def test_tool_call_items_and_shorthand() -> None:
    """`tool_call`, `tool_call=NAME`, the `tool` alias and the `mock-tool` shorthand parse."""
    assert parse_fault("tool_call").tool_call == "*"
    assert parse_fault("tool_call=get_time;cut=2").tool_call == "get_time"
    assert parse_fault("tool=get_time").tool_call == "get_time"
    assert split_model("mock-tool-cut-2") == ("mock", "tool_call;cut=2")


# --- over sockets, through the official SDKs ----------------------------------------------------


async def test_openai_whole_tool_call(oai: openai.AsyncOpenAI) -> None:
    """tool_choice "required": message.tool_calls with a call_ id, JSON arguments, tool_calls."""
    answer = await oai.chat.completions.create(
        model="gpt-4o-mini", messages=MESSAGES, tools=OPENAI_TOOLS, tool_choice="required"
    )
    choice = answer.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    assert choice.message.tool_calls is not None
    (call,) = choice.message.tool_calls
    assert call.type == "function"
    assert call.id.startswith("call_")
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == WEATHER_ARGS
    assert answer.usage is not None
    assert answer.usage.completion_tokens > 0


async def test_openai_named_tool_parses_into_the_model(oai: openai.AsyncOpenAI) -> None:
    """A forced pydantic tool comes back with arguments the SDK validates into the model."""
    answer = await oai.chat.completions.parse(
        model="gpt-4o-mini",
        messages=MESSAGES,
        tools=[openai.pydantic_function_tool(Place), FORECAST],
        tool_choice={"type": "function", "function": {"name": "Forecast"}},
    )
    assert answer.choices[0].message.tool_calls is not None
    call = answer.choices[0].message.tool_calls[0]
    assert call.function.name == "Forecast"
    assert call.function.parsed_arguments == Forecast.model_validate(FORECAST_ARGS)


async def test_openai_streamed_tool_call(oai: openai.AsyncOpenAI) -> None:
    """A streamed call arrives as argument fragments the SDK joins; finish tool_calls; usage."""
    fragments = 0
    async with oai.chat.completions.stream(
        model="gpt-4o-mini",
        messages=MESSAGES,
        tools=[FORECAST],
        tool_choice="required",
        stream_options={"include_usage": True},
    ) as stream:
        async for event in stream:
            if event.type == "tool_calls.function.arguments.delta" and event.arguments_delta:
                fragments += 1
        final = await stream.get_final_completion()
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls is not None
    call = choice.message.tool_calls[0]
    assert call.id.startswith("call_")
    assert call.function.name == "Forecast"
    assert call.function.parsed_arguments == Forecast.model_validate(FORECAST_ARGS)
    assert fragments > 5
    assert final.usage is not None
    assert final.usage.completion_tokens == fragments


async def test_anthropic_whole_tool_use(claude: anthropic.AsyncAnthropic) -> None:
    """tool_choice any: one tool_use block (toolu_ id, input object), stop_reason tool_use."""
    message = await claude.messages.create(
        model="claude-x",
        max_tokens=100,
        messages=MESSAGES,
        tools=ANTHROPIC_TOOLS,
        tool_choice={"type": "any"},
    )
    assert message.stop_reason == "tool_use"
    (block,) = message.content
    assert block.type == "tool_use"
    assert block.id.startswith("toolu_")
    assert (block.name, block.input) == ("get_weather", WEATHER_ARGS)


async def test_anthropic_streamed_tool_use(claude: anthropic.AsyncAnthropic) -> None:
    """A streamed tool_use arrives as input_json_delta fragments the SDK joins into input."""
    fragments = 0
    async with claude.messages.stream(
        model="claude-x",
        max_tokens=100,
        messages=MESSAGES,
        tools=ANTHROPIC_TOOLS,
        tool_choice={"type": "tool", "name": "get_time"},
    ) as stream:
        async for event in stream:
            fragments += event.type == "input_json"
        message = await stream.get_final_message()
    assert message.stop_reason == "tool_use"
    (block,) = message.content
    assert block.type == "tool_use"
    assert (block.name, block.input) == ("get_time", {"zone": "mock"})
    assert fragments == message.usage.output_tokens > 2


async def test_unforced_tools_still_get_text(
    oai: openai.AsyncOpenAI, claude: anthropic.AsyncAnthropic
) -> None:
    """Tools offered with no forced choice and no directive: the plain text answer, both APIs."""
    answer = await oai.chat.completions.create(
        model="gpt-4o-mini", messages=MESSAGES, tools=OPENAI_TOOLS, tool_choice="auto"
    )
    assert answer.choices[0].finish_reason == "stop"
    assert answer.choices[0].message.tool_calls is None
    assert answer.choices[0].message.content == "mock answer from gpt-4o-mini"
    message = await claude.messages.create(
        model="claude-x", max_tokens=100, messages=MESSAGES, tools=ANTHROPIC_TOOLS
    )
    assert message.stop_reason == "end_turn"
    assert [b.type for b in message.content] == ["text"]
    async with claude.messages.stream(
        model="claude-x", max_tokens=100, messages=MESSAGES, tools=ANTHROPIC_TOOLS
    ) as stream:
        assert await stream.get_final_text() == "mock answer from claude-x"


async def test_directive_calls_a_tool_under_auto(
    oai: openai.AsyncOpenAI, claude: anthropic.AsyncAnthropic
) -> None:
    """`mock-tool` and `x-mock-fault: tool_call=NAME` call a tool though tool_choice is auto."""
    answer = await oai.chat.completions.create(
        model="mock-tool", messages=MESSAGES, tools=OPENAI_TOOLS, tool_choice="auto"
    )
    assert answer.choices[0].message.tool_calls is not None
    call = answer.choices[0].message.tool_calls[0]
    assert call.type == "function"
    assert call.function.name == "get_weather"
    message = await claude.messages.create(
        model="claude-x",
        max_tokens=100,
        messages=MESSAGES,
        tools=ANTHROPIC_TOOLS,
        extra_headers={"x-mock-fault": "tool_call=get_time"},
    )
    assert message.stop_reason == "tool_use"
    assert message.content[0].type == "tool_use"
    assert message.content[0].name == "get_time"


# --- raw streams: exact shapes, and faults acting on argument fragments -------------------------


async def _post(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> bytes:
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=orjson.dumps(body), headers=headers) as response,
    ):
        return await response.read()


def _data(payload: bytes) -> list[str]:
    return [line[6:] for line in payload.decode().split("\n") if line.startswith("data: ")]


async def test_openai_tool_stream_chunks(upstream: MockUpstream) -> None:
    """Role chunk opens the call (index, id, name, ""), fragments follow, then finish, [DONE]."""
    body = {**_openai_body(), "stream": True}
    data = _data(await _post(f"{upstream.openai_base_url}/chat/completions", body))
    assert data[-1] == "[DONE]"
    chunks = [orjson.loads(d) for d in data[:-1]]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    opening = deltas[0]["tool_calls"][0]
    assert deltas[0]["role"] == "assistant"
    assert deltas[0]["content"] is None
    assert opening["id"].startswith("call_")
    assert (opening["index"], opening["type"]) == (0, "function")
    assert opening["function"] == {"name": "get_weather", "arguments": ""}
    fragments = [d["tool_calls"][0]["function"]["arguments"] for d in deltas[1:-1]]
    assert all(
        d["tool_calls"][0]["index"] == 0 and "id" not in d["tool_calls"][0] for d in deltas[1:-1]
    )
    assert json.loads("".join(fragments)) == WEATHER_ARGS
    assert len(fragments) > 2
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


async def test_anthropic_tool_stream_events(upstream: MockUpstream) -> None:
    """tool_use block start with input {}, input_json_delta fragments, then stop and tool_use."""
    body = {
        "model": "claude-x",
        "max_tokens": 10,
        "messages": MESSAGES,
        "tools": ANTHROPIC_TOOLS,
        "tool_choice": {"type": "any"},
        "stream": True,
    }
    events = [orjson.loads(d) for d in _data(await _post(f"{upstream.url}/v1/messages", body))]
    kinds = [e["type"] for e in events]
    fragments = [e["delta"] for e in events if e["type"] == "content_block_delta"]
    assert kinds == [
        "message_start",
        "content_block_start",
        "ping",
        *["content_block_delta"] * len(fragments),
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    block = events[1]["content_block"]
    assert block["type"] == "tool_use"
    assert block["id"].startswith("toolu_")
    assert (block["name"], block["input"]) == ("get_weather", {})
    assert {f["type"] for f in fragments} == {"input_json_delta"}
    assert json.loads("".join(f["partial_json"] for f in fragments)) == WEATHER_ARGS
    assert events[-2]["delta"]["stop_reason"] == "tool_use"
    assert events[-2]["usage"]["output_tokens"] == len(fragments)


async def test_faults_count_argument_fragments(upstream: MockUpstream) -> None:
    """chunks=N splits the arguments in N; cut=N drops and malformed=N breaks after N fragments."""
    url = f"{upstream.openai_base_url}/chat/completions"
    body = {**_openai_body(), "stream": True}
    data = _data(await _post(url, body, {"x-mock-fault": "chunks=3"}))
    fragments = [orjson.loads(d)["choices"][0]["delta"] for d in data[1:-2]]
    assert len(fragments) == 3
    joined = "".join(f["tool_calls"][0]["function"]["arguments"] for f in fragments)
    assert json.loads(joined) == WEATHER_ARGS
    raw = await raw_exchange(upstream.port, {**body, "model": "m/fault:chunks=3;cut=2"})
    assert raw.count(b'"arguments":') == 3  # the opening and two fragments
    assert b'"finish_reason":"tool_calls"' not in raw
    data = _data(await _post(url, body, {"x-mock-fault": "chunks=3;malformed=2"}))
    assert data[3].startswith('{"id": "chatcmpl-broken"')  # after the opening and 2 fragments


def _openai_body() -> dict[str, Any]:
    return {
        "model": "gpt-4o-mini",
        "messages": MESSAGES,
        "tools": OPENAI_TOOLS,
        "tool_choice": "required",
    }
