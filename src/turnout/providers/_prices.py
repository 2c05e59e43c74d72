"""A provider's prices and what the model catalog says of its models (`ModelBook`).

A model's price is the provider's own (`prices`, by the requested name or the wire name it is
aliased to) before the catalog's; the catalog is asked by the same two names, and each answer
is kept, so a model is looked up in the catalog once per provider.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from turnout.routing.model_info import ModelInfo, ModelPrice

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["ModelBook", "read_prices"]

_KEPT: Final = 4096
"""The most catalog answers one provider keeps (each is a model name seen by it)."""


def read_prices(prices: Mapping[str, Any] | None) -> dict[str, ModelPrice]:
    """`{model: (input, output)}`, `{model: {"input": …, "output": …, "cache_read": …,
    "cache_write": …}}` or `{model: ModelPrice}` -> `ModelPrice`s (source `config`)."""
    out: dict[str, ModelPrice] = {}
    for model, price in (prices or {}).items():
        if isinstance(price, ModelPrice):
            out[model] = price
        elif isinstance(price, tuple | list) and len(price) == 2:
            out[model] = ModelPrice(float(price[0]), float(price[1]))
        elif hasattr(price, "get"):
            out[model] = ModelPrice(
                float(price.get("input", 0.0)),
                float(price.get("output", 0.0)),
                _optional(price.get("cache_read")),
                _optional(price.get("cache_write")),
            )
        else:
            raise ValueError(f"prices[{model!r}]: expected (input, output) or {{input, output}}")
    return out


def _optional(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


class ModelBook:
    """A provider's `prices` (by model name), its `model_aliases` (requested -> wire model) and
    its view of the model catalog (`catalog(name) -> ModelInfo | None`; None: no catalog)."""

    __slots__ = ("_aliases", "_catalog", "_kept", "_prices")

    def __init__(
        self,
        prices: Mapping[str, ModelPrice],
        aliases: Mapping[str, str],
        catalog: Callable[[str], ModelInfo | None] | None = None,
    ) -> None:
        self._prices = dict(prices)
        self._aliases = aliases
        self._catalog = catalog
        self._kept: dict[str, ModelInfo | None] = {}

    def price(self, model: str | None) -> ModelPrice | None:
        """The provider's own price of `model`, else the catalog's; None when neither has one."""
        if model is None:
            return None
        own = self._prices.get(model) or self._prices.get(self._aliases.get(model, model))
        if own is not None:
            return own
        info = self.info(model)
        return None if info is None else info.price

    def info(self, model: str | None) -> ModelInfo | None:
        """What the catalog says of `model` (or of the wire model it is aliased to)."""
        if model is None or self._catalog is None:
            return None
        if model in self._kept:
            return self._kept[model]
        found = self._catalog(model)
        wire = self._aliases.get(model)
        if found is None and wire is not None:
            found = self._catalog(wire)
        if len(self._kept) < _KEPT:
            self._kept[model] = found
        return found
