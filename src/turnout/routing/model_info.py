"""What is known about one model apart from any call: its prices (`ModelPrice`, with where they
came from) and its limits and capabilities (`ModelInfo`), and the small client protocol that
offers them (`DescribedClient`).

A price is USD per 1M tokens. A usage's cache counts are part of its input tokens
(`turnout.record.Usage`), so a call is billed: uncached input at `input`, cache reads at
`cache_read` and cache writes at `cache_write` (each at `input` when the price does not say),
output at `output`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from turnout.record import Usage

__all__ = ["DescribedClient", "ModelInfo", "ModelPrice", "PriceSource"]

PriceSource = Literal["config", "catalog"]
"""Where a price came from: the provider's own `prices`, or the model catalog."""


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per 1M tokens of one model: `input`, `output`, and `cache_read` / `cache_write`
    (None: billed as input); `source` says where the price came from (default `config`)."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    source: PriceSource = "config"

    def cost(self, usage: Usage) -> float:
        """USD for `usage` at this price."""
        read, write = usage.cache_read_tokens, usage.cache_write_tokens
        uncached = max(usage.input_tokens - read - write, 0)
        read_price = self.input if self.cache_read is None else self.cache_read
        write_price = self.input if self.cache_write is None else self.cache_write
        total = (
            uncached * self.input
            + read * read_price
            + write * write_price
            + usage.output_tokens * self.output
        )
        return float(total) / 1_000_000


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What the model catalog says of one model, as a provider sees it: its `price` (None when
    unknown), `context_window` and `max_output_tokens` (tokens, None when unknown), and
    `capabilities` (a subset of `tools`, `vision`, `json_schema`, `prefill`, `reasoning`)."""

    price: ModelPrice | None = None
    context_window: int | None = None
    max_output_tokens: int | None = None
    capabilities: frozenset[str] = frozenset()


@runtime_checkable
class DescribedClient(Protocol):
    """A client that knows its models beyond their names (a provider adapter built with a
    catalog): their full price, and what the catalog says of them."""

    def model_price(self, model: str | None) -> ModelPrice | None:
        """The price of `model` (its own, else the catalog's), or None when unknown."""
        ...

    def model_info(self, model: str | None) -> ModelInfo | None:
        """What the catalog says of `model`, or None when it does not know it."""
        ...
