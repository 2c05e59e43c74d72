"""What a route works out about its targets once, when it is built, so that no request looks
it up again: per target the client's provider and optional features (`turnout.routing.client`),
the keys its health and statistics are kept under, and whether requests are checked against it
(`TargetFacts`); for the route, where a request may start and in which order it goes on
(`TargetTable`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, cast, get_args

from turnout.routing.model_info import DescribedClient
from turnout.routing.strategies import TargetView, try_order
from turnout.wire.model import WireFormat

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Sequence

    from turnout.routing.client import PricedClient
    from turnout.routing.health import Health
    from turnout.routing.model_info import ModelPrice
    from turnout.routing.target import Target
    from turnout.wire.model import Usage

__all__ = ["TargetFacts", "TargetTable", "native_formats", "starters"]

_KEY_CACHE_SIZE: Final = 4096
_WIRE_FORMATS: Final[frozenset[str]] = frozenset(get_args(WireFormat))


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
    - `has_eligibility_rules`: requests are checked against the target before it is called;
    - `wire_format`: the wire format the client speaks (a provider adapter's `wire_format`),
      None when it does not say (a route used as a target, a test double); `wire_formats`:
      every format it serves natively (its `wire_formats`, else `wire_format` alone).
    - `vendor`: the vendor the client calls (a provider adapter's `vendor`, such as `openai`),
      None when it does not say; spans name the provider by it (`turnout.routing.spans`).
    - `model_price`: a `DescribedClient`'s, bound once: the full price (cache prices and where
      it came from), asked before `price_for`; None when the client does not offer it.
    """

    provider: str
    client_model: str | None
    endpoint: str | None
    provider_id: str | None
    price_for: Callable[[str | None], tuple[float, float] | None] | None
    health_key: str | None
    stats_key: Hashable
    has_eligibility_rules: bool
    wire_format: WireFormat | None = None
    wire_formats: frozenset[WireFormat] = frozenset()
    vendor: str | None = None
    model_price: Callable[[str | None], ModelPrice | None] | None = None

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
            _wire_format(client),
            native_formats(client),
            _vendor(client),
            client.model_price if isinstance(client, DescribedClient) else None,
        )

    def format_for(self, origin: WireFormat | None) -> WireFormat | None:
        """The wire format a call for a request that came in `origin` speaks: `origin` itself
        when the client serves it natively, else the client's `wire_format`."""
        if origin is not None and origin in self.wire_formats:
            return origin
        return self.wire_format

    def price(self, model: str | None) -> tuple[float, float] | None:
        """USD per 1M (input, output) tokens of `model`; None without a price."""
        full = self.model_price
        if full is not None:
            found = full(model)
            return None if found is None else (found.input, found.output)
        price_for = self.price_for
        return None if price_for is None else price_for(model)

    def cost(self, model: str | None, usage: Usage) -> float | None:
        """USD for `usage` on `model`; None without a price."""
        return self.bill(usage, model)[0]

    def bill(self, usage: Usage, *models: str | None) -> tuple[float | None, str | None]:
        """USD for `usage` at the price of the first of `models` that has one, and where that
        price came from (`catalog`, else `config`: the client's own, `price_for` included);
        (None, None) when none has a price. A provider's own price for any of them comes before the
        catalog's."""
        full = self.model_price
        if full is not None:
            found = _first_price(full, models)
            return (None, None) if found is None else (found.cost(usage), found.source)
        for model in models:
            prices = self.price(model)
            if prices is not None:
                total = usage.input_tokens * prices[0] + usage.output_tokens * prices[1]
                return float(total) / 1_000_000, "config"
        return None, None


def _first_price(
    price_of: Callable[[str | None], ModelPrice | None], models: tuple[str | None, ...]
) -> ModelPrice | None:
    """The price of the first of `models` with one, a configured price before a catalog's."""
    listed: ModelPrice | None = None
    for model in models:
        price = price_of(model)
        if price is not None:
            if price.source == "config":
                return price
            listed = listed or price
    return listed


class TargetTable:
    """One route's targets as the driver reads them: the `candidates` a strategy may start on,
    why no request can start (`no_start_reason`, None when one can), and the try orders and
    health keys, each worked out once and then cached.

    `unpaused` are the targets not paused, in list order; `candidates` are those of them that
    are not fallback-only (`starters`), or, when every target not paused is fallback-only,
    the first of them alone. `translated_origins` are the wire formats a request may come in
    that some target would translate from (a target that speaks another format).

    `weighted` says the route's strategy is `weighted`: then a request needs a target with a
    positive weight that is not fallback-only to start on.
    """

    __slots__ = (
        "_facts",
        "_fallback_only",
        "_health",
        "_keys",
        "_orders",
        "_route",
        "_targets",
        "candidates",
        "no_start_reason",
        "translated_origins",
        "unpaused",
    )

    def __init__(
        self,
        route: str,
        targets: tuple[Target, ...],
        facts: tuple[TargetFacts, ...],
        *,
        health: Health,
        weighted: bool,
    ) -> None:
        self._route = route
        self._targets = targets
        self._facts = facts
        self._health = health
        self._fallback_only = [t.fallback_only for t in targets]
        self._orders: dict[int, list[int]] = {}
        self._keys: dict[tuple[int, str | None], Hashable] = {}
        self.unpaused = tuple(
            TargetView(i, t.name, t.weight, _start_price(t, facts[i]), facts[i].stats_key)
            for i, t in enumerate(targets)
            if not t.paused
        )
        self.candidates = starters(self.unpaused, self._fallback_only)
        self.translated_origins: frozenset[str] = frozenset(
            origin
            for origin in _WIRE_FORMATS
            if any(
                each.format_for(cast("WireFormat", origin)) not in (None, origin) for each in facts
            )
        )
        self.no_start_reason: str | None = None
        if not self.candidates:
            self.no_start_reason = f'every target of route "{route}" is paused'
        elif weighted and not any(
            t.weight > 0 and not t.fallback_only for t in targets if not t.paused
        ):
            self.no_start_reason = f'no target of route "{route}" has a positive weight'

    def order_from(self, start: int) -> list[int]:
        """The try order (target indices) of a request that starts on target `start`."""
        order = self._orders.get(start)
        if order is None:
            order = self._orders[start] = try_order(len(self._targets), self._fallback_only, start)
        return order

    def key_for(self, index: int, model: str | None) -> Hashable:
        """The health key of target `index` asked for `model` (cached per target and model)."""
        cached = self._keys.get((index, model))
        if cached is not None:
            return cached
        facts = self._facts[index]
        key = self._health.key_for(
            provider=facts.provider,
            model=model or facts.client_model,
            route=self._route,
            target=self._targets[index].name,
            health_key=facts.health_key,
        )
        if len(self._keys) < _KEY_CACHE_SIZE:
            self._keys[(index, model)] = key
        return key


def _wire_format(client: object) -> WireFormat | None:
    wire = getattr(client, "wire_format", None)
    return cast("WireFormat", wire) if wire in _WIRE_FORMATS else None


def native_formats(client: object) -> frozenset[WireFormat]:
    """Every wire format `client` serves natively: its `wire_formats` when it says, else its
    `wire_format` alone (empty when it says neither)."""
    formats = getattr(client, "wire_formats", None)
    if isinstance(formats, frozenset):
        return frozenset(cast("WireFormat", f) for f in formats if f in _WIRE_FORMATS)
    wire = _wire_format(client)
    return frozenset() if wire is None else frozenset((wire,))


def _vendor(client: object) -> str | None:
    vendor = getattr(client, "vendor", None)
    return vendor if isinstance(vendor, str) else None


def starters(
    unpaused: Sequence[TargetView], fallback_only: Sequence[bool]
) -> tuple[TargetView, ...]:
    """Where a request may start among `unpaused` (in list order): the targets that are not
    fallback-only; when every one is, the first of them alone (`fallback_only` by index)."""
    chosen = tuple(c for c in unpaused if not fallback_only[c.index])
    return chosen or tuple(unpaused[:1])


def _start_price(target: Target, facts: TargetFacts) -> float | None:
    """What the `lowest-cost` strategy compares: input + output price of the target's model."""
    prices = facts.price(target.model or facts.client_model)
    return None if prices is None else float(prices[0] + prices[1])
