"""The processes a conformance run talks to: `turnout mock-upstream` and `turnout serve` in front
of it, both on 127.0.0.1, with the routes the clients are pointed at, and what their logs say
about one case (the requests the mock vendor received, the gateway's access lines).

Routes (the model names a client sends pick them):

- openai: `gpt-4o-mini` on an OpenAI target; `gpt-failover` first tries an OpenAI target that
  answers 429, then another OpenAI target.
- anthropic: any `claude-*` name (Claude Code's default model too) on an Anthropic target;
  `failover-claude` first tries an Anthropic target that answers 429, then another.
- mixed: `mixed-gpt` first tries an OpenAI target that answers 503, then Claude;
  `mixed-claude` first tries a Claude target that answers 503, then an OpenAI model. An OpenAI
  client uses the first, an Anthropic client the second, so the answer always crosses vendors.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

START_LIMIT = 30.0  # seconds a process may take to serve

ANSWERING = {  # the model name the mock vendor sees from the target that answers, per model sent
    "gpt-4o-mini": "gpt-4o-mini",
    "claude": "claude-sonnet-4-5",
    "mixed-gpt": "claude-sonnet-4-5",
    "mixed-claude": "gpt-4o-mini",
}

CONFIG = """\
project: clients
server: {{auth: open}}
state: memory
defaults:
  # every failing target is tried on every request: the failover shows in each case
  circuit_breaker: {{enabled: false}}
providers:
  - {{name: openai, kind: openai, api_key: sk-mock-openai, base_url: '{mock}/v1'}}
  - {{name: anthropic, kind: anthropic, api_key: sk-ant-mock, base_url: '{mock}'}}
routes:
  - name: openai-route
    models: [gpt-4o-mini]
    targets: [{{provider: openai, model: gpt-4o-mini}}]
  - name: openai-failover
    models: [gpt-failover]
    targets:
      - {{provider: openai, model: 'gpt-4o-mini/fault:status=429', name: openai-429}}
      - {{provider: openai, model: gpt-4.1-mini, name: openai-backup}}
  - name: anthropic-route
    models: ['claude-*']
    targets: [{{provider: anthropic, model: claude-sonnet-4-5}}]
  - name: anthropic-failover
    models: [failover-claude]
    targets:
      - {{provider: anthropic, model: 'claude-sonnet-4-5/fault:status=429', name: claude-429}}
      - {{provider: anthropic, model: claude-haiku-4-5, name: claude-backup}}
  - name: mixed-gpt
    models: [mixed-gpt]
    allow_cross_provider: true
    targets:
      - {{provider: openai, model: 'gpt-4o-mini/fault:status=503', name: openai-503}}
      - {{provider: anthropic, model: claude-sonnet-4-5, name: claude-answers}}
  - name: mixed-claude
    models: [mixed-claude]
    allow_cross_provider: true
    targets:
      - {{provider: anthropic, model: 'claude-sonnet-4-5/fault:status=503', name: claude-503}}
      - {{provider: openai, model: gpt-4o-mini, name: openai-answers}}
"""


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _get(url: str, method: str = "GET", body: Any = None) -> Any:
    """The JSON answer of `url` (a control endpoint on 127.0.0.1)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("content-type", "application/json")
    with urllib.request.urlopen(request, timeout=10) as answer:
        raw = answer.read()
    return json.loads(raw) if raw else None


def _wait_serving(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    """Return once `url` answers; fail with the process's output if it exits or is too slow."""
    began = time.monotonic()
    while time.monotonic() - began < START_LIMIT and process.poll() is None:
        with contextlib.suppress(OSError):
            _get(url)
            return
        time.sleep(0.1)
    raise RuntimeError(f"{url} did not serve within {START_LIMIT:g} s:\n{log.read_text()}")


@dataclass
class Stack:
    """A mock vendor and a gateway in front of it, with their logs in `directory`."""

    directory: Path
    mock_port: int = 0
    gateway_port: int = 0

    def __post_init__(self) -> None:
        self.processes: list[subprocess.Popen[bytes]] = []

    @property
    def mock(self) -> str:
        return f"http://127.0.0.1:{self.mock_port}"

    @property
    def gateway(self) -> str:
        return f"http://127.0.0.1:{self.gateway_port}"

    @property
    def access_log(self) -> Path:
        return self.directory / "gateway.log"

    def start(self) -> None:
        """Start the mock vendor, write the gateway's config, start the gateway."""
        self.mock_port, self.gateway_port = free_port(), free_port()
        mock = [sys.executable, "-m", "turnout.mock_upstream", "--port", str(self.mock_port)]
        self._spawn(mock, self.directory / "mock.log", f"{self.mock}/_mock/health")
        config = self.directory / "turnout.yaml"
        config.write_text(CONFIG.format(mock=self.mock))
        serve = [sys.executable, "-m", "turnout.cli", "serve", "--config", str(config)]
        serve += ["--port", str(self.gateway_port), "--log-format", "json"]
        self._spawn(serve, self.access_log, f"{self.gateway}/readyz")

    def _spawn(self, command: list[str], log: Path, ready: str) -> None:
        with log.open("wb") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        self.processes.append(process)
        _wait_serving(process, ready, log)

    def stop(self) -> None:
        """Stop what `start` started."""
        for process in self.processes:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)

    # -- what one case did ---------------------------------------------------------------

    def mark(self) -> tuple[int, int]:
        """Where the logs stand now: the mock's last request seq, the gateway log's length."""
        requests = _get(f"{self.mock}/_mock/requests")
        return (requests[-1]["seq"] if requests else 0), self.access_log.stat().st_size

    def script(self, model: str, faults: list[str]) -> None:
        """Queue `faults` for the next requests the mock vendor receives for `model`."""
        _get(f"{self.mock}/_mock/scripts", "POST", {"model": model, "faults": faults})

    def clear_scripts(self) -> None:
        _get(f"{self.mock}/_mock/scripts", "DELETE")

    def since(self, mark: tuple[int, int]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The mock's requests and the gateway's access lines after `mark`."""
        time.sleep(0.3)  # an access line is written when the answer (or stream) has ended
        requests = [r for r in _get(f"{self.mock}/_mock/requests") if r["seq"] > mark[0]]
        with self.access_log.open("rb") as log:
            log.seek(mark[1])
            lines = [_json_line(line) for line in log.read().splitlines()]
        return requests, [line for line in lines if line.get("event") == "access"]


def _json_line(line: bytes) -> dict[str, Any]:
    """One JSON log line, or an empty dict for any other output."""
    with contextlib.suppress(ValueError):
        value = json.loads(line)
        if isinstance(value, dict):
            return value
    return {}
