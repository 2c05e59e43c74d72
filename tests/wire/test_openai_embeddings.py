"""The OpenAI Embeddings codec against golden fixtures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from turnout.errors import InvalidRequest, ProviderUnavailable
from turnout.wire import openai_embeddings as oe
from turnout.wire.model import EmbeddingResponse, Usage

FIXTURES = Path(__file__).parent.parent / "fixtures" / "openai"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def test_decode_and_encode_request_fixture() -> None:
    """The documented request decodes to neutral values and encodes back (minus routing)."""
    raw = fixture("embeddings_request.json")
    request = oe.decode_request(raw)
    assert request.input == [
        "The food was delicious and the waiter was friendly.",
        "Tokyo is the capital of Japan.",
    ]
    assert (request.model, request.dimensions, request.encoding_format, request.user) == (
        "text-embedding-3-small",
        3,
        "float",
        "user-1234",
    )
    assert request.extra == {}
    assert request.source is not None
    assert request.source.body == raw
    body = json.loads(raw)
    del body["routing"]
    assert oe.encode_request(request, model="text-embedding-3-small") == body


@pytest.mark.parametrize("value", ["one", ["a", "b"], [1, 2, 3], [[1, 2], [3]]])
def test_every_documented_input_shape_is_accepted(value: object) -> None:
    """A string, strings, token ids and lists of token ids are all valid inputs."""
    assert oe.decode_request({"model": "m", "input": value}).input == value


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"model": "m"}, "input: expected"),
        ({"model": "m", "input": []}, "input: expected"),
        ({"model": "m", "input": [1, "a"]}, "input: expected"),
        ({"model": "m", "input": "a", "encoding_format": "int8"}, "encoding_format: expected"),
        ({"model": 3, "input": "a"}, "model: expected a string"),
    ],
)
def test_invalid_requests_raise_400(body: dict[str, Any], message: str) -> None:
    """Bad shapes raise InvalidRequest naming the field."""
    with pytest.raises(InvalidRequest) as caught:
        oe.decode_request(body)
    assert caught.value.message.startswith(message)


def test_decode_response_float_and_base64_fixtures() -> None:
    """Float vectors decode as lists, base64 vectors as strings, both with usage."""
    floats = oe.decode_response(fixture("embeddings_response.json"))
    assert floats.data[0] == [0.0023064255, -0.009327292, -0.0028842222]
    assert floats.usage == Usage(input_tokens=17)
    assert floats.model == "text-embedding-3-small"
    encoded = oe.decode_response(fixture("embeddings_response_base64.json"))
    assert encoded.data == ["ZicXO4DRGLw4BT27", "y7iwu3BpgTzNzEw8"]


def test_decode_response_orders_vectors_by_index() -> None:
    """Vectors come back in input order even when the upstream lists them out of order."""
    body = {"data": [{"index": 1, "embedding": [2.0]}, {"index": 0, "embedding": [1.0]}]}
    assert oe.decode_response(body).data == [[1.0], [2.0]]


@pytest.mark.parametrize("name", ["embeddings_response.json", "embeddings_response_base64.json"])
def test_encode_response_reproduces_the_fixture(name: str) -> None:
    """decode then encode (asking for the same encoding) gives the documented body back."""
    body = json.loads(fixture(name))
    encoding = "base64" if "base64" in name else "float"
    encoded = oe.encode_response(
        oe.decode_response(body), model=body["model"], encoding_format=encoding
    )
    assert encoded == body


def test_encode_response_converts_between_floats_and_base64() -> None:
    """A caller asking for the other encoding gets the same float32 vector converted."""
    floats = json.loads(fixture("embeddings_response.json"))
    b64 = json.loads(fixture("embeddings_response_base64.json"))
    as_b64 = oe.encode_response(oe.decode_response(floats), model="m", encoding_format="base64")
    assert [d["embedding"] for d in as_b64["data"]] == [d["embedding"] for d in b64["data"]]
    as_floats = oe.encode_response(oe.decode_response(b64), model="m")
    for ours, theirs in zip(as_floats["data"], floats["data"], strict=True):
        assert ours["embedding"] == pytest.approx(theirs["embedding"], rel=1e-6)


def test_empty_usage_encodes_zero_tokens() -> None:
    """Without usage the body still has the documented usage shape."""
    body = oe.encode_response(EmbeddingResponse(data=[[0.5]]), model="m")
    assert body["usage"] == {"prompt_tokens": 0, "total_tokens": 0}


@pytest.mark.parametrize("raw", [b"oops", b'{"data": 1}', b'{"data": [{"embedding": {}}]}'])
def test_unreadable_upstream_bodies_are_provider_errors(raw: bytes) -> None:
    """A body without usable vectors raises ProviderUnavailable."""
    with pytest.raises(ProviderUnavailable):
        oe.decode_response(raw)
