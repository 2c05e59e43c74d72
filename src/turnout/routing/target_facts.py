"""What a route works out about each of its targets once, when it is built, so that no request
looks it up again: the client's provider and optional features (`turnout.routing.client`), the
keys its health and statistics are kept under, and whether requests are checked against it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

    from turnout.routing.client import PricedClient
    from turnout.routing.target import Target
    from turnout.wire.model import Usage

__all__ = ["TargetFacts"]


@dataclass(frozen=True, slots=True)
class TargetFacts:
    """One target of a route, as the driver needs it.

    - `provider`: the client's `provider`;
    - `client_model`: the client's own model (a `DefaultModelClient`), asked when neither the
      request nor the target names one; `endpoint`: its base URL as text (a `LocatedClient`);
      `provider_id` (an `IdentifiedClient`); `price_for` (a `PricedClient`'s, bound once);
      each None when the client does not offer it;
    - `health_key`: the target's own health key (None: the health's default key);
    - `stats_key`: what the strategy keeps the target's call statistics under;
    - `has_eligibility_rules`: requests are checked against the target before it is called.
    """

    provider: str
    client_model: str | None
    endpoint: str | None
    provider_id: str | None
    price_for: Callable[[str | None], tuple[float, float] | None] | None
    health_key: str | None
    stats_key: Hashable
    has_eligibility_rules: bool

    @classmethod
    def of(cls, route: str, target: Target, *, health_key: str | None) -> TargetFacts:
        """The facts of `target` on the route named `route`."""
        client = target.client
        model = getattr(client, "model", None)
        base_url = getattr(client, "base_url", None)
        has_prices = getattr(client, "price_for", None) is not None
        priced = cast("PricedClient", client) if has_prices else None
        return cls(
            client.provider,
            model if isinstance(model, str) else None,
            None if base_url is None else str(base_url),
            getattr(client, "provider_id", None),
            None if priced is None else priced.price_for,
            health_key,
            (route, target.name),
            target.has_eligibility_rules,
        )

    def price(self, model: str | None) -> tuple[float, float] | None:
        """USD per 1M (input, output) tokens of `model`; None without a price."""
        price_for = self.price_for
        return None if price_for is None else price_for(model)

    def cost(self, model: str | None, usage: Usage) -> float | None:
        """USD for `usage` on `model`; None without a price."""
        prices = self.price(model)
        if prices is None:
            return None
        return float(usage.input_tokens * prices[0] + usage.output_tokens * prices[1]) / 1_000_000
