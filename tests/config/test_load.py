"""Loading the configuration file: YAML, ${VAR}, every error with its path, suggestions."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from pydantic import ValidationError
from pydantic.alias_generators import to_camel

from turnout.config.load import format_path, load_config, parse_config
from turnout.config.reference import object_sections
from turnout.errors import ConfigError
from turnout.gateway.resolution.lookups import build_runtime
from turnout.routing.strategies import LeastBusy

if TYPE_CHECKING:
    from pathlib import Path

MINIMAL = """
providers:
  - {name: openai, kind: openai, api_key: "${OPENAI_KEY}"}
routes:
  - name: main
    targets:
      - {provider: openai, model: gpt-4o-mini, max_retries: 1}
"""


def errors_of(data: object, env: dict[str, str] | None = None) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as info:
        parse_config(data, env=env or {})
    return list(info.value.errors)


def test_minimal_file_loads_with_defaults_and_env(tmp_path: Path) -> None:
    """A small file loads; ${VAR} is read from the environment; defaults fill the rest."""
    path = tmp_path / "turnout.yaml"
    path.write_text(MINIMAL)
    config = load_config(path, env={"OPENAI_KEY": "sk-test"})
    assert config.providers[0].api_key == "sk-test"
    assert config.routes[0].targets[0].max_retries == 1
    assert config.routes[0].targets[0].timeout == 600
    assert config.defaults.circuit_breaker.failure_threshold == 3
    assert config.server.auth == "keys"


def test_one_target_over_the_attempt_budget_names_the_total(tmp_path: Path) -> None:
    """A file whose one target has max_retries 10 fails on the computed total, alone."""
    path = tmp_path / "turnout.yaml"
    path.write_text(MINIMAL.replace("max_retries: 1", "max_retries: 10"))
    with pytest.raises(ConfigError) as info:
        load_config(path, env={"OPENAI_KEY": "sk-test"})
    assert info.value.errors == (
        ("routes[0].targets", "total attempts 11 exceeds the maximum of 10"),
    )


def test_missing_environment_variable_is_named(tmp_path: Path) -> None:
    """A ${VAR} that is not set is a load error naming the variable and where it was used."""
    path = tmp_path / "turnout.yaml"
    path.write_text(MINIMAL)
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert info.value.errors == (
        ("providers[0].api_key", "environment variable OPENAI_KEY is not set"),
    )


def test_an_unset_variable_is_one_error_not_two() -> None:
    """A key from an unset ${VAR} is named as unset, not also as too short."""
    errors = errors_of(
        {
            "providers": [{"name": "p", "kind": "mock"}],
            "keys": [{"name": "app", "key": "${K}"}],
            "state": "${REDIS_URL}",
        }
    )
    assert errors == [
        ("keys[0].key", "environment variable K is not set"),
        ("state", "environment variable REDIS_URL is not set"),
    ]


def test_without_the_environment_variables_are_not_read_nor_errors() -> None:
    """read_env=False: no ${VAR} is read or refused, a value holding one is not checked, and
    every other rule still applies."""
    document = {
        "state": "${REDIS_URL}",
        "providers": [{"name": "p", "kind": "mock", "api_key": "${P_KEY}"}],
        "routes": [{"name": "a", "targets": [{"provider": "p"}]}],
        "keys": [{"name": "app", "key": "${K}"}],
    }
    config = parse_config(document, env={"P_KEY": "read"}, read_env=False)
    assert (config.state, config.providers[0].api_key) == ("${REDIS_URL}", "${P_KEY}")
    document["routes"] = [{"name": "a", "targets": [{"provider": "pp"}]}]
    with pytest.raises(ConfigError) as info:
        parse_config(document, env={}, read_env=False)
    assert info.value.errors == (
        (
            "routes[0].targets[0].provider",
            "no provider named 'pp' in the project; did you mean 'p'?",
        ),
    )


def test_every_error_is_reported_at_once_with_its_path() -> None:
    """All shape errors come back together, each with its full path."""
    errors = errors_of(
        {
            "routes": [
                {"name": "a", "targets": [{"provider": "p", "max_retries": -1}]},
                {"name": "b", "targets": []},
            ],
            "server": {"auth": "key"},
        }
    )
    paths = [p for p, _ in errors]
    assert "routes[0].targets[0].max_retries" in paths
    assert ("routes[1].targets", "must have at least 1 item") in errors
    assert ("server.auth", "must be one of 'keys' or 'open' (got 'key')") in errors


def test_unknown_key_suggests_the_nearest_valid_key() -> None:
    """An unknown key names itself and the closest valid key of the same object."""
    errors = errors_of(
        {
            "providers": [{"name": "p", "kind": "mock"}],
            "routes": [
                {"name": "a", "stratgy": {}, "targets": [{"provider": "p", "max_retrys": 1}]}
            ],
        }
    )
    assert ("routes[0].stratgy", "unknown key 'stratgy'; did you mean 'strategy'?") in errors
    assert (
        "routes[0].targets[0].max_retrys",
        "unknown key 'max_retrys'; did you mean 'max_retries'?",
    ) in errors


def test_camel_case_aliases_are_accepted() -> None:
    """AIControls' camelCase option names load like the snake_case ones."""
    config = parse_config(
        {
            "providers": [{"name": "p", "kind": "mock"}],
            "routes": [
                {
                    "name": "a",
                    "circuitBreaker": {"failureThreshold": 5, "cooldownSeconds": 30},
                    "targets": [{"provider": "p", "fallbackOnly": True, "maxRetries": 2}],
                }
            ],
        },
        env={},
    )
    route = config.routes[0]
    assert route.circuit_breaker is not None
    assert route.circuit_breaker.failure_threshold == 5
    assert route.targets[0].fallback_only is True
    assert route.targets[0].max_retries == 2


def test_every_key_of_every_object_accepts_its_camel_case_spelling() -> None:
    """No key is refused as unknown when written in camelCase (`sessionPinTtlSeconds` too)."""
    refused = []
    for section in object_sections():
        for name in section.model.model_fields:
            camel = to_camel(name)
            try:
                section.model.model_validate({camel: object()})
            except ValidationError as exc:
                if any(error["type"] == "extra_forbidden" for error in exc.errors()):
                    refused.append(f"{section.model.__name__}.{camel}")
    assert refused == []


def test_strategy_options_load_in_camel_case() -> None:
    """`windowMinutes`, `minRequests`, `explorationShare` load and reach the built route."""
    config = parse_config(
        {
            "providers": [{"name": "p", "kind": "mock"}],
            "routes": [
                {
                    "name": "a",
                    "strategy": {
                        "type": "least-busy",
                        "windowMinutes": 5,
                        "minRequests": 3,
                        "explorationShare": 0.1,
                    },
                    "targets": [{"provider": "p"}],
                }
            ],
        },
        env={},
    )
    strategy = build_runtime(config).routes["a"].route.strategy
    assert isinstance(strategy, LeastBusy)
    assert (strategy.window_minutes, strategy.min_requests, strategy.exploration_share) == (
        5,
        3,
        0.1,
    )


def test_target_must_name_a_provider_of_the_project() -> None:
    """A target whose provider does not exist is an error at its path."""
    errors = errors_of({"routes": [{"name": "a", "targets": [{"provider": "ghost"}]}]})
    assert errors == [("routes[0].targets[0].provider", "no provider named 'ghost' in the project")]


def test_routes_and_providers_share_one_name_space() -> None:
    """A route may not take a provider's name."""
    errors = errors_of(
        {
            "providers": [{"name": "x", "kind": "mock"}],
            "routes": [{"name": "x", "targets": [{"provider": "x"}]}],
        }
    )
    assert errors == [("routes[0].name", "name 'x' is already taken by providers[0]")]


def test_invalid_yaml_names_line_and_column(tmp_path: Path) -> None:
    """Broken YAML is reported with where it broke."""
    path = tmp_path / "bad.yaml"
    path.write_text("routes:\n  - name: [unclosed\n")
    with pytest.raises(ConfigError, match="invalid YAML at line"):
        load_config(path, env={})


def test_format_path_mixes_keys_and_indices() -> None:
    """Paths read like routes[2].targets[0].max_retries."""
    assert format_path(("routes", 2, "targets", 0, "max_retries")) == (
        "routes[2].targets[0].max_retries"
    )


# ---- messages in the file's words ------------------------------------------------------------

PYTHON_WORDS = ("tuple", "dict", "NoneType", "_type", "Input should", "instance of", "None")


def test_wrong_kinds_of_value_are_named_in_plain_words() -> None:
    """A wrong value says list, mapping, whole number, number, text or true/false."""
    errors = errors_of(
        {
            "providers": [{"name": "p", "kind": "mock", "headers": ["x"], "prices": "cheap"}],
            "routes": [
                {
                    "name": "a",
                    "enabled": "maybe",
                    "hedge_after": "soon",
                    "targets": [{"provider": "p", "max_retries": 1.5, "capabilities": "tools"}],
                },
                None,
            ],
            "server": {"host": 5, "port": "http"},
            "defaults": 5,
        }
    )
    assert errors == [
        ("server.host", "must be text (got a number)"),
        ("server.port", "must be a whole number (got 'http')"),
        ("defaults", "must be a mapping (got a number)"),
        ("providers[0].prices", "must be a mapping (got text)"),
        ("providers[0].headers", "must be a mapping (got a list)"),
        ("routes[0].targets[0].max_retries", "must be a whole number (got 1.5)"),
        ("routes[0].targets[0].capabilities", "must be a list (got text)"),
        ("routes[0].enabled", "must be true or false (got 'maybe')"),
        ("routes[0].hedge_after", "must be a number (got 'soon')"),
        ("routes[1]", "must be a mapping (got null)"),
    ]


def test_ranges_and_lengths_are_plain_and_never_repeat_text() -> None:
    """Bounds name the limit and the value; a key or api_key is never echoed (it is a secret)."""
    errors = errors_of(
        {
            "providers": [{"name": "p", "kind": "mock", "api_key": 12345678}],
            "routes": [{"name": "", "retryable_statuses": [700], "targets": [{"provider": "p"}]}],
            "keys": [{"name": "app", "key": ""}],
            "server": {"port": -1},
        }
    )
    assert errors == [
        ("server.port", "must be at least 0 (got -1)"),
        ("providers[0].api_key", "must be text (got a number)"),
        ("routes[0].name", "may not be empty"),
        ("routes[0].retryable_statuses[0]", "must be at most 599 (got 700)"),
        ("keys[0].key", "may not be empty"),
    ]


def test_a_value_that_fits_no_form_of_a_field_gets_one_message() -> None:
    """`strategy: 5` is one error naming both forms, at the field's own path."""
    errors = errors_of(
        {
            "providers": [{"name": "p", "kind": "mock"}],
            "routes": [{"name": "a", "strategy": 5, "targets": [{"provider": "p"}]}],
            "policies": [{"name": "x", "deny_when": {"provider": 5, "provder": "y"}}],
        }
    )
    assert errors == [
        ("routes[0].strategy", "must be a mapping or text (got a number)"),
        ("policies[0].deny_when.provider", "must be text or a list (got a number)"),
        (
            "policies[0].deny_when.provder",
            (
                "unknown key 'provder' (valid keys: provider, family, route, jurisdiction);"
                " did you mean 'provider'?"
            ),
        ),
    ]


def test_no_message_uses_a_programming_language_word() -> None:
    """Every shape error of a file full of wrong kinds reads without Python's type names."""
    wrong: dict[str, object] = {"x": None}
    errors = errors_of(
        {
            "project": ["x"],
            "state": 5,
            "server": wrong,
            "defaults": {"circuit_breaker": wrong, "health_key_by": None},
            "providers": [{"name": None, "kind": None, "prices": {"m": wrong}, "script": [5]}],
            "routes": [{"name": 5, "targets": None, "models": "x", "aliases": [1]}, "x"],
            "keys": [{"name": "k", "teams": 5, "agent_labels": "a=b", "require": 5}],
            "bindings": [{"name": "b", "subjects": {}, "grants": [5]}],
            "policies": [{"name": "p", "deny_when": None}],
        }
    )
    assert errors
    for path, message in errors:
        for word in PYTHON_WORDS:
            assert word not in message, (path, message)
        assert "[key]" not in path
        assert "constrained" not in path


# ---- files that cannot be read --------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "\n\n", "# nothing but a comment\n", "---\n"])
def test_an_empty_file_is_an_error(tmp_path: Path, text: str) -> None:
    """A file with no configuration in it is refused, not loaded as 0 providers and 0 routes."""
    path = tmp_path / "turnout.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert info.value.errors == (
        (str(path), "the file is empty: a configuration needs at least one provider or route"),
    )


def test_an_empty_document_is_an_error() -> None:
    """A document that is null is refused, as an empty file is."""
    assert errors_of(None) == [
        ("(root)", "is empty: a configuration needs at least one provider or route")
    ]


def test_a_document_that_is_not_a_mapping_says_what_it_is() -> None:
    """A list at the top of the file is named as a list."""
    assert errors_of(["a"]) == [("(root)", "must be a mapping of keys to values (got a list)")]


def test_a_missing_file_and_a_directory_say_so(tmp_path: Path) -> None:
    """No such file, and a directory given as the file, each get their own reason."""
    for path, why in [(tmp_path / "absent.yaml", "no such file"), (tmp_path, "directory")]:
        with pytest.raises(ConfigError) as info:
            load_config(path, env={})
        [(where, message)] = info.value.errors
        assert where == str(path)
        assert message.startswith("cannot read the configuration: ")
        assert why in message


def test_permission_denied_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file this user may not read says permission denied."""
    path = tmp_path / "turnout.yaml"
    path.write_text(MINIMAL)

    def refuse(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(type(path), "read_bytes", refuse)
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert info.value.errors == ((str(path), "cannot read the configuration: permission denied"),)


def test_a_file_that_is_not_utf8_names_the_byte_and_line(tmp_path: Path) -> None:
    """Latin-1 bytes are refused with the first bad byte and its line, not a traceback."""
    path = tmp_path / "turnout.yaml"
    path.write_bytes(b"providers: []\nproject: caf\xe9\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert info.value.errors == (
        (
            str(path),
            "cannot read the configuration: it is not UTF-8 text (byte 0xe9 on line 2)",
        ),
    )


def test_a_yaml_syntax_error_has_its_line_and_column(tmp_path: Path) -> None:
    """The path of a YAML error is where the file broke."""
    path = tmp_path / "turnout.yaml"
    path.write_text("providers:\n  - {name: p, kind: mock\nroutes: []\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    [(where, message)] = info.value.errors
    assert where == "line 3, column 7"
    assert message.startswith("invalid YAML: ")
