"""OpenAI <-> Anthropic translation through the neutral model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from turnout.wire import anthropic_messages as am
from turnout.wire import openai_chat as oc
from turnout.wire.model import (
    ChatChunk,
    ChatRequest,
    ChatResponse,
    ImagePart,
    Message,
    TextPart,
    ThinkingPart,
    Tool,
    ToolCall,
    Usage,
)
from turnout.wire.sse import SSEDecoder
from turnout.wire.translate import needs_server_tools, untranslatable

FIXTURES = Path(__file__).parent.parent / "fixtures"


def fixture(path: str) -> bytes:
    return (FIXTURES / path).read_bytes()


def summary(request: ChatRequest) -> list[tuple[Any, ...]]:
    """What must survive a translation: roles, text, images, tool calls and results."""
    out: list[tuple[Any, ...]] = []
    for m in request.messages:
        images = [(p.url, p.data, p.media_type) for p in m.content if isinstance(p, ImagePart)]
        calls = [(c.id, c.name, json.loads(c.arguments)) for c in m.tool_calls]
        out.append((m.role, m.text, images, calls, m.tool_call_id))
    return out


def test_openai_request_survives_a_trip_through_anthropic() -> None:
    """OpenAI -> neutral -> Anthropic -> neutral keeps text, images, tool calls and results."""
    original = oc.decode_request(fixture("openai/chat_request.json"))
    body = am.encode_request(original, model="claude-sonnet-4-5")
    back = am.decode_request(json.loads(json.dumps(body)))
    assert summary(back) == summary(original)
    assert [p.text for p in back.system] == [p.text for p in original.system]
    assert (back.stop, back.temperature, back.max_tokens) == (["\n\nUser:"], 0.7, 512)
    assert back.tools[0].parameters == original.tools[0].parameters
    assert back.tool_choice == "auto"
    assert back.user == "user-1234"


def test_openai_extras_do_not_leak_into_anthropic_and_are_named() -> None:
    """logprobs, n, seed … are not sent to Anthropic; untranslatable names each of them."""
    original = oc.decode_request(fixture("openai/chat_request.json"))
    body = am.encode_request(original, model="claude")
    for key in ("logprobs", "top_logprobs", "n", "seed", "top_p"):
        assert key not in body
    assert untranslatable(original, "anthropic-messages") == [
        "logprobs",
        "top_logprobs",
        "n",
        "seed",
        "top_p",
    ]
    assert untranslatable(original, "openai-chat") == []


def test_anthropic_request_survives_a_trip_through_openai() -> None:
    """Anthropic -> neutral -> OpenAI -> neutral keeps text, images, tool calls and results."""
    original = am.decode_request(fixture("anthropic/messages_request.json"))
    body = oc.encode_request(original, model="gpt-4o")
    back = oc.decode_request(json.loads(json.dumps(body)))
    expected = summary(original)
    assert summary(back) == expected
    assert [p.text for p in back.system] == ["You are a weather assistant."]
    assert back.stop == ["\n\nHuman:"]
    assert back.tools[0].parameters == original.tools[0].parameters


def test_anthropic_only_features_are_dropped_and_named() -> None:
    """Thinking blocks, cache_control, the thinking option and top_k do not reach OpenAI."""
    original = am.decode_request(fixture("anthropic/messages_request.json"))
    body = oc.encode_request(original, model="gpt-4o")
    text = json.dumps(body)
    for word in ("cache_control", "signature", "budget_tokens", "top_k", "thinking"):
        assert word not in text
    assert untranslatable(original, "openai-chat") == [
        "top_k",
        "thinking",
        "cache_control",
        "thinking blocks",
    ]


def test_consecutive_tool_results_merge_into_one_user_message() -> None:
    """OpenAI tool messages in a row become one Anthropic user message of tool_result blocks."""
    request = ChatRequest(
        [
            Message("assistant", tool_calls=[ToolCall("a", "f"), ToolCall("b", "g")]),
            Message.tool_result("a", "1"),
            Message.tool_result("b", "2", is_error=True),
            Message.user("thanks"),
        ]
    )
    messages = am.encode_request(request, model="m")["messages"]
    assert [m["role"] for m in messages] == ["assistant", "user", "user"]
    assert [b["tool_use_id"] for b in messages[1]["content"]] == ["a", "b"]
    assert messages[1]["content"][1]["is_error"] is True


@pytest.mark.parametrize(
    ("openai", "anthropic"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        ({"type": "function", "function": {"name": "f"}}, {"type": "tool", "name": "f"}),
    ],
)
def test_tool_choice_translates_both_ways(openai: object, anthropic: dict[str, Any]) -> None:
    """auto/none/required/{function} <-> auto/none/any/{tool}."""
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    body = {"messages": [{"role": "user", "content": "x"}], "tools": tools, "tool_choice": openai}
    request = oc.decode_request(body)
    encoded = am.encode_request(request, model="m")
    assert encoded["tool_choice"] == anthropic
    assert encoded["tools"] == [{"name": "f", "input_schema": {"type": "object"}}]
    back = am.decode_request(encoded)
    assert oc.encode_request(back, model="m")["tool_choice"] == openai


def test_images_translate_between_data_urls_and_sources() -> None:
    """Data URLs become base64 sources, http URLs url sources, and back."""
    request = ChatRequest(
        [
            Message(
                "user",
                [
                    ImagePart(url="data:image/webp;base64,UklGRg=="),
                    ImagePart(url="https://example.com/a.png"),
                    ImagePart(data="QUJD", media_type="image/gif"),
                ],
            )
        ]
    )
    content = am.encode_request(request, model="m")["messages"][0]["content"]
    assert [b["source"] for b in content] == [
        {"type": "base64", "media_type": "image/webp", "data": "UklGRg=="},
        {"type": "url", "url": "https://example.com/a.png"},
        {"type": "base64", "media_type": "image/gif", "data": "QUJD"},
    ]
    parts = oc.encode_request(
        am.decode_request({"messages": [{"role": "user", "content": content}]}), model="m"
    )
    urls = [p["image_url"]["url"] for p in parts["messages"][0]["content"]]
    assert urls == [
        "data:image/webp;base64,UklGRg==",
        "https://example.com/a.png",
        "data:image/gif;base64,QUJD",
    ]


def test_sampling_is_made_acceptable_to_anthropic() -> None:
    """A temperature above 1 is clamped; with both set, only temperature is sent."""
    request = oc.decode_request(
        {"messages": [{"role": "user", "content": "x"}], "temperature": 1.6, "top_p": 0.5}
    )
    body = am.encode_request(request, model="m")
    assert (body["temperature"], "top_p" in body) == (1.0, False)
    assert "temperature above 1 (clamped)" in untranslatable(request, "anthropic-messages")


def test_server_tools_make_a_request_untranslatable() -> None:
    """Anthropic server tools and OpenAI web_search_options need their own family."""
    with_search = am.decode_request(
        {
            "messages": [{"role": "user", "content": "news?"}],
            "tools": [{"type": "web_search_20250305", "name": "web_search"}],
        }
    )
    assert needs_server_tools(with_search)
    assert "tools" not in oc.encode_request(with_search, model="gpt-4o")
    assert untranslatable(with_search, "openai-chat") == ["tool web_search (web_search_20250305)"]
    plain = am.decode_request(fixture("anthropic/messages_request.json"))
    assert not needs_server_tools(plain)
    searching = oc.decode_request(
        {"messages": [{"role": "user", "content": "x"}], "web_search_options": {}}
    )
    assert needs_server_tools(searching)


def test_unsigned_thinking_is_not_sent_to_anthropic() -> None:
    """Thinking without a signature (from another family) is dropped and named."""
    request = ChatRequest(
        [Message("assistant", [ThinkingPart("hmm"), TextPart("ok")]), Message.user("go")]
    )
    body = am.encode_request(request, model="m")
    assert body["messages"][0]["content"] == [{"type": "text", "text": "ok"}]
    assert untranslatable(request, "anthropic-messages") == ["unsigned thinking blocks"]


def test_anthropic_answer_for_an_openai_caller() -> None:
    """An Anthropic tool-use answer becomes an OpenAI completion with tool calls and usage."""
    response = am.decode_response(fixture("anthropic/messages_response_tool_use.json"))
    body = oc.encode_response(response, model="claude", request_id="r1", created=5)
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert (
        choice["message"]["content"] == "I'll check the current weather in San Francisco for you."
    )
    call = choice["message"]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {
        "location": "San Francisco, CA",
        "unit": "celsius",
    }
    assert body["usage"]["prompt_tokens"] == 472 + 1500
    assert body["usage"]["prompt_tokens_details"] == {"cached_tokens": 1500}


def test_openai_answer_for_an_anthropic_caller() -> None:
    """An OpenAI answer becomes a Messages body with the matching stop reason and usage."""
    response = oc.decode_response(fixture("openai/chat_response.json"))
    body = am.encode_response(response, model="gpt-4o", request_id="msg_1")
    assert body["content"] == [{"type": "text", "text": response.text}]
    assert body["stop_reason"] == "end_turn"
    assert body["usage"] == {
        "input_tokens": 1117 - 1024,
        "output_tokens": 46,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 1024,
    }
    tool = oc.decode_response(fixture("openai/chat_response_tool_calls.json"))
    blocks = am.encode_response(tool, model="gpt")["content"]
    assert blocks == [
        {
            "type": "tool_use",
            "id": "call_abc123",
            "name": "get_current_weather",
            "input": {"location": "Boston, MA"},
        }
    ]


def relay(
    source: bytes,
    decoder: oc.StreamDecoder | am.StreamDecoder,
    encoder: oc.StreamEncoder | am.StreamEncoder,
) -> bytes:
    sse = SSEDecoder()
    out = b""
    for event in sse.feed(source) + sse.flush():
        for chunk in decoder.feed(event):
            out += encoder.encode(chunk)
    return out + encoder.finish(finish_reason=decoder.finish_reason, usage=decoder.usage)


def collect(data: bytes, decoder: oc.StreamDecoder | am.StreamDecoder) -> list[ChatChunk]:
    sse = SSEDecoder()
    return [c for e in sse.feed(data) + sse.flush() for c in decoder.feed(e)]


def test_openai_stream_relayed_to_an_anthropic_caller() -> None:
    """OpenAI tool-call chunks re-encoded as Anthropic events decode to the same content."""
    source = fixture("openai/chat_stream_tool_calls.sse")
    first = oc.StreamDecoder()
    original = collect(source, first)
    out = relay(source, oc.StreamDecoder(), am.StreamEncoder(model="gpt-4o-mini"))
    second = am.StreamDecoder()
    again = collect(out, second)
    assert [d for c in again for d in c.tool_calls if d.id] == [
        d for c in original for d in c.tool_calls if d.id
    ]
    args = [
        "".join(d.arguments for c in chunks for d in c.tool_calls if d.index == i)
        for chunks in (original, again)
        for i in (0, 1)
    ]
    assert args[:2] == args[2:]
    assert (second.finish_reason, second.usage, second.done) == ("tool_calls", first.usage, True)


def test_anthropic_stream_relayed_to_an_openai_caller() -> None:
    """Anthropic events re-encoded as OpenAI chunks decode to the same text, call and usage."""
    source = fixture("anthropic/messages_stream_tool_use.sse")
    first = am.StreamDecoder()
    original = collect(source, first)
    out = relay(source, am.StreamDecoder(), oc.StreamEncoder(model="claude", include_usage=True))
    second = oc.StreamDecoder()
    again = collect(out, second)
    assert "".join(c.delta for c in again) == "".join(c.delta for c in original)
    assert "".join(c.thinking for c in again) == ""  # OpenAI has no thinking deltas
    assert [d for c in again for d in c.tool_calls] == [d for c in original for d in c.tool_calls]
    assert (second.finish_reason, second.done) == ("tool_calls", True)
    assert second.usage == Usage(first.usage.input_tokens if first.usage else 0, 89, 1024)


def test_library_requests_keep_extra_for_every_format() -> None:
    """A request built in code (no origin) sends its `extra` to whichever format encodes it."""
    request = ChatRequest([Message.user("x")], extra={"top_k": 3})
    assert am.encode_request(request, model="m")["top_k"] == 3
    assert oc.encode_request(request, model="m")["top_k"] == 3
    assert untranslatable(request, "openai-chat") == []


def test_tools_cross_with_their_schema() -> None:
    """Function parameters become input_schema and back."""
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    request = ChatRequest([Message.user("x")], tools=[Tool("search", "find", schema)])
    assert am.encode_request(request, model="m")["tools"] == [
        {"name": "search", "description": "find", "input_schema": schema}
    ]
    assert oc.encode_request(request, model="m")["tools"] == [
        {
            "type": "function",
            "function": {"name": "search", "description": "find", "parameters": schema},
        }
    ]


def test_response_with_thinking_keeps_signed_thinking_for_anthropic_callers() -> None:
    """Signed thinking from Claude stays in an Anthropic body; OpenAI bodies leave it out."""
    response = ChatResponse([ThinkingPart("why", signature="sig"), TextPart("because")])
    assert am.encode_response(response, model="m")["content"][0] == {
        "type": "thinking",
        "thinking": "why",
        "signature": "sig",
    }
    assert oc.encode_response(response, model="m")["choices"][0]["message"]["content"] == "because"


def test_pdf_documents_cross_both_ways() -> None:
    """An OpenAI `file` part with file_data becomes an Anthropic base64 document, and back."""
    part = {
        "type": "file",
        "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0="},
    }
    request = oc.decode_request({"messages": [{"role": "user", "content": [part]}]})
    block = am.encode_request(request, model="m")["messages"][0]["content"][0]
    assert block == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
        "title": "a.pdf",
    }
    back = am.decode_request({"messages": [{"role": "user", "content": [block]}]})
    assert oc.encode_request(back, model="m")["messages"][0]["content"] == [part]


def test_text_documents_reach_openai_as_text_and_url_documents_are_named() -> None:
    """A plain-text document becomes a text part; a document by URL is dropped and named."""
    blocks = [
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "notes"},
        },
        {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
    ]
    request = am.decode_request({"messages": [{"role": "user", "content": blocks}]})
    assert oc.encode_request(request, model="m")["messages"][0]["content"] == [
        {"type": "text", "text": "notes"}
    ]
    assert untranslatable(request, "openai-chat") == ["document urls"]


def test_native_parts_stay_home_and_are_named_elsewhere() -> None:
    """An OpenAI audio part is not sent to Anthropic; untranslatable names its type."""
    audio = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
    request = oc.decode_request(
        {"messages": [{"role": "user", "content": [audio, {"type": "text", "text": "hi"}]}]}
    )
    assert am.encode_request(request, model="m")["messages"][0]["content"] == [
        {"type": "text", "text": "hi"}
    ]
    assert untranslatable(request, "anthropic-messages") == ["input_audio blocks"]


def test_system_messages_in_code_built_requests_join_the_system_prompt() -> None:
    """A system Message among `messages` becomes Anthropic's top-level system prompt."""
    request = ChatRequest([Message.system("be concise"), Message.user("hi")])
    body = am.encode_request(request, model="m")
    assert body["system"] == "be concise"
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert oc.encode_request(request, model="m")["messages"][0] == {
        "role": "system",
        "content": "be concise",
    }
