"""The mock upstream's Bedrock face: Converse, ConverseStream, InvokeModel and
InvokeModelWithResponseStream under `/model/{modelId}/…`, SigV4-checked, answered in AWS's
shapes and event-stream framing.

Rule 1: the model comes from the path (percent-decoded), so fault specs in model ids work as
on the other endpoints (`/model/m%2Ffault%3Astatus%3D429/converse`).
Rule 2: with test credentials set (`aws_credentials`: access key id and secret key), every
request must carry a SigV4 signature made with them for service `bedrock`: the mock re-signs
the request it received (botocore's signer, over the headers the request says it signed, at
the request's own `x-amz-date`) and compares. A request without one, with another key id or a
signature that does not match is refused as Bedrock refuses it (403, `x-amzn-ErrorType`
`UnrecognizedClientException`, `MissingAuthenticationTokenException` or
`InvalidSignatureException`), before any fault plays.
Rule 3: an InvokeModel body must be Bedrock's Anthropic Messages body: `anthropic_version`
`bedrock-2023-05-31` and no `model` or `stream` (else 400 `ValidationException`).
Rule 4: errors are `{"message"}` bodies with the type in `x-amzn-ErrorType`: 429
`ThrottlingException`, a quota fault `ServiceQuotaExceededException`, a context-length fault
a `ValidationException` about the input being too long, 5xx `InternalServerException` /
`ServiceUnavailableException`, 403 `AccessDeniedException`, other 4xx `ValidationException`.
Rule 5: streams are event-stream frames: Converse as `messageStart`, one `contentBlockDelta`
per piece (a tool call opens with `contentBlockStart`), `contentBlockStop`, `messageStop`,
`metadata` (there is no terminator to leave out); Invoke as one `chunk` frame per Anthropic
event (base64 `bytes`). An in-stream error is an exception frame; a malformed event a
well-framed event whose payload is not whole JSON.
"""

from __future__ import annotations

import base64
import hmac
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import orjson

from turnout.mock_upstream.answers import StreamPlan, new_id, output_tokens
from turnout.mock_upstream.vendors import REASONS, ErrorReply
from turnout.wire.aws_eventstream import encode_frame

if TYPE_CHECKING:
    from collections.abc import Sequence

    from turnout.mock_upstream.exchange import Request
    from turnout.mock_upstream.faults import Fault
    from turnout.mock_upstream.tools import ToolCall

__all__ = [
    "CONTENT_TYPE",
    "STREAMS",
    "as_openai_tools",
    "check_invoke_body",
    "converse_plan",
    "converse_whole",
    "endpoint",
    "error_reply",
    "invoke_plan",
    "model_of",
    "prompt_tokens",
    "signature_refusal",
]

CONTENT_TYPE = "application/vnd.amazon.eventstream"
_ENDPOINTS = {
    "/converse": "bedrock_converse",
    "/converse-stream": "bedrock_converse_stream",
    "/invoke": "bedrock_invoke",
    "/invoke-with-response-stream": "bedrock_invoke_stream",
}
STREAMS = frozenset({"bedrock_converse_stream", "bedrock_invoke_stream"})
"""The endpoints that answer in event-stream frames."""
_PATH = re.compile(r"^/model/([^/]+)(/[a-z-]+)$")
_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request,\s*"
    r"SignedHeaders=([^,]+),\s*Signature=([0-9a-f]+)$"
)
_TOO_LONG = "Input is too long for requested model."
_STATUS_TYPES = {
    400: "ValidationException",
    401: "UnrecognizedClientException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}


def endpoint(path: str) -> str | None:
    """The Bedrock endpoint a path names, or None."""
    match = _PATH.match(path)
    return _ENDPOINTS.get(match.group(2)) if match else None


def model_of(path: str) -> str:
    """Rule 1: the model id in a Bedrock path, percent-decoded."""
    match = _PATH.match(path)
    return unquote(match.group(1)) if match else ""


def _reply(status: int, kind: str, message: str) -> ErrorReply:
    body = orjson.dumps({"message": message})
    return ErrorReply(status, body, headers=(("x-amzn-errortype", f"{kind}:http://mock/"),))


def signature_refusal(request: Request, credentials: tuple[str, str] | None) -> ErrorReply | None:
    """Rule 2: the refusal of a request not signed with the test credentials, or None."""
    if credentials is None:
        return None
    key_id, secret = credentials
    header = request.headers.get("authorization", "")
    match = _AUTH.match(header)
    date = request.headers.get("x-amz-date", "")
    if match is None or not date:
        return _reply(403, "MissingAuthenticationTokenException", "Missing Authentication Token")
    given_key, _, region, service, signed, signature = match.groups()
    if given_key != key_id:
        message = "The security token included in the request is invalid."
        return _reply(403, "UnrecognizedClientException", message)
    expected = _signature(
        request, secret=secret, key_id=key_id, region=region, signed=signed.split(";"), date=date
    )
    if service != "bedrock" or not hmac.compare_digest(expected, signature):
        message = (
            "The request signature we calculated does not match the signature you provided. "
            "Check your AWS Secret Access Key and signing method."
        )
        return _reply(403, "InvalidSignatureException", message)
    return None


def _signature(
    request: Request, *, secret: str, key_id: str, region: str, signed: list[str], date: str
) -> str:
    """The signature of `request` as botocore computes it, over its `signed` headers."""
    from botocore.auth import SigV4Auth  # noqa: PLC0415 - botocore only when checking
    from botocore.awsrequest import AWSRequest  # noqa: PLC0415
    from botocore.credentials import Credentials  # noqa: PLC0415

    host = request.headers.get("host", "")
    url = f"http://{host}{request.path}" + (f"?{request.query}" if request.query else "")
    headers = {name: request.headers.get(name, "") for name in signed}
    token = request.headers.get("x-amz-security-token")
    aws = AWSRequest(method=request.method, url=url, data=request.body, headers=headers)
    aws.context["timestamp"] = date
    auth = SigV4Auth(Credentials(key_id, secret, token), "bedrock", region)
    canonical = auth.canonical_request(aws)
    return str(auth.signature(auth.string_to_sign(aws, canonical), aws))


def check_invoke_body(body: dict[str, Any]) -> ErrorReply | None:
    """Rule 3: the refusal of an InvokeModel body Bedrock would refuse, or None."""
    if body.get("anthropic_version") != "bedrock-2023-05-31":
        return _reply(400, "ValidationException", "anthropic_version: Invalid value")
    for key in ("model", "stream"):
        if key in body:
            return _reply(400, "ValidationException", f"extraneous key [{key}] is not permitted")
    return None


def error_reply(fault: Fault) -> ErrorReply:
    """Rule 4: the error answer `fault` asks for, in Bedrock's shape."""
    if fault.quota:
        status, kind = fault.status or 429, "ServiceQuotaExceededException"
        message = "You have exceeded the quota for this account."
    elif fault.context_length:
        status, kind, message = fault.status or 400, "ValidationException", _TOO_LONG
    elif fault.content_policy:
        status, kind = fault.status or 400, "ValidationException"
        message = "The request was blocked by guardrail policy."
    else:
        status = fault.status or 500
        kind = _STATUS_TYPES.get(status) or (
            "InternalServerException" if status >= 500 else "ValidationException"
        )
        message = REASONS.get(status, f"HTTP {status}")
    return _reply(status, kind, fault.message or message)


def prompt_tokens(body: dict[str, Any]) -> int:
    """About a quarter of the prompt's characters (system and messages), at least 1."""
    chars = 0
    holders: list[Any] = list(body.get("system") or ())
    for message in body.get("messages") or ():
        if isinstance(message, dict):
            holders.extend(message.get("content") or ())
    for block in holders:
        if isinstance(block, dict) and isinstance(block.get("text"), str):
            chars += len(block["text"])
    return max(1, chars // 4)


def as_openai_tools(body: dict[str, Any]) -> dict[str, Any]:
    """The Converse body's tools and tool choice in OpenAI's shape, for the tool picker."""
    config = body.get("toolConfig")
    config = config if isinstance(config, dict) else {}
    tools: list[dict[str, Any]] = []
    for tool in config.get("tools") or ():
        spec = tool.get("toolSpec") if isinstance(tool, dict) else None
        if isinstance(spec, dict):
            schema = spec.get("inputSchema")
            parameters = schema.get("json") if isinstance(schema, dict) else None
            function = {"name": spec.get("name"), "parameters": parameters}
            tools.append({"type": "function", "function": function})
    choice: Any = None
    picked = config.get("toolChoice")
    if isinstance(picked, dict):
        if "any" in picked:
            choice = "required"
        elif isinstance(picked.get("tool"), dict):
            choice = {"type": "function", "function": {"name": picked["tool"].get("name")}}
    return {"tools": tools, "tool_choice": choice}


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"inputTokens": prompt, "outputTokens": completion, "totalTokens": prompt + completion}


def converse_whole(
    text: str, *, prompt: int, refuse: bool, call: ToolCall | None
) -> dict[str, Any]:
    """A whole Converse answer: the text or one tool use; a refusal stops
    `guardrail_intervened` with no content."""
    if refuse:
        content: list[dict[str, Any]] = []
        stop, completion = "guardrail_intervened", 0
    elif call is not None:
        use = {"toolUseId": new_id("tooluse_"), "name": call.name, "input": call.input}
        content, stop, completion = [{"toolUse": use}], "tool_use", output_tokens(call.pieces())
    else:
        content, stop, completion = [{"text": text}], "end_turn", output_tokens(text.split())
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": _usage(prompt, completion),
        "metrics": {"latencyMs": 1},
    }


def _event(kind: str, body: dict[str, Any] | bytes) -> bytes:
    headers = {":event-type": kind, ":content-type": "application/json", ":message-type": "event"}
    return encode_frame(headers, body if isinstance(body, bytes) else orjson.dumps(body))


def _exception(kind: str, message: str) -> bytes:
    headers = {
        ":exception-type": kind,
        ":content-type": "application/json",
        ":message-type": "exception",
    }
    return encode_frame(headers, orjson.dumps({"message": message}))


def converse_plan(
    pieces: Sequence[str], *, prompt: int, refuse: bool, call: ToolCall | None
) -> StreamPlan:
    """Rule 5: a ConverseStream answer as frames."""
    head = [_event("messageStart", {"role": "assistant"})]
    if call is not None:
        start = {"toolUse": {"toolUseId": new_id("tooluse_"), "name": call.name}}
        head.append(_event("contentBlockStart", {"start": start, "contentBlockIndex": 0}))
        deltas: list[dict[str, Any]] = [{"toolUse": {"input": piece}} for piece in pieces]
        stop = "tool_use"
    else:
        deltas = [{"text": piece} for piece in pieces]
        stop = "guardrail_intervened" if refuse else "end_turn"
    content = [_event("contentBlockDelta", {"delta": d, "contentBlockIndex": 0}) for d in deltas]
    metadata = {"usage": _usage(prompt, output_tokens(pieces)), "metrics": {"latencyMs": 1}}
    tail = [
        _event("contentBlockStop", {"contentBlockIndex": 0}),
        _event("messageStop", {"stopReason": stop}),
        _event("metadata", metadata),
    ]
    error = _exception("serviceUnavailableException", REASONS[503])
    malformed = _event("contentBlockDelta", b'{"delta": {"text": ')
    return StreamPlan(head, content, tail, error, malformed, terminated=False)


def _chunk(event: bytes) -> bytes:
    """One SSE event of an Anthropic stream as an InvokeModel `chunk` frame."""
    data = b"".join(line[5:].strip() for line in event.splitlines() if line.startswith(b"data:"))
    return _event("chunk", {"bytes": base64.b64encode(data).decode()})


def invoke_plan(plan: StreamPlan) -> StreamPlan:
    """Rule 5: an Anthropic Messages stream plan as InvokeModelWithResponseStream frames (the
    `ping` left out, as Bedrock does)."""
    head = [_chunk(event) for event in plan.head if b"event: ping" not in event]
    content = [_chunk(event) for event in plan.content]
    tail = [_chunk(event) for event in plan.tail]
    error = _exception("internalServerException", REASONS[500])
    malformed = _event("chunk", {"bytes": "not base64!"})
    return StreamPlan(head, content, tail, error, malformed)
