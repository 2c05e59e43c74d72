"""Gemini `batchEmbedContents` codec: neutral embeddings requests and answers.

Rule 1: one `EmbedContentRequest` per input string, in input order, each naming the model as
`models/{model}` and carrying `outputDimensionality` when `dimensions` is given.
Rule 2: token-id inputs cannot be sent (Gemini takes text only): a 400 naming `input`.
Rule 3: `embeddings[i].values` is the vector of input i; Google reports no token usage, so
usage is zero (unreported), as the cost budget reads it.
Rule 4: a decoded answer keeps no `raw` bytes: they are in Google's shape, which no caller of
turnout's embeddings endpoint speaks, so the gateway encodes the vectors for the caller.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnout.wire._body import OBJECT, invalid, load_upstream, upstream_invalid
from turnout.wire.model import EmbeddingResponse, Usage

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.wire.model import EmbeddingRequest

__all__ = ["decode_response", "encode_request", "encode_response"]


def _texts(request: EmbeddingRequest) -> list[str]:
    value = request.input
    if isinstance(value, str):
        return [value]
    if all(isinstance(item, str) for item in value):
        return [str(item) for item in value]
    raise invalid("input", "text (Gemini embeds strings, not token ids)")


def encode_request(request: EmbeddingRequest, *, model: str) -> dict[str, Any]:
    """A neutral embeddings request -> a `batchEmbedContents` body (Rules 1 and 2)."""
    name = model if model.startswith("models/") else f"models/{model}"
    requests: list[dict[str, Any]] = []
    for text in _texts(request):
        one: dict[str, Any] = {"model": name, "content": {"parts": [{"text": text}]}}
        if request.dimensions is not None:
            one["outputDimensionality"] = request.dimensions
        requests.append(one)
    return {"requests": requests}


def decode_response(body: bytes | Mapping[str, Any]) -> EmbeddingResponse:
    """A `batchEmbedContents` answer -> neutral vectors (Rule 3); a body without a list of
    vectors raises `ProviderUnavailable` (`provider_error`)."""
    obj = load_upstream(body)
    embeddings = obj.get("embeddings")
    if not isinstance(embeddings, list):
        raise upstream_invalid("no embeddings")
    vectors: list[list[float]] = []
    for item in embeddings:
        values = item.get("values") if isinstance(item, OBJECT) else None
        if not isinstance(values, list):
            raise upstream_invalid("an embedding without values")
        vectors.append([float(v) for v in values])
    # No `raw`: the bytes are Google's, and a caller reads the OpenAI shape (Rule 4).
    return EmbeddingResponse(data=vectors, usage=Usage())


def encode_response(vectors: list[list[float]]) -> dict[str, Any]:
    """Vectors -> a `batchEmbedContents` answer (for a mock of the API)."""
    return {"embeddings": [{"values": vector} for vector in vectors]}
