"""Metrics shared by worker processes: the directory they write to.

The Prometheus client picks how it stores values when it is first imported, so the directory
must be in the environment before that: `turnout serve --workers N` calls `prepare_workers`
before anything imports the client, and every forked worker then writes its values there.
"""

from __future__ import annotations

import os
import tempfile
from typing import Final

__all__ = ["MULTIPROC_ENV", "prepare_workers"]

MULTIPROC_ENV: Final = "PROMETHEUS_MULTIPROC_DIR"
"""The environment variable naming the directory the workers' metrics are shared through."""


def prepare_workers() -> str:
    """Before starting worker processes: the directory their metrics are shared through
    (`PROMETHEUS_MULTIPROC_DIR`, a new temporary one when unset)."""
    directory = os.environ.get(MULTIPROC_ENV)
    if not directory:
        directory = tempfile.mkdtemp(prefix="turnout-metrics-")
        os.environ[MULTIPROC_ENV] = directory
    return directory
