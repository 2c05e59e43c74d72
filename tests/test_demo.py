"""`turnout demo` (the gateway demo and `--library`) and `turnout --version`: offline, quick,
deterministic, and showing the expected outcomes."""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING

import httpx
import pytest

from turnout import __version__
from turnout.cli import main
from turnout.demo import gateway as demo_gateway
from turnout.demo import run_demo
from turnout.demo.gateway import Row, format_rows, rows_from_body, rows_from_header
from turnout.demo.in_process import SCENARIOS

if TYPE_CHECKING:
    from pathlib import Path


def demo_output(*, library: bool = False, anthropic: bool = False) -> str:
    """Run a demo into a string."""
    out = io.StringIO()
    assert run_demo(out, library=library, anthropic=anthropic) == 0
    return out.getvalue()


@pytest.fixture(scope="module")
def gateway_text() -> str:
    """The gateway demo's output with the Anthropic scenario (one run for the module)."""
    return demo_output(anthropic=True)


def _scenario(text: str, number: int) -> str:
    """The output of scenario `number` of the gateway demo."""
    start = text.index(f"\n{number}. ")
    end = text.find(f"\n{number + 1}. ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _row(target: str, outcome: str, *rest: str) -> re.Pattern[str]:
    return re.compile(r"^\s+\d+\s+" + r"\s+".join(map(re.escape, (target, outcome, *rest))), re.M)


def test_the_gateway_demo_titles_every_scenario(gateway_text: str) -> None:
    """Each gateway scenario gets a numbered one-line title and an attempts table."""
    scenarios = [*demo_gateway.SCENARIOS, demo_gateway.ANTHROPIC_SCENARIO]
    for number, (title, _) in enumerate(scenarios, start=1):
        assert f"\n{number}. {title}\n" in gateway_text
        assert "#  target" in _scenario(gateway_text, number)


def test_a_429_fails_over_to_the_second_target(gateway_text: str) -> None:
    """Scenario 1: the first target failed with a 429, the second answered through the SDK."""
    text = _scenario(gateway_text, 1)
    assert _row("openai:gpt-4o-mini", "failed", "rate_limited", "429").search(text)
    assert _row("anthropic:claude-3-5-haiku-latest", "answered").search(text)
    assert "'mock answer from claude-3-5-haiku-latest'" in text


def test_repeated_503s_open_the_breaker_and_the_next_request_skips(gateway_text: str) -> None:
    """Scenario 2: two failed calls, then breaker_open (60 s left) without calling upstream."""
    text = _scenario(gateway_text, 2)
    assert len(_row("openai:gpt-4o", "failed", "provider_error", "503").findall(text)) == 2
    assert _row("openai:gpt-4o", "breaker_open", "breaker open, 60 s left").search(text)
    assert len(_row("local:llama-3.1-8b", "answered").findall(text)) == 3
    assert "saw 2 calls for gpt-4o" in text


def test_a_stream_fails_over_before_its_first_token(gateway_text: str) -> None:
    """Scenario 3: the stream's first target failed, the caller got only the second's text."""
    text = _scenario(gateway_text, 3)
    assert _row("openai:gpt-4.1-mini", "failed", "provider_error").search(text)
    assert _row("local:llama-3.1-8b", "answered").search(text)
    assert "answered: 'mock answer from llama-3.1-8b'" in text
    assert "every one from llama-3.1-8b" in text


def test_the_anthropic_sdk_fails_over_on_v1_messages(gateway_text: str) -> None:
    """Scenario 4: an overloaded (529) Claude model fails over to the next one."""
    text = _scenario(gateway_text, 4)
    assert _row("anthropic:claude-sonnet-4-5", "failed", "provider_error", "529").search(text)
    assert _row("anthropic:claude-3-5-haiku-latest", "answered").search(text)


def test_turnout_demo_anthropic_is_deterministic(
    gateway_text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`turnout demo --anthropic` exits 0 and prints exactly what an earlier run printed."""
    assert main(["demo", "--anthropic"]) == 0
    assert capsys.readouterr().out == gateway_text


def test_turnout_demo_leaves_the_anthropic_sdk_out_unless_asked(
    gateway_text: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Plain `turnout demo` runs the OpenAI SDK scenarios and says how to add the fourth; it
    keeps no store, so it leaves no file in the working directory."""
    monkeypatch.chdir(tmp_path)
    assert main(["demo"]) == 0
    assert list(tmp_path.iterdir()) == []
    text = capsys.readouterr().out
    assert text.startswith(gateway_text[: gateway_text.index("\n4. ")])
    assert "/v1/messages" not in text
    assert text.endswith(
        "(turnout demo --anthropic adds a call through the Anthropic SDK)\n"
        "(turnout demo --keep keeps the gateway up, with its dashboard at /ui)\n"
    )


def test_a_missing_sdk_is_named_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the openai SDK the gateway demo exits 1 and says how to install it."""
    monkeypatch.setattr(demo_gateway, "missing_requirements", lambda **_: ["openai"])
    assert main(["demo"]) == 1
    err = capsys.readouterr().err
    assert "the gateway demo needs openai (not installed)" in err
    assert "pip install 'turnout[demo]'" in err


def test_rows_read_the_attempts_header() -> None:
    """`x-turnout-attempts` items become rows; a percent-encoded target name is decoded."""
    header = "a%2Cb;outcome=failed;class=timeout;ms=12, local;outcome=answered;ms=3"
    assert rows_from_header(header) == [
        Row("a,b", "failed", "timeout"),
        Row("local", "answered"),
    ]


def test_rows_read_the_routing_object_and_drop_reasons_that_repeat_the_status() -> None:
    """A body's attempts become rows; a reason equal to the status is left blank."""
    routing = {
        "attempts": [
            {"target": "p", "outcome": "failed", "error_class": "rate_limited", "status": 429,
             "reason": "429"},
            {"target": "p", "outcome": "breaker_open", "status": None, "reason": "60 s"},
        ]
    }  # fmt: skip
    assert rows_from_body(routing) == [
        Row("p", "failed", "rate_limited", "429"),
        Row("p", "breaker_open", reason="60 s"),
    ]


def test_format_rows_aligns_columns_under_a_heading() -> None:
    """The table has a heading and one aligned line per row, without trailing spaces."""
    table = format_rows([Row("primary", "failed", "timeout"), Row("b", "answered")], indent="")
    assert table.splitlines() == [
        "#  target   outcome   class    status  reason",
        "1  primary  failed    timeout",
        "2  b        answered",
    ]


def test_the_library_demo_prints_a_title_and_a_table_per_scenario() -> None:
    """Every library scenario gets a numbered title and at least one routing table."""
    text = demo_output(library=True)
    for number, (title, _) in enumerate(SCENARIOS, start=1):
        assert f"{number}. {title}\n" in text
    assert text.count("route '") >= len(SCENARIOS)


def test_the_library_demo_shows_each_scenarios_outcomes() -> None:
    """Failover, a fatal 401, a breaker across routes, a hedge and a stream, as routed."""
    text = demo_output(library=True)
    assert "  terse     rejected     it gives no reason\n  local     answered" in text
    assert (
        "  primary   failed       401 key rejected\n  backup    not_tried\nError: 401 Unauthorized"
    ) in text
    assert text.count("breaker_open breaker open, 60 s left") == 2
    assert "Health: local=Available(0), northwind=HalfOpen(2)" in text
    assert "hedges 1\n  primary   lost_race\n  local     answered" in text
    assert "Streamed: Roll back deploy 412, because the error rate rose with it." in text


def test_turnout_demo_library_runs_from_the_command_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`turnout demo --library` exits 0 and prints the library demo."""
    assert main(["demo", "--library"]) == 0
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


def test_the_demo_kept_up_serves_its_failovers_on_the_dashboard() -> None:
    """With `keep`, the gateway stays up after the scenarios and `/ui` shows their failovers to
    the admin key the demo printed, and to no one else."""
    seen: dict[str, object] = {}

    def hold(url: str, admin_key: str) -> None:
        with httpx.Client(base_url=url) as client:
            seen["anonymous"] = client.get("/ui/part/requests").status_code
            page = client.get("/ui/data.json", headers={"authorization": f"Bearer {admin_key}"})
            seen["failovers"] = page.json()["failovers"]["series"]
            seen["key"] = admin_key

    out = io.StringIO()
    demo_gateway.run_gateway_demo(out, keep=True, hold=hold)
    text = out.getvalue()
    assert seen["anonymous"] == 401
    assert f"sign in with the admin key {seen['key']}" in text
    assert "/ui" in text
    failovers = seen["failovers"]
    assert isinstance(failovers, dict)
    assert sum(failovers["triage"]) >= 1
