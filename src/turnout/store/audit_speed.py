"""The audit path's shortcuts: each one does what a plainer line would, for less CPU, and each
names the line of `bench/README.md` ("The audit process, shaved", measured with
`bench/audit_child_callgrind.py`, or `bench/audit.py`'s `submit` line) that pays for it. A
shortcut with no line to name goes.
"""

from __future__ import annotations

from typing import Any

from turnout.store.audit_rows import FinishedRequest

__all__ = ["finished_row"]


def finished_row(fields: list[Any]) -> FinishedRequest:
    """A decoded request's fields (in `FinishedRequest`'s order) as one, made as a plain tuple
    ("decoded requests made as plain tuples": 279,000 → 272,000 instructions per request)."""
    return tuple.__new__(FinishedRequest, fields)
