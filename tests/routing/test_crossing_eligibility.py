"""Which targets of another wire format may take a request: a JSON schema a format cannot
hold makes it ineligible, tools that may be flattened or dropped do not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from turnout import errors
from turnout.routing.route import Route, Target
from turnout.testing import ScriptedModel, isolated_health, turn
from turnout.wire import openai_responses
from turnout.wire.model import ChatRequest, Message

CODEX = Path(__file__).parent.parent / "fixtures" / "clients" / "codex_responses.json"
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}


class _SpeaksFormat(ScriptedModel):
    """A scripted model that says which wire format it speaks, as a provider adapter does."""

    def __init__(self, wire_format: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.wire_format = wire_format


def schema_request(kind: str) -> ChatRequest:
    """A request from OpenAI Chat asking for `kind` (json_schema or json_object)."""
    fmt: dict[str, Any] = {"type": kind}
    if kind == "json_schema":
        fmt["json_schema"] = {"name": "a", "schema": SCHEMA}
    return ChatRequest([Message.user("q")], response_format=fmt, origin="openai-chat", model="gpt")


@pytest.mark.parametrize(
    ("wire_format", "kind", "reason"),
    [
        ("anthropic-messages", "json_object", "it cannot honour response_format json_object"),
        ("bedrock-converse", "json_schema", "it cannot honour response_format json_schema"),
    ],
)
async def test_unhonoured_schema_makes_the_target_ineligible(
    wire_format: str, kind: str, reason: str
) -> None:
    """A target whose format cannot hold the request's response format is skipped as
    ineligible with the reason, and the next target serves."""
    health = isolated_health()
    other = _SpeaksFormat(wire_format, "other", "m", [turn.answer("free text")])
    openai = _SpeaksFormat("openai-chat", "oai", "gpt", [turn.answer('{"a": "x"}')])
    route = Route("r", [Target("other", other), Target("gpt", openai)], health=health)
    served = await health.clock.run(route.complete(schema_request(kind)))
    assert served.routing is not None
    assert served.routing.attempts[0].outcome == "ineligible"
    assert served.routing.attempts[0].reason == reason
    assert (served.routing.answered, other.calls) == ("gpt", 0)


async def test_anthropic_target_takes_a_json_schema() -> None:
    """An Anthropic-format target is eligible for a JSON schema (it carries it)."""
    health = isolated_health()
    claude = _SpeaksFormat("anthropic-messages", "ant", "claude", [turn.answer('{"a": "x"}')])
    route = Route("r", [Target("claude", claude)], health=health)
    served = await health.clock.run(route.complete(schema_request("json_schema")))
    assert served.routing is not None
    assert served.routing.answered == "claude"


async def test_every_target_unable_to_hold_the_schema_is_route_ineligible() -> None:
    """When no target can hold the schema the route ends ineligible, not with free text."""
    health = isolated_health()
    converse = _SpeaksFormat("bedrock-converse", "br", "m", [turn.answer("free text")])
    route = Route("r", [Target("br", converse)], health=health)
    with pytest.raises(errors.RouteIneligible) as caught:
        await health.clock.run(route.complete(schema_request("json_schema")))
    assert "cannot honour response_format json_schema" in str(caught.value)


async def test_codex_request_fails_over_to_an_anthropic_target() -> None:
    """Codex's request (a namespace of functions, a cache-only web search) is served by an
    Anthropic-format target when the OpenAI one fails, naming the dropped search."""
    health = isolated_health()
    openai = _SpeaksFormat("openai-responses", "oai", "gpt", [turn.fail(503)])
    claude = _SpeaksFormat("anthropic-messages", "ant", "claude", [turn.answer("done")])
    route = Route("r", [Target("gpt", openai), Target("claude", claude)], health=health)
    request = openai_responses.decode_request(CODEX.read_bytes())
    served = await health.clock.run(route.complete(request))
    record = served.routing
    assert record is not None
    assert record.answered == "claude"
    assert [a.outcome for a in record.attempts][-1] == "answered"
    assert "tool web_search (web_search)" in (record.attempts[-1].reason or "")
