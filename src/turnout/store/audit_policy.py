"""How the audit is written: one frozen value shared by the writer (`AuditWriter`), the pipe to
the audit process (`AuditPipe`) and that process's own writer, which gets it in its first
frame."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Final

__all__ = ["DEFAULT_POLICY", "PIPE_LIMIT", "AuditPolicy"]

PIPE_LIMIT: Final = 16 * 1024 * 1024
"""Bytes waiting in the pipe to the audit process past which frames wait in the serving
process."""


@dataclass(frozen=True, slots=True)
class AuditPolicy:
    """The audit writer's bounds and pace; times in seconds.

    The writer's: `retention_days` (30): how long audit rows are kept. `batch_size` (500):
    requests per transaction (the audit process holds about two batches' requests at once: at
    2,000 a batch it grew 17 MiB more under load, for no fewer instructions per request).
    `flush_seconds` (1.0): the longest a queued request waits.
    `max_queue` (10,000): audit rows held at most (the pipe also keeps at most this many
    requests for a child that may die). `cleanup_seconds` (3,600): how often retention runs.

    The pipe's: `send_seconds` (0.05): the longest a request waits before it is sent to the
    audit process. `frame_size` (1,000): requests per frame at most. `close_seconds` (30): how
    long closing waits for the audit process. `stuck_seconds` (30): how long the pipe may stay
    past `pipe_limit` bytes (16 MiB) while frames wait before the audit process is taken for
    stuck.
    """

    retention_days: float = 30
    batch_size: int = 500
    flush_seconds: float = 1.0
    max_queue: int = 10_000
    cleanup_seconds: float = 3600.0
    send_seconds: float = 0.05
    frame_size: int = 1000
    close_seconds: float = 30.0
    stuck_seconds: float = 30.0
    pipe_limit: int = PIPE_LIMIT

    def as_dict(self) -> dict[str, Any]:
        """The policy as plain JSON (`AuditPolicy(**policy.as_dict())` gives it back)."""
        return asdict(self)


DEFAULT_POLICY: Final = AuditPolicy()
"""The policy with every default."""
