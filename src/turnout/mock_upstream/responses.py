"""The mock upstream's answers in OpenAI's Responses shape, whole and streamed, and the
responses it keeps for `GET` / `DELETE /v1/responses/{id}`.

An answer is a `response` object with one `message` output item (`output_text`: `mock answer
from <model>`, or, when the request asks for a JSON schema, an example of that schema as JSON,
so a client can parse it: `json_answer` reads it on every API that carries one), or one
`function_call` item (`tools.ToolCall`). A refusal is `status: incomplete` with
`incomplete_details.reason: content_filter`. A stream is laid out as `answers.StreamPlan`,
its events numbered by `sequence_number` from 0:
`response.created`, `response.in_progress`, the item's `….added` events, one delta per piece,
then the `….done` events and `response.completed` last (a stream "without its terminator" ends
before `response.completed`).

Rule 1: every response answered (whole, or streamed to its end) is kept by id, the newest
`KEEP` of them, unless the request said `store: false`.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import orjson

from turnout.mock_upstream.answers import StreamPlan, new_id, output_tokens
from turnout.mock_upstream.tools import example_arguments

if TYPE_CHECKING:
    from collections.abc import Sequence

    from turnout.mock_upstream.tools import ToolCall

__all__ = [
    "KEEP",
    "StoredResponses",
    "json_answer",
    "prompt_tokens",
    "response_object",
    "responses_stream",
]

KEEP = 1000
"""How many answered responses the mock keeps for retrieval."""


def prompt_tokens(body: dict[str, Any]) -> int:
    """About a quarter of the characters of `instructions` and `input`, at least 1."""
    chars = 0
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        chars += len(instructions)
    raw = body.get("input")
    if isinstance(raw, str):
        chars += len(raw)
    for item in raw if isinstance(raw, list) else ():
        if not isinstance(item, dict):
            continue
        content = item.get("content", item.get("output"))
        if isinstance(content, str):
            chars += len(content)
        for part in content if isinstance(content, list) else ():
            text = part.get("text") if isinstance(part, dict) else None
            chars += len(text) if isinstance(text, str) else 0
    return max(1, chars // 4)


def json_answer(body: dict[str, Any]) -> str | None:
    """An example of the request's JSON schema as JSON text (None: no schema), the schema read
    where each API puts it: Responses `text.format`, Chat Completions
    `response_format.json_schema`, Anthropic `output_config.format`."""
    schema = _requested_schema(body)
    if schema is None:
        return None
    return orjson.dumps(example_arguments(schema)).decode()


def _requested_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    text, chat, config = body.get("text"), body.get("response_format"), body.get("output_config")
    fmt = None
    if isinstance(text, dict):
        fmt = text.get("format")
    elif isinstance(chat, dict) and chat.get("type") == "json_schema":
        spec = chat.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        fmt = {"type": "json_schema", "schema": schema}
    elif isinstance(config, dict):
        fmt = config.get("format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return None
    schema = fmt.get("schema")
    return schema if isinstance(schema, dict) else {}


def _usage(prompt: int, output: int) -> dict[str, Any]:
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + output,
    }


def _message(ident: str, text: str, status: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
    return {
        "id": ident,
        "type": "message",
        "status": status,
        "role": "assistant",
        "content": content if status == "completed" or text else [],
    }


def _call(ident: str, call_id: str, call: ToolCall, arguments: str, status: str) -> dict[str, Any]:
    return {
        "id": ident,
        "type": "function_call",
        "status": status,
        "arguments": arguments,
        "call_id": call_id,
        "name": call.name,
    }


def response_object(
    body: dict[str, Any],
    model: str,
    *,
    ident: str,
    output: list[dict[str, Any]],
    status: str = "completed",
    usage: dict[str, Any] | None = None,
    refused: bool = False,
) -> dict[str, Any]:
    """A `response` object echoing the request's settings."""
    text = body.get("text")
    return {
        "id": ident,
        "object": "response",
        "created_at": int(time.time()),
        "status": "incomplete" if refused and status == "completed" else status,
        "background": False,
        "error": None,
        "incomplete_details": {"reason": "content_filter"} if refused else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": model,
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": text if isinstance(text, dict) else {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []),
        "top_p": body.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": body.get("metadata") or {},
    }


def whole_response(
    body: dict[str, Any], model: str, *, text: str, call: ToolCall | None, refused: bool
) -> dict[str, Any]:
    """A whole `response`: one message, or one function call."""
    prompt = prompt_tokens(body)
    if call is not None:
        item = _call(new_id("fc_"), new_id("call_"), call, call.arguments, "completed")
        output = output_tokens(call.pieces())
    else:
        item = _message(new_id("msg_"), text, "completed")
        output = len(text.split())
    return response_object(
        body,
        model,
        ident=new_id("resp_"),
        output=[] if refused else [item],
        usage=_usage(prompt, output),
        refused=refused,
    )


class _Events:
    """Numbered `event:`/`data:` pairs of one stream."""

    def __init__(self) -> None:
        self.seq = 0

    def __call__(self, kind: str, payload: dict[str, Any]) -> bytes:
        data = {"type": kind, "sequence_number": self.seq, **payload}
        self.seq += 1
        return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def responses_stream(
    body: dict[str, Any],
    model: str,
    pieces: Sequence[str],
    *,
    call: ToolCall | None,
    refused: bool,
) -> tuple[StreamPlan, dict[str, Any]]:
    """The events of a streamed answer, and the final `response` (kept once it was sent)."""
    event = _Events()
    ident = new_id("resp_")
    in_progress = response_object(body, model, ident=ident, output=[], status="in_progress")
    head = [
        event("response.created", {"response": in_progress}),
        event("response.in_progress", {"response": in_progress}),
    ]
    opening, content, closing, done_item = _item_events(event, pieces, call)
    final = response_object(
        body,
        model,
        ident=ident,
        output=[] if refused else [done_item],
        usage=_usage(prompt_tokens(body), output_tokens(pieces)),
        refused=refused,
    )
    kind = "response.incomplete" if refused else "response.completed"
    head += opening
    error = {
        "type": "error",
        "code": "server_error",
        "message": "The server had an error while processing your request.",
        "param": None,
        "sequence_number": len(head),
    }
    plan = StreamPlan(
        head=head,
        content=content,
        tail=[*closing, event(kind, {"response": final})],
        error=b"event: error\ndata: " + orjson.dumps(error) + b"\n\n",
        malformed=b'event: response.output_text.delta\ndata: {"type": "response.output\n\n',
    )
    return plan, final


def _item_events(
    event: _Events, pieces: Sequence[str], call: ToolCall | None
) -> tuple[list[bytes], list[bytes], list[bytes], dict[str, Any]]:
    """The one output item's events: opening, one delta per piece, closing; and the item."""
    whole = "".join(pieces)
    item_id = new_id("fc_" if call is not None else "msg_")
    at = {"item_id": item_id, "output_index": 0}
    if call is not None:
        call_id = new_id("call_")
        added = _call(item_id, call_id, call, "", "in_progress")
        done_item = _call(item_id, call_id, call, whole, "completed")
        opening = [event("response.output_item.added", {"output_index": 0, "item": added})]
        content = [
            event("response.function_call_arguments.delta", {**at, "delta": p}) for p in pieces
        ]
        closing = [event("response.function_call_arguments.done", {**at, "arguments": whole})]
    else:
        done_item = _message(item_id, whole, "completed")
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        text_at = {**at, "content_index": 0}
        opening = [
            event(
                "response.output_item.added",
                {"output_index": 0, "item": _message(item_id, "", "in_progress")},
            ),
            event("response.content_part.added", {**text_at, "part": part}),
        ]
        content = [
            event("response.output_text.delta", {**text_at, "delta": p, "logprobs": []})
            for p in pieces
        ]
        closing = [
            event("response.output_text.done", {**text_at, "text": whole, "logprobs": []}),
            event("response.content_part.done", {**text_at, "part": {**part, "text": whole}}),
        ]
    closing.append(event("response.output_item.done", {"output_index": 0, "item": done_item}))
    return opening, content, closing, done_item


class StoredResponses:
    """Rule 1: the answered responses by id, newest `KEEP`."""

    def __init__(self, keep: int = KEEP) -> None:
        self._keep = keep
        self._responses: OrderedDict[str, bytes] = OrderedDict()

    def keep(self, body: dict[str, Any], response: dict[str, Any]) -> None:
        """Keep `response` unless the request said `store: false`."""
        if body.get("store") is False:
            return
        self._responses[str(response["id"])] = orjson.dumps(response)
        while len(self._responses) > self._keep:
            self._responses.popitem(last=False)

    def get(self, ident: str) -> bytes | None:
        """The kept response, or None."""
        return self._responses.get(ident)

    def delete(self, ident: str) -> bool:
        """Forget a kept response; False when there was none."""
        return self._responses.pop(ident, None) is not None

    def clear(self) -> None:
        """Forget every response."""
        self._responses.clear()
