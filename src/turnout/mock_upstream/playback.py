"""Playing a call's fault: the delays, resets, hangs, errors, bad bodies, cut bodies and the
cut, stalled, ended or malformed streams a fault spec asks for.

Rule 1: a request never waits longer than `hold_limit` seconds (hang, stall): the connection is
dropped after it, so nothing a fault does can wedge a test run.
Rule 2: a Responses answer that reaches its client whole (a whole answer with status 200, or a
stream to its last event) is kept for retrieval.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import orjson

from turnout.mock_upstream import answers, bedrock, replies, routes
from turnout.mock_upstream.faults import NO_FAULT
from turnout.mock_upstream.vendors import bad_body

if TYPE_CHECKING:
    from turnout.mock_upstream.answers import StreamPlan
    from turnout.mock_upstream.calls import Call
    from turnout.mock_upstream.exchange import Exchange
    from turnout.mock_upstream.faults import Fault
    from turnout.mock_upstream.responses import StoredResponses
    from turnout.routing.clock import Clock

__all__ = ["Playback"]

_JSON = "application/json"


class Playback:
    """Answers calls as their faults say: `clock` times every delay a fault asks for,
    `hold_limit` (seconds) bounds hangs and stalls, `kept` keeps the Responses answers."""

    def __init__(self, *, clock: Clock, hold_limit: float, kept: StoredResponses) -> None:
        self.clock = clock
        self.hold_limit = hold_limit
        self.kept = kept

    async def play(self, exchange: Exchange, call: Call) -> None:
        """Answer `call` on `exchange`, its fault played."""
        fault = call.fault
        if fault is NO_FAULT and not call.stream:
            call.entry.status = 200
            answer = replies.whole(call)
            if call.endpoint == "responses":
                self.kept.keep(call.body, answer)
            exchange.respond(200, orjson.dumps(answer), headers=call.headers)
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
            reply = replies.error(fault, call.api, call.model, call.entry.request_id or "")
            call.entry.status = reply.status
            headers = [*call.headers, *replies.retry_headers(fault), *reply.headers]
            exchange.respond(reply.status, reply.body, headers=headers)
            return
        good = orjson.dumps(replies.whole(call))
        if fault.body is not None:
            self._bad(exchange, call, good)
            return
        if call.stream and call.endpoint in routes.ANSWERS:
            await self._stream(exchange, call)
            return
        status = fault.status if fault.status is not None else 200
        call.entry.status = status
        if fault.cut is not None or fault.stall is not None:
            await self._cut_whole(exchange, call, good)
            return
        if call.endpoint == "responses" and status == 200:
            self.kept.keep(call.body, orjson.loads(good))
        exchange.respond(status, good, headers=call.headers)

    @staticmethod
    def _bad(exchange: Exchange, call: Call, good: bytes) -> None:
        """The bytes a `body=` fault asks for instead of the answer."""
        fault = call.fault
        assert fault.body is not None
        payload, content_type = bad_body(fault.body, good)
        status = fault.status or (502 if fault.body == "html" else 200)
        call.entry.status = status
        headers = [*call.headers, *replies.retry_headers(fault)]
        exchange.respond(status, payload, content_type=content_type, headers=headers)

    async def _cut_whole(self, exchange: Exchange, call: Call, good: bytes) -> None:
        """Headers with the full content-length, half the body, then a drop or a stall."""
        exchange.cut_body(200, [("content-type", _JSON), *call.headers], good)
        if call.fault.stall is not None:
            await exchange.hold(self.hold_limit)
        exchange.drop()

    async def _stream(self, exchange: Exchange, call: Call) -> None:
        fault = call.fault
        plan, final = replies.stream_plan(call)
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
        if not await self._content(exchange, fault, plan, stamped=replies.stamped(call)):
            return
        for event in plan.tail[:-1] if fault.no_done and plan.terminated else plan.tail:
            await exchange.send(event)
        if final is not None and not fault.no_done:
            self.kept.keep(call.body, final)
        exchange.end_stream()

    async def _content(
        self, exchange: Exchange, fault: Fault, plan: StreamPlan, *, stamped: bool
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
