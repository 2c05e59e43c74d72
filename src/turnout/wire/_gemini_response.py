"""Gemini `generateContent`: whole responses, usage, finish reasons, blocks and the error envelope.

Rule 1: an answer is blocked, not failed, when Google says so: `promptFeedback.blockReason`
(with no candidate), a candidate whose `finishReason` names a safety or policy stop
(`SAFETY`, `RECITATION`, `BLOCKLIST`, `PROHIBITED_CONTENT`, `SPII`, `IMAGE_SAFETY`), or one
whose `safetyRatings` mark it `blocked`, decodes as finish reason `content_filter`, which the
engine treats as a refusal.
Rule 2: a candidate whose parts hold a `functionCall` finishes `tool_calls` (Gemini says `STOP`).
Rule 3: usage: `input_tokens` is `promptTokenCount` (cached tokens included, as OpenAI counts
them), `output_tokens` is `candidatesTokenCount` + `thoughtsTokenCount` (thinking is billed as
output; `reasoning_tokens` is `thoughtsTokenCount`), `cache_read_tokens` is
`cachedContentTokenCount`.
Rule 4: a model part with `thought: true` is a thinking part; its `thoughtSignature` is kept as
the thinking part's signature.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from turnout.wire._body import (
    OBJECT,
    dump_arguments,
    load_upstream,
    parse_arguments,
    upstream_invalid,
)
from turnout.wire.model import ChatResponse, Part, TextPart, ThinkingPart, ToolCall, Usage

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.wire.model import WireFormat

__all__ = [
    "BLOCKED_FINISHES",
    "FORMAT",
    "candidate_finish",
    "decode_candidate",
    "decode_finish",
    "decode_response",
    "decode_usage",
    "encode_call",
    "encode_finish",
    "encode_parts",
    "encode_response",
    "encode_usage",
    "error_body",
    "is_blocked_prompt",
    "status_name",
]

FORMAT: WireFormat = "gemini-generate"

BLOCKED_FINISHES = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
)
"""Finish reasons that mean Google blocked the answer (Rule 1)."""

_FINISH_IN = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "MALFORMED_FUNCTION_CALL": "error",
    "UNEXPECTED_TOOL_CALL": "error",
    "TOO_MANY_TOOL_CALLS": "error",
    **dict.fromkeys(BLOCKED_FINISHES, "content_filter"),
}
_FINISH_OUT = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
    "error": "OTHER",
}
_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def status_name(status: int) -> str:
    """The `google.rpc.Code` name Google's APIs pair with an HTTP status."""
    return _STATUS_NAMES.get(status, "INTERNAL" if status >= 500 else "UNKNOWN")


def decode_finish(reason: object, *, has_tool_calls: bool = False) -> str | None:
    """Gemini `finishReason` -> neutral (Rules 1 and 2); unknown reasons are `stop`."""
    if not isinstance(reason, str) or reason == "FINISH_REASON_UNSPECIFIED":
        return None
    neutral = _FINISH_IN.get(reason, "stop")
    return "tool_calls" if neutral == "stop" and has_tool_calls else neutral


def encode_finish(reason: str | None) -> str:
    """Neutral finish reason -> Gemini `finishReason` (None is `STOP`)."""
    return _FINISH_OUT.get(reason or "stop", "STOP")


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def decode_usage(usage: object) -> Usage | None:
    """Gemini `usageMetadata` -> neutral (Rule 3)."""
    if not isinstance(usage, OBJECT):
        return None
    thoughts = _count(usage.get("thoughtsTokenCount"))
    return Usage(
        input_tokens=_count(usage.get("promptTokenCount")),
        output_tokens=_count(usage.get("candidatesTokenCount")) + thoughts,
        cache_read_tokens=_count(usage.get("cachedContentTokenCount")),
        reasoning_tokens=thoughts,
    )


def encode_usage(usage: Usage | None) -> dict[str, Any]:
    """Neutral usage -> Gemini `usageMetadata` (zeros when unknown)."""
    usage = usage or Usage()
    out = {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens - usage.reasoning_tokens,
        "totalTokenCount": usage.input_tokens + usage.output_tokens,
    }
    if usage.reasoning_tokens:
        out["thoughtsTokenCount"] = usage.reasoning_tokens
    if usage.cache_read_tokens:
        out["cachedContentTokenCount"] = usage.cache_read_tokens
    return out


def decode_candidate(
    candidate: Mapping[str, Any], first_call: int = 0
) -> tuple[list[Part], list[ToolCall]]:
    """The parts and tool calls of a candidate's `content` (Rule 4). Calls without an `id` are
    numbered from `first_call` (`call_0`, `call_1` …)."""
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, OBJECT) else None
    if parts is None:
        return [], []
    if not isinstance(parts, list):
        raise upstream_invalid("candidates[0].content.parts is not a list")
    out: list[Part] = []
    calls: list[ToolCall] = []
    for part in parts:
        if not isinstance(part, OBJECT):
            raise upstream_invalid("a part is not an object")
        call = part.get("functionCall")
        if isinstance(call, OBJECT):
            ident = call.get("id")
            calls.append(
                ToolCall(
                    id=ident
                    if isinstance(ident, str) and ident
                    else f"call_{first_call + len(calls)}",
                    name=str(call.get("name") or ""),
                    arguments=dump_arguments(call.get("args") or {}),
                )
            )
            continue
        text = part.get("text")
        if not isinstance(text, str):
            continue
        signature = part.get("thoughtSignature")
        if part.get("thought") is True:
            out.append(
                ThinkingPart(text, signature=signature if isinstance(signature, str) else None)
            )
        elif text:
            out.append(TextPart(text))
    return out, calls


def candidate_finish(candidate: Mapping[str, Any], *, has_tool_calls: bool) -> str | None:
    """A candidate's neutral finish reason: its `finishReason` (Rules 1 and 2), or
    `content_filter` when one of its `safetyRatings` says `blocked`, whatever the reason."""
    ratings = candidate.get("safetyRatings")
    if isinstance(ratings, list) and any(
        isinstance(r, OBJECT) and r.get("blocked") is True for r in ratings
    ):
        return "content_filter"
    return decode_finish(candidate.get("finishReason"), has_tool_calls=has_tool_calls)


def decode_response(body: bytes | Mapping[str, Any]) -> ChatResponse:
    """An upstream `GenerateContentResponse` -> neutral answer (the first candidate).

    `raw` is set to `body` when bytes are given. A prompt blocked by `promptFeedback` (no
    candidate) is an empty answer finishing `content_filter` (Rule 1); a body with neither a
    candidate nor a block reason raises `ProviderUnavailable` (`provider_error`).
    """
    obj = load_upstream(body)
    candidates = obj.get("candidates")
    usage = decode_usage(obj.get("usageMetadata"))
    model = obj.get("modelVersion")
    ident = obj.get("responseId")
    response = ChatResponse(
        model=model if isinstance(model, str) else None,
        usage=usage,
        id=ident if isinstance(ident, str) else None,
        raw=bytes(body) if isinstance(body, bytes | bytearray) else None,
        raw_format=FORMAT,
    )
    if not isinstance(candidates, list) or not candidates:
        if is_blocked_prompt(obj):
            response.finish_reason = "content_filter"
            return response
        raise upstream_invalid("no candidates")
    candidate = candidates[0]
    if not isinstance(candidate, OBJECT):
        raise upstream_invalid("candidates[0] is not an object")
    response.content, response.tool_calls = decode_candidate(candidate)
    finish = candidate_finish(candidate, has_tool_calls=bool(response.tool_calls))
    response.finish_reason = finish or ("tool_calls" if response.tool_calls else "stop")
    return response


def is_blocked_prompt(obj: Mapping[str, Any]) -> bool:
    """True when `promptFeedback.blockReason` says the prompt was blocked (Rule 1)."""
    feedback = obj.get("promptFeedback")
    if not isinstance(feedback, OBJECT):
        return False
    reason = feedback.get("blockReason")
    return isinstance(reason, str) and reason != "BLOCK_REASON_UNSPECIFIED"


def encode_parts(content: list[Part], calls: list[ToolCall]) -> list[dict[str, Any]]:
    """Neutral answer parts and tool calls -> Gemini model `parts` (thinking as `thought`)."""
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, ThinkingPart) and not part.redacted:
            thought: dict[str, Any] = {"text": part.text, "thought": True}
            if part.signature:
                thought["thoughtSignature"] = part.signature
            parts.append(thought)
        elif isinstance(part, TextPart):
            parts.append({"text": part.text})
    parts.extend(encode_call(call.id, call.name, call.arguments) for call in calls)
    return parts


def encode_call(ident: str, name: str, arguments: str) -> dict[str, Any]:
    """A tool call as a Gemini `functionCall` part (arguments JSON text -> `args` object)."""
    return {"functionCall": {"id": ident, "name": name, "args": parse_arguments(arguments)}}


def encode_response(
    response: ChatResponse, *, model: str, request_id: str | None = None
) -> dict[str, Any]:
    """A neutral answer -> a `GenerateContentResponse` body.

    A `content_filter` answer with no content is a blocked prompt (`promptFeedback.blockReason`
    `SAFETY`, no candidate), as Google sends it.
    """
    body: dict[str, Any] = {}
    parts = encode_parts(response.content, response.tool_calls)
    if response.finish_reason == "content_filter" and not parts:
        body["promptFeedback"] = {"blockReason": "SAFETY"}
    else:
        body["candidates"] = [
            {
                "content": {"role": "model", "parts": parts},
                "finishReason": encode_finish(response.finish_reason),
                "index": 0,
            }
        ]
    body["usageMetadata"] = encode_usage(response.usage)
    body["modelVersion"] = model
    body["responseId"] = request_id or response.id or uuid.uuid4().hex[:22]
    return body


def error_body(
    status: int, message: str, *, details: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Google's error envelope: `{"error": {"code", "message", "status", "details"?}}`."""
    error: dict[str, Any] = {"code": status, "message": message, "status": status_name(status)}
    if details:
        error["details"] = details
    return {"error": error}
