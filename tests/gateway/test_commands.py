"""`turnout check FILE` and `turnout routes [--config FILE] [--model M] [--json]`."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

import pytest

from turnout.gateway.commands.inspect import (
    add_check_parser,
    add_routes_parser,
    main_check,
    main_routes,
)

if TYPE_CHECKING:
    from pathlib import Path

SAMPLE = """
providers:
  - {name: openai, kind: openai, api_key: "${OPENAI_KEY}"}
  - {name: anthropic, kind: anthropic, api_key: sk-ant}
  - {name: local, kind: openai-compatible, preset: ollama, model_patterns: ["llama*"]}
routes:
  - name: primary-with-fallback
    models: ["gpt-4o-mini"]
    aliases: {fast: {openai: gpt-4o-mini, anthropic: claude-3-5-haiku-latest}}
    targets:
      - {provider: openai, model: gpt-4o-mini, timeout: 30, max_retries: 1}
      - {provider: anthropic, model: claude-3-5-haiku-latest}
    fallbacks: {context: [long-context]}
  - name: long-context
    targets: [{provider: anthropic, model: claude-sonnet-4-5}]
keys: [{name: app, key: app-key-123, routes: [long-context]}]
"""

BROKEN = """
providers:
  - {name: az, kind: azure-openai}
routes:
  - name: a
    strategy: {type: fastest}
    targets: [{provider: ghost}]
"""


def run(argv: list[str]) -> int:
    """Parse `argv` as the lead's cli will, and run the command."""
    parser = argparse.ArgumentParser(prog="turnout")
    commands = parser.add_subparsers(dest="command")
    add_check_parser(commands)
    add_routes_parser(commands)
    args = parser.parse_args(argv)
    return main_check(args) if args.command == "check" else main_routes(args)


@pytest.fixture
def sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A full sample configuration on disk, its ${OPENAI_KEY} set."""
    monkeypatch.setenv("OPENAI_KEY", "sk-test")
    path = tmp_path / "turnout.yaml"
    path.write_text(SAMPLE)
    return str(path)


def test_check_accepts_a_valid_file_and_prints_its_warnings(
    sample: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 0, every warning, one line explaining `allow_cross_provider` when a warning
    suggests it, then a one-line summary."""
    assert run(["check", sample]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        (
            'warning: routes[0].targets[0]: target "openai:gpt-4o-mini" of route'
            ' "primary-with-fallback" does not serve /v1/messages: it does not speak Anthropic'
            " Messages and the route does not set allow_cross_provider"
        ),
        (
            "note: allow_cross_provider: true lets a route serve a client from targets of"
            " another provider family (each with its own key and a model mapping); a request"
            " keeps to one family and crosses only when that family has no target left that"
            " can serve it"
        ),
        "ok: 3 providers, 2 routes",
    ]


def test_check_accepts_a_family_of_eleven_providers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Eleven OpenAI providers imply an `openai-family` route over eleven targets: accepted
    without an error or a warning about its attempts."""
    lines = [f"  - {{name: oai-{i}, kind: openai, api_key: k}}" for i in range(11)]
    path = tmp_path / "many.yaml"
    path.write_text("providers:\n" + "\n".join(lines) + "\n")
    assert run(["check", str(path)]) == 0
    assert capsys.readouterr().out.splitlines() == ["ok: 11 providers, 0 routes"]


def test_check_prints_every_error_with_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 1 and one `path: message` line per error, then the count."""
    path = tmp_path / "broken.yaml"
    path.write_text(BROKEN)
    assert run(["check", str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(": ", 1)[0] for line in lines[:-1]] == [
        "providers[0].wire",
        "providers[0].base_url",
        "routes[0].targets[0].provider",
        "routes[0].strategy.type",
    ]
    assert lines[-1] == f"{path}: 4 errors"


def test_check_names_a_missing_environment_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ${VAR} that is not set is an error naming it."""
    monkeypatch.delenv("OPENAI_KEY", raising=False)
    path = tmp_path / "turnout.yaml"
    path.write_text(SAMPLE)
    assert run(["check", str(path)]) == 1
    assert "providers[0].api_key: environment variable OPENAI_KEY is not set" in (
        capsys.readouterr().out
    )


def test_check_no_env_validates_without_the_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--no-env: an unset ${VAR} is no error, and the output says variables were not read."""
    monkeypatch.delenv("OPENAI_KEY", raising=False)
    path = tmp_path / "turnout.yaml"
    path.write_text(SAMPLE.replace("sk-ant", '"${ANTHROPIC_KEY}"') + 'state: "${REDIS_URL}"\n')
    assert run(["check", "--no-env", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "note: environment variables were not read (--no-env): each ${VAR} stands for a value"
        " that was not checked"
    )
    assert lines[1].startswith('warning: routes[0].targets[0]: target "openai:gpt-4o-mini"')
    assert lines[-1] == "ok: 3 providers, 2 routes"


def test_check_no_env_still_reports_every_other_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--no-env relaxes only the variables: the broken file keeps its four errors."""
    path = tmp_path / "broken.yaml"
    path.write_text(BROKEN.replace("- name: a\n", '- name: "${ROUTE}"\n'))
    assert run(["check", "--no-env", str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("note: environment variables were not read")
    assert lines[-1] == f"{path}: 4 errors"


def test_check_help_documents_no_env(capsys: pytest.CaptureFixture[str]) -> None:
    """`turnout check --help` says what --no-env does."""
    with pytest.raises(SystemExit):
        run(["check", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--no-env read no environment variable: each ${VAR} is left as it is" in help_text


def test_check_refuses_an_empty_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An empty file is exit 1 with the reason, not `ok: 0 providers, 0 routes`."""
    path = tmp_path / "turnout.yaml"
    path.write_text("")
    assert run(["check", str(path)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{path}: the file is empty: a configuration needs at least one provider or route",
        f"{path}: 1 error",
    ]


def test_routes_prints_a_table_of_every_served_route(
    sample: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """One row per route: name, kind, strategy, what it serves, its fallback routes by kind,
    targets in try order."""
    assert run(["routes", "--config", sample]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "ROUTE",
        "KIND",
        "STRATEGY",
        "SERVES",
        "FALLBACKS",
        "TARGETS",
        "(TRY",
        "ORDER)",
    ]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert list(rows) == [
        "primary-with-fallback",
        "long-context",
        "local",
        "anthropic-family",
        "openai-family",
    ]
    assert rows["primary-with-fallback"].split() == [
        "primary-with-fallback",
        "configured",
        "failover",
        "gpt-4o-mini;",
        "aliases:",
        "fast",
        "context:",
        "long-context",
        "1.",
        "openai:gpt-4o-mini",
        "2.",
        "anthropic:claude-3-5-haiku-latest",
    ]
    assert rows["long-context"].split()[:5] == ["long-context", "configured", "failover", "-", "-"]
    assert rows["local"].split()[:5] == ["local", "implicit", "failover", "llama*", "-"]


def test_routes_shows_fallback_routes_of_every_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A route's general, context and content fallbacks each appear under their kind."""
    path = tmp_path / "turnout.yaml"
    path.write_text(
        """
providers: [{name: m, kind: mock}]
routes:
  - name: a
    targets: [{provider: m, model: x}]
    fallbacks: {general: [b, c], context: [c]}
  - name: d
    targets: [{provider: m, model: w}]
    fallbacks: {content: [b]}
  - {name: b, targets: [{provider: m, model: y}]}
  - {name: c, targets: [{provider: m, model: z}]}
"""
    )
    assert run(["routes", "--config", str(path)]) == 0
    rows = capsys.readouterr().out.splitlines()[1:]
    assert "  general: b, c; context: c  1. m:x" in rows[0]
    assert "  content: b  " in rows[1]


def test_routes_model_shows_where_it_goes(sample: str, capsys: pytest.CaptureFixture[str]) -> None:
    """--model prints the route, how it matched and the target order with wire models."""
    assert run(["routes", "--config", sample, "--model", "fast"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        'model "fast" goes to route "primary-with-fallback" (configured)',
        "matched by: alias",
        "strategy: failover",
        "try order:",
        "  1. openai:gpt-4o-mini",
        "  2. anthropic:claude-3-5-haiku-latest",
        "fallback routes: context: long-context",
    ]


def test_routes_model_with_no_route_prints_no_route(
    sample: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unserved model prints the NO_ROUTE message and exits 1."""
    assert run(["routes", "--config", sample, "--model", "mistral-large"]) == 1
    assert capsys.readouterr().out.startswith(
        '503 NO_ROUTE: no route serves model "mistral-large": the closest route is'
    )


def test_routes_key_applies_the_keys_ceilings(
    sample: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--key (a key name) limits the answer to the key's routes."""
    assert run(["routes", "--config", sample, "--model", "fast", "--key", "app"]) == 1
    assert capsys.readouterr().out.startswith("400 MODEL_DENIED:")
    assert run(["routes", "--config", sample, "--model", "", "--key", "app-key-123"]) == 0
    assert 'goes to route "long-context"' in capsys.readouterr().out


def test_routes_json_is_for_scripts(sample: str, capsys: pytest.CaptureFixture[str]) -> None:
    """--json prints the routes, or the resolution, as JSON."""
    assert run(["routes", "--config", sample, "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    first = listing["routes"][0]
    assert (first["name"], first["kind"], first["aliases"]) == (
        "primary-with-fallback",
        "configured",
        ["fast"],
    )
    assert [t["provider"] for t in first["targets"]] == ["openai", "anthropic"]
    assert first["fallbacks"] == {"general": [], "context": ["long-context"], "content": []}
    assert run(["routes", "--config", sample, "--model", "llama3", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert (found["route"], found["matched_by"], found["pattern"]) == (
        "local",
        "implicit",
        "llama*",
    )
    assert found["targets"][0]["model"] == "llama3"
    assert run(["routes", "--config", sample, "--model", "zzz", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["code"] == "NO_ROUTE"


def test_routes_without_config_shows_the_embedded_defaults(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --config and no vendor keys: the mock provider serves every model."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert run(["routes", "--model", "anything", "--endpoint", "messages"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:2] == [
        'model "anything" goes to route "mock" (implicit)',
        "matched by: implicit (model pattern *)",
    ]
