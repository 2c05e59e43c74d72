"""Which endpoint a request to the mock upstream is for, whose shapes it answers in, and which
model it names.

An endpoint is named by its path's suffix (so base URLs with a prefix work): `chat`,
`messages`, `count_tokens`, `responses`, `embeddings`, `models`, `stored_response`, Gemini's
and Vertex's (`mock_upstream.gemini`, `mock_upstream.vertex`) and Bedrock's
(`mock_upstream.bedrock`).
"""

from __future__ import annotations

import re
from typing import Any

from turnout.mock_upstream import bedrock, gemini, vertex

__all__ = ["ANSWERS", "STREAMED", "api", "endpoint", "model_of"]

ANSWERS = frozenset(
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

STREAMED = frozenset({"gemini_stream", *bedrock.STREAMS})
"""The endpoints that always stream (the others stream when the body says `stream: true`)."""

_DEPLOYMENT = re.compile(r"/deployments/([^/]+)/")


def endpoint(method: str, path: str) -> str | None:
    """The endpoint `method` and `path` ask for (None: the mock has no such endpoint)."""
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


def api(endpoint: str) -> str:
    """Which vendor's shapes an endpoint answers in: `openai`, `anthropic`, `gemini` or
    `bedrock`."""
    if endpoint in {"messages", "count_tokens"}:
        return "anthropic"
    if endpoint.startswith("bedrock"):
        return "bedrock"
    return "gemini" if endpoint.startswith("gemini") else "openai"


def model_of(endpoint: str, path: str, body: dict[str, Any]) -> str:
    """The model a request names: in the path for Gemini, Vertex and Bedrock, else the body's
    `model`, else an Azure deployment's name (empty: none)."""
    shapes = api(endpoint)
    if shapes == "gemini" or vertex.is_vertex(path):
        return gemini.model_of(path)
    if shapes == "bedrock":
        return bedrock.model_of(path)
    model = body.get("model")
    if isinstance(model, str):
        return model
    match = _DEPLOYMENT.search(path)
    return match.group(1) if match else ""
