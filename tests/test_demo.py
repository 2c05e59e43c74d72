"""`turnout demo` and `turnout --version`: offline, instant, and showing the expected outcomes."""

from __future__ import annotations

import io

import pytest

from turnout import __version__
from turnout.cli import main
from turnout.demo import SCENARIOS, run_demo


def demo_output() -> str:
    """Run the demo into a string."""
    out = io.StringIO()
    run_demo(out)
    return out.getvalue()


def test_the_demo_prints_a_title_and_a_table_per_scenario() -> None:
    """Every scenario gets a numbered title and at least one routing table."""
    text = demo_output()
    for number, (title, _) in enumerate(SCENARIOS, start=1):
        assert f"{number}. {title}\n" in text
    assert text.count("route '") >= len(SCENARIOS)


def test_the_demo_shows_each_scenarios_outcomes() -> None:
    """Failover, a fatal 401, a breaker across routes, a hedge and a stream, as routed."""
    text = demo_output()
    assert "  terse     rejected     it gives no reason\n  local     answered" in text
    assert "  primary   failed       401\n  backup    not_tried\nError: 401 Unauthorized" in text
    assert text.count("breaker_open 60 s") == 2
    assert "Health: local=Available(0), northwind=HalfOpen(2)" in text
    assert "hedges 1\n  primary   lost_race\n  local     answered" in text
    assert "Streamed: Roll back deploy 412, because the error rate rose with it." in text


def test_turnout_demo_runs_from_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    """`turnout demo` exits 0 and prints the demo."""
    assert main(["demo"]) == 0
    assert "1. Triage" in capsys.readouterr().out


def test_turnout_version_prints_the_version(capsys: pytest.CaptureFixture[str]) -> None:
    """`turnout --version` prints the package version."""
    with pytest.raises(SystemExit) as caught:
        main(["--version"])
    assert caught.value.code == 0
    assert capsys.readouterr().out.strip() == f"turnout {__version__}"


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """`turnout` alone prints usage to stderr and exits 2."""
    assert main([]) == 2
    assert "usage: turnout" in capsys.readouterr().err
