"""Neutral request/response model and the wire-format codecs."""

from __future__ import annotations

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
    "ChatChunk",
    "ChatRequest",
    "ChatResponse",
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
