"""Taking in one API request to the mock upstream: log it, refuse what the vendor would refuse
before any fault plays, and read the call it makes (`Call`) with the fault it plays.

Rule 1: every request to an API endpoint is logged before its fault is played, so a test can
read what reached the upstream even when the answer was a hang or a reset.
Rule 2: a Gemini key, a Bedrock signature or a Vertex bearer token that is not the test one is
refused as the vendor refuses it, as is a body that is not a JSON object or a fault spec that
does not parse (400 in the endpoint's shapes).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from turnout.mock_upstream import answers, bedrock, gemini, replies, routes, vertex
from turnout.mock_upstream.calls import Call
from turnout.mock_upstream.faults import Fault, split_model
from turnout.mock_upstream.log import LoggedRequest

if TYPE_CHECKING:
    from turnout.mock_upstream.exchange import Exchange, Request
    from turnout.mock_upstream.faults import FaultBook
    from turnout.mock_upstream.log import RequestLog
    from turnout.mock_upstream.vendors import ErrorReply

__all__ = ["Intake"]


@dataclass(slots=True, kw_only=True)
class Intake:
    """Logs requests into `log` and picks their faults from `faults`. `gemini_key` (none: any
    key) is the key Gemini requests must carry, `tokens` issues and checks Vertex bearer
    tokens, `aws_credentials` (none: any signature) are what Bedrock requests must be signed
    with."""

    log: RequestLog
    faults: FaultBook
    tokens: vertex.TokenIssuer
    gemini_key: str | None = None
    aws_credentials: tuple[str, str] | None = None

    def begin(self, exchange: Exchange, endpoint: str) -> Call | None:
        """The call `exchange`'s request makes to `endpoint`, logged; None when it was refused
        (the refusal already sent)."""
        request = exchange.request
        request_id = answers.new_id("req_")
        headers = [("x-request-id", request_id)]
        shapes = routes.api(endpoint)
        if shapes == "anthropic":
            headers.append(("request-id", request_id))
        elif shapes == "bedrock":
            headers.append(("x-amzn-requestid", request_id))
        try:
            parsed = orjson.loads(request.body)
        except orjson.JSONDecodeError:
            parsed = None
        body: dict[str, Any] = parsed if isinstance(parsed, dict) else {}
        model = routes.model_of(endpoint, request.path, body)
        base, spec = split_model(model)
        header_spec = request.headers.get("x-mock-fault")
        if header_spec is not None:
            spec = header_spec
        entry = self.record(request, model, body, request_id, stream=endpoint in routes.STREAMED)
        refusal = self._refusal(request, endpoint, body)
        if refusal is not None:
            entry.status = refusal.status
            exchange.respond(refusal.status, refusal.body, headers=[*headers, *refusal.headers])
            return None
        if not isinstance(parsed, dict):
            message = "could not parse the JSON body" if parsed is None else "expected an object"
            self._invalid(exchange, endpoint, entry, headers, message)
            return None
        try:
            fault = self.faults.pick(base, spec)
        except ValueError as exc:
            self._invalid(exchange, endpoint, entry, headers, f"mock fault: {exc}")
            return None
        entry.fault = fault
        on_vertex = vertex.is_vertex(request.path)
        return Call.of(
            endpoint,
            body=body,
            model=model,
            base=base,
            fault=fault,
            entry=entry,
            headers=headers,
            on_vertex=on_vertex,
        )

    def record(
        self,
        request: Request,
        model: str,
        body: dict[str, Any],
        request_id: str,
        *,
        stream: bool = False,
    ) -> LoggedRequest:
        """Log `request` (naming `model`, its parsed `body`) and return its entry."""
        entry = LoggedRequest(
            seq=self.log.next_seq(),
            time=time.time(),
            method=request.method,
            path=request.path,
            query=request.query,
            model=model,
            stream=stream or body.get("stream") is True,
            request_headers=request.headers,
            body=request.body,
            request_id=request_id,
        )
        self.log.add(entry)
        return entry

    def _refusal(self, request: Request, endpoint: str, body: dict[str, Any]) -> ErrorReply | None:
        """What refuses a request before any fault plays: a Gemini key or a Bedrock signature
        that is not the test one, a Vertex bearer token it did not issue, a Bedrock InvokeModel
        body Bedrock would refuse."""
        if vertex.is_vertex(request.path):
            return vertex.bearer_refusal(request.headers, self.tokens)
        shapes = routes.api(endpoint)
        if shapes == "gemini":
            return gemini.key_refusal(request.headers, request.query, self.gemini_key)
        if shapes != "bedrock":
            return None
        refusal = bedrock.signature_refusal(request, self.aws_credentials)
        if refusal is None and endpoint.startswith("bedrock_invoke"):
            refusal = bedrock.check_invoke_body(body)
        return refusal

    @staticmethod
    def _invalid(
        exchange: Exchange,
        endpoint: str,
        entry: LoggedRequest,
        headers: list[tuple[str, str]],
        message: str,
    ) -> None:
        fault = Fault(status=400, message=message)
        reply = replies.error(fault, routes.api(endpoint), entry.model or "", headers[0][1])
        entry.status = reply.status
        exchange.respond(reply.status, reply.body, headers=[*headers, *reply.headers])
