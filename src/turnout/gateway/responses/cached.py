"""A response cache hit, sent back: the stored answer in the caller's format, whole or as an
SSE stream, as the caller's `stream` flag asks (not as the answer was first produced).

The answer carries the hit's own routing record (`turnout.gateway.resolution.cache.hit_record`)
in its headers and, when whole, in its `routing` body object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from turnout.gateway.exchange import Reply
from turnout.gateway.resolution.cache import hit_record
from turnout.gateway.responses.respond import JSON, routing_headers, routing_object
from turnout.gateway.responses.streaming import SSE_HEADERS

if TYPE_CHECKING:
    from turnout.gateway.client_formats import ClientFormat
    from turnout.gateway.exchange import Exchange
    from turnout.gateway.resolution.cache import CacheVisit
    from turnout.record import RoutingRecord
    from turnout.state.cache import CachedAnswer

__all__ = ["serve_hit"]


async def serve_hit(exchange: Exchange, visit: CacheVisit, *, include_usage: bool) -> None:
    """Answer from the cache, whole or streamed as the caller asked (`include_usage`: an
    OpenAI caller asked for the usage chunk)."""
    answer = visit.answer
    assert answer is not None, "only a hit is served from the cache"
    record = hit_record(
        visit.resolution, answer, session_id=visit.session_id, request_id=exchange.request_id
    )
    exchange.record = record
    if visit.request.stream:
        await _stream_hit(exchange, record, answer, include_usage=include_usage)
    else:
        await exchange.reply(_whole_hit(exchange.fmt, record, answer))


def _whole_hit(fmt: ClientFormat, record: RoutingRecord, answer: CachedAnswer) -> Reply:
    model = answer.model or record.requested_model or ""
    body = fmt.encode(answer.to_response(), model)
    body["routing"] = routing_object(record)
    headers = routing_headers(record, target=None, model=model, with_cost=True)
    return Reply(200, [JSON, *headers], orjson.dumps(body))


async def _stream_hit(
    exchange: Exchange, record: RoutingRecord, answer: CachedAnswer, *, include_usage: bool
) -> None:
    model = answer.model or record.requested_model or ""
    headers = routing_headers(record, target=None, model=model, with_cost=True)
    encoder = exchange.fmt.encoder(model, include_usage)
    events = [encoder.encode(chunk) for chunk in answer.to_chunks()]
    events.append(encoder.finish())
    await exchange.start(200, [*SSE_HEADERS, *headers])
    await exchange.end(b"".join(events))
