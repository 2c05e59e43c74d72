"""Echo-style answers of the mock upstream in the OpenAI and Anthropic shapes.

An answer reads `mock answer from <model>`, or is one tool call (`tools.ToolCall`); token counts
are plausible (a quarter of the prompt's characters in, one token per word or argument fragment
out). A streamed answer is laid out as `StreamPlan`: events before the first token (for a tool
call, these carry its id and name), one event per content piece (text, or argument fragment),
and the closing events whose last one is the terminator (`[DONE]` or `message_stop`), so that
the server can cut, stall or drop any part.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import itertools
import os
import struct
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from collections.abc import Sequence

    from turnout.mock_upstream.tools import ToolCall

__all__ = [
    "STAMP",
    "StreamPlan",
    "answer_pieces",
    "answer_text",
    "anthropic_message",
    "anthropic_stream",
    "anthropic_tool_message",
    "embeddings",
    "models_list",
    "openai_completion",
    "openai_stream",
    "openai_tool_completion",
    "output_tokens",
    "prompt_tokens",
    "stamp_pieces",
]

MODELS = (
    "gpt-4o-mini",
    "gpt-4o",
    "claude-3-5-haiku-latest",
    "claude-sonnet-4-5",
    "text-embedding-3-small",
    "mock",
)


_ID_STEM = os.urandom(6).hex()
_ids = itertools.count(1)


def new_id(prefix: str) -> str:
    """A vendor-looking id, unique in this process (`chatcmpl-…`, `msg_…`, `req_…`)."""
    return f"{prefix}{_ID_STEM}{next(_ids):012x}"


def _text_chars(content: Any) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        total = 0
        for part in content:
            if isinstance(part, dict):
                text = part.get("text")
                if isinstance(text, str):
                    total += len(text)
        return total
    return 0


def prompt_tokens(body: dict[str, Any]) -> int:
    """About a quarter of the characters of `system` and `messages`, at least 1 (Responses
    bodies count in `turnout.mock_upstream.responses.prompt_tokens`)."""
    chars = _text_chars(body.get("system"))
    messages = body.get("messages")
    if isinstance(messages, list):
        for message in messages:
            if isinstance(message, dict):
                chars += _text_chars(message.get("content"))
    return max(1, chars // 4)


def output_tokens(pieces: Sequence[str]) -> int:
    """One token per piece that is not blank (a word, or an argument fragment)."""
    return sum(1 for piece in pieces if piece.strip())


@functools.lru_cache(maxsize=1024)
def answer_pieces(model: str, chunks: int | None = None) -> tuple[str, ...]:
    """The answer split into stream pieces: one word each (`chunks` pieces when given)."""
    words = f"mock answer from {model}".split()
    count = len(words) if chunks is None else max(chunks, 0)
    return tuple((" " if i else "") + words[i % len(words)] for i in range(count))


STAMP = b"@stamp@"
"""What a `stamp` stream's content events carry until they are sent: then the send time."""


@functools.lru_cache(maxsize=1024)
def stamp_pieces(model: str, chunks: int | None = None) -> tuple[str, ...]:
    """As many pieces as `answer_pieces`, each the placeholder `STAMP` (after a space but the
    first), which the server replaces with the send time."""
    placeholder = STAMP.decode()
    count = len(answer_pieces(model, chunks))
    return tuple((" " if i else "") + placeholder for i in range(count))


@functools.lru_cache(maxsize=1024)
def answer_text(model: str, chunks: int | None = None) -> str:
    """The whole answer text (`mock answer from <model>`)."""
    return "".join(answer_pieces(model, chunks))


def openai_completion(
    model: str, text: str, *, prompt: int, finish: str = "stop"
) -> dict[str, Any]:
    """A `chat.completion` object."""
    message = {"role": "assistant", "content": text, "refusal": None}
    return _completion(model, message, prompt=prompt, completion=len(text.split()), finish=finish)


def openai_tool_completion(model: str, call: ToolCall, *, prompt: int) -> dict[str, Any]:
    """A `chat.completion` object whose message is one function tool call."""
    message = {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "tool_calls": [_openai_tool_call(call)],
    }
    completion = output_tokens(call.pieces())
    return _completion(model, message, prompt=prompt, completion=completion, finish="tool_calls")


def _openai_tool_call(call: ToolCall) -> dict[str, Any]:
    function = {"name": call.name, "arguments": call.arguments}
    return {"id": new_id("call_"), "type": "function", "function": function}


def _completion(
    model: str, message: dict[str, Any], *, prompt: int, completion: int, finish: str
) -> dict[str, Any]:
    return {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0},
        },
        "system_fingerprint": "fp_mock",
    }


def anthropic_message(
    model: str, text: str, *, prompt: int, stop_reason: str = "end_turn"
) -> dict[str, Any]:
    """A Messages API `message` object."""
    content = [{"type": "text", "text": text}] if text else []
    return _message(model, content, prompt=prompt, output=len(text.split()), stop=stop_reason)


def anthropic_tool_message(model: str, call: ToolCall, *, prompt: int) -> dict[str, Any]:
    """A Messages API `message` object whose content is one `tool_use` block."""
    block = {"type": "tool_use", "id": new_id("toolu_"), "name": call.name, "input": call.input}
    return _message(
        model, [block], prompt=prompt, output=output_tokens(call.pieces()), stop="tool_use"
    )


def _message(
    model: str, content: list[dict[str, Any]], *, prompt: int, output: int, stop: str
) -> dict[str, Any]:
    return {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": prompt,
            "output_tokens": output,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


@dataclass(frozen=True, slots=True)
class StreamPlan:
    """A streamed answer as SSE event bytes: `head` (before the first token), `content` (one
    event per piece), `tail` (finish, usage, and the terminator last, when the format has one),
    and `error` (an in-stream error event, sent instead of the content when a fault asks for
    it)."""

    head: list[bytes]
    content: list[bytes]
    tail: list[bytes]
    error: bytes
    malformed: bytes
    terminated: bool = True
    """Whether the last event of `tail` is a terminator (`[DONE]`, `message_stop`); Gemini
    streams have none, so a fault that drops the terminator leaves them whole."""


def _data(obj: Any) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def _event(name: str, obj: Any) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + orjson.dumps(obj) + b"\n\n"


def openai_stream(
    model: str,
    pieces: Sequence[str],
    *,
    prompt: int,
    finish: str = "stop",
    include_usage: bool,
    tool_name: str | None = None,
) -> StreamPlan:
    """`chat.completion.chunk` events: a role chunk, content chunks, a finish chunk, a usage
    chunk when `include_usage`, then `data: [DONE]`.

    With `tool_name`, the answer is one call of that tool: the role chunk also opens the call
    (index 0, id, name, empty arguments) and each piece is an argument fragment.
    """
    base = {
        "id": new_id("chatcmpl-"),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "fp_mock",
    }

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return _data({**base, "choices": [choice]})

    completion = output_tokens(pieces)
    tail = [chunk({}, finish)]
    if include_usage:
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        tail.append(_data({**base, "choices": [], "usage": usage}))
    tail.append(b"data: [DONE]\n\n")
    error = {"error": {"message": _OVERLOADED, "type": "server_error", "param": None, "code": None}}
    if tool_name is None:
        head = chunk({"role": "assistant", "content": ""})
        content = [chunk({"content": piece}) for piece in pieces]
    else:
        opening = {
            "index": 0,
            "id": new_id("call_"),
            "type": "function",
            "function": {"name": tool_name, "arguments": ""},
        }
        head = chunk({"role": "assistant", "content": None, "tool_calls": [opening]})
        content = [
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in pieces
        ]
    return StreamPlan(
        head=[head],
        content=content,
        tail=tail,
        error=_data(error),
        malformed=b'data: {"id": "chatcmpl-broken", "choices": [{"delta": \n\n',
    )


_OVERLOADED = "The engine is currently overloaded, please try again later."


def anthropic_stream(
    model: str,
    pieces: Sequence[str],
    *,
    prompt: int,
    stop_reason: str = "end_turn",
    tool_name: str | None = None,
) -> StreamPlan:
    """Messages API events: message_start, content_block_start, ping, content_block_delta per
    piece, content_block_stop, message_delta (stop reason, usage), message_stop.

    With `tool_name`, the block is a `tool_use` of that tool (id, name, `input: {}`) and each
    piece an `input_json_delta` fragment.
    """
    start = {
        "type": "message_start",
        "message": {
            "id": new_id("msg_"),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": prompt,
                "output_tokens": 1,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        },
    }
    opening: dict[str, Any] = {"type": "text", "text": ""}
    if tool_name is not None:
        opening = {"type": "tool_use", "id": new_id("toolu_"), "name": tool_name, "input": {}}
    block = {"type": "content_block_start", "index": 0, "content_block": opening}
    completion = output_tokens(pieces)
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": completion},
    }
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    return StreamPlan(
        head=[
            _event("message_start", start),
            _event("content_block_start", block),
            _event("ping", {"type": "ping"}),
        ],
        content=[
            _event("content_block_delta", _delta(p, tool=tool_name is not None)) for p in pieces
        ],
        tail=[
            _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _event("message_delta", delta),
            _event("message_stop", {"type": "message_stop"}),
        ],
        error=_event("error", error),
        malformed=b'event: content_block_delta\ndata: {"type": "content_block_delta", "index\n\n',
    )


def _delta(piece: str, *, tool: bool) -> dict[str, Any]:
    if tool:
        delta = {"type": "input_json_delta", "partial_json": piece}
    else:
        delta = {"type": "text_delta", "text": piece}
    return {"type": "content_block_delta", "index": 0, "delta": delta}


def _vector(text: str, dimensions: int) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    while len(digest) < dimensions:
        digest += hashlib.sha256(digest).digest()
    return [round(b / 127.5 - 1.0, 6) for b in digest[:dimensions]]


def embeddings(body: dict[str, Any], model: str) -> dict[str, Any]:
    """An embeddings `list`: one deterministic vector per input (8 dimensions unless asked)."""
    raw = body.get("input")
    inputs = raw if isinstance(raw, list) else [raw]
    dimensions = body.get("dimensions")
    size = dimensions if isinstance(dimensions, int) and 0 < dimensions <= 4096 else 8
    as_base64 = body.get("encoding_format") == "base64"
    data: list[dict[str, Any]] = []
    tokens = 0
    for index, item in enumerate(inputs):
        text = item if isinstance(item, str) else orjson.dumps(item).decode()
        tokens += max(1, len(text) // 4)
        vector = _vector(text, size)
        value: Any = (
            base64.b64encode(struct.pack(f"<{size}f", *vector)).decode() if as_base64 else vector
        )
        data.append({"object": "embedding", "index": index, "embedding": value})
    return {
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def models_list() -> dict[str, Any]:
    """`GET /v1/models`: the mock's fixed catalogue in OpenAI's list shape."""
    created = 1_700_000_000
    return {
        "object": "list",
        "data": [
            {"id": m, "object": "model", "created": created, "owned_by": "mock"} for m in MODELS
        ],
    }
