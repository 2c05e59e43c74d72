"""A provider's configuration -> its `HttpOptions` and its adapter."""

from __future__ import annotations

from typing import Any

import pytest

from turnout.config.load import parse_config
from turnout.gateway.runtime.build import build_http_options, build_provider, build_providers
from turnout.providers import HttpOptions, HttpTimeouts
from turnout.schema import ProviderConfig

HTTP_KINDS: dict[str, dict[str, Any]] = {
    "openai": {},
    "anthropic": {},
    "azure-openai": {"base_url": "https://r.openai.azure.com", "wire": "openai-chat"},
    "openai-compatible": {"preset": "groq"},
    "gemini": {},
}


def provider(kind: str, **fields: Any) -> ProviderConfig:
    """A valid configured provider of `kind`."""
    return ProviderConfig.model_validate({"name": "p", "kind": kind, **HTTP_KINDS[kind], **fields})


def test_http_options_come_from_headers_and_connect_timeout() -> None:
    """`headers` and `connect_timeout` (seconds) are taken; the read timeout (600 s) and the
    connection cap (100) keep their defaults."""
    options = build_http_options(provider("openai", headers={"X-Team": "a"}, connect_timeout=3))
    assert options == HttpOptions(headers={"X-Team": "a"}, timeouts=HttpTimeouts(connect=3.0))
    assert (options.timeouts.read, options.max_connections) == (600.0, 100)
    assert build_http_options(provider("openai")) == HttpOptions()


def test_max_response_bytes_reaches_the_client() -> None:
    """`max_response_bytes` reaches the options and the client; left out it is 32 MiB."""
    adapter: Any = build_provider(provider("openai", max_response_bytes=4096))
    assert adapter.options.max_response_bytes == 4096
    assert adapter._transport.max_response_bytes == 4096
    assert build_http_options(provider("openai")).max_response_bytes == 32 * 1024 * 1024


@pytest.mark.parametrize("kind", HTTP_KINDS)
def test_every_http_kind_gets_the_options(kind: str) -> None:
    """Each HTTP kind's adapter is built with the options of its configuration."""
    config = provider(kind, headers={"x-team": "a"}, connect_timeout=4)
    assert build_provider(config).options == build_http_options(config)


def test_kind_defaults_stand_when_the_configuration_leaves_them_out() -> None:
    """Without `base_url` or `api_version`, an adapter gets its kind's own defaults."""
    assert build_provider(provider("openai")).base_url == "https://api.openai.com/v1"
    assert build_provider(provider("anthropic")).base_url == "https://api.anthropic.com"
    azure: Any = build_provider(provider("azure-openai"))
    assert azure.api_version == "2024-10-21"
    assert (
        build_provider(provider("openai-compatible")).base_url == "https://api.groq.com/openai/v1"
    )
    gemini = build_provider(provider("gemini", api_key="g-key"))
    assert gemini.base_url == "https://generativelanguage.googleapis.com"
    assert (gemini.family, gemini.wire_format) == ("gemini", "gemini-generate")
    assert gemini.sent_headers()["x-goog-api-key"] == "g-key"


@pytest.mark.parametrize(
    ("kind", "fields", "variable"),
    [
        ("gemini", {}, "GEMINI_API_KEY"),
        ("openai-compatible", {"preset": "mistral"}, "MISTRAL_API_KEY"),
    ],
)
def test_a_configured_provider_never_reads_the_environment_for_its_key(
    kind: str, fields: dict[str, Any], variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file's provider without `api_key` has no key, whatever the process environment holds:
    only an explicit `${VAR}` reads a variable (it is passthrough by default)."""
    monkeypatch.setenv(variable, "from-the-environment")
    adapter = build_provider(provider(kind, credential_mode="org_key", **fields))
    assert "from-the-environment" not in adapter.sent_headers().values()
    assert "Bearer from-the-environment" not in adapter.sent_headers().values()


def test_every_provider_scrubs_every_configured_secret() -> None:
    """Each built provider scrubs every configured key and header value; repr hides them."""
    config = parse_config(
        {
            "providers": [
                {"name": "a", "kind": "openai", "api_key": "sk-a-0123456789"},
                {
                    "name": "b",
                    "kind": "anthropic",
                    "api_key": "ant-b-0123456789",
                    "headers": {"x-team": "t", "x-secret": "hdr-0123456789"},
                },
            ]
        },
        env={},
    )
    providers = build_providers(config)
    expected = ("sk-a-0123456789", "ant-b-0123456789", "hdr-0123456789")
    assert {name: p.options.secrets for name, p in providers.items()} == {
        "a": expected,
        "b": expected,
    }
    assert "0123456789" not in repr(providers["a"].options)


def test_max_connections_reaches_the_client() -> None:
    """`max_connections` caps the provider's connections at that number instead of 100."""
    adapter: Any = build_provider(provider("openai", max_connections=6000))
    assert adapter.options.max_connections == 6000
    assert adapter._transport._max_connections == 6000


def test_max_connections_below_one_is_refused_by_name() -> None:
    """A cap of 0 connections is a configuration error that names the field."""
    with pytest.raises(ValueError, match="max_connections"):
        provider("openai", max_connections=0)
