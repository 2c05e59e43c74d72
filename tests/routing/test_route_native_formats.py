"""A target that serves more than one wire format natively (an OpenAI provider takes its
callers' Responses requests as they are): server state and built-in tools of that format make
only the other targets ineligible, and nothing is reported dropped for a forwarded call."""

from __future__ import annotations

from typing import Any

from turnout.routing.route import Route, Target
from turnout.routing.target_facts import native_formats
from turnout.testing import ScriptedModel, isolated_health, turn
from turnout.wire.model import ChatRequest, Message, NativeBlock, Tool

QUESTION = [Message.user("Why is checkout failing?")]


class _Speaks(ScriptedModel):
    """A scripted model that says which wire formats it serves, as a provider adapter does."""

    def __init__(self, formats: tuple[str, ...], *args: Any) -> None:
        super().__init__(*args)
        self.wire_format = formats[0]
        self.wire_formats = frozenset(formats)


def _route() -> tuple[Route, _Speaks, _Speaks, Any]:
    health = isolated_health()
    claude = _Speaks(("anthropic-messages",), "ant", "claude", [turn.answer("from claude")])
    gpt = _Speaks(("openai-chat", "openai-responses"), "oai", "gpt", [turn.answer("from gpt")])
    route = Route("r", [Target("claude", claude), Target("gpt", gpt)], health=health)
    return route, claude, gpt, health


def _responses_request(**options: Any) -> ChatRequest:
    return ChatRequest(QUESTION, origin="openai-responses", **options)


def test_native_formats_read_what_a_client_says() -> None:
    """`wire_formats` when a client gives it, else its one `wire_format`, else nothing."""
    assert native_formats(_Speaks(("openai-chat", "openai-responses"), "p", "m", [])) == {
        "openai-chat",
        "openai-responses",
    }
    assert native_formats(ScriptedModel("p", "m", [])) == frozenset()


async def test_server_state_skips_targets_that_do_not_serve_the_format() -> None:
    """`previous_response_id` makes the Anthropic target ineligible, naming it; the target
    serving Responses natively answers with nothing reported dropped."""
    route, claude, _, health = _route()
    request = _responses_request(
        server_features=("previous_response_id",), extra={"parallel_tool_calls": False}
    )
    served = await health.clock.run(route.complete(request))
    record = served.routing
    assert record is not None
    assert [a.outcome for a in record.attempts] == ["ineligible", "answered"]
    assert "previous_response_id" in (record.attempts[0].reason or "")
    assert record.attempts[1].reason is None
    assert claude.calls == 0


async def test_built_in_tools_of_the_format_skip_only_the_others() -> None:
    """A Responses built-in tool is carried by the target serving Responses, not by another."""
    route, _, _, health = _route()
    search = Tool("web_search", native=NativeBlock("openai-responses", {"type": "web_search"}))
    served = await health.clock.run(route.complete(_responses_request(tools=[search])))
    assert served.routing is not None
    assert [a.outcome for a in served.routing.attempts] == ["ineligible", "answered"]
    assert "web_search" in (served.routing.attempts[0].reason or "")


async def test_a_translated_call_names_what_it_drops() -> None:
    """Without server state the first target answers by translation, its entry naming the
    fields its format cannot carry."""
    route, _, _, health = _route()
    request = _responses_request(extra={"parallel_tool_calls": False})
    served = await health.clock.run(route.complete(request))
    assert served.routing is not None
    assert served.routing.answered == "claude"
    assert "parallel_tool_calls" in (served.routing.attempts[0].reason or "")
