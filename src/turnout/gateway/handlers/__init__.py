"""The gateway's endpoint handlers (`docs/gateway-api.md`, Endpoints): each takes one
`ServedExchange` and answers it."""

from __future__ import annotations

from turnout.gateway.handlers.chat import handle_chat
from turnout.gateway.handlers.count_tokens import handle_count_tokens
from turnout.gateway.handlers.embeddings import handle_embeddings
from turnout.gateway.handlers.health import handle_healthz, readiness
from turnout.gateway.handlers.metrics import handle_metrics
from turnout.gateway.handlers.models import MODEL_PATHS, handle_model, handle_models
from turnout.gateway.handlers.responses import (
    RESPONSE_PATHS,
    handle_responses,
    handle_stored_response,
)
from turnout.gateway.handlers.settings import GatewaySettings, ServedExchange

__all__ = [
    "MODEL_PATHS",
    "RESPONSE_PATHS",
    "GatewaySettings",
    "ServedExchange",
    "handle_chat",
    "handle_count_tokens",
    "handle_embeddings",
    "handle_healthz",
    "handle_metrics",
    "handle_model",
    "handle_models",
    "handle_responses",
    "handle_stored_response",
    "readiness",
]
