"""`wire.CODECS`: one codec per chat wire format, each reading back what it writes."""

from __future__ import annotations

from typing import get_args

import pytest

from turnout.wire import CODECS, ChatRequest, Message, TextPart, WireFormat
from turnout.wire.codec import codec_for


def test_every_chat_format_has_its_codec() -> None:
    chat_formats = set(get_args(WireFormat)) - {"openai-embeddings"}
    assert set(CODECS) == chat_formats
    for name, codec in CODECS.items():
        assert codec.format == name
        assert codec_for(name) is codec


def _request() -> ChatRequest:
    return ChatRequest(
        messages=[
            Message(role="user", content=[TextPart("What is 2 + 2?")]),
            Message(role="assistant", content=[TextPart("4")]),
            Message(role="user", content=[TextPart("And 3 + 3?")]),
        ],
        system=[TextPart("Answer with a number.")],
        max_tokens=64,
        temperature=0.5,
    )


@pytest.mark.parametrize("name", sorted(n for n, c in CODECS.items() if c.decode_request))
def test_a_codec_reads_back_the_request_it_writes(name: WireFormat) -> None:
    codec = CODECS[name]
    assert codec.decode_request is not None
    sent = _request()
    back = codec.decode_request(codec.encode_request(sent, model="some-model"))
    assert [(m.role, m.text) for m in back.messages] == [(m.role, m.text) for m in sent.messages]
    assert back.folded_system == sent.folded_system
    assert back.max_tokens == 64
    assert back.temperature == 0.5


def test_a_caller_facing_codec_has_every_caller_part() -> None:
    for name in ("openai-chat", "anthropic-messages", "openai-responses"):
        codec = CODECS[name]
        parts = (codec.decode_request, codec.encode_response, codec.forward_body)
        assert None not in parts
        assert None not in (codec.stream_encoder, codec.error_body, codec.error_event)
        assert codec.id_prefix
    assert CODECS["bedrock-converse"].decode_request is None
