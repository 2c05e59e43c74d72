"""Embeddings through a route: `Route.embed`, the engine behind `/v1/embeddings`."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING, Any

import pytest

from turnout import errors
from turnout.providers import MockProvider
from turnout.routing.health import Breaker
from turnout.routing.route import Route, Target
from turnout.routing.target import NO_EMBEDDINGS, serves_embeddings
from turnout.testing import ScriptedModel, isolated_health, turn
from turnout.wire.model import ChatRequest, ChatResponse, EmbeddingRequest, TextPart, Usage

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from turnout.record import RoutingRecord
    from turnout.testing import IsolatedHealth, Turn
    from turnout.wire.model import ChatChunk, EmbeddingResponse

REQUEST = EmbeddingRequest(["refund policy", "shipping times"], model="embed-small")
VECTORS = [[0.1, 0.2], [0.3, 0.4]]


def model(provider: str, *turns: Turn, **options: Any) -> ScriptedModel:
    """A scripted model named after its provider."""
    return ScriptedModel(provider, f"{provider}-m", list(turns), **options)


class ChatOnly:
    """A chat client with no `embed` at all."""

    provider = "chat-only"

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Answer (never reached by an embeddings request)."""
        return ChatResponse([TextPart("hi")])

    def stream(self, request: ChatRequest) -> AsyncIterator[ChatChunk]:
        """Not used here."""
        raise NotImplementedError


class NoEmbeddingsModel(ScriptedModel):
    """A scripted model whose provider says it serves no embeddings."""

    supports_embeddings = False


async def embed(route: Route, health: IsolatedHealth, **kw: Any) -> EmbeddingResponse:
    """Embed REQUEST through `route` on the health's fake clock."""
    return await health.clock.run(route.embed(REQUEST, **kw))


def record_of(response: EmbeddingResponse) -> RoutingRecord:
    """The routing record of an answer (asserting there is one)."""
    assert response.routing is not None
    return response.routing


# -- success and the record


async def test_a_single_target_answers_with_its_vectors_and_a_record() -> None:
    """embed returns the target's vectors, in order, with `response.routing` filled in."""
    health = isolated_health()
    client = model("openai", turn.embedding(VECTORS, usage=Usage(7)))
    route = Route("docs", [Target("primary", client)], health=health)
    response = await embed(route, health)
    assert response.data == VECTORS
    assert response.usage == Usage(7)
    record = record_of(response)
    assert record.outcomes() == [("primary", "answered")]
    assert (record.answered, record.served_provider, record.served_model) == (
        "primary",
        "openai",
        "embed-small",
    )
    assert client.embed_requests == [REQUEST]
    assert client.requests == []


async def test_a_target_model_replaces_the_requests_model() -> None:
    """Target(model=...) sends that wire model and records it as served."""
    health = isolated_health()
    client = model("openai", turn.embedding(VECTORS))
    route = Route(
        "docs", [Target("primary", client, model="text-embedding-3-small")], health=health
    )
    response = await embed(route, health)
    assert client.embed_requests[0].model == "text-embedding-3-small"
    assert client.embed_requests[0].input == REQUEST.input
    record = record_of(response)
    assert record.requested_model == "embed-small"
    assert record.served_model == "text-embedding-3-small"
    assert record.attempts[0].model == "text-embedding-3-small"


async def test_a_string_is_wrapped_into_an_embeddings_request() -> None:
    """embed("text") sends EmbeddingRequest(input="text")."""
    health = isolated_health()
    client = model("openai", turn.embedding([[1.0]]))
    route = Route("docs", [Target("primary", client)], health=health)
    response = await health.clock.run(route.embed("refund policy"))
    assert response.data == [[1.0]]
    assert client.embed_requests == [EmbeddingRequest("refund policy")]


async def test_the_record_bills_the_serving_call_at_the_input_price() -> None:
    """usage and cost are the serving call's (input tokens x input price); the failed call
    is an entry with its class and status; call ids and provider request ids are set."""
    health = isolated_health()
    failing = model("northwind", turn.fail(503))
    serving = model(
        "openai", turn.embedding(VECTORS, usage=Usage(2_000)), prices={"openai-m": (0.02, 0.0)}
    )
    route = Route("docs", [Target("primary", failing), Target("backup", serving)], health=health)
    response = await health.clock.run(route.embed(EmbeddingRequest(["refund policy"])))
    record = record_of(response)
    assert record.usage == Usage(2_000)
    assert record.cost == pytest.approx(2_000 * 0.02 / 1_000_000)
    assert record.discarded_usage is None
    assert (record.target_index, record.fallbacks, record.remaining_attempts) == (1, 1, 8)
    assert record.visited_models == ["northwind-m", "openai-m"]
    failed, answered = record.attempts
    assert (failed.outcome, failed.error_class, failed.status, failed.reason) == (
        "failed",
        "provider_error",
        503,
        "503 upstream error",
    )
    assert (answered.outcome, answered.error_class, answered.committed) == ("answered", None, False)
    assert answered.call_id == f"{record.request_id}.2"
    assert answered.provider_request_id == "openai-1"
    assert answered.usage == Usage(2_000)
    assert record.strategy == "failover"
    assert record.strategy_reason


async def test_on_routed_gets_the_record_once_after_an_answer() -> None:
    """on_routed is called once with the same record the response carries."""
    health = isolated_health()
    seen: list[RoutingRecord] = []
    route = Route(
        "docs",
        [Target("primary", model("openai", turn.embedding(VECTORS)))],
        health=health,
        on_routed=seen.append,
    )
    response = await embed(route, health)
    assert seen == [response.routing]


async def test_on_routed_gets_the_record_of_a_failed_request() -> None:
    """A request that ends in an error still reports its record, with the error described."""
    health = isolated_health()
    seen: list[RoutingRecord] = []
    route = Route(
        "docs",
        [Target("primary", model("openai", turn.fail(400, message="bad input")))],
        health=health,
        on_routed=seen.append,
    )
    with pytest.raises(errors.InvalidRequest):
        await embed(route, health)
    assert len(seen) == 1
    assert seen[0].error == {"status": 400, "code": "invalid_request", "message": "bad input"}


# -- failover, retries and endings


@pytest.mark.parametrize(
    ("failure", "error_class"),
    [(turn.fail(503), "provider_error"), (turn.fail(429), "rate_limited")],
)
async def test_a_retryable_failure_fails_over_to_the_next_target(
    failure: Turn, error_class: str
) -> None:
    """A 503 or 429 on the first target moves to the second, which answers."""
    health = isolated_health()
    route = Route(
        "docs",
        [
            Target("primary", model("northwind", failure)),
            Target("backup", model("openai", turn.embedding(VECTORS))),
        ],
        health=health,
    )
    response = await embed(route, health)
    record = record_of(response)
    assert record.outcomes() == [("primary", "failed"), ("backup", "answered")]
    assert record.attempts[0].error_class == error_class


async def test_a_terminal_400_is_passed_through_and_stops_the_walk() -> None:
    """A 400 raises the target's own InvalidRequest; later targets are not tried."""
    health = isolated_health()
    backup = model("openai", turn.embedding(VECTORS))
    route = Route(
        "docs",
        [
            Target("primary", model("northwind", turn.fail(400, message="input too long?"))),
            Target("backup", backup),
        ],
        health=health,
    )
    with pytest.raises(errors.InvalidRequest) as caught:
        await embed(route, health)
    assert (caught.value.status, caught.value.message) == (400, "input too long?")
    assert caught.value.routing is not None
    assert caught.value.routing.outcomes() == [("primary", "failed"), ("backup", "not_tried")]
    assert backup.calls == 0


async def test_same_target_retries_wait_the_backoff_on_the_fake_clock() -> None:
    """max_retries 1: a 503 is retried on the same target after at most 250 ms."""
    health = isolated_health()
    client = model("openai", turn.fail(503), turn.embedding(VECTORS))
    route = Route(
        "docs", [Target("primary", client, max_retries=1)], health=health, rng=random.Random(3)
    )
    response = await embed(route, health)
    assert record_of(response).outcomes() == [("primary", "failed"), ("primary", "answered")]
    assert 0 < health.clock.now() <= 0.25


async def test_retryable_failures_on_every_target_raise_route_exhausted() -> None:
    """Two 503s end as RouteExhausted 503 with the shortest cooldown as retry_after."""
    health = isolated_health()
    route = Route(
        "docs",
        [
            Target("primary", model("northwind", turn.fail(503, retry_after=8))),
            Target("backup", model("openai", turn.fail(503, retry_after=3))),
        ],
        health=health,
    )
    with pytest.raises(errors.RouteExhausted) as caught:
        await embed(route, health)
    assert (caught.value.status, caught.value.code) == (503, "UPSTREAM_POOL_EXHAUSTED")
    assert caught.value.retry_after == 3
    assert 'every target of route "docs" failed' in caught.value.message


async def test_one_failed_call_raises_its_own_error() -> None:
    """A single retryable call that left no target raises that call's own error."""
    health = isolated_health()
    route = Route(
        "docs", [Target("primary", model("openai", turn.fail(429, retry_after=2)))], health=health
    )
    with pytest.raises(errors.RateLimited) as caught:
        await embed(route, health)
    assert caught.value.retry_after == 2


async def test_retry_on_and_fault_classifier_decide_like_complete() -> None:
    """A fault_classifier may turn a 400 into provider_error (fails over); a class outside
    retry_on is terminal."""
    health = isolated_health()
    route = Route(
        "docs",
        [
            Target("primary", model("northwind", turn.fail(400))),
            Target("backup", model("openai", turn.embedding(VECTORS))),
        ],
        health=health,
        fault_classifier=lambda target, error: "provider_error",
    )
    assert record_of(await embed(route, health)).answered == "backup"
    strict = Route(
        "strict",
        [
            Target("primary", model("northwind", turn.fail(503))),
            Target("backup", model("openai", turn.embedding(VECTORS))),
        ],
        health=health,
        retry_on=["timeout"],
    )
    with pytest.raises(errors.ProviderUnavailable):
        await embed(strict, health)


async def test_the_per_call_timeout_moves_past_a_silent_target() -> None:
    """A hanging target is cut at its timeout (recorded `timeout`) and the next one answers."""
    health = isolated_health()
    route = Route(
        "docs",
        [
            Target("primary", model("northwind", turn.hang()), timeout=5),
            Target("backup", model("openai", turn.embedding(VECTORS))),
        ],
        health=health,
    )
    response = await embed(route, health)
    assert health.clock.now() == 5
    assert record_of(response).attempts[0].error_class == "timeout"


async def test_the_request_timeout_cuts_the_call_and_stops_the_walk() -> None:
    """request_timeout 2 bounds a 10 s call; the next target is not tried."""
    health = isolated_health()
    route = Route(
        "docs",
        [
            Target("primary", model("northwind", turn.hang()), timeout=10),
            Target("backup", model("openai", turn.embedding(VECTORS))),
        ],
        health=health,
        request_timeout=2,
    )
    with pytest.raises(errors.ProviderTimeout) as caught:
        await embed(route, health)
    assert health.clock.now() == 2
    assert caught.value.routing is not None
    assert caught.value.routing.outcomes() == [("primary", "failed"), ("backup", "not_tried")]


async def test_max_attempts_caps_the_calls_of_an_embeddings_request() -> None:
    """max_attempts 1: after one failed call the rest are not_tried (max_attempts)."""
    health = isolated_health()
    with pytest.warns(UserWarning, match="max_attempts is 1"):
        route = Route(
            "docs",
            [
                Target("primary", model("northwind", turn.fail(503))),
                Target("backup", model("openai", turn.embedding(VECTORS))),
            ],
            health=health,
            max_attempts=1,
        )
    with pytest.raises(errors.ProviderUnavailable) as caught:
        await embed(route, health)
    assert caught.value.routing is not None
    assert caught.value.routing.attempts[1].reason == "max_attempts"


async def test_hedge_after_is_ignored_for_embeddings() -> None:
    """No hedge starts beside a slow embeddings call: the backup runs only after the timeout."""
    health = isolated_health()
    backup = model("openai", turn.embedding(VECTORS))
    route = Route(
        "docs",
        [Target("primary", model("northwind", turn.hang()), timeout=4), Target("backup", backup)],
        health=health,
        hedge_after=1,
    )
    response = await embed(route, health)
    record = record_of(response)
    assert record.hedges == 0
    assert health.clock.now() == 4
    assert [entry.hedge for entry in record.attempts] == [False, False]


async def test_accept_is_not_applied_to_embeddings() -> None:
    """A route whose accept rejects every chat answer still returns vectors."""
    health = isolated_health()
    route = Route(
        "docs",
        [Target("primary", model("openai", turn.embedding(VECTORS)))],
        health=health,
        accept=lambda response: "never good enough",
    )
    assert record_of(await embed(route, health)).outcomes() == [("primary", "answered")]


async def test_cost_budget_does_not_skip_embeddings_targets() -> None:
    """An embeddings request has no max_tokens, so cost_budget never stops a target."""
    health = isolated_health()
    client = model("openai", turn.embedding(VECTORS), prices={"openai-m": (1_000.0, 1_000.0)})
    route = Route("docs", [Target("primary", client)], health=health, cost_budget=0.0)
    assert record_of(await embed(route, health)).answered == "primary"


async def test_a_general_fallback_route_serves_after_the_route_is_exhausted() -> None:
    """fallbacks.general: two failures on the first route, the fallback route answers."""
    health = isolated_health()
    spare = Route(
        "spare", [Target("local", model("local", turn.embedding(VECTORS)))], health=health
    )
    route = Route(
        "docs",
        [
            Target("primary", model("northwind", turn.fail(503))),
            Target("backup", model("openai", turn.fail(502))),
        ],
        health=health,
        fallbacks={"general": [spare]},
    )
    record = record_of(await embed(route, health))
    assert (record.fallback_route, record.fallback_kind, record.answered) == (
        "spare",
        "general",
        "local",
    )


# -- eligibility


async def test_targets_that_cannot_embed_are_ineligible_with_no_embeddings() -> None:
    """A client without embed, one with supports_embeddings False, and a target whose
    capabilities leave out embeddings are skipped as `ineligible` ("no embeddings")."""
    health = isolated_health()
    route = Route(
        "docs",
        [
            Target("chat", ChatOnly()),
            Target("flagged", NoEmbeddingsModel("anthropic", "claude", [])),
            Target("declared", model("northwind"), capabilities={"tools"}),
            Target(
                "embedder", model("openai", turn.embedding(VECTORS)), capabilities={"embeddings"}
            ),
        ],
        health=health,
    )
    record = record_of(await embed(route, health))
    assert record.outcomes() == [
        ("chat", "ineligible"),
        ("flagged", "ineligible"),
        ("declared", "ineligible"),
        ("embedder", "answered"),
    ]
    assert {entry.reason for entry in record.attempts[:3]} == {NO_EMBEDDINGS}
    assert record.fallbacks == 3


async def test_no_target_serving_embeddings_raises_embeddings_not_supported() -> None:
    """Every target ineligible for lack of embeddings: EmbeddingsNotSupported (400
    embeddings_not_supported, not RouteIneligible) naming the route, no call made, record
    attached."""
    health = isolated_health()
    chat = model("northwind")
    route = Route(
        "support",
        [Target("chat", ChatOnly()), Target("declared", chat, capabilities={"tools"})],
        health=health,
    )
    with pytest.raises(errors.RoutingError) as caught:
        await embed(route, health)
    error = caught.value
    assert type(error) is errors.EmbeddingsNotSupported
    assert (error.status, error.code) == (400, "embeddings_not_supported")
    assert '"support"' in error.message
    assert error.routing is not None
    assert error.routing.outcomes() == [("chat", "ineligible"), ("declared", "ineligible")]
    assert error.routing.error is not None
    assert error.routing.error["code"] == "embeddings_not_supported"
    assert chat.calls == 0


async def test_mixed_ineligibility_reasons_raise_route_ineligible() -> None:
    """One target lacks embeddings, the other's own rule refuses: route_ineligible naming
    both reasons (embeddings are offered, this request just cannot take them)."""
    health = isolated_health()
    route = Route(
        "docs",
        [
            Target("chat", ChatOnly()),
            Target("embedder", model("openai"), eligible=lambda request, ctx: "free plan"),
        ],
        health=health,
    )
    with pytest.raises(errors.RouteIneligible) as caught:
        await embed(route, health)
    assert caught.value.code == "route_ineligible"
    assert "chat is ineligible (no embeddings)" in caught.value.message
    assert "embedder is ineligible (free plan)" in caught.value.message


async def test_eligible_receives_the_embeddings_request_and_the_context() -> None:
    """A target's eligible rule sees the EmbeddingRequest and the call's context."""
    health = isolated_health()
    seen: list[tuple[object, object]] = []

    def rule(request: Any, context: Any) -> str | None:
        seen.append((request, context))
        return None if context == "paid" else "free plan"

    route = Route(
        "docs",
        [
            Target("premium", model("openai", turn.embedding(VECTORS)), eligible=rule),
            Target("local", model("local", turn.embedding([[9.0]]))),
        ],
        health=health,
    )
    free = record_of(await embed(route, health, context="free"))
    paid = record_of(await embed(route, health, context="paid"))
    assert (free.answered, paid.answered) == ("local", "premium")
    assert seen == [(REQUEST, "free"), (REQUEST, "paid")]


def test_serves_embeddings_reads_the_provider_adapters_flag() -> None:
    """An adapter speaking the Anthropic wire says it serves no embeddings; OpenAI's does."""
    assert serves_embeddings(Target("a", MockProvider("m1")))
    assert not serves_embeddings(Target("b", MockProvider("m2", wire="anthropic-messages")))


async def test_a_provider_adapter_fails_over_and_embeds_through_a_route() -> None:
    """The in-process mock provider: a scripted 503 fails over, the second answers vectors."""
    health = isolated_health()
    route = Route(
        "docs",
        [
            Target("anthropic", MockProvider("m0", wire="anthropic-messages")),
            Target("primary", MockProvider("m1", script=["status=503"])),
            Target("backup", MockProvider("m2")),
        ],
        health=health,
    )
    request = EmbeddingRequest(["a", "b"], model="text-embedding-3-small")
    response = await health.clock.run(route.embed(request))
    assert len(response.data) == 2
    assert record_of(response).outcomes() == [
        ("anthropic", "ineligible"),
        ("primary", "failed"),
        ("backup", "answered"),
    ]


async def test_a_route_target_embeds_only_when_one_of_its_targets_can() -> None:
    """A nested route is a target for embeddings when it serves them, else ineligible."""
    health = isolated_health()
    inner = Route("inner", [Target("x", model("openai", turn.embedding(VECTORS)))], health=health)
    chat_inner = Route("chat-inner", [Target("y", ChatOnly())], health=health)
    assert inner.supports_embeddings
    assert not chat_inner.supports_embeddings
    outer = Route("outer", [Target("chat", chat_inner), Target("embed", inner)], health=health)
    record = record_of(await embed(outer, health))
    assert record.outcomes() == [("chat", "ineligible"), ("embed", "answered")]


# -- health


async def test_failed_embeddings_calls_open_the_breaker_for_later_requests() -> None:
    """Three 503s in a row open the key's breaker; the next request skips it (breaker_open)
    until the open period passes, then probes it again."""
    health = isolated_health(breaker=Breaker(failures=3, open_for=60))
    primary = model("northwind", *[turn.fail(503)] * 3, turn.embedding([[1.0]]))
    backup = model("openai", *[turn.embedding(VECTORS)] * 4)
    route = Route("docs", [Target("primary", primary), Target("backup", backup)], health=health)
    for _ in range(3):
        await embed(route, health)
    skipped = record_of(await embed(route, health))
    assert skipped.outcomes() == [("primary", "breaker_open"), ("backup", "answered")]
    assert primary.calls == 3
    health.clock.advance(60)
    probed = record_of(await embed(route, health))
    assert probed.outcomes() == [("primary", "answered"), ("backup", "not_tried")]
    assert (
        str(health.snapshot())
        == "northwind/embed-small=Available(0), openai/embed-small=Available(0)"
    )


async def test_a_retry_after_cools_the_key_for_the_next_embeddings_request() -> None:
    """A 429 with Retry-After 30 cools the key: the next request skips it (cooling_down)."""
    health = isolated_health()
    primary = model("northwind", turn.fail(429, retry_after=30), turn.embedding([[1.0]]))
    backup = model("openai", turn.embedding(VECTORS), turn.embedding(VECTORS))
    route = Route("docs", [Target("primary", primary), Target("backup", backup)], health=health)
    await embed(route, health)
    record = record_of(await embed(route, health))
    assert record.outcomes() == [("primary", "cooling_down"), ("backup", "answered")]
    assert record.attempts[0].reason == "cooling down, 30 s left"


async def test_a_terminal_failure_does_not_count_for_health() -> None:
    """400s are never counted (the key stays available under a 1-failure breaker); a 503
    afterwards opens it."""
    health = isolated_health(breaker=Breaker(failures=1, open_for=60))
    client = model("openai", *[turn.fail(400)] * 3, turn.fail(503))
    route = Route("docs", [Target("primary", client)], health=health)
    for _ in range(3):
        with pytest.raises(errors.InvalidRequest):
            await embed(route, health)
    assert str(health.snapshot()) == "openai/embed-small=Available(0)"
    with pytest.raises(errors.ProviderUnavailable):
        await embed(route, health)
    assert str(health.snapshot()) == "openai/embed-small=Open(1)"
