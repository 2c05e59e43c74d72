"""The `vertex` provider kind against the mock upstream's Vertex face, over real sockets: tokens
from a service-account JSON through google-auth and the mock's OAuth endpoint, the Gemini and
Claude paths, the rawPredict body, and the missing-extra error."""

from __future__ import annotations

import importlib
import sys
import time
from typing import TYPE_CHECKING, Any

import httpx
import orjson
import pytest

from turnout.errors import AuthenticationFailed, ConfigError, ProviderUnavailable
from turnout.providers import HttpTimeouts, Vertex
from turnout.providers._google_auth import google_auth_installed, refresh_error
from turnout.providers.vertex import publisher_of, vertex_base_url
from turnout.wire.model import ChatRequest, Message, RawBody

from ._service_account import PROJECT, service_account_json
from .conftest import VERTEX_TOKEN

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from turnout.mock_upstream import ThreadedMockUpstream


def ask(model: str) -> ChatRequest:
    """A one-message request for `model`."""
    return ChatRequest([Message.user("hello there")], model=model)


def fixed_token() -> tuple[str, float | None]:
    """The shared mock's fixed test token, valid for an hour."""
    return VERTEX_TOKEN, time.time() + 3600


@pytest.fixture
async def vertex(upstream: ThreadedMockUpstream) -> AsyncIterator[Vertex]:
    """A Vertex provider on the mock, with a service-account JSON whose tokens it issues."""
    upstream.reset()
    provider = Vertex(
        PROJECT,
        "us-central1",
        credentials_json=service_account_json(f"{upstream.url}/token"),
        base_url=upstream.url,
        timeouts=HttpTimeouts(read=5.0),
    )
    yield provider
    await provider.aclose()


async def test_a_service_account_gets_real_tokens_from_the_mock(
    vertex: Vertex, upstream: ThreadedMockUpstream
) -> None:
    """google-auth signs a JWT with the test key, the mock's token endpoint issues a token,
    and the call carries it as a bearer token (no key anywhere)."""
    issued = upstream.app.tokens.issued
    response = await vertex.complete(ask("gemini-2.5-flash"))
    assert response.content[0].text == "mock answer from gemini-2.5-flash"  # type: ignore[union-attr]
    assert upstream.app.tokens.issued == issued + 1
    (entry,) = upstream.requests()
    token = vertex.access_token.current() if vertex.access_token else None
    assert token is not None
    assert token.startswith("ya29.mock-")
    assert entry["credentials"] == {"authorization": f"Bearer {token}"}
    await vertex.complete(ask("gemini-2.5-flash"))
    assert upstream.app.tokens.issued == issued + 1  # the token is reused, not fetched again


async def test_a_credentials_file_works_as_the_inline_json(
    upstream: ThreadedMockUpstream, tmp_path: Path
) -> None:
    """`credentials_file` reads the same service-account JSON from a path."""
    path = tmp_path / "sa.json"
    path.write_text(service_account_json(f"{upstream.url}/token"))
    provider = Vertex(PROJECT, credentials_file=str(path), base_url=upstream.url)
    try:
        response = await provider.complete(ask("claude-sonnet-4-5"))
        assert response.finish_reason == "stop"
    finally:
        await provider.aclose()


def test_a_bad_credentials_file_names_the_field(tmp_path: Path) -> None:
    """An unreadable or malformed credentials source is a ConfigError naming its field."""
    with pytest.raises(ConfigError, match="credentials_file"):
        Vertex(PROJECT, credentials_file=str(tmp_path / "missing.json"))
    with pytest.raises(ConfigError, match="credentials_json"):
        Vertex(PROJECT, credentials_json="{not json")
    with pytest.raises(ConfigError, match="credentials_json"):
        Vertex(PROJECT, credentials_json='{"type": "service_account"}')


async def test_paths_of_gemini_and_claude(upstream: ThreadedMockUpstream) -> None:
    """Google's models go to generateContent / streamGenerateContent?alt=sse, Anthropic's to
    rawPredict / streamRawPredict, under the project, location and publisher."""
    upstream.reset()
    provider = Vertex("my proj", "europe-west4", token=fixed_token, base_url=upstream.url)
    try:
        await provider.complete(ask("gemini-2.5-flash"))
        _ = [c async for c in provider.stream(ask("gemini-2.5-pro"))]
        await provider.complete(ask("claude-sonnet-4-5@20250929"))
        _ = [c async for c in provider.stream(ask("claude-haiku-4-5"))]
    finally:
        await provider.aclose()
    base = "/v1/projects/my%20proj/locations/europe-west4/publishers"
    assert [(e["path"], e["query"]) for e in upstream.requests()] == [
        (f"{base}/google/models/gemini-2.5-flash:generateContent", ""),
        (f"{base}/google/models/gemini-2.5-pro:streamGenerateContent", "alt=sse"),
        (f"{base}/anthropic/models/claude-sonnet-4-5%4020250929:rawPredict", ""),
        (f"{base}/anthropic/models/claude-haiku-4-5:streamRawPredict", ""),
    ]


def test_the_endpoint_host_and_the_publisher_by_model() -> None:
    """`global` is served by aiplatform.googleapis.com, a region by its own host; the model
    name chooses the publisher, a configured publisher wins."""
    assert vertex_base_url("global") == "https://aiplatform.googleapis.com"
    assert vertex_base_url("us-east5") == "https://us-east5-aiplatform.googleapis.com"
    assert publisher_of("claude-opus-4-1") == "anthropic"
    assert publisher_of("gemini-2.5-flash") == "google"
    assert publisher_of("my-tuned-model") is None
    provider = Vertex(PROJECT, "global", token=fixed_token, publisher="anthropic")
    assert provider.chat_url("my-tuned-model").startswith(
        "https://aiplatform.googleapis.com/v1/projects/test-project/locations/global/"
        "publishers/anthropic/models/my-tuned-model:rawPredict"
    )
    assert provider.wire_format == "anthropic-messages"
    assert provider.family == "anthropic"
    default = Vertex(PROJECT, token=fixed_token)
    assert default.chat_url("my-tuned-model").endswith(
        "/google/models/my-tuned-model:generateContent"
    )
    assert (default.wire_format, default.family) == ("gemini-generate", "gemini")


async def test_claude_keeps_cache_control_thinking_and_betas(
    upstream: ThreadedMockUpstream,
) -> None:
    """A caller's own Messages body reaches rawPredict without `model`, with Vertex's
    anthropic_version and the anthropic-beta header as `anthropic_beta`; cache_control,
    thinking and unknown fields are kept as sent."""
    upstream.reset()
    body = {
        "model": "caller-model",
        "max_tokens": 2048,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
            }
        ],
        "x_unknown": {"kept": True},
    }
    headers = (("anthropic-version", "2023-06-01"), ("anthropic-beta", "context-1m, fine-a"))
    source = RawBody("anthropic-messages", orjson.dumps(body), headers)
    request = ChatRequest([Message.user("hi")], model="claude-sonnet-4-5", source=source)
    provider = Vertex(PROJECT, token=fixed_token, base_url=upstream.url)
    try:
        response = await provider.complete(request)
        _ = [c async for c in provider.stream(request)]
    finally:
        await provider.aclose()
    assert response.raw is not None
    assert response.raw_format == "anthropic-messages"
    whole, streamed = upstream.requests()
    expected = {k: v for k, v in body.items() if k != "model"}
    expected |= {
        "anthropic_version": "vertex-2023-10-16",
        "anthropic_beta": ["context-1m", "fine-a"],
    }
    assert whole["body"] == expected
    assert streamed["body"] == {**expected, "stream": True}
    for entry in (whole, streamed):
        assert "anthropic-beta" not in entry["headers"]
        assert entry["model"] == "claude-sonnet-4-5"


async def test_a_forwarded_gemini_body_gets_roles(upstream: ThreadedMockUpstream) -> None:
    """Vertex requires a role on each content: a caller's entry without one is sent as user."""
    upstream.reset()
    body = {"contents": [{"parts": [{"text": "hi"}]}], "x_unknown": 1}
    source = RawBody("gemini-generate", orjson.dumps(body))
    provider = Vertex(PROJECT, token=fixed_token, base_url=upstream.url)
    try:
        await provider.complete(ChatRequest([], model="gemini-2.5-flash", source=source))
    finally:
        await provider.aclose()
    (entry,) = upstream.requests()
    assert entry["body"] == {
        "contents": [{"parts": [{"text": "hi"}], "role": "user"}],
        "x_unknown": 1,
    }


async def test_a_token_the_mock_never_issued_is_auth(upstream: ThreadedMockUpstream) -> None:
    """The mock refuses a bearer token it did not issue, and that reads as `auth`."""
    upstream.reset()
    provider = Vertex(
        PROJECT, token=lambda: ("ya29.forged", time.time() + 3600), base_url=upstream.url
    )
    try:
        with pytest.raises(AuthenticationFailed) as caught:
            await provider.complete(ask("gemini-2.5-flash"))
    finally:
        await provider.aclose()
    assert caught.value.error_class == "auth"
    assert "ya29.forged" not in str(caught.value)


async def test_an_unreachable_token_endpoint_is_provider_error() -> None:
    """No token to be had from a closed port: provider_error, so the route moves on."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    provider = Vertex(
        PROJECT,
        credentials_json=service_account_json(f"http://127.0.0.1:{port}/token"),
        base_url=f"http://127.0.0.1:{port}",
    )
    try:
        with pytest.raises(ProviderUnavailable) as caught:
            await provider.complete(ask("gemini-2.5-flash"))
    finally:
        await provider.aclose()
    assert caught.value.reason == "token endpoint"


def test_a_refused_refresh_is_auth() -> None:
    """google-auth's RefreshError (not retryable) is `auth`; a retryable one is provider_error."""
    exceptions: Any = importlib.import_module("google.auth.exceptions")
    RefreshError = exceptions.RefreshError  # noqa: N806

    refused = refresh_error(RefreshError("invalid_grant: account disabled"), provider="vx")
    assert refused.error_class == "auth"
    assert "invalid_grant" in str(refused)
    flaky = RefreshError("server said 503", retryable=True)
    assert refresh_error(flaky, provider="vx").error_class == "provider_error"


def test_the_token_endpoint_checks_the_grant(upstream: ThreadedMockUpstream) -> None:
    """The mock issues tokens only for a JWT-bearer grant with a well-formed assertion."""
    url = f"{upstream.url}/token"
    wrong = httpx.post(url, data={"grant_type": "password", "assertion": "a.b.c"})
    assert (wrong.status_code, wrong.json()["error"]) == (400, "unsupported_grant_type")
    grant = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    bad = httpx.post(url, data={"grant_type": grant, "assertion": "not-a-jwt"})
    assert (bad.status_code, bad.json()["error"]) == (400, "invalid_grant")


def test_without_the_extra_a_vertex_provider_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without google-auth, building a vertex provider fails naming `turnout[gcp]`."""
    monkeypatch.setitem(sys.modules, "google.auth", None)
    assert google_auth_installed() is False
    with pytest.raises(ConfigError, match=r"pip install 'turnout\[gcp\]'"):
        Vertex(PROJECT, credentials_json=service_account_json("http://127.0.0.1:9/token"))


async def test_application_default_credentials_are_used_without_a_file(
    upstream: ThreadedMockUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without credentials_file or credentials_json, google-auth's application-default
    lookup (here GOOGLE_APPLICATION_CREDENTIALS) supplies the account, on the first call."""
    path = tmp_path / "adc.json"
    path.write_text(service_account_json(f"{upstream.url}/token"))
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    issued = upstream.app.tokens.issued
    provider = Vertex(PROJECT, base_url=upstream.url)
    try:
        assert upstream.app.tokens.issued == issued  # nothing is looked up before a call
        response = await provider.complete(ask("gemini-2.5-flash"))
    finally:
        await provider.aclose()
    assert response.finish_reason == "stop"
    assert upstream.app.tokens.issued == issued + 1
