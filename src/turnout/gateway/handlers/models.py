"""`GET /v1/models`: the models this caller could use, in OpenAI's list shape (SPEC §5.1)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnout.gateway.responses.respond import json_reply
from turnout.gateway.server.exchange import request_id_header

if TYPE_CHECKING:
    from turnout.gateway.server.exchange import Exchange

__all__ = ["handle_models"]


async def handle_models(exchange: Exchange) -> None:
    """`{"object": "list", "data": [{"id", "object": "model", "created": 0, "owned_by"}]}`."""
    caller = exchange.caller()
    models = exchange.runtime.models(caller, exchange.credentials())
    data = [
        {"id": model, "object": "model", "created": 0, "owned_by": "turnout"} for model in models
    ]
    headers = [request_id_header(exchange.reply_id())]
    await exchange.reply(json_reply(200, {"object": "list", "data": data}, headers))
