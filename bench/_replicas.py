"""Helpers the replica benchmarks share: starting `turnout serve` processes, a PostgreSQL
database of their own, and percentiles.

Rule 1: every process is started on 127.0.0.1 with `--port 0`; its URL is read from the banner.
Rule 2: whoever starts a process ends it (`stop`), also when the benchmark fails.
Rule 3: a fresh database is created for one run and dropped after it, with `FORCE`.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sqlalchemy import create_engine, make_url, text

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

# The command as the console script runs it (`turnout serve …`).
SERVE = "import sys\nfrom turnout.cli import main\nsys.exit(main(sys.argv[1:]))\n"

Replica = tuple[asyncio.subprocess.Process, str]


async def start_replica(config: Path) -> Replica:
    """One `turnout serve --config config --port 0`: the process and its base URL."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", SERVE, "serve", "--config", str(config), "--port", "0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdout is not None
    try:
        while True:
            line = (await asyncio.wait_for(process.stdout.readline(), 60)).decode()
            if line.startswith("turnout serving on "):
                return process, line.split()[3]
            assert line, "turnout serve ended before its banner"
    except BaseException:
        await stop([(process, "")])
        raise


async def stop(replicas: list[Replica]) -> None:
    """SIGTERM each process that still runs, then wait for all of them."""
    for process, _url in replicas:
        if process.returncode is None:
            process.terminate()
    for process, _url in replicas:
        await process.wait()


@contextmanager
def fresh_database(url: str, prefix: str) -> Iterator[str]:
    """A new database on the server of `url`, named `<prefix>_<ms>`: its URL, dropped after."""
    admin_url = make_url(url).set(drivername="postgresql+psycopg")
    admin = create_engine(
        admin_url.render_as_string(hide_password=False),
        isolation_level="AUTOCOMMIT",
        connect_args={"connect_timeout": 2},
    )
    name = f"{prefix}_{int(time.time() * 1000)}"
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
        try:
            yield make_url(url).set(database=name).render_as_string(hide_password=False)
        finally:
            with admin.connect() as connection:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile (`share` 0.99 for p99)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def ms(values: list[float]) -> str:
    """`p50 … ms   p99 … ms   (n=…)` for durations in seconds."""
    p50, p99 = statistics.median(values), percentile(values, 0.99)
    return f"p50 {p50 * 1000:7.2f} ms   p99 {p99 * 1000:7.2f} ms   (n={len(values)})"
