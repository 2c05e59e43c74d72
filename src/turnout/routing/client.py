"""The `ChatClient` protocol: anything a route can call (a provider adapter, a scripted model,
another `Route`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from turnout.wire.model import (
        ChatChunk,
        ChatRequest,
        ChatResponse,
        EmbeddingRequest,
        EmbeddingResponse,
    )

__all__ = ["ChatClient", "EmbeddingClient"]


@runtime_checkable
class ChatClient(Protocol):
    """A chat client.

    `provider` names the account it calls (the default health key is `(provider, wire model)`).
    `complete` returns a whole answer; `stream` yields chunks, the last with `finish_reason` and
    `usage`. Failures are raised as `turnout.errors.ProviderError` with their `error_class`; any
    other exception is treated as `provider_error`. Clients never retry on their own.
    """

    @property
    def provider(self) -> str: ...

    async def complete(self, request: ChatRequest) -> ChatResponse: ...

    def stream(self, request: ChatRequest) -> AsyncIterator[ChatChunk]: ...


@runtime_checkable
class EmbeddingClient(Protocol):
    """A client that also serves embeddings."""

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse: ...
