"""Neutral request/response model and the wire-format codecs.

`CODECS` holds every format's `Codec` by wire format (its modules are imported here, and each
registers its own).
"""

from __future__ import annotations

from turnout.wire import (  # noqa: F401 - imported to register their codecs
    anthropic_messages,
    bedrock_converse,
    gemini,
    openai_chat,
    openai_responses,
)
from turnout.wire.codec import CODECS, Codec
from turnout.wire.model import (
    ChatChunk,
    ChatRequest,
    ChatResponse,
    DocumentPart,
    EmbeddingRequest,
    EmbeddingResponse,
    ImagePart,
    Message,
    NativeBlock,
    Part,
    RawBody,
    TextPart,
    ThinkingPart,
    Tool,
    ToolCall,
    ToolCallDelta,
    Usage,
    WireFormat,
)

__all__ = [
    "CODECS",
    "ChatChunk",
    "ChatRequest",
    "ChatResponse",
    "Codec",
    "DocumentPart",
    "EmbeddingRequest",
    "EmbeddingResponse",
    "ImagePart",
    "Message",
    "NativeBlock",
    "Part",
    "RawBody",
    "TextPart",
    "ThinkingPart",
    "Tool",
    "ToolCall",
    "ToolCallDelta",
    "Usage",
    "WireFormat",
]
