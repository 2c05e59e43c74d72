"""Pricing a call (`turnout.routing.model_info`, `TargetFacts.bill`): cache reads and writes at
their own prices, and a provider's own price before the catalog's."""

from __future__ import annotations

import pytest

from turnout.providers import OpenAI
from turnout.routing.model_info import ModelInfo, ModelPrice
from turnout.routing.route import Target
from turnout.routing.target_facts import TargetFacts
from turnout.testing import ScriptedModel
from turnout.wire.model import Usage

CATALOG_PRICE = ModelPrice(2.0, 8.0, cache_read=0.5, cache_write=2.5, source="catalog")


def _catalog(model: str) -> ModelInfo | None:
    return ModelInfo(CATALOG_PRICE, 1000) if model == "listed" else None


def _facts(**prices: tuple[float, float]) -> TargetFacts:
    client = OpenAI("sk-test", name="oa", prices=prices, catalog=_catalog)
    return TargetFacts.of("r", Target("t", client), health_key=None)


def test_cache_reads_and_writes_are_billed_at_their_own_prices() -> None:
    """Of 1M input tokens, 600k cache reads and 100k cache writes: each at its own price."""
    usage = Usage(1_000_000, 1_000_000, cache_read_tokens=600_000, cache_write_tokens=100_000)
    expected = 0.3 * 2.0 + 0.6 * 0.5 + 0.1 * 2.5 + 1.0 * 8.0
    assert CATALOG_PRICE.cost(usage) == pytest.approx(expected)


def test_a_price_without_cache_prices_bills_cached_tokens_as_input() -> None:
    """No cache prices: every input token at the input price, as before cache prices."""
    usage = Usage(1_000_000, 0, cache_read_tokens=600_000)
    assert ModelPrice(2.0, 8.0).cost(usage) == pytest.approx(2.0)


def test_a_model_the_config_does_not_price_is_billed_from_the_catalog() -> None:
    """No configured price: the catalog's, and the bill says so."""
    cost, source = _facts().bill(Usage(1_000_000, 0, cache_read_tokens=1_000_000), "listed")
    assert cost == pytest.approx(0.5)
    assert source == "catalog"


def test_a_configured_price_comes_before_the_catalog() -> None:
    """The provider's own price wins over the catalog's, for the model asked for too."""
    assert _facts(listed=(1.0, 1.0)).bill(Usage(1_000_000, 0), "listed") == (1.0, "config")
    # The answer names a model only the catalog prices; the asked model's own price wins.
    asked = _facts(asked=(3.0, 3.0))
    assert asked.bill(Usage(1_000_000, 0), "listed", "asked") == (3.0, "config")


def test_a_model_neither_prices_has_no_cost() -> None:
    """Unknown everywhere: no cost and no source."""
    assert _facts().bill(Usage(10, 10), "unknown") == (None, None)


def test_a_client_with_plain_prices_bills_them_as_its_own() -> None:
    """A client offering only `price_for` (a scripted model) is billed at it, as `config`."""
    client = ScriptedModel("northwind", "nw", [], prices={"nw": (1.0, 2.0)})
    facts = TargetFacts.of("r", Target("t", client), health_key=None)
    assert facts.bill(Usage(1_000_000, 1_000_000), "nw") == (3.0, "config")
