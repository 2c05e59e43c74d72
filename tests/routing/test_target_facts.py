"""What a route works out about its targets once (`turnout.routing.target_facts`): the client's
optional features, looked up when the route is built and never per call."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnout.routing.route import Route, Target
from turnout.routing.target_facts import TargetFacts
from turnout.testing import ScriptedModel, isolated_health, turn
from turnout.wire.model import Message, Usage

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from turnout.wire.model import ChatChunk, ChatRequest, ChatResponse

QUESTION = [Message.user("Why is checkout failing?")]


class Forwarding:
    """A client that forwards every attribute it lacks to a scripted model, and counts the
    lookups of the optional features."""

    def __init__(self, inner: ScriptedModel, **extra: Any) -> None:
        self.inner = inner
        self.extra = extra
        self.lookups: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        self.lookups[name] = self.lookups.get(name, 0) + 1
        if name in self.extra:
            return self.extra[name]
        return getattr(self.inner, name)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return await self.inner.complete(request)

    def stream(self, request: ChatRequest) -> AsyncIterator[ChatChunk]:
        return self.inner.stream(request)


def _scripted(*turns: Any) -> ScriptedModel:
    return ScriptedModel("northwind", "nw-large", list(turns), prices={"nw-large": (1.0, 2.0)})


def test_a_scripted_model_gives_its_provider_model_and_prices() -> None:
    """The facts of a plain client: its provider, its own model, its prices; no endpoint."""
    facts = TargetFacts.of("triage", Target("primary", _scripted()), health_key=None)
    assert (facts.provider, facts.client_model, facts.endpoint) == ("northwind", "nw-large", None)
    assert facts.provider_id is None
    assert facts.stats_key == ("triage", "primary")
    assert facts.price(None) == (1.0, 2.0)
    assert facts.cost("nw-large", Usage(1_000_000, 500_000)) == 2.0


def test_a_client_without_prices_costs_nothing_known() -> None:
    """Without `price_for` there is no pricing, no price and no cost."""
    facts = TargetFacts.of(
        "triage", Target("t", Forwarding(_scripted(), price_for=None)), health_key=None
    )
    assert facts.price_for is None
    assert facts.price("nw-large") is None
    assert facts.cost("nw-large", Usage(10, 10)) is None


def test_the_endpoint_and_provider_id_are_read_as_the_client_gives_them() -> None:
    """`base_url` becomes text; `provider_id` is kept; a model that is not text counts as none."""
    client = Forwarding(
        _scripted(), base_url=_Url("http://127.0.0.1:9/v1"), provider_id="p-7", model=3
    )
    facts = TargetFacts.of("triage", Target("t", client), health_key="own")
    assert (facts.endpoint, facts.provider_id, facts.client_model) == (
        "http://127.0.0.1:9/v1",
        "p-7",
        None,
    )
    assert facts.health_key == "own"


def test_a_forwarding_wrapper_keeps_its_prices() -> None:
    """Features a wrapper forwards through `__getattr__` count as the client's own."""
    facts = TargetFacts.of("triage", Target("t", Forwarding(_scripted())), health_key=None)
    assert facts.price_for is not None
    assert facts.price("nw-large") == (1.0, 2.0)


def test_eligibility_rules_are_noted_once() -> None:
    """A target with a context window is checked against requests; a bare one is not."""
    checked = TargetFacts.of("r", Target("a", _scripted(), context_window=100), health_key=None)
    bare = TargetFacts.of("r", Target("b", _scripted()), health_key=None)
    assert (checked.has_eligibility_rules, bare.has_eligibility_rules) == (True, False)


async def test_optional_features_are_looked_up_when_the_route_is_built_not_per_call() -> None:
    """Routed calls never look up `price_for`, `base_url`, `provider_id` or `model` again."""
    health = isolated_health()
    answers = [turn.answer("fine", usage=Usage(3, 4)) for _ in range(3)]
    client = Forwarding(_scripted(*answers))
    route = Route("triage", [Target("primary", client)], health=health, cost_budget=1.0)
    built = dict(client.lookups)
    for _ in range(3):
        response = await health.clock.run(route.complete(QUESTION, max_tokens=10))
        assert response.routing is not None
        assert response.routing.cost is not None
    features = ("price_for", "base_url", "provider_id", "model")
    assert {name: client.lookups.get(name, 0) for name in features} == {
        name: built.get(name, 0) for name in features
    }


class _Url:
    """A URL object that is not a string (as some HTTP libraries have)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text
