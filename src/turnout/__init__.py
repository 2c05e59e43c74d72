"""turnout: route every LLM call over an ordered set of provider+model targets.

The public API is what `__all__` lists; everything else may change without notice.
"""

from __future__ import annotations

import logging
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

from turnout.record import AttemptEntry, RoutingRecord
from turnout.routing.client import ChatClient
from turnout.routing.health import Breaker, Health
from turnout.routing.route import Route
from turnout.routing.target import Target
from turnout.wire.model import (
    ChatChunk,
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    EmbeddingResponse,
    Message,
    Usage,
)

# A library logs only where its user sends logs: without this, Python's last-resort handler
# would print bare WARNING messages (a failover, say) to the user's stderr.
logging.getLogger("turnout").addHandler(logging.NullHandler())

try:
    __version__ = _version("turnout")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "AttemptEntry",
    "Breaker",
    "ChatChunk",
    "ChatClient",
    "ChatRequest",
    "ChatResponse",
    "EmbeddingRequest",
    "EmbeddingResponse",
    "Health",
    "Message",
    "Route",
    "RoutingRecord",
    "Target",
    "Usage",
    "__version__",
]
