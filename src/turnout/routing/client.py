"""The `ChatClient` protocol: anything a route can call (a provider adapter, a scripted model,
another `Route`), and the optional features a client may offer beside it.

A route looks for the optional features once per target, when it is built
(`turnout.routing.target_facts`), never per call. It looks them up by attribute rather than by
`isinstance`: an instance check on a runtime protocol no longer sees attributes that a wrapper
forwards through `__getattr__` on newer Pythons, and such a wrapper keeps its prices.
"""

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

__all__ = [
    "ChatClient",
    "DefaultModelClient",
    "EmbeddingClient",
    "IdentifiedClient",
    "LocatedClient",
    "PricedClient",
]


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


class PricedClient(Protocol):
    """A client that knows its prices: read by `cost_budget`, the `lowest-cost` strategy and
    the routing record's `cost`."""

    def price_for(self, model: str | None) -> tuple[float, float] | None:
        """USD per 1M (input, output) tokens of `model`, or None when unknown."""
        ...


class IdentifiedClient(Protocol):
    """A client that carries the id of the provider it stands for (the routing record's
    `served_provider_id`)."""

    @property
    def provider_id(self) -> str | None: ...


class LocatedClient(Protocol):
    """A client that says where it sends its calls: its base URL, an attempt's `endpoint`."""

    @property
    def base_url(self) -> object: ...


class DefaultModelClient(Protocol):
    """A client with a model of its own, asked when neither the request nor the target names
    one."""

    @property
    def model(self) -> str | None: ...
