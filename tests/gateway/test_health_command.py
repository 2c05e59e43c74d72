"""`turnout health`: the health report as a terminal table, and its exit status."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from turnout.gateway.commands.health import format_health, main_health

if TYPE_CHECKING:
    import pytest

REPORT = {
    "data": [
        {
            "project": "default",
            "keys": [
                {"key": "openai/gpt-4o", "state": "open", "failures": 3, "seconds_left": 41.26},
                {"key": "anthropic/claude", "state": "available", "failures": 0,
                 "seconds_left": None},
            ],
        }
    ]
}  # fmt: skip


def test_the_table_names_each_upstream_state_and_time_left() -> None:
    """One line per upstream, states in words, time left to a tenth of a second."""
    lines = format_health(REPORT).splitlines()
    assert lines[0].split() == ["PROJECT", "UPSTREAM", "STATE", "FAILURES", "TIME", "LEFT"]
    assert lines[1].split() == ["default", "openai/gpt-4o", "breaker", "open", "3", "41.3", "s"]
    assert lines[2].split() == ["default", "anthropic/claude", "healthy", "0"]


def test_an_empty_report_says_why_it_is_empty() -> None:
    """Before the first call there is no health key, and the command says so."""
    assert "No upstream has been called yet" in format_health({"data": [{"keys": []}]})


def test_without_an_admin_key_the_command_refuses(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --admin-key and no TURNOUT_ADMIN_KEY: exit 1 with the way to give one."""
    monkeypatch.delenv("TURNOUT_ADMIN_KEY", raising=False)
    args = argparse.Namespace(admin_key=None, url="http://127.0.0.1:9", json=False, timeout=1.0)
    assert main_health(args) == 1
    assert "TURNOUT_ADMIN_KEY" in capsys.readouterr().err


def test_an_unreachable_gateway_is_exit_1_without_the_key(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A gateway that does not answer is named; the admin key is never printed."""
    args = argparse.Namespace(
        admin_key="adm-secret-value", url="http://127.0.0.1:9", json=False, timeout=1.0
    )
    assert main_health(args) == 1
    err = capsys.readouterr().err
    assert "cannot reach http://127.0.0.1:9/admin/v1/health" in err
    assert "adm-secret-value" not in err
