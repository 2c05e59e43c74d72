"""Letting go of a failure once it is answered.

An exception's traceback holds the frames it passed through, and their locals: the request's
body parts, its parsed body, the exchange, which in turn holds the exception. That cycle
outlives the request until a full garbage collection, which a busy gateway may not run for
thousands of requests; a burst of large failed requests would hold every one of their bodies.
Clearing the frames and dropping the traceback once the error answer is written frees them at
once, by reference counting.
"""

from __future__ import annotations

import traceback

__all__ = ["release_frames"]


def release_frames(error: BaseException | None) -> None:
    """Clear the locals of every finished frame in the tracebacks of `error` and of the
    exceptions chained to it, and drop those tracebacks (a frame still running is left as
    it is)."""
    pending = [error]
    seen: set[int] = set()
    while pending:
        each = pending.pop()
        if each is None or id(each) in seen:
            continue
        seen.add(id(each))
        if each.__traceback__ is not None:
            traceback.clear_frames(each.__traceback__)
            each.__traceback__ = None
        pending += (each.__cause__, each.__context__)
