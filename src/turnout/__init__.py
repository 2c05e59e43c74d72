"""turnout: route every LLM call over an ordered set of provider+model targets.

The public API is what `__all__` lists; everything else may change without notice.
"""

from __future__ import annotations

from turnout.wire.model import ChatChunk, ChatRequest, ChatResponse, Message, Usage

__version__ = "0.1.0"

__all__ = [
    "ChatChunk",
    "ChatRequest",
    "ChatResponse",
    "Message",
    "Usage",
    "__version__",
]
