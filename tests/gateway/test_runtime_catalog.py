"""The model catalog in a built gateway runtime: a catalog file of the wrong shape refuses the
configuration, and each configured target gets its model's context window once, at build."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from turnout.config.load import parse_config
from turnout.errors import ConfigError
from turnout.gateway.resolution.lookups import build_runtime

if TYPE_CHECKING:
    from pathlib import Path

    from turnout.gateway.runtime.live import Runtime


def _runtime(*, catalog_file: str | None = None, **provider: Any) -> Runtime:
    config = {
        "catalog_file": catalog_file,
        "providers": [{"name": "oa", "kind": "openai", "api_key": "sk-test", **provider}],
        "routes": [
            {
                "name": "r",
                "models": ["r"],
                "targets": [
                    {"provider": "oa", "model": "gpt-4o", "name": "listed"},
                    {"provider": "oa", "model": "gpt-4o", "name": "own", "context_window": 999},
                    {"provider": "oa", "model": "house-model", "name": "unknown"},
                ],
            }
        ],
    }
    return build_runtime(parse_config(config, env={}))


def _windows(runtime: Runtime) -> dict[str, int | None]:
    return {t.name: t.context_window for t in runtime.routes["r"].route.targets}


def test_a_catalog_file_of_the_wrong_shape_refuses_the_configuration(tmp_path: Path) -> None:
    """The refusal is under `catalog_file` and names the wrong field inside the file."""
    path = tmp_path / "catalog.json"
    bad = {"updated": "2026-01-01", "models": {"gpt-4o": {"context_window": "big"}}}
    path.write_text(json.dumps(bad))
    with pytest.raises(ConfigError) as refused:
        _runtime(catalog_file=str(path))
    assert refused.value.errors[0][0] == "catalog_file"
    assert refused.value.errors[0][1].startswith("models.gpt-4o.context_window: ")


def test_a_missing_catalog_file_refuses_the_configuration(tmp_path: Path) -> None:
    """A catalog file that cannot be read is a configuration error, not a silent default."""
    with pytest.raises(ConfigError) as refused:
        _runtime(catalog_file=str(tmp_path / "absent.json"))
    assert "cannot be read" in refused.value.errors[0][1]


def test_targets_get_the_catalog_window_unless_they_set_their_own() -> None:
    """A known model gets the catalog's window; a target's own wins; unknown stays None."""
    assert _windows(_runtime()) == {"listed": 128000, "own": 999, "unknown": None}


def test_a_provider_override_sets_the_window_of_its_targets() -> None:
    """A provider's `catalog` gives a window to its model, also one the catalog lacks."""
    overrides = {"gpt-4o": {"context_window": 64000}, "house-model": {"context_window": 4096}}
    runtime = _runtime(catalog=overrides)
    assert _windows(runtime) == {"listed": 64000, "own": 999, "unknown": 4096}


def test_a_catalog_file_entry_replaces_the_shipped_window(tmp_path: Path) -> None:
    """The file's entry for gpt-4o replaces the shipped one for the built targets."""
    path = tmp_path / "catalog.json"
    path.write_text(
        json.dumps({"updated": "2026-01-01", "models": {"gpt-4o": {"context_window": 32000}}})
    )
    assert _windows(_runtime(catalog_file=str(path)))["listed"] == 32000


def test_an_alias_target_takes_the_window_of_its_own_wire_model() -> None:
    """A route alias that sends gpt-4.1 instead of gpt-4o checks gpt-4.1's window."""
    config = {
        "providers": [{"name": "oa", "kind": "openai", "api_key": "sk-test"}],
        "routes": [
            {
                "name": "r",
                "models": ["r"],
                "aliases": {"long": {"oa": "gpt-4.1"}},
                "targets": [{"provider": "oa", "model": "gpt-4o"}],
            }
        ],
    }
    runtime = build_runtime(parse_config(config, env={}))
    assert runtime.routes["r"].route.targets[0].context_window == 128000
    alias = runtime.routes["r"].aliases["long"].routes["chat"]
    assert alias.targets[0].context_window == 1047576
