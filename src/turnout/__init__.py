"""turnout: route every LLM call over an ordered set of provider+model targets.

The public API is what `__all__` lists; everything else may change without notice. Each name
is loaded the first time it is used, so a process that needs one part of the package (the
audit writer process, a command that prints its version) does not load the rest.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from turnout._lazy import lazy_names
from turnout._version import __version__

if TYPE_CHECKING:
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

_HOMES = {
    "AttemptEntry": "turnout.record",
    "RoutingRecord": "turnout.record",
    "ChatClient": "turnout.routing.client",
    "Breaker": "turnout.routing.health",
    "Health": "turnout.routing.health",
    "Route": "turnout.routing.route",
    "Target": "turnout.routing.target",
    "ChatChunk": "turnout.wire.model",
    "ChatRequest": "turnout.wire.model",
    "ChatResponse": "turnout.wire.model",
    "EmbeddingRequest": "turnout.wire.model",
    "EmbeddingResponse": "turnout.wire.model",
    "Message": "turnout.wire.model",
    "Usage": "turnout.wire.model",
}
"""The module each public name is defined in."""


__getattr__, __dir__ = lazy_names(globals(), _HOMES)

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
