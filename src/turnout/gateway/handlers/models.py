"""`GET /v1/models` and `GET /v1/models/{id}`: the models this caller could use, in OpenAI's
list and object shapes. A model id may hold `/` (`openai/gpt-4o`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnout.errors import NotFound
from turnout.gateway.exchange import request_id_header
from turnout.gateway.responses.respond import json_reply

if TYPE_CHECKING:
    from turnout.gateway.handlers.settings import ServedExchange

__all__ = ["MODEL_PATHS", "handle_model", "handle_models", "model_object"]

MODEL_PATHS = ("/v1/models/", "/models/")
"""The path prefixes of `GET /v1/models/{id}` (with and without `/v1`)."""


def model_object(model: str) -> dict[str, Any]:
    """OpenAI's model object: `{"id", "object": "model", "created": 0, "owned_by"}`."""
    return {"id": model, "object": "model", "created": 0, "owned_by": "turnout"}


async def handle_models(exchange: ServedExchange) -> None:
    """`{"object": "list", "data": [model objects]}`, sorted by name."""
    caller = exchange.caller()
    models = exchange.runtime.lookups.models(caller, exchange.credentials())
    data = [model_object(model) for model in models]
    headers = [request_id_header(exchange.reply_id())]
    await exchange.reply(json_reply(200, {"object": "list", "data": data}, headers))


async def handle_model(exchange: ServedExchange) -> None:
    """The model object of the id after the path's `/models/`, when this caller could use it
    (it resolves for the caller and its route keeps a target for the caller's credential),
    else 404 `NOT_FOUND` in OpenAI's format. Any model the caller could send is found here,
    also one that only a pattern matches (the list names exact names only)."""
    caller = exchange.caller()
    model = exchange.path.split("/models/", 1)[1]
    if not exchange.runtime.lookups.can_use(model, caller, exchange.credentials()):
        raise NotFound(
            f'model "{model}" does not exist or this caller cannot use it; GET /v1/models'
            " lists the models it can"
        )
    headers = [request_id_header(exchange.reply_id())]
    await exchange.reply(json_reply(200, model_object(model), headers))
