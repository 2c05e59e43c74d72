"""`POST /v1/embeddings`: the resolved route's embeddings targets, with the same failover,
health and routing record as chat, through `Route.embed`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnout.errors import InvalidRequest, MalformedBody
from turnout.gateway.handlers.chat import parse_json, session_of
from turnout.gateway.resolution.consumers import CONSUMER_HEADER
from turnout.gateway.responses.respond import routed_reply
from turnout.wire import openai_embeddings
from turnout.wire.model import RawBody

if TYPE_CHECKING:
    from turnout.gateway.exchange import Reply
    from turnout.gateway.handlers.settings import ServedExchange
    from turnout.wire.model import EmbeddingResponse

__all__ = ["embeddings_reply", "handle_embeddings"]


async def handle_embeddings(exchange: ServedExchange) -> None:
    """Authenticate, decode, resolve (`embeddings`), route, and answer with `routing`."""
    caller = exchange.caller()
    obj = parse_json(exchange.body)
    try:
        request = openai_embeddings.decode_request(obj)
    except InvalidRequest as exc:
        raise MalformedBody(exc.message) from exc
    request.source = RawBody(openai_embeddings.FORMAT, exchange.body)
    runtime = exchange.runtime
    resolution = runtime.resolve(
        request.model,
        endpoint="embeddings",
        caller=caller,
        consumer=exchange.headers.get(CONSUMER_HEADER),
    )
    session_id = session_of(exchange.headers, None)
    plan = runtime.plan_for(resolution, caller, exchange.credentials, endpoint="embeddings")
    response = await resolution.route.embed(request, session_id=session_id, plan=plan)
    exchange.adopt(response.routing)
    await exchange.reply(embeddings_reply(response, request.encoding_format))


def embeddings_reply(response: EmbeddingResponse, encoding_format: str | None) -> Reply:
    """The upstream's embeddings body (the caller's own request reached it, so it is in the
    form asked for) with `routing` spliced in, or one encoded in `encoding_format` when the
    provider handed back no bytes; and the routing headers."""
    record = response.routing
    assert record is not None, "a routed answer carries its routing record"
    model = record.served_model or response.model or ""
    return routed_reply(
        record,
        model,
        response.raw,
        lambda: openai_embeddings.encode_response(
            response, model=model, encoding_format=encoding_format
        ),
    )
