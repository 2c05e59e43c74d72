"""Same-format forwarding: the caller's body with only `model` replaced."""

from __future__ import annotations

import orjson
import pytest

from turnout.errors import InvalidRequest
from turnout.wire import anthropic_messages, openai_chat, openai_embeddings, openai_responses

ANTHROPIC_BODY = orjson.dumps(
    {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": [{"type": "text", "text": "rules", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
            }
        ],
        "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
        "metadata": {"user_id": "u1", "routing": {"route": "x"}},
        "routing": {"route": "x"},
        "stream": True,
    }
)


def test_anthropic_forward_replaces_model_and_keeps_everything_else() -> None:
    """Model replaced; cache_control and unknown fields kept; routing keys dropped."""
    out = orjson.loads(
        anthropic_messages.forward_body(ANTHROPIC_BODY, model="claude-x", stream=True)
    )
    expected = orjson.loads(ANTHROPIC_BODY)
    del expected["routing"], expected["metadata"]["routing"]
    expected["model"] = "claude-x"
    assert out == expected


def test_anthropic_forward_drops_metadata_left_empty_by_routing() -> None:
    """A metadata object holding only `routing` is removed with it."""
    body = b'{"model":"a","metadata":{"routing":{}},"messages":[]}'
    out = orjson.loads(anthropic_messages.forward_body(body, model="a", stream=False))
    assert out == {"model": "a", "messages": []}


def test_forward_returns_the_same_bytes_when_nothing_changes() -> None:
    """With the right model and no reserved keys, the original bytes object is returned."""
    body = b'{"model": "gpt-4o",  "messages": [{"role":"user","content":"\\u00e9"}], "x": 1}'
    assert openai_chat.forward_body(body, model="gpt-4o", stream=False) is body
    ant = b'{"model":"c","messages":[],"stream":true}'
    assert anthropic_messages.forward_body(ant, model="c", stream=True) is ant


def test_openai_stream_forces_include_usage_and_keeps_other_options() -> None:
    """A streamed OpenAI body gets `stream_options.include_usage: true`, other options kept."""
    body = b'{"model":"a","stream":true,"stream_options":{"include_obfuscation":false},"n":1}'
    out = orjson.loads(openai_chat.forward_body(body, model="b", stream=True))
    assert out == {
        "model": "b",
        "stream": True,
        "stream_options": {"include_obfuscation": False, "include_usage": True},
        "n": 1,
    }


def test_openai_forward_drops_routing_and_metadata_routing() -> None:
    """`routing` is reserved in OpenAI bodies too, top level and in metadata."""
    body = b'{"model":"a","routing":null,"metadata":{"k":"v","routing":"r"},"messages":[]}'
    out = orjson.loads(openai_chat.forward_body(body, model="a", stream=False))
    assert out == {"model": "a", "metadata": {"k": "v"}, "messages": []}


def test_openai_non_stream_forward_turns_a_stream_off() -> None:
    """Asked for a non-streamed call, a streaming body loses `stream` and its options."""
    body = b'{"model":"a","stream":true,"stream_options":{"include_usage":true}}'
    out = orjson.loads(openai_chat.forward_body(body, model="a", stream=False))
    assert out == {"model": "a", "stream": False}


def test_forward_keeps_key_order_and_values() -> None:
    """Re-serialising keeps key order, floats and unicode."""
    body = '{"z":1.5,"model":"a","é":"ü","n":[1,2.25,{"b":null}]}'.encode()
    out = openai_chat.forward_body(body, model="b", stream=False)
    assert out == '{"z":1.5,"model":"b","é":"ü","n":[1,2.25,{"b":null}]}'.encode()


def test_embeddings_forward_replaces_model() -> None:
    """The embeddings body keeps its fields; model replaced; routing dropped."""
    body = b'{"model":"a","input":["x"],"dimensions":8,"routing":{}}'
    out = orjson.loads(openai_embeddings.forward_body(body, model="b"))
    assert out == {"model": "b", "input": ["x"], "dimensions": 8}


@pytest.mark.parametrize("body", [b"{nope", b"[]", b'"x"'])
def test_forward_refuses_bodies_that_are_not_json_objects(body: bytes) -> None:
    """Invalid JSON or a non-object raises InvalidRequest (400)."""
    with pytest.raises(InvalidRequest):
        openai_chat.forward_body(body, model="a", stream=False)
    with pytest.raises(InvalidRequest):
        anthropic_messages.forward_body(body, model="a", stream=False)


@pytest.mark.parametrize("codec", [anthropic_messages, openai_chat, openai_responses])
@pytest.mark.parametrize("stream", [True, False])
def test_forwarding_an_already_parsed_body_gives_the_same_bytes(
    codec: object, *, stream: bool
) -> None:
    """Given the body already parsed, forwarding gives what parsing it again gives, and leaves
    the parsed body as it was."""
    parsed = orjson.loads(ANTHROPIC_BODY)
    kept = orjson.loads(ANTHROPIC_BODY)
    forward = codec.forward_body  # type: ignore[attr-defined]
    for model in ("other-model", "claude-sonnet-4-5"):
        expected = forward(ANTHROPIC_BODY, model=model, stream=stream)
        assert forward(ANTHROPIC_BODY, model=model, stream=stream, parsed=parsed) == expected
    assert parsed == kept
