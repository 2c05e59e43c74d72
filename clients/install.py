"""The clients under test, at pinned versions, installed into a cache directory of their own
(never into turnout's environment): the two command-line clients with npm, each Python library
into its own virtual environment. A re-run reuses an install whose pins have not changed.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

INSTALL_LIMIT = 400.0  # seconds one install may take

NPM = {
    "claude-code": ("@anthropic-ai/claude-code@2.1.332", "claude"),
    "codex": ("@openai/codex@0.171.0", "codex"),
}
VENVS = {
    "agents": ["openai-agents==0.24.0"],
    "pydantic-ai": ["pydantic-ai-slim[openai,anthropic]==2.68.0"],
    "langchain": ["langchain-openai==1.8.1", "langchain-anthropic==1.7.10"],
}


def _installed(place: Path, pins: str) -> bool:
    """Whether `place` holds an install of exactly `pins`."""
    stamp = place / ".pins"
    return stamp.exists() and stamp.read_text() == pins


def _run(command: list[str], log: Path) -> str | None:
    """Run an install command; None when it worked, else the last lines of its output."""
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        with log.open("wb") as out:
            done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=INSTALL_LIMIT, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return f"timed out after {INSTALL_LIMIT:g} s"
    if done.returncode == 0:
        return None
    return " | ".join(log.read_text(errors="replace").strip().splitlines()[-3:])


def install_npm(cache: Path, client: str) -> tuple[Path | None, str]:
    """Install one command-line client; its executable, or None and why not."""
    package, binary = NPM[client]
    place = cache / client
    executable = place / "node_modules" / ".bin" / binary
    if not _installed(place, package):
        if shutil.which("npm") is None:
            return None, f"{package} needs npm, which is not installed"
        place.mkdir(parents=True, exist_ok=True)
        command = ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(place), package]
        if (why := _run(command, place / "install.log")) is not None:
            return None, f"npm install {package} failed: {why}"
        (place / ".pins").write_text(package)
    return executable, package


def install_venv(cache: Path, library: str) -> tuple[Path | None, str]:
    """Install one Python library into its own virtual environment; its Python, or None and
    why not."""
    pins = VENVS[library]
    place = cache / library
    python = place / "bin" / "python"
    if not _installed(place, " ".join(pins)):
        log = place.with_suffix(".log")
        if (why := _run([sys.executable, "-m", "venv", "--clear", str(place)], log)) is None:
            why = _run([str(python), "-m", "pip", "install", "--quiet", *pins], log)
        if why is not None:
            return None, f"pip install {' '.join(pins)} failed: {why}"
        (place / ".pins").write_text(" ".join(pins))
    return python, " ".join(pins)
