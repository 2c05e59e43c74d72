"""The model catalog's shape: prices, limits and capabilities by model name (the file shipped
with turnout, a file `turnout catalog update` writes, and a provider's `catalog` overrides).
See docs/catalog.md."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field

from turnout.schema._base import Model, Preset, ProviderKind

__all__ = [
    "CatalogCapabilities",
    "CatalogFile",
    "CatalogModel",
    "CatalogOverride",
    "CatalogPrices",
]


class CatalogPrices(Model):
    """A model's list prices, in USD per 1M tokens."""

    input: float = Field(ge=0, description="USD per 1M input tokens not read from a cache.")
    output: float = Field(ge=0, description="USD per 1M output tokens.")
    cache_read: float | None = Field(
        None, ge=0, description="USD per 1M input tokens read from the prompt cache (null: input)."
    )
    cache_write: float | None = Field(
        None, ge=0, description="USD per 1M input tokens written to the prompt cache (null: input)."
    )


class CatalogCapabilities(Model):
    """What a model can do (each false unless said)."""

    tools: bool = Field(False, description="Calls tools (function calling).")
    vision: bool = Field(False, description="Reads images.")
    json_schema: bool = Field(False, description="Answers in a given JSON schema.")
    prefill: bool = Field(False, description="Continues an answer the request begins.")
    reasoning: bool = Field(False, description="Thinks before it answers (reasoning tokens).")

    def names(self) -> frozenset[str]:
        """The capabilities set to true, by name."""
        return frozenset(name for name, value in self.model_dump().items() if value)


class CatalogModel(Model):
    """One model of the catalog."""

    prices: CatalogPrices | None = Field(None, description="List prices (null: unknown).")
    context_window: int | None = Field(
        None, gt=0, description="Tokens of prompt plus answer the model takes (null: unknown)."
    )
    max_output_tokens: int | None = Field(
        None, gt=0, description="The most tokens one answer may have (null: unknown)."
    )
    capabilities: CatalogCapabilities = Field(
        CatalogCapabilities(), description="What the model can do."
    )
    aliases: tuple[str, ...] = Field(
        (),
        description="Other names of the same model: dated snapshots, Bedrock and Vertex ids.",
    )
    vendors: tuple[ProviderKind | Preset, ...] = Field(
        (),
        description="The provider kinds or presets that serve the model under this name at "
        "these prices (empty: any provider naming it).",
    )
    note: str | None = Field(None, description="A remark for people, such as a price tier.")


class CatalogFile(Model):
    """A whole catalog file."""

    version: Literal[1] = Field(1, description="The file's format (1).")
    updated: dt.date = Field(description="The day the prices and limits were read.")
    currency: Literal["USD"] = Field("USD", description="The prices' currency (USD).")
    models: dict[str, CatalogModel] = Field(description="The models by name.")


class CatalogOverride(Model):
    """One provider's word on one model, over the catalog's (each field left out keeps the
    catalog's)."""

    context_window: int | None = Field(
        None, gt=0, description="Tokens of prompt plus answer the model takes here."
    )
    max_output_tokens: int | None = Field(
        None, gt=0, description="The most tokens one answer may have here."
    )
    capabilities: CatalogCapabilities | None = Field(
        None, description="What the model can do here (replaces the catalog's)."
    )
