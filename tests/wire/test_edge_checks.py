"""What the codecs refuse at the edge, before any call: numbers outside the ranges the vendors
accept, content blocks the caller's format does not define once they would be translated, and
messages a translation would leave empty."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from turnout.errors import InvalidRequest
from turnout.wire import anthropic_messages as am
from turnout.wire import openai_chat as oc
from turnout.wire.model import ChatRequest, DocumentPart, Message, ThinkingPart

USER = [{"role": "user", "content": "hi"}]
LIMIT = 2**31 - 1


def _refusal(decode: Any, body: dict[str, Any]) -> str:
    with pytest.raises(InvalidRequest) as caught:
        decode(body)
    assert caught.value.status == 400
    assert caught.value.error_class == "invalid_request"
    return caught.value.message


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_tokens", -5, f"max_tokens: must be a whole number from 1 to {LIMIT} (got -5)"),
        ("max_tokens", 0, "max_tokens: must be a whole number from 1 to"),
        ("max_tokens", 2**63, f"max_tokens: must be a whole number from 1 to {LIMIT} (got 9223"),
        ("max_completion_tokens", 2**31, "max_completion_tokens: must be a whole number from 1"),
        ("n", -1, "n: must be a whole number from 1 to 128 (got -1)"),
        ("n", 129, "n: must be a whole number from 1 to 128"),
        ("n", "2", "n: expected an integer"),
        ("temperature", 2.5, "temperature: must be a number from 0 to 2 (got 2.5)"),
        ("temperature", -1, "temperature: must be a number from 0 to 2 (got -1)"),
        ("top_p", 1.01, "top_p: must be a number from 0 to 1"),
    ],
)
def test_openai_numbers_outside_vendor_ranges_are_400(field: str, value: Any, message: str) -> None:
    """An OpenAI body with a count or sampling number no vendor accepts is refused, naming it."""
    assert _refusal(oc.decode_request, {"messages": USER, field: value}).startswith(message)


def test_openai_max_tokens_is_checked_beside_max_completion_tokens() -> None:
    """A bad `max_tokens` is refused even when `max_completion_tokens` (which wins) is fine."""
    body = {"messages": USER, "max_completion_tokens": 10, "max_tokens": -1}
    assert _refusal(oc.decode_request, body).startswith("max_tokens: must be")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_tokens", -5, f"max_tokens: must be a whole number from 1 to {LIMIT} (got -5)"),
        ("max_tokens", 2**63, "max_tokens: must be a whole number from 1"),
        ("temperature", 3, "temperature: must be a number from 0 to 2"),
        ("top_p", -0.5, "top_p: must be a number from 0 to 1"),
        ("top_k", -1, "top_k: must be a whole number at least 0 (got -1)"),
        ("top_k", 1.5, "top_k: expected an integer"),
    ],
)
def test_anthropic_numbers_outside_vendor_ranges_are_400(
    field: str, value: Any, message: str
) -> None:
    """An Anthropic body with a count or sampling number no vendor accepts is refused."""
    body = {"max_tokens": 16, "messages": USER, field: value}
    assert _refusal(am.decode_request, body).startswith(message)


@pytest.mark.parametrize(
    "body",
    [
        {"max_tokens": LIMIT, "n": 128, "temperature": 2, "top_p": 0, "stop": ["a"] * 16},
        {"max_completion_tokens": 1, "n": 1, "temperature": 0.0, "top_p": 1.0},
    ],
)
def test_openai_numbers_at_the_bounds_pass(body: dict[str, Any]) -> None:
    """Values at the ends of each range, and more than OpenAI's 4 stop strings, decode."""
    request = oc.decode_request({"messages": USER, **body})
    assert request.max_tokens in (LIMIT, 1)


def test_anthropic_numbers_at_the_bounds_pass() -> None:
    """Anthropic values at the ends of each range decode (temperature up to 2, top_k 0)."""
    body = {"max_tokens": 1, "messages": USER, "temperature": 2, "top_p": 1, "top_k": 0}
    request = am.decode_request(body)
    assert (request.max_tokens, request.temperature, request.extra) == (1, 2.0, {"top_k": 0})


FOO = {"type": "foo", "data": 1}


def _anthropic_body(*content: Any) -> bytes:
    return orjson.dumps(
        {"model": "c", "max_tokens": 9, "messages": [{"role": "user", "content": list(content)}]}
    )


def test_unknown_anthropic_block_is_refused_when_translated() -> None:
    """An Anthropic block type the SDK does not define is a 400 naming its path and type when
    the request goes to an OpenAI target: never dropped silently."""
    request = am.decode_request(_anthropic_body({"type": "text", "text": "look"}, FOO))
    with pytest.raises(InvalidRequest) as caught:
        oc.encode_request(request, model="m")
    assert caught.value.message == (
        'messages[0].content[1].type: unknown content block "foo", '
        "which cannot be translated to openai-chat"
    )


def test_unknown_anthropic_block_goes_verbatim_to_anthropic() -> None:
    """The same unknown block reaches an Anthropic target as the caller sent it."""
    request = am.decode_request(_anthropic_body(FOO))
    body = am.encode_request(request, model="m")
    assert body["messages"] == [{"role": "user", "content": [FOO]}]
    forwarded = am.forward_body(_anthropic_body(FOO), model="c2", stream=False)
    assert orjson.loads(forwarded)["messages"][0]["content"] == [FOO]


def test_unknown_block_inside_a_tool_result_names_its_nested_path() -> None:
    """An unknown block in a tool result's content is named by its full path."""
    result = {"type": "tool_result", "tool_use_id": "t1", "content": [FOO]}
    request = am.decode_request(_anthropic_body(result))
    with pytest.raises(InvalidRequest) as caught:
        oc.encode_request(request, model="m")
    assert caught.value.message.startswith("messages[0].content[0].content[0].type: unknown")


def test_unknown_openai_part_is_refused_when_translated() -> None:
    """An OpenAI part type the SDK does not define is a 400 naming its path for Anthropic."""
    body = {
        "messages": [{"role": "system", "content": "s"}, *USER, {"role": "user", "content": [FOO]}]
    }
    request = oc.decode_request(body)
    assert oc.encode_request(request, model="m")["messages"][2]["content"] == [FOO]
    with pytest.raises(InvalidRequest) as caught:
        am.encode_request(request, model="m")
    assert caught.value.message.startswith("messages[2].content[0].type: unknown content block")


def test_known_unmodelled_anthropic_blocks_are_still_dropped_by_name() -> None:
    """A block Anthropic defines but no codec models (search_result) beside text is dropped
    for OpenAI as before, not refused."""
    block = {"type": "search_result", "source": "s", "title": "t", "content": []}
    request = am.decode_request(_anthropic_body(block, {"type": "text", "text": "x"}))
    assert oc.encode_request(request, model="m")["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "x"}]}
    ]


def test_message_emptied_by_translation_is_refused_with_the_callers_path() -> None:
    """A user message holding only blocks OpenAI drops is a 400 naming the caller's message
    (tool results split off earlier messages do not shift the path)."""
    block = {"type": "search_result", "source": "s", "title": "t", "content": []}
    body = {
        "max_tokens": 9,
        "messages": [
            {"role": "user", "content": "q"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "r"}],
            },
            {"role": "assistant", "content": "a"},
            {"role": "user", "content": [block]},
        ],
    }
    request = am.decode_request(orjson.dumps(body))
    assert len(request.messages) == 5
    with pytest.raises(InvalidRequest) as caught:
        oc.encode_request(request, model="m")
    assert caught.value.message == (
        "messages[4]: would be sent empty to openai-chat, which cannot carry its "
        "search_result content"
    )


def test_openai_message_emptied_for_anthropic_names_the_callers_index() -> None:
    """An OpenAI user message of audio only is refused for Anthropic, by its index in the
    caller's body (system messages counted), instead of being left out."""
    audio = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
    body = {
        "messages": [
            {"role": "system", "content": "s"},
            *USER,
            {"role": "assistant", "content": "a"},
            {"role": "user", "content": [audio]},
        ]
    }
    request = oc.decode_request(orjson.dumps(body))
    with pytest.raises(InvalidRequest) as caught:
        am.encode_request(request, model="m")
    assert caught.value.message.startswith("messages[3]: would be sent empty to anthropic-messages")
    assert "input_audio" in caught.value.message


@pytest.mark.parametrize(
    "message",
    [
        Message("assistant", [ThinkingPart("hmm")]),
        Message("user", [DocumentPart(url="https://example.com/a.pdf")]),
        Message("tool", [DocumentPart(url="https://example.com/a.pdf")], tool_call_id="t1"),
    ],
)
def test_code_built_message_emptied_for_openai_is_refused(message: Message) -> None:
    """Thinking-only, URL-document-only messages and tool results are refused for OpenAI,
    named by their position."""
    request = ChatRequest([Message.user("q"), message])
    with pytest.raises(InvalidRequest) as caught:
        oc.encode_request(request, model="m")
    assert caught.value.message.startswith("messages[1]: would be sent empty to openai-chat")


def test_messages_empty_from_the_start_are_left_as_before() -> None:
    """An empty user message the caller sent itself is not refused: it was not emptied."""
    request = oc.decode_request({"messages": [{"role": "user", "content": ""}, *USER]})
    assert am.encode_request(request, model="m")["messages"] == [{"role": "user", "content": "hi"}]
    assert oc.encode_request(request, model="m")["messages"][0] == {"role": "user", "content": ""}


def test_message_paths_match_the_decoded_messages() -> None:
    """`message_paths` gives one caller path per neutral message, in both codecs."""
    anthropic = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "a"},
                    {"type": "tool_result", "tool_use_id": "b"},
                    {"type": "text", "text": "x"},
                ],
            },
            {"role": "assistant", "content": "y"},
        ]
    }
    assert am.message_paths(anthropic) == ["messages[0]"] * 3 + ["messages[1]"]
    openai = {
        "messages": [
            {"role": "developer", "content": "d"},
            *USER,
            {"role": "system", "content": "s"},
            *USER,
        ]
    }
    assert oc.message_paths(openai) == ["messages[1]", "messages[3]"]
