"""OpenAI Embeddings codec: requests, same-format forwarding, responses (floats or base64).

A base64 embedding is the little-endian float32 bytes of the vector, base64-encoded (what
`encoding_format: "base64"` returns). `encode_response` converts between the two forms when
the caller asked for the other one than the upstream sent.
"""

from __future__ import annotations

import base64
import sys
from array import array
from typing import TYPE_CHECKING, Any, cast

from turnout.wire._body import (
    OBJECT,
    invalid,
    load_request,
    load_upstream,
    opt_int,
    opt_str,
    rewrite,
    upstream_invalid,
)
from turnout.wire.model import EmbeddingRequest, EmbeddingResponse, RawBody, Usage, WireFormat

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "FORMAT",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "forward_body",
]

FORMAT: WireFormat = "openai-embeddings"

_MODELED = frozenset({"model", "input", "dimensions", "encoding_format", "user", "routing"})
_INPUT = "a string, a list of strings, a list of token ids or a list of token id lists"


def _is_tokens(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(t, int) and not isinstance(t, bool) for t in value
    )


def _decode_input(value: Any) -> str | list[str] | list[int] | list[list[int]]:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value:
        if all(isinstance(v, str) for v in value):
            return list(value)
        if _is_tokens(value):
            return list(value)
        if all(_is_tokens(v) and v for v in value):
            return [list(v) for v in value]
    raise invalid("input", _INPUT)


def decode_request(body: bytes | Mapping[str, Any]) -> EmbeddingRequest:
    """A caller's embeddings body -> neutral request (unknown fields in `extra`, `routing`
    dropped). Given bytes, the body is kept as `request.source`. Bad shapes raise
    `InvalidRequest` (400) naming the field."""
    obj = load_request(body)
    encoding = opt_str(obj, "encoding_format", "")
    if encoding not in (None, "float", "base64"):
        raise invalid("encoding_format", "one of float, base64")
    return EmbeddingRequest(
        input=_decode_input(obj.get("input")),
        model=opt_str(obj, "model", ""),
        dimensions=opt_int(obj, "dimensions", ""),
        encoding_format=encoding,
        user=opt_str(obj, "user", ""),
        extra={k: v for k, v in obj.items() if k not in _MODELED},
        source=RawBody(FORMAT, bytes(body)) if isinstance(body, bytes | bytearray) else None,
    )


def encode_request(request: EmbeddingRequest, *, model: str) -> dict[str, Any]:
    """A neutral request -> an embeddings body for an upstream asking for `model`."""
    body: dict[str, Any] = {"model": model, "input": request.input}
    optional = {
        "dimensions": request.dimensions,
        "encoding_format": request.encoding_format,
        "user": request.user,
    }
    body.update((k, v) for k, v in optional.items() if v is not None)
    for key, value in request.extra.items():
        body.setdefault(key, value)
    return body


def forward_body(source: bytes, *, model: str) -> bytes:
    """The caller's own body with only `model` replaced and a reserved `routing` dropped; the
    original bytes when nothing needs changing. Invalid JSON raises `InvalidRequest`."""

    def edit(body: dict[str, Any]) -> bool:
        changed = "routing" in body
        body.pop("routing", None)
        if body.get("model") != model:
            body["model"] = model
            changed = True
        return changed

    return rewrite(source, edit)


def _vector(value: object) -> list[float] | str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in value
    ):
        return value
    raise upstream_invalid("an embedding is neither a list of numbers nor a base64 string")


def decode_response(body: bytes | Mapping[str, Any]) -> EmbeddingResponse:
    """An upstream embeddings body -> neutral response, vectors in input order (by `index`).

    Vectors stay as the upstream sent them: float lists, or base64 strings. `raw` is set to
    `body` when bytes are given. A body without a `data` list raises `ProviderUnavailable`.
    """
    obj = load_upstream(body)
    items = obj.get("data")
    if not isinstance(items, list):
        raise upstream_invalid("data is not a list")
    indexed: list[tuple[int, list[float] | str]] = []
    for position, item in enumerate(items):
        if not isinstance(item, OBJECT):
            raise upstream_invalid("an embedding is not an object")
        index = item.get("index", position)
        indexed.append(
            (index if isinstance(index, int) else position, _vector(item.get("embedding")))
        )
    indexed.sort(key=lambda pair: pair[0])
    vectors = [vector for _, vector in indexed]
    usage = obj.get("usage")
    tokens = usage.get("prompt_tokens") if isinstance(usage, OBJECT) else None
    model = obj.get("model")
    return EmbeddingResponse(
        data=vectors,  # type: ignore[arg-type]  # one form per response, as the upstream sent
        model=model if isinstance(model, str) else None,
        usage=Usage(input_tokens=tokens) if isinstance(tokens, int) else None,
        raw=bytes(body) if isinstance(body, bytes | bytearray) else None,
    )


def _to_base64(vector: list[float]) -> str:
    packed = array("f", vector)
    if sys.byteorder != "little":
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode()


def _to_floats(text: str) -> list[float]:
    packed = array("f")
    packed.frombytes(base64.b64decode(text))
    if sys.byteorder != "little":
        packed.byteswap()
    return packed.tolist()


def _convert(vector: list[float] | str, want_base64: bool) -> list[float] | str:
    if want_base64:
        return vector if isinstance(vector, str) else _to_base64(vector)
    return _to_floats(vector) if isinstance(vector, str) else vector


def encode_response(
    response: EmbeddingResponse, *, model: str, encoding_format: str | None = None
) -> dict[str, Any]:
    """A neutral response -> an embeddings body for a caller.

    `encoding_format` is what the caller asked for (`float`, the default, or `base64`);
    vectors in the other form are converted (float32, little-endian).
    """
    want_base64 = encoding_format == "base64"
    data = [
        {"object": "embedding", "index": index, "embedding": _convert(vector, want_base64)}
        for index, vector in enumerate(cast("list[list[float] | str]", response.data))
    ]
    tokens = response.usage.input_tokens if response.usage is not None else 0
    return {
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
