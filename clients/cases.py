"""The cases, per client: the command that runs one case non-interactively and the check of
what the client printed. What happened on the wire is checked in `run.py`, the same for every
client.

Each client runs on the routes of the wire format it speaks, plus the mixed route (reached in
that same format, answered by the other vendor):

- Claude Code speaks Anthropic Messages only: anthropic and mixed routes.
- Codex and the Agents SDK speak the Responses API only: openai and mixed routes.
- pydantic-ai and LangChain have an OpenAI and an Anthropic model class: the openai route with
  the first, the anthropic route with the second, the mixed route with the OpenAI one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pydantic

KEY = "sk-turnout-client"  # the gateway runs with `auth: open`: any key is taken
PROMPT = "Say hello in one short sentence."
TOOL_PROMPT = "Read the file notes.txt and tell me what it says."
SCHEMA = {
    "type": "object",
    "properties": {"summary": {"type": "string"}, "celsius": {"type": "integer"}},
    "required": ["summary", "celsius"],
    "additionalProperties": False,
}
CASES = ("plain", "stream", "tool", "structured", "failover")


class Forecast(pydantic.BaseModel):
    """What a structured output must validate as (the SCHEMA)."""

    model_config = pydantic.ConfigDict(extra="forbid", strict=True)
    summary: str
    celsius: int


@dataclass(frozen=True)
class Call:
    """One client run: its command, environment additions and working directory."""

    command: list[str]
    env: dict[str, str]
    cwd: Path


Verdict = tuple[bool, str]


def _json_lines(out: str) -> list[dict[str, Any]]:
    """The JSON objects among the output's lines."""
    found = []
    for line in out.splitlines():
        if line.startswith("{"):
            try:
                found.append(json.loads(line))
            except ValueError:
                continue
    return found


def _forecast(text: Any) -> Verdict:
    """Whether `text` is JSON that validates as a Forecast."""
    try:
        value = Forecast.model_validate_json(text) if isinstance(text, str) else None
        value = value or Forecast.model_validate(text)
    except (pydantic.ValidationError, ValueError) as exc:
        return False, f"structured output does not validate: {str(exc)[:120]}"
    return True, f"validated {value!r}"


# -- Claude Code -----------------------------------------------------------------------------


def claude_env(gateway: str, home: Path) -> dict[str, str]:
    """Claude Code's settings: the gateway as its API, a key, no telemetry, no updates, and a
    home of its own (no user config)."""
    return {
        "ANTHROPIC_BASE_URL": gateway,
        "ANTHROPIC_API_KEY": KEY,
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "HOME": str(home),
    }


def claude_call(exe: Path, case: str, model: str | None, gateway: str, work: Path) -> Call:
    """`claude -p` for one case; `model` None: Claude Code's default model."""
    command = [str(exe), "-p", TOOL_PROMPT if case == "tool" else PROMPT]
    if case == "stream":
        command += ["--output-format", "stream-json", "--verbose", "--include-partial-messages"]
    else:
        command += ["--output-format", "json"]
    if case == "structured":
        command += ["--json-schema", json.dumps(SCHEMA)]
    command += ["--model", model] if model else []
    return Call(command, claude_env(gateway, work / "home"), work)


def claude_check(case: str, out: str) -> Verdict:
    """Claude Code's result event says success, with an answer (validated, when structured)."""
    events = _json_lines(out)
    results = [e for e in events if e.get("type") == "result"]
    if not results:
        return False, f"no result event in its output: {out[-200:]!r}"
    result = results[-1]
    if result.get("is_error") or result.get("subtype") != "success":
        return False, f"result {result.get('subtype')}: {str(result.get('result'))[:150]}"
    if case == "structured":
        return _forecast(result.get("structured_output"))
    if case == "stream":
        deltas = [e for e in events if e.get("type") == "stream_event"]
        if not deltas:
            return False, "no stream_event lines in stream-json output"
        return True, f"{len(deltas)} stream events; answer {str(result.get('result'))[:40]!r}"
    asked = ",".join(result.get("modelUsage") or {})  # the model names Claude Code sent
    return bool(result.get("result")), f"asked {asked}; answer {str(result.get('result'))[:40]!r}"


# -- Codex -----------------------------------------------------------------------------------

CODEX_CONFIG = """\
model_provider = "turnout"

[model_providers.turnout]
name = "turnout"
base_url = "{gateway}/v1"
env_key = "TURNOUT_API_KEY"
wire_api = "responses"
"""


def codex_call(exe: Path, case: str, model: str, gateway: str, work: Path) -> Call:
    """`codex exec` for one case, with a CODEX_HOME of its own naming the gateway."""
    home = work / "codex-home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(CODEX_CONFIG.format(gateway=gateway))
    command = [str(exe), "exec", "--skip-git-repo-check", "--ephemeral", "--json", "-m", model]
    if case == "structured":
        (work / "schema.json").write_text(json.dumps(SCHEMA))
        command += ["--output-schema", str(work / "schema.json")]
    command.append(TOOL_PROMPT if case == "tool" else PROMPT)
    env = {"CODEX_HOME": str(home), "TURNOUT_API_KEY": KEY, "HOME": str(work / "home")}
    return Call(command, env, work)


def codex_check(case: str, out: str) -> Verdict:
    """Codex's events end with a completed turn, after an agent message (validated, when
    structured)."""
    events = _json_lines(out)
    failed = [e for e in events if e.get("type") in ("turn.failed", "error")]
    if failed:
        return False, f"{json.dumps(failed[-1])[:200]}"
    messages = [
        e["item"].get("text", "")
        for e in events
        if e.get("type") == "item.completed" and e.get("item", {}).get("type") == "agent_message"
    ]
    if not any(e.get("type") == "turn.completed" for e in events) or not messages:
        return False, f"no completed turn with an agent message: {out[-200:]!r}"
    if case == "structured":
        return _forecast(messages[-1])
    return True, f"answer {messages[-1][:50]!r}"


# -- the Python libraries --------------------------------------------------------------------


def sdk_call(python: Path, library: str, api: str, *, case: str, model: str, base: str) -> Call:
    """One case of a Python library, run by `sdk_case.py` in that library's environment."""
    script = Path(__file__).with_name("sdk_case.py")
    command = [str(python), str(script), library, api, case, base, model]
    return Call(command, {"TURNOUT_CLIENT_KEY": KEY}, script.parent)


def sdk_check(case: str, out: str) -> Verdict:
    """The library's own verdict, the last JSON line `sdk_case.py` printed."""
    lines = _json_lines(out)
    if not lines:
        return False, f"no verdict: {out[-200:]!r}"
    return bool(lines[-1].get("ok")), str(lines[-1].get("detail"))
