"""What differs between provider kinds: presets, URLs, headers, vendor signals, options."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from turnout.errors import ConfigError, InvalidRequest, ProviderError
from turnout.providers import (
    PRESETS,
    Anthropic,
    AzureOpenAI,
    HttpProvider,
    MockProvider,
    OpenAI,
    OpenAICompatible,
)
from turnout.providers.base import ANTHROPIC_MESSAGES, OPENAI_CHAT
from turnout.vendors.catalog import vendor_entry
from turnout.wire.model import ChatRequest, EmbeddingRequest, Message

from .conftest import logged

if TYPE_CHECKING:
    from turnout.mock_upstream import ThreadedMockUpstream


def ask(model: str) -> ChatRequest:
    """A one-message request for `model`."""
    return ChatRequest([Message.user("hello there")], model=model)


@pytest.mark.parametrize("preset", PRESETS)
def test_presets_take_base_url_and_embeddings_from_the_catalog(preset: str) -> None:
    """A preset's base URL and embeddings support come from its catalog entry."""
    provider = OpenAICompatible(preset=preset)
    entry = vendor_entry(preset)
    assert provider.base_url == (entry.base_url or "").rstrip("/")
    assert provider.supports_embeddings is entry.embeddings
    assert provider.name == preset
    assert provider.family == "none"
    assert provider.keyless is (preset in {"ollama", "vllm", "lmstudio"})


def test_compatible_needs_a_base_url_or_a_known_preset() -> None:
    """No base URL and no preset, or an unknown preset, is a ConfigError naming the field."""
    with pytest.raises(ConfigError, match="base_url"):
        OpenAICompatible()
    with pytest.raises(ConfigError, match="preset"):
        OpenAICompatible(preset="acme")


def test_compatible_on_loopback_without_a_key_is_keyless() -> None:
    """An openai-compatible provider on loopback without a key is keyless; elsewhere not."""
    assert OpenAICompatible(base_url="http://127.0.0.1:11434/v1").keyless
    assert OpenAICompatible(base_url="http://localhost:8000/v1").keyless
    assert not OpenAICompatible(base_url="https://example.com/v1").keyless
    assert not OpenAICompatible(base_url="http://127.0.0.1:1/v1", api_key="k").keyless


def test_azure_urls_and_wire() -> None:
    """Azure puts the deployment and api-version in the URL; `wire` is required and checked."""
    azure = AzureOpenAI("https://res.openai.azure.com/", "k", wire="openai-chat")
    assert azure.chat_url("my dep") == (
        "https://res.openai.azure.com/openai/deployments/my%20dep/chat/completions"
        "?api-version=2024-10-21"
    )
    assert azure.embeddings_url("e").endswith("/deployments/e/embeddings?api-version=2024-10-21")
    assert azure.family == "openai"
    claude = AzureOpenAI(
        "https://res.services.ai.azure.com/anthropic", "k", wire="anthropic-messages"
    )
    assert claude.chat_url("c") == "https://res.services.ai.azure.com/anthropic/v1/messages"
    assert (claude.family, claude.supports_embeddings) == ("anthropic", False)
    with pytest.raises(ConfigError, match="wire"):
        AzureOpenAI("https://res.openai.azure.com", "k", wire="responses")


def test_families_and_formats() -> None:
    """Each kind states its family and wire format."""
    assert (OpenAI("k").family, OpenAI("k").wire_format) == ("openai", "openai-chat")
    assert (Anthropic("k").family, Anthropic("k").wire_format) == (
        "anthropic",
        "anthropic-messages",
    )
    assert MockProvider().family == "none"
    assert not hasattr(Anthropic("k"), "embed")


def test_api_keys_default_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenAI and Anthropic read their key from the environment when none is given."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "ant-env")
    assert OpenAI().call_headers(ask("m"))["authorization"] == "Bearer sk-env"
    assert Anthropic().call_headers(ask("m"))["x-api-key"] == "ant-env"
    monkeypatch.delenv("OPENAI_API_KEY")
    assert "authorization" not in OpenAI().call_headers(ask("m"))


def test_prices_aliases_and_default_model() -> None:
    """price_for reads both price shapes; aliases map to wire models; no model is a 400."""
    provider = OpenAI(
        "k",
        model="gpt-4o-mini",
        prices={"gpt-4o-mini": {"input": 0.15, "output": 0.6}, "o3": (2.0, 8.0)},
        model_aliases={"fast": "gpt-4o-mini"},
    )
    assert provider.price_for("gpt-4o-mini") == (0.15, 0.6)
    assert provider.price_for("fast") == (0.15, 0.6)
    assert provider.price_for("o3") == (2.0, 8.0)
    assert provider.price_for("unknown") is None
    assert provider.price_for(None) is None
    assert provider.wire_model(None) == "gpt-4o-mini"
    assert provider.wire_model("fast") == "gpt-4o-mini"
    with pytest.raises(InvalidRequest, match="no model"):
        OpenAI("k").wire_model(None)
    with pytest.raises(ValueError, match="prices"):
        OpenAI("k", prices={"m": 3})


@pytest.mark.parametrize(
    ("vendor", "spec", "error_class"),
    [
        ("kimi", "quota;vendor=kimi", "quota_exhausted"),
        ("kimi", "status=429;vendor=kimi", "rate_limited"),
        ("zai", "quota;vendor=zai", "quota_exhausted"),
        ("zai", "status=429;vendor=zai", "rate_limited"),
        ("xai", "quota;vendor=xai", "quota_exhausted"),
        ("xai", "status=429;vendor=xai", "rate_limited"),
        ("deepseek", "quota;vendor=deepseek", "quota_exhausted"),
        ("groq", "status=429;vendor=groq", "rate_limited"),
    ],
)
async def test_vendor_signals_through_presets(
    upstream: ThreadedMockUpstream, vendor: str, spec: str, error_class: str
) -> None:
    """Each preset reads its vendor's quota signal (credit-429s included) and plain 429s."""
    provider = OpenAICompatible(base_url=upstream.openai_base_url, preset=vendor)
    try:
        with pytest.raises(ProviderError) as caught:
            await provider.complete(ask(f"m/fault:{spec}"))
        assert caught.value.error_class == error_class
    finally:
        await provider.aclose()


async def test_zai_quota_reset_time(upstream: ThreadedMockUpstream) -> None:
    """Z.ai's "your limit will reset at …" becomes the error's reset_at, in seconds."""
    provider = OpenAICompatible(base_url=upstream.openai_base_url, preset="zai")
    try:
        with pytest.raises(ProviderError) as caught:
            await provider.complete(ask("m/fault:quota;vendor=zai;reset_in=3600"))
        assert caught.value.error_class == "quota_exhausted"
        assert caught.value.reset_at is not None
        assert 3590 <= caught.value.reset_at <= 3601
    finally:
        await provider.aclose()


async def test_anthropic_count_tokens(upstream: ThreadedMockUpstream) -> None:
    """count_tokens asks the upstream and returns its input token count."""
    provider = Anthropic("k", base_url=upstream.url)
    try:
        request = ChatRequest([Message.user("x" * 40)], model="claude-x", max_tokens=100)
        assert await provider.count_tokens(request) == 10
        sent = upstream.requests()[-1]
        assert sent["path"] == "/v1/messages/count_tokens"
        assert "max_tokens" not in sent["body"]
        with pytest.raises(ProviderError) as caught:
            await provider.count_tokens(ask("mock-503"))
        assert caught.value.error_class == "provider_error"
    finally:
        await provider.aclose()


async def test_embeddings_not_served_by_a_preset(upstream: ThreadedMockUpstream) -> None:
    """A preset without embeddings answers embed() with a 400 before any call."""
    provider = OpenAICompatible(base_url=upstream.openai_base_url, preset="deepseek")
    upstream.reset()
    with pytest.raises(InvalidRequest, match="embeddings"):
        await provider.embed(EmbeddingRequest("hi", model="e"))
    assert upstream.requests() == []
    await provider.aclose()


async def test_pool_is_reused_and_reopened_after_aclose(upstream: ThreadedMockUpstream) -> None:
    """Calls reuse one pooled session; after aclose() the provider opens a new one."""
    provider = OpenAI("k", base_url=upstream.openai_base_url)
    await provider.complete(ask("gpt-4o-mini"))
    await provider.complete(ask("gpt-4o-mini"))
    await provider.aclose()
    response = await provider.complete(ask("gpt-4o-mini"))
    assert response.text == "mock answer from gpt-4o-mini"
    await provider.aclose()


def test_a_provider_moves_to_a_new_event_loop(upstream: ThreadedMockUpstream) -> None:
    """Closed at the end of one event loop, a provider opens a new pool in the next one."""
    import asyncio

    provider = OpenAI("k", base_url=upstream.openai_base_url)

    async def once() -> str:
        try:
            return (await provider.complete(ask("gpt-4o-mini"))).text
        finally:
            await provider.aclose()

    assert asyncio.run(once()) == "mock answer from gpt-4o-mini"
    assert asyncio.run(once()) == "mock answer from gpt-4o-mini"


async def test_mock_provider_logs_what_it_was_asked(upstream: ThreadedMockUpstream) -> None:
    """MockProvider keeps its requests in memory and never touches the upstream."""
    upstream.reset()
    provider = MockProvider("m1", model="default-model")
    await provider.complete(ChatRequest([Message.user("hi")]))
    assert [r.model for r in provider.requests] == ["default-model"]
    assert logged(provider, upstream)[0]["body"]["messages"][-1]["content"] == "hi"
    assert upstream.requests() == []


def test_a_kind_says_what_it_speaks_by_class_attributes_or_keywords() -> None:
    """A kind without `family` or `vendor` gets none; keywords set them per instance; a kind
    that names no wire format is refused."""

    class Plain(HttpProvider):
        wire = OPENAI_CHAT

    plain = Plain(name="p", base_url="http://h.example")
    assert (plain.wire, plain.family, plain.vendor) == (OPENAI_CHAT, "none", None)
    azure = AzureOpenAI("https://r.example", "k", wire="anthropic-messages")
    assert (azure.wire, azure.family, azure.vendor) == (
        ANTHROPIC_MESSAGES,
        "anthropic",
        "anthropic",
    )
    with pytest.raises(TypeError, match="HttpProvider names no wire format"):
        HttpProvider(name="p", base_url="http://h.example")
