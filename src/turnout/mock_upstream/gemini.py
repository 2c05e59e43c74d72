"""The mock upstream's Gemini face: `generateContent`, `streamGenerateContent?alt=sse` and
`batchEmbedContents` under `/v1beta/models/{model}:…`, answers and errors in Google's shapes.

Rule 1: the model comes from the path (percent-decoded), so fault specs in model names work as
on the other endpoints (`/v1beta/models/m%2Ffault%3Astatus%3D429:generateContent`).
Rule 2: with a test key set (`gemini_key`), a request must carry exactly that key in
`x-goog-api-key`: a key in the URL's query (`?key=`) or a missing or wrong header is refused as
Google refuses it (400 `INVALID_ARGUMENT`, `ErrorInfo` reason `API_KEY_INVALID`), before any
fault plays.
Rule 3: errors use Google's envelope `{"error": {"code", "message", "status", "details"}}`; a
quota fault is a 429 `RESOURCE_EXHAUSTED` with a per-day `QuotaFailure` and a `RetryInfo`
(its `retryDelay` from the fault's `reset_in`, else 60 s); a plain 429 is a per-minute
`QuotaFailure`; a context-length fault is Google's 400 token-count message.
Rule 4: a stream is one SSE event per answer piece (CRLF-framed, as Google sends them), then one
event with `finishReason` and `usageMetadata`; there is no terminator event.
"""

from __future__ import annotations

import hashlib
import struct
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, unquote

import orjson

from turnout.mock_upstream.answers import StreamPlan, new_id, output_tokens
from turnout.mock_upstream.vendors import REASONS, ErrorReply
from turnout.wire.gemini import error_body

if TYPE_CHECKING:
    from collections.abc import Sequence

    from turnout.mock_upstream.faults import Fault
    from turnout.mock_upstream.tools import ToolCall

__all__ = [
    "ENDPOINTS",
    "as_openai_tools",
    "embeddings",
    "error_reply",
    "key_refusal",
    "model_of",
    "prompt_tokens",
    "stream_plan",
    "whole",
]

ENDPOINTS = {
    ":generateContent": "gemini",
    ":streamGenerateContent": "gemini_stream",
    ":batchEmbedContents": "gemini_embed",
}
"""Path suffix -> endpoint name."""

_TYPE = "type.googleapis.com/google.rpc."
_MODES = {"ANY": "required", "NONE": "none", "AUTO": "auto"}
_CONTEXT = "The input token count (1196265) exceeds the maximum number of tokens allowed (1048576)."
_POLICY = "The request was blocked because it violates our policies on prohibited content."
_QUOTA = (
    "You exceeded your current quota, please check your plan and billing details. For more "
    "information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
)


def model_of(path: str) -> str:
    """Rule 1: the model named in a Gemini path, percent-decoded (`models/` removed)."""
    tail = path.rsplit("/models/", 1)[-1]
    return unquote(tail.rsplit(":", 1)[0])


def key_refusal(headers: dict[str, str], query: str, key: str | None) -> ErrorReply | None:
    """Rule 2: the refusal of a request that does not carry the test key as it should."""
    if key is None:
        return None
    in_query = "key" in parse_qs(query)
    if not in_query and headers.get("x-goog-api-key") == key:
        return None
    message = "API key not valid. Please pass a valid API key."
    if in_query:
        message = "API key in the URL query is refused by this mock: send x-goog-api-key."
    info = {
        "@type": _TYPE + "ErrorInfo",
        "reason": "API_KEY_INVALID",
        "domain": "googleapis.com",
        "metadata": {"service": "generativelanguage.googleapis.com"},
    }
    return _reply(400, message, [info])


def _reply(status: int, message: str, details: list[dict[str, Any]] | None = None) -> ErrorReply:
    return ErrorReply(status, orjson.dumps(error_body(status, message, details=details)))


def _quota_details(quota_id: str, model: str, delay: float) -> list[dict[str, Any]]:
    violation = {
        "quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
        "quotaId": quota_id,
        "quotaDimensions": {"location": "global", "model": model},
        "quotaValue": "50",
    }
    return [
        {"@type": _TYPE + "QuotaFailure", "violations": [violation]},
        {"@type": _TYPE + "RetryInfo", "retryDelay": f"{delay:g}s"},
    ]


def error_reply(fault: Fault, *, model: str) -> ErrorReply:
    """Rule 3: the error answer `fault` asks for, in Google's envelope."""
    details: list[dict[str, Any]] | None = None
    if fault.quota:
        status, message = 429, _QUOTA
        delay = fault.reset_in if fault.reset_in > 0 else 60.0
        details = _quota_details("GenerateRequestsPerDayPerProjectPerModel", model, delay)
    elif fault.context_length:
        status, message = 400, _CONTEXT
    elif fault.content_policy:
        status, message = 400, _POLICY
    else:
        status = fault.status or 500
        message = REASONS.get(status, f"HTTP {status}")
        if status == 429:
            details = _quota_details("GenerateRequestsPerMinutePerProjectPerModel", model, 20)
    status = fault.status or status
    return _reply(status, fault.message or message, details)


def prompt_tokens(body: dict[str, Any]) -> int:
    """About a quarter of the prompt's characters (system instruction and contents), at least 1."""
    chars = 0
    system = body.get("systemInstruction")
    contents = body.get("contents")
    holders = [system] if isinstance(system, dict) else []
    holders += [c for c in contents if isinstance(c, dict)] if isinstance(contents, list) else []
    for holder in holders:
        parts = holder.get("parts")
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                chars += len(part["text"])
    return max(1, chars // 4)


def as_openai_tools(body: dict[str, Any]) -> dict[str, Any]:
    """The body's function declarations and tool config in OpenAI's shape, for the mock's
    tool-call picker."""
    tools: list[dict[str, Any]] = []
    for tool in body.get("tools") or ():
        declarations = tool.get("functionDeclarations") if isinstance(tool, dict) else None
        for declared in declarations if isinstance(declarations, list) else ():
            if isinstance(declared, dict):
                schema = declared.get("parametersJsonSchema", declared.get("parameters"))
                function = {"name": declared.get("name"), "parameters": schema}
                tools.append({"type": "function", "function": function})
    config = body.get("toolConfig")
    calling = config.get("functionCallingConfig") if isinstance(config, dict) else None
    choice: Any = None
    if isinstance(calling, dict):
        names = calling.get("allowedFunctionNames")
        choice = _MODES.get(str(calling.get("mode")))
        if choice == "required" and isinstance(names, list) and len(names) == 1:
            choice = {"type": "function", "function": {"name": names[0]}}
    return {"tools": tools, "tool_choice": choice}


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": completion,
        "totalTokenCount": prompt + completion,
    }


def _call_part(call: ToolCall) -> dict[str, Any]:
    return {"functionCall": {"id": new_id("call_"), "name": call.name, "args": call.input}}


def whole(
    model: str, text: str, *, prompt: int, refuse: bool, call: ToolCall | None
) -> dict[str, Any]:
    """A whole `GenerateContentResponse`: the text (or one function call); a refusal is a
    prompt blocked for safety (no candidate)."""
    body: dict[str, Any] = {}
    if refuse:
        body["promptFeedback"] = {"blockReason": "SAFETY"}
        completion = 0
    else:
        parts = [_call_part(call)] if call is not None else [{"text": text}]
        candidate = {"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}
        body["candidates"] = [{**candidate, "index": 0}]
        completion = output_tokens(call.pieces() if call is not None else text.split())
    body["usageMetadata"] = _usage(prompt, completion)
    body["modelVersion"] = model
    body["responseId"] = new_id("resp")
    return body


def _event(obj: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\r\n\r\n"


def stream_plan(
    model: str,
    pieces: Sequence[str],
    *,
    prompt: int,
    refuse: bool,
    call: ToolCall | None,
) -> StreamPlan:
    """Rule 4: one event per piece (a function call arrives whole, in one event), then the
    finish event; a refusal finishes `SAFETY` with no content."""
    ident = new_id("resp")

    def event(parts: list[dict[str, Any]] | None, **extra: Any) -> bytes:
        body: dict[str, Any] = {}
        if parts is not None:
            body["candidates"] = [
                {"content": {"role": "model", "parts": parts}, "index": 0, **extra}
            ]
        return _event({**body, "modelVersion": model, "responseId": ident})

    if call is not None:
        content = [event([_call_part(call)])]
        completion = output_tokens(call.pieces())
    else:
        content = [event([{"text": piece}]) for piece in pieces]
        completion = output_tokens(pieces)
    finish = event([{"text": ""}], finishReason="SAFETY" if refuse else "STOP")
    closing = orjson.loads(finish[6:])
    closing["usageMetadata"] = _usage(prompt, completion)
    error = {"error": {"code": 503, "message": REASONS[503], "status": "UNAVAILABLE"}}
    return StreamPlan(
        head=[],
        content=content,
        tail=[_event(closing)],
        error=_event(error),
        malformed=b'data: {"candidates": [{"content": \r\n\r\n',
        terminated=False,
    )


def _vector(text: str, size: int) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest() * (size // 8 + 1)
    return [round(b / 255.0 - 0.5, 6) for b in struct.unpack(f"{size}B", digest[:size])]


def embeddings(body: dict[str, Any]) -> dict[str, Any]:
    """A `batchEmbedContents` answer: one deterministic vector per request (8 dimensions
    unless `outputDimensionality` asks otherwise)."""
    vectors: list[dict[str, Any]] = []
    for item in body.get("requests") or ():
        content = item.get("content") if isinstance(item, dict) else None
        parts = content.get("parts") if isinstance(content, dict) else None
        listed = parts if isinstance(parts, list) else []
        text = "".join(
            p["text"] for p in listed if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
        size = item.get("outputDimensionality") if isinstance(item, dict) else None
        size = size if isinstance(size, int) and 0 < size <= 4096 else 8
        vectors.append({"values": _vector(text, size)})
    return {"embeddings": vectors}
