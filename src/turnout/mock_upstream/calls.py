"""What one API request to the mock upstream is about, read once and passed to every step
that answers it (`Call`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from turnout.mock_upstream import bedrock, gemini, routes
from turnout.mock_upstream.tools import pick_tool_call

if TYPE_CHECKING:
    from turnout.mock_upstream.faults import Fault
    from turnout.mock_upstream.log import LoggedRequest
    from turnout.mock_upstream.tools import ToolCall

__all__ = ["Call"]


@dataclass(slots=True)
class Call:
    """One API request: its endpoint and the vendor shapes it answers in (`api`: `openai`,
    `anthropic`, `vertex-anthropic`, `gemini` or `bedrock`), whether it streams, its body,
    model (`base`: without a fault spec), the fault it plays, its log entry, the headers every
    answer carries, and `tool_call`: the tool call it is answered with (None: a text answer)."""

    endpoint: str
    api: str
    stream: bool
    body: dict[str, Any]
    model: str
    base: str
    fault: Fault
    entry: LoggedRequest
    headers: list[tuple[str, str]]
    tool_call: ToolCall | None

    @classmethod
    def of(
        cls,
        endpoint: str,
        *,
        body: dict[str, Any],
        model: str,
        base: str,
        fault: Fault,
        entry: LoggedRequest,
        headers: list[tuple[str, str]],
        on_vertex: bool = False,
    ) -> Call:
        """The call a parsed request makes (`on_vertex`: it came by a Vertex path)."""
        api = routes.api(endpoint)
        # A refusal answers no tool call; only chat, messages, responses, Gemini and Bedrock
        # answers can carry one.
        tool_call = None
        if endpoint in routes.ANSWERS and not fault.refuse:
            offered = body
            if api == "gemini":
                offered = gemini.as_openai_tools(body)
            elif endpoint.startswith("bedrock_converse"):
                offered = bedrock.as_openai_tools(body)
            tool_call = pick_tool_call(offered, fault.tool_call)
        if on_vertex and api == "anthropic":
            api = "vertex-anthropic"
        stream = body.get("stream") is True or endpoint in routes.STREAMED
        return cls(
            endpoint, api, stream, body, model, base, fault, entry, headers, tool_call=tool_call
        )
