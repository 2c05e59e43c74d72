"""The command line: subcommands parse and call their library functions."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import yaml

from turnout.access.keys import KeyRing, hash_key
from turnout.cli import main
from turnout.schema import KeyConfig

if TYPE_CHECKING:
    import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "litellm"


def test_keys_create_prints_a_key_and_the_hash_that_finds_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`turnout keys create --json` prints a tk_ key whose hash is the printed hash."""
    assert main(["keys", "create", "--name", "ci", "--json"]) == 0
    record = orjson.loads(capsys.readouterr().out)
    assert record["key"].startswith("tk_")
    assert record["hash"] == hash_key(record["key"])
    assert record["name"] == "ci"


def test_a_created_key_hash_authenticates_the_key_in_a_config(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The config entry printed for humans carries a hash a KeyRing accepts for that key."""
    assert main(["keys", "create", "--name", "app"]) == 0
    out = capsys.readouterr().out
    key = out.split()[1]
    entry = yaml.safe_load(out.split("config entry:\n", 1)[1])["keys"][0]
    ring = KeyRing.from_config([KeyConfig(**entry)], "default")
    caller = ring.lookup(key)
    assert caller is not None
    assert caller.key == "app"


def test_import_litellm_writes_a_turnout_config(capsys: pytest.CaptureFixture[str]) -> None:
    """`turnout import litellm FILE` prints YAML with routes for the LiteLLM model groups."""
    assert main(["import", "litellm", str(FIXTURES / "openai_anthropic_failover.yaml")]) == 0
    document = yaml.safe_load(capsys.readouterr().out)
    assert document["routes"]
    assert {p["kind"] for p in document["providers"]} >= {"openai", "anthropic"}


def test_import_of_a_missing_file_fails_with_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    """An unreadable file is exit code 1 with the reason on standard error."""
    assert main(["import", "litellm", "/nonexistent/litellm.yaml"]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """Running turnout with no command shows usage and fails."""
    assert main([]) == 2
    assert "usage" in capsys.readouterr().err
