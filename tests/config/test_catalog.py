"""The model catalog: the shipped file, the shape a catalog file must have, how a model is
found by its other names, and how a catalog file and a provider's overrides sit over it."""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any

import pytest

from turnout.config.catalog import ModelCatalog, load_catalog, parse_catalog, shipped_catalog
from turnout.config.load import load_config
from turnout.errors import ConfigError
from turnout.schema import ProviderConfig

if TYPE_CHECKING:
    from pathlib import Path


def _catalog(models: dict[str, Any], updated: str = "2026-01-01") -> dict[str, Any]:
    return {"version": 1, "updated": updated, "currency": "USD", "models": models}


def _entry(window: int = 8192, **more: Any) -> dict[str, Any]:
    return {"prices": {"input": 1.0, "output": 2.0}, "context_window": window, **more}


def _provider(kind: str = "openai", **more: Any) -> ProviderConfig:
    return ProviderConfig.model_validate({"name": "p", "kind": kind, **more})


def test_the_shipped_catalog_is_dated_and_prices_every_provider_kind() -> None:
    """The shipped file parses, says its day, and has models of each vendor it covers."""
    shipped = shipped_catalog()
    assert shipped.updated >= dt.date(2025, 1, 1)
    catalog = ModelCatalog(shipped)
    for model in ("gpt-4o", "claude-sonnet-4-20250514", "gemini-2.5-pro", "deepseek-chat"):
        found = catalog.find(model)
        assert found is not None
        assert found[1].prices is not None
        assert found[1].context_window is not None


def test_a_wrong_price_is_refused_naming_its_field() -> None:
    """A price that is not a number is refused at `models.<name>.prices.input`."""
    data = _catalog({"gpt-4o": {"prices": {"input": "cheap", "output": 10}}})
    with pytest.raises(ConfigError) as refused:
        parse_catalog(data, source="new.json")
    assert refused.value.errors[0][0] == "models.gpt-4o.prices.input"
    assert "number" in refused.value.errors[0][1]
    assert "models.gpt-4o.prices.input" in str(refused.value)


def test_an_unknown_key_and_a_missing_day_are_refused_by_path() -> None:
    """Unknown keys and missing required fields each name their path."""
    data = {"models": {"gpt-4o": {"context_windw": 1}}}
    with pytest.raises(ConfigError) as refused:
        parse_catalog(data)
    paths = {path for path, _ in refused.value.errors}
    assert {"updated", "models.gpt-4o.context_windw"} <= paths


def test_a_name_claimed_by_two_models_is_refused() -> None:
    """An alias that is another model's name is refused at the alias's path."""
    data = _catalog({"a": _entry(), "b": _entry(aliases=["x", "A"])})
    with pytest.raises(ConfigError) as refused:
        parse_catalog(data)
    assert list(refused.value.errors) == [
        ("models.b.aliases[1]", "'A' already names the model 'a'")
    ]


@pytest.mark.parametrize(
    "name",
    [
        "claude-sonnet-4-20250514",
        "Claude-Sonnet-4-0",
        "anthropic.claude-sonnet-4-20250514-v1:0",
        "us.anthropic.claude-sonnet-4-20250514-v1:0",
        "global.anthropic.claude-sonnet-4-20250514-v1:0",
        (
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/"
            "eu.anthropic.claude-sonnet-4-20250514-v1:0"
        ),
        "claude-sonnet-4@20250514",
    ],
)
def test_bedrock_and_vertex_ids_find_the_same_entry(name: str) -> None:
    """Aliases, inference profiles, ARNs and Vertex ids all name one entry."""
    found = ModelCatalog(shipped_catalog()).find(name)
    assert found is not None
    assert found[0] == "claude-sonnet-4-20250514"


def test_a_catalog_file_replaces_entries_model_by_model(tmp_path: Path) -> None:
    """A file's entry replaces the shipped one of its name; other shipped entries stay."""
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(_catalog({"gpt-4o": _entry(4096), "house-model": _entry()})))
    catalog = load_catalog(path)
    gpt = catalog.find("gpt-4o")
    assert gpt is not None
    assert gpt[1].context_window == 4096
    assert catalog.find("gpt-4o-2024-08-06") is None  # the replaced entry's aliases went too
    assert catalog.find("house-model") is not None
    assert catalog.find("gpt-4o-mini") is not None
    assert catalog.updated == dt.date(2026, 1, 1)


def test_an_entry_for_some_vendors_is_not_for_others() -> None:
    """A Groq-only model is priced for a groq provider, not for an OpenAI one."""
    catalog = ModelCatalog(shipped_catalog())
    groq = catalog.for_provider(_provider("openai-compatible", preset="groq"))
    openai = catalog.for_provider(_provider("openai"))
    assert groq is not None
    assert openai is not None
    info = groq("llama-3.3-70b-versatile")
    assert info is not None
    assert info.price is not None
    assert info.price.source == "catalog"
    assert openai("llama-3.3-70b-versatile") is None


def test_a_provider_override_sets_the_window_over_the_catalog() -> None:
    """A provider's `catalog` entry changes the window, keeping the catalog's price."""
    catalog = ModelCatalog(shipped_catalog())
    view = catalog.for_provider(_provider(catalog={"gpt-4o": {"context_window": 32000}}))
    assert view is not None
    info = view("gpt-4o")
    assert info is not None
    assert info.context_window == 32000
    assert info.price is not None
    assert info.price.input == 2.5
    assert "tools" in info.capabilities


def test_a_mock_provider_is_never_priced_from_the_catalog() -> None:
    """The built-in scripted provider gets no catalog view."""
    assert ModelCatalog(shipped_catalog()).for_provider(_provider("mock")) is None


def test_a_relative_catalog_file_is_beside_the_config_file(tmp_path: Path) -> None:
    """`catalog_file: name.json` in a config file means the file beside it."""
    (tmp_path / "conf").mkdir()
    config = tmp_path / "conf" / "turnout.yaml"
    config.write_text("catalog_file: models.json\nproviders: [{name: m, kind: mock}]\n")
    loaded = load_config(config, env={})
    assert loaded.catalog_file == str(tmp_path / "conf" / "models.json")
