"""What the mock upstream answers to one call, in the shapes of the call's API: the whole
answer, the stream's events, an error, and the `Retry-After` headers a fault asks for.

A whole answer is what the fault leaves of the normal one (a refusal, a tool call, an example
of the JSON schema the request asks for, or `mock answer from <model>`); the server plays the
fault's timing and cuts around it (`mock_upstream.playback`).
"""

from __future__ import annotations

import time
from email.utils import formatdate
from typing import TYPE_CHECKING, Any

from turnout.mock_upstream import answers, bedrock, gemini, responses, vertex
from turnout.mock_upstream.faults import split_model
from turnout.mock_upstream.vendors import error_reply

if TYPE_CHECKING:
    from turnout.mock_upstream.answers import StreamPlan
    from turnout.mock_upstream.calls import Call
    from turnout.mock_upstream.faults import Fault
    from turnout.mock_upstream.vendors import ErrorReply

__all__ = ["error", "retry_headers", "stamped", "stream_plan", "whole"]

_SCHEMA_APIS = frozenset({"openai", "anthropic", "vertex-anthropic", "bedrock"})
"""The APIs whose answers honour a JSON schema the request asks for (`responses.json_answer`)."""

_MESSAGES = frozenset({"messages", "bedrock_invoke", "bedrock_invoke_stream"})
"""The endpoints that answer an Anthropic message."""


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def retry_headers(fault: Fault) -> list[tuple[str, str]]:
    """The `Retry-After` / `retry-after-ms` headers a fault asks for."""
    headers: list[tuple[str, str]] = []
    if fault.retry_after is not None:
        headers.append(("retry-after", _seconds(fault.retry_after)))
    if fault.retry_after_date is not None:
        when = formatdate(time.time() + fault.retry_after_date, usegmt=True)
        headers.append(("retry-after", when))
    if fault.retry_after_ms is not None:
        headers.append(("retry-after-ms", _seconds(fault.retry_after_ms)))
    return headers


def error(fault: Fault, api: str, model: str, request_id: str) -> ErrorReply:
    """The error answer of `fault` in the shapes of `api`."""
    if api == "gemini":
        return gemini.error_reply(fault, model=split_model(model)[0])
    if api == "vertex-anthropic":
        return vertex.claude_error(fault, model=split_model(model)[0], request_id=request_id)
    if api == "bedrock":
        return bedrock.error_reply(fault)
    return error_reply(fault, api=api, model=model, request_id=request_id)


def _prompt_tokens(body: dict[str, Any]) -> int:
    """The prompt tokens of an OpenAI or Anthropic body: a body with `input` and no `messages`
    counts as a Responses one."""
    if "input" in body and "messages" not in body:
        return responses.prompt_tokens(body)
    return answers.prompt_tokens(body)


def _answer_text(call: Call) -> str:
    """A whole answer's text: an example of the request's JSON schema when it asks for one
    (chat, Messages), else the answer the model name asks for."""
    if call.api in _SCHEMA_APIS:
        schema_text = responses.json_answer(call.body)
        if schema_text is not None:
            return schema_text
    return answers.answer_text(call.base, call.fault.chunks)


def stamped(call: Call) -> bool:
    """Whether the stream's text pieces carry their send time (`stamp`): text answers in the
    SSE formats, where an event may change length (a Bedrock frame has a checksum)."""
    fault = call.fault
    return (
        fault.stamp
        and call.tool_call is None
        and not fault.refuse
        and call.api != "bedrock"
        and not (call.endpoint == "responses" and responses.json_answer(call.body))
    )


def whole(call: Call) -> dict[str, Any]:
    """The whole (not streamed) answer of `call`."""
    fault = call.fault
    if call.endpoint == "embeddings":
        return answers.embeddings(call.body, call.model)
    if call.endpoint == "gemini_embed":
        return gemini.embeddings(call.body)
    if call.api == "gemini":
        text = "" if fault.refuse else answers.answer_text(call.base, fault.chunks)
        prompt = gemini.prompt_tokens(call.body)
        return gemini.whole(
            call.model, text, prompt=prompt, refuse=fault.refuse, call=call.tool_call
        )
    if call.endpoint.startswith("bedrock_converse"):
        text = "" if fault.refuse else answers.answer_text(call.base, fault.chunks)
        prompt = bedrock.prompt_tokens(call.body)
        return bedrock.converse_whole(text, prompt=prompt, refuse=fault.refuse, call=call.tool_call)
    if call.endpoint == "responses":
        text = responses.json_answer(call.body) or answers.answer_text(call.base, fault.chunks)
        return responses.whole_response(
            call.body,
            call.model,
            text="" if fault.refuse else text,
            call=call.tool_call,
            refused=fault.refuse,
        )
    prompt = _prompt_tokens(call.body)
    if call.endpoint == "count_tokens":
        return {"input_tokens": prompt}
    messages = call.endpoint in _MESSAGES
    if call.tool_call is not None:
        if messages:
            return answers.anthropic_tool_message(call.model, call.tool_call, prompt=prompt)
        return answers.openai_tool_completion(call.model, call.tool_call, prompt=prompt)
    text = "" if fault.refuse else _answer_text(call)
    if messages:
        stop = "refusal" if fault.refuse else "end_turn"
        return answers.anthropic_message(call.model, text, prompt=prompt, stop_reason=stop)
    finish = "content_filter" if fault.refuse else "stop"
    return answers.openai_completion(call.model, text, prompt=prompt, finish=finish)


def _pieces(call: Call) -> tuple[str, ...]:
    """The content pieces of `call`'s stream: argument fragments of its tool call, the JSON
    schema's example in one piece, or the answer's words (stamped ones for `stamp`)."""
    fault, tool = call.fault, call.tool_call
    if tool is not None:
        return tool.pieces(fault.chunks)
    if fault.refuse:
        return ()
    schema_text = responses.json_answer(call.body) if call.api in _SCHEMA_APIS else None
    if schema_text:
        return (schema_text,)
    if stamped(call):
        return answers.stamp_pieces(call.base, fault.chunks)
    return answers.answer_pieces(call.base, fault.chunks)


def stream_plan(call: Call) -> tuple[StreamPlan, dict[str, Any] | None]:
    """The stream's events, and for a Responses stream the response it ends with."""
    fault, tool = call.fault, call.tool_call
    pieces = _pieces(call)
    if call.endpoint == "responses":
        return responses.responses_stream(
            call.body, call.model, pieces, call=tool, refused=fault.refuse
        )
    name = tool.name if tool is not None else None
    if call.api == "gemini":
        prompt = gemini.prompt_tokens(call.body)
        return gemini.stream_plan(
            call.model, pieces, prompt=prompt, refuse=fault.refuse, call=tool
        ), None
    if call.endpoint == "bedrock_converse_stream":
        prompt = bedrock.prompt_tokens(call.body)
        return bedrock.converse_plan(pieces, prompt=prompt, refuse=fault.refuse, call=tool), None
    prompt = _prompt_tokens(call.body)
    if call.endpoint in {"messages", "bedrock_invoke_stream"}:
        stop = "tool_use" if tool else "refusal" if fault.refuse else "end_turn"
        plan = answers.anthropic_stream(
            call.model, pieces, prompt=prompt, stop_reason=stop, tool_name=name
        )
        if call.endpoint == "bedrock_invoke_stream":
            plan = bedrock.invoke_plan(plan)
        return plan, None
    options = call.body.get("stream_options")
    include = isinstance(options, dict) and options.get("include_usage") is True
    finish = "tool_calls" if tool else "content_filter" if fault.refuse else "stop"
    plan = answers.openai_stream(
        call.model, pieces, prompt=prompt, finish=finish, include_usage=include, tool_name=name
    )
    return plan, None
