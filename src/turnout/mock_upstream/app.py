"""The mock upstream's request handler: which endpoint a request is for, and who answers it.

A control request (`/_mock/…`) goes to `control.ControlEndpoints`, a Vertex token request to
`vertex.TokenIssuer`; an API request is taken in (`intake.Intake`: logged, refused or read
into a `calls.Call` with its fault) and played (`playback.Playback`). The handler owns the
state they share: the request log, the fault book and the kept Responses answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from turnout.mock_upstream import answers, routes, vertex
from turnout.mock_upstream.control import ControlEndpoints
from turnout.mock_upstream.faults import Fault, FaultBook
from turnout.mock_upstream.intake import Intake
from turnout.mock_upstream.log import RequestLog
from turnout.mock_upstream.playback import Playback
from turnout.mock_upstream.responses import StoredResponses
from turnout.mock_upstream.vendors import error_reply
from turnout.routing.clock import LoopClock

if TYPE_CHECKING:
    from turnout.mock_upstream.exchange import Exchange
    from turnout.routing.clock import Clock

__all__ = ["MockUpstreamApp"]


class MockUpstreamApp:
    """The handler the mock upstream's HTTP server calls for every request.

    `log` is the request log; `faults` holds scripts and sequence positions; `hold_limit`
    (seconds, default 300) bounds hangs and stalls; `clock` (default the loop's) times every
    delay a fault asks for; `gemini_key` (default none: any key) is the key Gemini requests
    must carry in `x-goog-api-key` (`turnout.mock_upstream.gemini`); `vertex_token`
    (default none) a bearer token Vertex requests may carry besides those the mock's own token
    endpoint issued (`turnout.mock_upstream.vertex`).
    `aws_credentials` (access key id, secret key; default none: any signature) are what
    Bedrock requests must be signed with (`turnout.mock_upstream.bedrock`).
    """

    def __init__(
        self,
        *,
        log_limit: int = 10_000,
        hold_limit: float = 300.0,
        clock: Clock | None = None,
        gemini_key: str | None = None,
        vertex_token: str | None = None,
        aws_credentials: tuple[str, str] | None = None,
    ) -> None:
        self.log = RequestLog(log_limit)
        self.faults = FaultBook()
        self.tokens = vertex.TokenIssuer(vertex_token)
        self.responses = StoredResponses()
        self.intake = Intake(
            log=self.log,
            faults=self.faults,
            tokens=self.tokens,
            gemini_key=gemini_key,
            aws_credentials=aws_credentials,
        )
        self.playback = Playback(
            clock=clock if clock is not None else LoopClock(),
            hold_limit=hold_limit,
            kept=self.responses,
        )
        self.control = ControlEndpoints(self.log, self.faults, self.responses)

    async def __call__(self, exchange: Exchange) -> None:
        request = exchange.request
        if request.path.startswith("/_mock/"):
            self.control(exchange)
            return
        if (request.method, request.path) == ("POST", "/token"):
            status, body = self.tokens.grant(request.body)
            exchange.respond(status, body)
            return
        endpoint = routes.endpoint(request.method, request.path)
        if endpoint is None:
            self._not_found(exchange)
            return
        if endpoint == "models":
            exchange.respond(200, orjson.dumps(answers.models_list()))
            return
        if endpoint == "stored_response":
            self._stored_response(exchange)
            return
        call = self.intake.begin(exchange, endpoint)
        if call is not None:
            await self.playback.play(exchange, call)

    def _stored_response(self, exchange: Exchange) -> None:
        """`GET` / `DELETE /v1/responses/{id}`: a kept response (404 in OpenAI's shape)."""
        request = exchange.request
        ident = request.path.rsplit("/responses/", 1)[1]
        entry = self.intake.record(request, "", {}, answers.new_id("req_"))
        found = self.responses.get(ident)
        if found is None:
            fault = Fault(status=404, message=f"Response with id '{ident}' not found.")
            reply = error_reply(fault, api="openai", model="", request_id=entry.request_id or "")
            entry.status = reply.status
            exchange.respond(reply.status, reply.body)
            return
        if request.method == "DELETE":
            self.responses.delete(ident)
            found = orjson.dumps({"id": ident, "object": "response.deleted", "deleted": True})
        entry.status = 200
        exchange.respond(200, found)

    @staticmethod
    def _not_found(exchange: Exchange) -> None:
        path = exchange.request.path
        api = "anthropic" if "/messages" in path else "openai"
        fault = Fault(status=404, message=f"no mock endpoint {exchange.request.method} {path}")
        reply = error_reply(fault, api=api, model="", request_id=answers.new_id("req_"))
        exchange.respond(reply.status, reply.body)
