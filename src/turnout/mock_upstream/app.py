"""The mock upstream's request handler: endpoints, fault selection and fault playback.

Rule 1: every request to an API endpoint is logged before its fault is played, so a test can
read what reached the upstream even when the answer was a hang or a reset.
Rule 2: a request never waits longer than `hold_limit` seconds (hang, stall): the server drops
the connection after it, so nothing it does can wedge a test run.
"""

from __future__ import annotations

import re
import time
from email.utils import formatdate
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import orjson

from turnout.mock_upstream import answers, bedrock, gemini, responses, vertex
from turnout.mock_upstream.faults import NO_FAULT, Fault, FaultBook, split_model
from turnout.mock_upstream.log import LoggedRequest, RequestLog
from turnout.mock_upstream.tools import pick_tool_call
from turnout.mock_upstream.vendors import ErrorReply, bad_body, error_reply
from turnout.routing.clock import LoopClock

if TYPE_CHECKING:
    from turnout.mock_upstream.exchange import Exchange, Request
    from turnout.mock_upstream.tools import ToolCall
    from turnout.routing.clock import Clock

__all__ = ["MockUpstreamApp"]

_DEPLOYMENT = re.compile(r"/deployments/([^/]+)/")
_JSON = "application/json"


def _endpoint(method: str, path: str) -> str | None:
    if method in ("GET", "DELETE") and "/responses/" in path:
        return "stored_response"
    if method == "POST":
        found = bedrock.endpoint(path)
        if found is not None:
            return found
        named = _model_endpoint(path)
        if named is not None:
            return named
        if path.endswith("/responses"):
            return "responses"
        if path.endswith("/chat/completions"):
            return "chat"
        if path.endswith("/messages/count_tokens"):
            return "count_tokens"
        if path.endswith("/messages"):
            return "messages"
        if path.endswith("/embeddings"):
            return "embeddings"
    elif method == "GET" and path.endswith("/models"):
        return "models"
    return None


def _model_endpoint(path: str) -> str | None:
    """The endpoint of a path naming its model (Gemini's, and Vertex's Claude ones)."""
    if vertex.is_vertex(path):
        for suffix, name in vertex.ENDPOINTS.items():
            if path.endswith(suffix):
                return name
    for suffix, name in gemini.ENDPOINTS.items():
        if path.endswith(suffix) and "/models/" in path:
            return name
    return None


_ANSWERS = frozenset(
    {
        "chat",
        "messages",
        "responses",
        "gemini",
        "gemini_stream",
        "bedrock_converse",
        "bedrock_converse_stream",
        "bedrock_invoke",
        "bedrock_invoke_stream",
    }
)
"""The endpoints whose answers can be streamed or carry a tool call."""


def _api(endpoint: str) -> str:
    """Which vendor's shapes an endpoint answers in: `openai`, `anthropic`, `gemini` or
    `bedrock`."""
    if endpoint in {"messages", "count_tokens"}:
        return "anthropic"
    if endpoint.startswith("bedrock"):
        return "bedrock"
    return "gemini" if endpoint.startswith("gemini") else "openai"


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


class _Call:
    """What one API request is about (parsed once, passed to the playback steps): `tool_call`
    is the tool call it is answered with, or None for a text answer."""

    __slots__ = (
        "api",
        "base",
        "body",
        "endpoint",
        "entry",
        "fault",
        "headers",
        "model",
        "stream",
        "tool_call",
    )

    def __init__(
        self,
        endpoint: str,
        *,
        body: dict[str, Any],
        model: str,
        base: str,
        fault: Fault,
        entry: LoggedRequest,
        headers: list[tuple[str, str]],
    ) -> None:
        self.endpoint = endpoint
        self.api = _api(endpoint)
        self.stream = body.get("stream") is True or endpoint in {"gemini_stream", *bedrock.STREAMS}
        self.body = body
        self.model = model
        self.base = base
        self.fault = fault
        self.entry = entry
        self.headers = headers
        # A refusal answers no tool call; only chat, messages, responses and Gemini answers
        # can carry one.
        calls_tools = endpoint in _ANSWERS and not fault.refuse
        offered = body
        if self.api == "gemini":
            offered = gemini.as_openai_tools(body)
        elif endpoint.startswith("bedrock_converse"):
            offered = bedrock.as_openai_tools(body)
        self.tool_call: ToolCall | None = (
            pick_tool_call(offered, fault.tool_call) if calls_tools else None
        )


_SCHEMA_APIS = frozenset({"openai", "anthropic", "vertex-anthropic", "bedrock"})
"""The APIs whose answers honour a JSON schema the request asks for (`responses.json_answer`)."""


def _answer_text(call: _Call) -> str:
    """A whole answer's text: an example of the request's JSON schema when it asks for one
    (chat, Messages), else the answer the model name asks for."""
    if call.api in _SCHEMA_APIS:
        schema_text = responses.json_answer(call.body)
        if schema_text is not None:
            return schema_text
    return answers.answer_text(call.base, call.fault.chunks)


def _prompt_tokens(body: dict[str, Any]) -> int:
    """The prompt tokens of an OpenAI or Anthropic body: a body with `input` and no `messages`
    counts as a Responses one."""
    if "input" in body and "messages" not in body:
        return responses.prompt_tokens(body)
    return answers.prompt_tokens(body)


def _stamped(call: _Call) -> bool:
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


class MockUpstreamApp:
    """The handler the mock upstream's HTTP server calls for every request.

    `log` is the request log; `faults` holds scripts and sequence positions; `hold_limit`
    (seconds, default 300) bounds hangs and stalls; `clock` (default the loop's) times every
    delay a fault asks for; `gemini_key` (default none: any key) is the key Gemini requests
    must carry in `x-goog-api-key` (`turnout.mock_upstream.gemini`, Rule 2); `vertex_token`
    (default none) a bearer token Vertex requests may carry besides those the mock's own token
    endpoint issued (`turnout.mock_upstream.vertex`).
    `aws_credentials` (access key id, secret key; default none: any signature) are what
    Bedrock requests must be signed with (`turnout.mock_upstream.bedrock`, Rule 2).
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
        self.gemini_key = gemini_key
        self.tokens = vertex.TokenIssuer(vertex_token)
        self.aws_credentials = aws_credentials
        self.log = RequestLog(log_limit)
        self.faults = FaultBook()
        self.hold_limit = hold_limit
        self.clock: Clock = clock if clock is not None else LoopClock()
        self.responses = responses.StoredResponses()
        self._started = time.monotonic()

    async def __call__(self, exchange: Exchange) -> None:
        request = exchange.request
        if request.path.startswith("/_mock/"):
            self._control(exchange)
            return
        if (request.method, request.path) == ("POST", "/token"):
            status, body = self.tokens.grant(request.body)
            exchange.respond(status, body)
            return
        endpoint = _endpoint(request.method, request.path)
        if endpoint is None:
            self._not_found(exchange)
            return
        if endpoint == "models":
            exchange.respond(200, orjson.dumps(answers.models_list()))
            return
        if endpoint == "stored_response":
            self._stored_response(exchange)
            return
        call = self._begin(exchange, endpoint)
        if call is not None:
            await self._play(exchange, call)

    # --- request intake -------------------------------------------------------------------
    def _begin(self, exchange: Exchange, endpoint: str) -> _Call | None:
        request = exchange.request
        request_id = answers.new_id("req_")
        headers = [("x-request-id", request_id)]
        if endpoint in {"messages", "count_tokens"}:
            headers.append(("request-id", request_id))
        elif _api(endpoint) == "bedrock":
            headers.append(("x-amzn-requestid", request_id))
        try:
            parsed = orjson.loads(request.body)
        except orjson.JSONDecodeError:
            parsed = None
        body: dict[str, Any] = parsed if isinstance(parsed, dict) else {}
        model = body.get("model")
        on_vertex = vertex.is_vertex(request.path)
        if _api(endpoint) == "gemini" or on_vertex:
            model = gemini.model_of(request.path)
        elif _api(endpoint) == "bedrock":
            model = bedrock.model_of(request.path)
        elif not isinstance(model, str):
            match = _DEPLOYMENT.search(request.path)
            model = match.group(1) if match else ""
        base, spec = split_model(model)
        header_spec = request.headers.get("x-mock-fault")
        if header_spec is not None:
            spec = header_spec
        streamed = endpoint in {"gemini_stream", *bedrock.STREAMS}
        entry = self._log(request, model, body, request_id, stream=streamed)
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
        call = _Call(
            endpoint, body=body, model=model, base=base, fault=fault, entry=entry, headers=headers
        )
        if on_vertex and call.api == "anthropic":
            call.api = "vertex-anthropic"
        return call

    def _refusal(self, request: Request, endpoint: str, body: dict[str, Any]) -> ErrorReply | None:
        """What refuses a request before any fault plays: a Gemini key or a Bedrock signature
        that is not the test one, a Vertex bearer token it did not issue, a Bedrock InvokeModel
        body Bedrock would refuse."""
        if vertex.is_vertex(request.path):
            return vertex.bearer_refusal(request.headers, self.tokens)
        if _api(endpoint) == "gemini":
            return gemini.key_refusal(request.headers, request.query, self.gemini_key)
        if _api(endpoint) != "bedrock":
            return None
        refusal = bedrock.signature_refusal(request, self.aws_credentials)
        if refusal is None and endpoint.startswith("bedrock_invoke"):
            refusal = bedrock.check_invoke_body(body)
        return refusal

    def _log(
        self,
        request: Request,
        model: str,
        body: dict[str, Any],
        request_id: str,
        *,
        stream: bool = False,
    ) -> LoggedRequest:
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

    def _invalid(
        self,
        exchange: Exchange,
        endpoint: str,
        entry: LoggedRequest,
        headers: list[tuple[str, str]],
        message: str,
    ) -> None:
        fault = Fault(status=400, message=message)
        reply = self._error(fault, _api(endpoint), entry.model or "", headers[0][1])
        entry.status = reply.status
        exchange.respond(reply.status, reply.body, headers=[*headers, *reply.headers])

    # --- playback ---------------------------------------------------------------------------
    async def _play(self, exchange: Exchange, call: _Call) -> None:
        fault = call.fault
        if fault is NO_FAULT and not call.stream:
            call.entry.status = 200
            exchange.respond(200, orjson.dumps(self._whole(call, keep=True)), headers=call.headers)
            return
        if fault.latency:
            await self.clock.sleep(fault.latency)
        if fault.reset:
            exchange.reset()
            return
        if fault.hang:
            await exchange.hold(self.hold_limit)
            exchange.drop()
            return
        if fault.is_error:
            reply = self._error(fault, call.api, call.model, call.entry.request_id or "")
            call.entry.status = reply.status
            headers = [*call.headers, *retry_headers(fault), *reply.headers]
            exchange.respond(reply.status, reply.body, headers=headers)
            return
        good = orjson.dumps(self._whole(call))
        if fault.body is not None:
            await self._bad(exchange, call, good)
            return
        if call.stream and call.endpoint in _ANSWERS:
            await self._stream(exchange, call)
            return
        status = fault.status if fault.status is not None else 200
        call.entry.status = status
        if fault.cut is not None or fault.stall is not None:
            await self._cut_whole(exchange, call, good)
            return
        if call.endpoint == "responses" and status == 200:
            self.responses.keep(call.body, orjson.loads(good))
        exchange.respond(status, good, headers=call.headers)

    @staticmethod
    def _error(fault: Fault, api: str, model: str, request_id: str) -> ErrorReply:
        """The error answer of `fault` in the shapes of `api`."""
        if api == "gemini":
            return gemini.error_reply(fault, model=split_model(model)[0])
        if api == "vertex-anthropic":
            return vertex.claude_error(fault, model=split_model(model)[0], request_id=request_id)
        if api == "bedrock":
            return bedrock.error_reply(fault)
        return error_reply(fault, api=api, model=model, request_id=request_id)

    def _whole(self, call: _Call, *, keep: bool = False) -> dict[str, Any]:
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
            return bedrock.converse_whole(
                text, prompt=prompt, refuse=fault.refuse, call=call.tool_call
            )
        if call.endpoint == "responses":
            text = responses.json_answer(call.body) or answers.answer_text(call.base, fault.chunks)
            answer = responses.whole_response(
                call.body,
                call.model,
                text="" if fault.refuse else text,
                call=call.tool_call,
                refused=fault.refuse,
            )
            if keep:
                self.responses.keep(call.body, answer)
            return answer
        prompt = _prompt_tokens(call.body)
        if call.endpoint == "count_tokens":
            return {"input_tokens": prompt}
        messages = call.endpoint in {"messages", "bedrock_invoke", "bedrock_invoke_stream"}
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

    async def _bad(self, exchange: Exchange, call: _Call, good: bytes) -> None:
        fault = call.fault
        assert fault.body is not None
        payload, content_type = bad_body(fault.body, good)
        status = fault.status or (502 if fault.body == "html" else 200)
        call.entry.status = status
        headers = [*call.headers, *retry_headers(fault)]
        exchange.respond(status, payload, content_type=content_type, headers=headers)

    async def _cut_whole(self, exchange: Exchange, call: _Call, good: bytes) -> None:
        """Headers with the full content-length, half the body, then a drop or a stall."""
        exchange.cut_body(200, [("content-type", _JSON), *call.headers], good)
        if call.fault.stall is not None:
            await exchange.hold(self.hold_limit)
        exchange.drop()

    @staticmethod
    def _plan(call: _Call) -> tuple[answers.StreamPlan, dict[str, Any] | None]:
        """The stream's events, and for a Responses stream the response it ends with."""
        fault, tool = call.fault, call.tool_call
        prompt = _prompt_tokens(call.body)
        if tool is not None:
            pieces = tool.pieces(fault.chunks)
        elif _stamped(call):
            pieces = answers.stamp_pieces(call.base, fault.chunks)
        else:
            pieces = () if fault.refuse else answers.answer_pieces(call.base, fault.chunks)
        schema_text = responses.json_answer(call.body) if call.api in _SCHEMA_APIS else None
        if tool is None and not fault.refuse and schema_text:
            pieces = (schema_text,)
        if call.endpoint == "responses":
            return responses.responses_stream(
                call.body, call.model, pieces, call=tool, refused=fault.refuse
            )
        name = tool.name if tool is not None else None
        if call.api == "gemini":
            prompt = gemini.prompt_tokens(call.body)
            plan = gemini.stream_plan(
                call.model, pieces, prompt=prompt, refuse=fault.refuse, call=tool
            )
            return plan, None
        if call.endpoint == "bedrock_converse_stream":
            prompt = bedrock.prompt_tokens(call.body)
            plan = bedrock.converse_plan(pieces, prompt=prompt, refuse=fault.refuse, call=tool)
            return plan, None
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

    async def _stream(self, exchange: Exchange, call: _Call) -> None:
        fault = call.fault
        plan, final = self._plan(call)
        call.entry.status = 200
        kind = bedrock.CONTENT_TYPE if call.api == "bedrock" else "text/event-stream"
        exchange.start_stream(200, content_type=kind, headers=call.headers)
        for event in plan.head:
            await exchange.send(event)
        if fault.error_event:
            await exchange.send(plan.error)
            exchange.end_stream()
            return
        if fault.first_token:
            await self.clock.sleep(fault.first_token)
        if not await self._content(exchange, fault, plan, stamped=_stamped(call)):
            return
        for event in plan.tail[:-1] if fault.no_done and plan.terminated else plan.tail:
            await exchange.send(event)
        if final is not None and not fault.no_done:
            self.responses.keep(call.body, final)
        exchange.end_stream()

    async def _content(
        self, exchange: Exchange, fault: Fault, plan: answers.StreamPlan, *, stamped: bool
    ) -> bool:
        """Send the content events, playing cut/stall/end/malformed; False when it ended.
        `stamped`: each content event's placeholder becomes the time it is sent."""
        for index in range(len(plan.content) + 1):
            if index == fault.cut:
                exchange.drop()
                return False
            if index == fault.stall:
                await exchange.hold(self.hold_limit)
                exchange.drop()
                return False
            if index == fault.end:
                exchange.end_stream()
                return False
            if index == fault.malformed:
                await exchange.send(plan.malformed)
            if index < len(plan.content):
                if index and fault.chunk_delay:
                    await self.clock.sleep(fault.chunk_delay)
                event = plan.content[index]
                if stamped:
                    event = event.replace(answers.STAMP, b"%d" % (time.time_ns() // 1000))
                await exchange.send(event)
        return True

    def _stored_response(self, exchange: Exchange) -> None:
        """`GET` / `DELETE /v1/responses/{id}`: a kept response (404 in OpenAI's shape)."""
        request = exchange.request
        ident = request.path.rsplit("/responses/", 1)[1]
        entry = self._log(request, "", {}, answers.new_id("req_"))
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

    # --- control endpoints ------------------------------------------------------------------
    def _not_found(self, exchange: Exchange) -> None:
        path = exchange.request.path
        api = "anthropic" if "/messages" in path else "openai"
        fault = Fault(status=404, message=f"no mock endpoint {exchange.request.method} {path}")
        reply = error_reply(fault, api=api, model="", request_id=answers.new_id("req_"))
        exchange.respond(reply.status, reply.body)

    def _control(self, exchange: Exchange) -> None:
        request = exchange.request
        route = (request.method, request.path.rstrip("/"))
        if route == ("GET", "/_mock/health"):
            uptime = time.monotonic() - self._started
            self._json(exchange, 200, {"status": "ok", "requests": len(self.log), "uptime": uptime})
        elif route == ("GET", "/_mock/requests"):
            model = parse_qs(request.query).get("model", [None])[0]
            exchange.respond(200, self.log.to_json(model=model))
        elif route == ("DELETE", "/_mock/requests"):
            cleared = len(self.log)
            self.log.clear()
            self._json(exchange, 200, {"cleared": cleared})
        elif route == ("GET", "/_mock/scripts"):
            self._json(exchange, 200, dict(self.faults.pending()))
        elif route == ("POST", "/_mock/scripts"):
            self._post_script(exchange)
        elif route == ("DELETE", "/_mock/scripts"):
            self.faults.clear()
            self._json(exchange, 200, {"cleared": True})
        elif route == ("POST", "/_mock/reset"):
            self.faults.clear()
            self.log.clear()
            self.responses.clear()
            self._json(exchange, 200, {"reset": True})
        else:
            self._json(exchange, 404, {"error": {"message": f"no control endpoint {route}"}})

    def _post_script(self, exchange: Exchange) -> None:
        try:
            body = orjson.loads(exchange.request.body)
            model, steps = body["model"], body["faults"]
        except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
            self._json(exchange, 400, {"error": {"message": f"bad script: {exc}"}})
            return
        if not isinstance(model, str) or not isinstance(steps, list):
            message = "bad script: `model` must be a string and `faults` a list of specs"
            self._json(exchange, 400, {"error": {"message": message}})
            return
        try:
            queued = self.faults.script(model, [str(step) for step in steps])
        except ValueError as exc:
            self._json(exchange, 400, {"error": {"message": f"bad script: {exc}"}})
            return
        self._json(exchange, 200, {"model": model, "queued": queued})

    @staticmethod
    def _json(exchange: Exchange, status: int, payload: Any) -> None:
        exchange.respond(status, orjson.dumps(payload), content_type=_JSON)
