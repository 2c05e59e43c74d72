"""A `vertex` provider in a configuration: its fields, its family and wire format by publisher,
and the error naming the `gcp` extra when google-auth is missing."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from turnout.access.policies import provider_family
from turnout.access.served_routes import credential_mode, provider_wire
from turnout.config.load import parse_config
from turnout.errors import ConfigError
from turnout.gateway.runtime.build import build_provider
from turnout.schema import ProviderConfig


def errors_of(*providers: dict[str, Any]) -> list[tuple[str, str]]:
    """Every error the loader reports for these providers."""
    with pytest.raises(ConfigError) as info:
        parse_config({"providers": list(providers)}, env={})
    return list(info.value.errors)


def vertex(**fields: Any) -> ProviderConfig:
    return ProviderConfig.model_validate({"name": "vx", "kind": "vertex", **fields})


def test_a_vertex_provider_needs_a_project_and_one_credentials_source() -> None:
    """No project, two credentials sources or an api_key are each refused by field."""
    errors = errors_of(
        {
            "name": "vx",
            "kind": "vertex",
            "credentials_file": "/sa.json",
            "credentials_json": "{}",
            "api_key": "k",
        }
    )
    assert errors == [
        ("providers[0].project", "a vertex provider needs project (a Google Cloud id)"),
        ("providers[0].credentials_json", "give credentials_file or credentials_json, not both"),
        (
            "providers[0].api_key",
            "a vertex provider authenticates with Google Cloud credentials, not api_key",
        ),
    ]


def test_vertex_fields_belong_to_vertex_only() -> None:
    """`project`, `location`, `credentials_*` and `publisher` are refused on other kinds."""
    errors = errors_of(
        {"name": "o", "kind": "openai", "project": "p", "location": "l", "publisher": "google"}
    )
    assert errors == [
        ("providers[0].project", "is only for vertex providers"),
        ("providers[0].location", "is only for vertex providers"),
        ("providers[0].publisher", "is only for vertex providers"),
    ]


def test_family_and_wire_follow_the_publisher() -> None:
    """A Claude publisher (or only Claude patterns) is anthropic on Messages; else gemini."""
    claude = vertex(project="p", publisher="anthropic")
    assert (provider_family(claude), provider_wire(claude)) == ("anthropic", "anthropic-messages")
    patterned = vertex(project="p", model_patterns=["claude-sonnet-*", "claude-opus-*"])
    assert provider_family(patterned) == "anthropic"
    mixed = vertex(project="p", model_patterns=["claude-*", "gemini-*"])
    assert (provider_family(mixed), provider_wire(mixed)) == ("gemini", "gemini-generate")
    assert credential_mode(mixed) == "org_key"


def test_build_makes_the_adapter_with_the_regional_endpoint() -> None:
    """The built adapter calls the location's endpoint with the configured publisher."""
    adapter = build_provider(
        vertex(project="p", location="global", publisher="anthropic", credentials_json=_json())
    )
    assert adapter.base_url == "https://aiplatform.googleapis.com"
    assert (adapter.family, adapter.wire_format) == ("anthropic", "anthropic-messages")
    assert adapter.chat_url("claude-x").endswith(
        "/v1/projects/p/locations/global/publishers/anthropic/models/claude-x:rawPredict"
    )
    patterned = build_provider(
        vertex(project="p", model_patterns=["claude-*"], credentials_json=_json())
    )
    assert patterned.chat_url("tuned").endswith("/publishers/anthropic/models/tuned:rawPredict")


def test_without_the_extra_the_config_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A vertex provider without google-auth installed fails at load naming `turnout[gcp]`."""
    monkeypatch.setitem(sys.modules, "google.auth", None)
    errors = errors_of({"name": "vx", "kind": "vertex", "project": "p"})
    assert errors == [
        (
            "providers[0].kind",
            "a vertex provider needs the google-auth library: pip install 'turnout[gcp]'",
        )
    ]


def _json() -> str:
    from tests.providers._service_account import service_account_json

    return service_account_json("http://127.0.0.1:9/token")
