"""One case of one Python client library, run inside that library's own virtual environment
(not turnout's): `python sdk_case.py LIBRARY API CASE BASE_URL MODEL`.

LIBRARY is `agents` (the OpenAI Agents SDK), `pydantic_ai` or `langchain`; API is `openai` or
`anthropic` (the wire format the library speaks to the gateway); CASE is `plain`, `stream`,
`tool`, `structured` or `failover`. It prints one JSON object, `{"ok": bool, "detail": str}`,
as its last line; what happened on the wire (a tool result sent back, a failover) is checked
by the driver in the gateway's and the mock upstream's logs.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import pydantic

KEY = os.environ.get("TURNOUT_CLIENT_KEY", "sk-turnout-client")
PROMPT = "Say hello in one short sentence."
TOOL_PROMPT = "What is the weather in Lisbon? Use the get_weather tool."
CALLS: list[str] = []


class Forecast(pydantic.BaseModel):
    summary: str
    celsius: int


def get_weather(city: str) -> str:
    """The weather in a city."""
    CALLS.append(city)
    return f"sunny in {city}, 21 C"


def _text_ok(text: Any) -> tuple[bool, str]:
    """A non-empty answer text."""
    return isinstance(text, str) and bool(text.strip()), f"answer {str(text)[:60]!r}"


def _tool_ok(text: Any) -> tuple[bool, str]:
    """The tool ran once and an answer came back after it."""
    ok, detail = _text_ok(text)
    return ok and len(CALLS) >= 1, f"tool ran {len(CALLS)}x; {detail}"


def _structured_ok(value: Any) -> tuple[bool, str]:
    """The library handed back a validated Forecast."""
    return isinstance(value, Forecast), f"output {value!r}"[:100]


# -- the OpenAI Agents SDK -------------------------------------------------------------------


async def _agents(api: str, case: str, base_url: str, model: str) -> tuple[bool, str]:
    import agents
    from openai import AsyncOpenAI

    agents.set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0)
    wire = agents.OpenAIResponsesModel(model=model, openai_client=client)
    if case == "tool":
        agent = agents.Agent(name="c", model=wire, tools=[agents.function_tool(get_weather)])
        return _tool_ok((await agents.Runner.run(agent, TOOL_PROMPT)).final_output)
    if case == "structured":
        agent = agents.Agent(name="c", model=wire, output_type=Forecast)
        return _structured_ok((await agents.Runner.run(agent, "Forecast Lisbon.")).final_output)
    agent = agents.Agent(name="c", model=wire)
    if case == "stream":
        run = agents.Runner.run_streamed(agent, PROMPT)
        deltas = [e async for e in run.stream_events() if _is_delta(e)]
        ok, detail = _text_ok(run.final_output)
        return ok and bool(deltas), f"{len(deltas)} deltas; {detail}"
    return _text_ok((await agents.Runner.run(agent, PROMPT)).final_output)


def _is_delta(event: Any) -> bool:
    """A streamed text delta of the Agents SDK."""
    data = getattr(event, "data", None)
    return getattr(data, "type", "") == "response.output_text.delta"


# -- pydantic-ai -----------------------------------------------------------------------------


def _pydantic_ai_model(api: str, base_url: str, model: str) -> Any:
    if api == "anthropic":
        from pydantic_ai.models.anthropic import AnthropicModel
        from pydantic_ai.providers.anthropic import AnthropicProvider

        return AnthropicModel(model, provider=AnthropicProvider(api_key=KEY, base_url=base_url))
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIChatModel(model, provider=OpenAIProvider(base_url=base_url, api_key=KEY))


async def _pydantic_ai(api: str, case: str, base_url: str, model: str) -> tuple[bool, str]:
    import pydantic_ai

    wire = _pydantic_ai_model(api, base_url, model)
    if case == "tool":
        agent = pydantic_ai.Agent(wire, tools=[get_weather])
        return _tool_ok((await agent.run(TOOL_PROMPT)).output)
    if case == "structured":
        agent = pydantic_ai.Agent(wire, output_type=Forecast)
        return _structured_ok((await agent.run("Forecast Lisbon.")).output)
    agent = pydantic_ai.Agent(wire)
    if case == "stream":
        async with agent.run_stream(PROMPT) as run:
            deltas = [d async for d in run.stream_text(delta=True, debounce_by=None)]
        ok, detail = _text_ok("".join(deltas))
        return ok and len(deltas) > 1, f"{len(deltas)} deltas; {detail}"
    return _text_ok((await agent.run(PROMPT)).output)


# -- LangChain -------------------------------------------------------------------------------


def _langchain_model(api: str, base_url: str, model: str) -> Any:
    options: dict[str, Any] = {"model": model, "base_url": base_url, "api_key": KEY}
    options["max_retries"] = 0
    if api == "anthropic":
        from langchain_anthropic import ChatAnthropic

        return ChatAnthropic(**options)
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(**options)


def _langchain(api: str, case: str, base_url: str, model: str) -> tuple[bool, str]:
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.tools import tool

    chat = _langchain_model(api, base_url, model)
    if case == "tool":
        weather = tool(get_weather)
        bound = chat.bind_tools([weather])
        history: list[Any] = [HumanMessage(TOOL_PROMPT)]
        asked = bound.invoke(history)
        history.append(asked)
        history += [
            ToolMessage(weather.invoke(call["args"]), tool_call_id=call["id"])
            for call in asked.tool_calls
        ]
        return _tool_ok(bound.invoke(history).text)
    if case == "structured":
        return _structured_ok(chat.with_structured_output(Forecast).invoke("Forecast Lisbon."))
    if case == "stream":
        chunks = [c.text for c in chat.stream(PROMPT)]
        ok, detail = _text_ok("".join(chunks))
        return ok and len(chunks) > 1, f"{len(chunks)} chunks; {detail}"
    return _text_ok(chat.invoke(PROMPT).text)


def main(library: str, api: str, case: str, base_url: str, model: str) -> tuple[bool, str]:
    if library == "agents":
        return asyncio.run(_agents(api, case, base_url, model))
    if library == "pydantic_ai":
        return asyncio.run(_pydantic_ai(api, case, base_url, model))
    return _langchain(api, case, base_url, model)


if __name__ == "__main__":
    try:
        ok, detail = main(*sys.argv[1:6])
    except Exception as exc:  # the driver reports what the library raised
        ok, detail = False, f"{type(exc).__name__}: {exc}"[:300]
    print(json.dumps({"ok": ok, "detail": detail}))
