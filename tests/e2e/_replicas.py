"""Real `turnout serve` replicas for end-to-end tests: started side by side on free ports,
ended by SIGTERM (or killed with SIGKILL by a test), each one's warnings and errors kept in a
log file of its own so that a failing test can show them; and bounded polling."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence
    from pathlib import Path

__all__ = ["Replica", "until"]

# The command as the console script runs it (`turnout serve …`).
_SERVE = "import sys\nfrom turnout.cli import main\nsys.exit(main(sys.argv[1:]))\n"
# How long a replica may take to print its banner (a loaded machine starts slowly).
_START_LIMIT = 60.0


class Replica:
    """One `turnout serve --config config --port 0 *options` process named `name`: its base
    `url` once `start()` returned; what it logs (warnings and up) goes to `log`."""

    def __init__(self, name: str, config: Path, log: Path, options: Sequence[str] = ()) -> None:
        self.name = name
        self.config = config
        self.log = log
        self.options = tuple(options)
        self.url = ""
        self.process: asyncio.subprocess.Process | None = None
        self._drain: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"Replica({self.name!r}, {self.url!r})"

    @property
    def running(self) -> bool:
        """Started and not ended."""
        return self.process is not None and self.process.returncode is None

    async def start(self) -> None:
        """Start the process and wait for its banner (its URL)."""
        with self.log.open("ab") as log:  # the child keeps a descriptor of its own
            self.process = await asyncio.create_subprocess_exec(
                sys.executable, "-c", _SERVE, "serve", "--config", str(self.config),
                "--port", "0", "--log-level", "warning", *self.options,
                stdout=asyncio.subprocess.PIPE, stderr=log,
            )  # fmt: skip
        out = self.process.stdout
        assert out is not None
        while True:
            line = (await asyncio.wait_for(out.readline(), _START_LIMIT)).decode()
            if line.startswith("turnout serving on "):
                break
            assert line, f"replica {self.name} ended before its banner: {self.tail()}"
        self.url = line.split()[3]
        self._drain = asyncio.get_running_loop().create_task(_drain(out))

    def kill(self) -> None:
        """SIGKILL: the process ends at once, with no chance to clean up."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)

    async def stop(self) -> None:
        """SIGTERM, then wait for the end (SIGKILL if it takes longer than 30 s)."""
        process = self.process
        if process is None:
            return
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), 30)
            except TimeoutError:
                process.send_signal(signal.SIGKILL)
                await process.wait()
        await process.wait()
        if self._drain is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._drain

    def tail(self, lines: int = 20) -> str:
        """The last lines of the replica's log (for a failing assertion's message)."""
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


async def _drain(stream: asyncio.StreamReader) -> None:
    """Read what the process prints after its banner, so that a full pipe never blocks it."""
    while await stream.read(65536):
        pass


async def until(
    condition: Callable[[], Awaitable[bool]], limit: float, what: str, every: float = 0.02
) -> float:
    """Ask `condition` every `every` seconds until it holds: the seconds it took. Fails,
    naming `what`, after `limit` seconds (a bound for a broken feature, not a timing target)."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    while not await condition():
        if loop.time() - start > limit:
            raise AssertionError(f"{what}: not within {limit:g} s")
        await asyncio.sleep(every)
    return loop.time() - start
