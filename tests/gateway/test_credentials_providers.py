"""Provider kinds in passthrough mode (`credential_mode`): no key of their own, the
caller's credential in each kind's header, and a defensive refusal without one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from turnout.errors import AuthenticationFailed, ConfigError
from turnout.providers import Anthropic, AzureOpenAI, OpenAI, OpenAICompatible
from turnout.providers.transport import HttpReply
from turnout.routing.plan import CallerCredential
from turnout.wire.model import ChatRequest, EmbeddingRequest, Message

if TYPE_CHECKING:
    from collections.abc import Mapping
    from contextlib import AbstractAsyncContextManager

QUESTION = ChatRequest([Message.user("hi")], model="m")
OPENAI_ANSWER = (
    b'{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,'
    b'"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],'
    b'"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}'
)


class Recorder:
    """A transport that records the headers of each call and answers like OpenAI."""

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []

    async def post(self, url: str, body: bytes, headers: Mapping[str, str]) -> HttpReply:
        self.headers.append(dict(headers))
        if url.endswith("/embeddings"):
            data = b'{"object":"list","data":[{"index":0,"embedding":[0.5]}],"model":"m"}'
            return HttpReply(200, {}, data)
        return HttpReply(200, {}, OPENAI_ANSWER)

    def stream(
        self, url: str, body: bytes, headers: Mapping[str, str]
    ) -> AbstractAsyncContextManager[Any]:
        self.headers.append(dict(headers))
        raise AssertionError("not streamed in these tests")

    async def aclose(self) -> None:
        return None


def test_each_kind_puts_the_callers_credential_in_its_own_header() -> None:
    """Bearer for OpenAI-style kinds, x-api-key (or the caller's bearer form) for Anthropic,
    api-key for Azure's OpenAI wire; the view carries it, the provider itself does not."""
    key = CallerCredential("sk-own")
    bearer = CallerCredential("sk-ant-oat-own", bearer=True)
    openai = OpenAI(credential_mode="passthrough", transport=Recorder())
    compatible = OpenAICompatible("http://vendor.example/v1", credential_mode="passthrough")
    anthropic = Anthropic(credential_mode="passthrough", transport=Recorder())
    azure = AzureOpenAI(
        "https://x.openai.azure.com", wire="openai-chat", credential_mode="passthrough"
    )
    assert openai.with_credential(key).call_headers(QUESTION)["authorization"] == "Bearer sk-own"
    assert compatible.with_credential(key).call_headers(QUESTION)["authorization"] == (
        "Bearer sk-own"
    )
    keyed = anthropic.with_credential(key).call_headers(QUESTION)
    assert keyed["x-api-key"] == "sk-own"
    assert "authorization" not in keyed
    assert anthropic.with_credential(bearer).call_headers(QUESTION)["authorization"] == (
        "Bearer sk-ant-oat-own"
    )
    assert azure.with_credential(key).call_headers(QUESTION)["api-key"] == "sk-own"
    for provider in (openai, compatible, anthropic, azure):
        with pytest.raises(AuthenticationFailed):
            provider.call_headers(QUESTION)


def test_a_passthrough_provider_never_sends_a_key_of_its_own() -> None:
    """An api_key given to a passthrough provider is ignored: the caller's credential only."""
    provider = OpenAI("sk-org-key", credential_mode="passthrough", transport=Recorder())
    headers = provider.with_credential(CallerCredential("sk-own")).call_headers(QUESTION)
    assert "sk-org-key" not in repr(headers)


def test_an_org_key_provider_never_takes_a_callers_credential() -> None:
    """with_credential on an org-key provider refuses; its own key is what it sends."""
    provider = OpenAI("sk-org-key", transport=Recorder())
    assert provider.credential_mode == "org_key"
    with pytest.raises(ValueError, match="org_key"):
        provider.with_credential(CallerCredential("sk-own"))
    assert provider.call_headers(QUESTION)["authorization"] == "Bearer sk-org-key"


def test_an_unknown_credential_mode_is_a_config_error() -> None:
    """credential_mode must be org_key or passthrough, named in the error."""
    with pytest.raises(ConfigError, match="credential_mode"):
        OpenAI("k", credential_mode="shared")  # type: ignore[arg-type]


async def test_a_passthrough_call_without_a_credential_sends_nothing() -> None:
    """complete and embed refuse (401, auth) before the transport is used."""
    recorder = Recorder()
    provider = OpenAI(credential_mode="passthrough", transport=recorder)
    with pytest.raises(AuthenticationFailed) as caught:
        await provider.complete(QUESTION)
    assert caught.value.status == 401
    assert caught.value.error_class == "auth"
    with pytest.raises(AuthenticationFailed):
        await provider.embed(EmbeddingRequest(input="hi", model="m"))
    assert recorder.headers == []


async def test_the_view_shares_the_pool_and_sends_the_credential() -> None:
    """A bound call goes through the provider's own transport with the caller's header, and
    leaves the provider itself keyless."""
    recorder = Recorder()
    provider = OpenAI(credential_mode="passthrough", transport=recorder)
    bound = provider.with_credential(CallerCredential("sk-own"))
    answer = await bound.complete(QUESTION)
    vectors = await bound.embed(EmbeddingRequest(input="hi", model="m"))
    assert answer.text == "ok"
    assert vectors.data == [[0.5]]
    assert [h["authorization"] for h in recorder.headers] == ["Bearer sk-own"] * 2
    assert "sk-own" not in repr(bound)
    with pytest.raises(AuthenticationFailed):
        provider.call_headers(QUESTION)
