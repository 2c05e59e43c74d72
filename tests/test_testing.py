"""turnout.testing: scripted models, turns, and isolated health for users' own tests."""

from __future__ import annotations

import asyncio

import pytest

from turnout import errors
from turnout.routing.health import Breaker
from turnout.testing import FakeClock, ScriptedModel, isolated_health, turn
from turnout.wire.model import ChatChunk, ChatRequest, EmbeddingRequest, Message, Usage

REQUEST = ChatRequest([Message.user("Why is checkout failing?")], model="asked")


async def test_each_call_plays_the_next_turn_and_records_the_request() -> None:
    """complete() plays turns in order; `requests` holds what was received."""
    model = ScriptedModel("northwind", "nw-large", [turn.answer("one"), turn.answer("two")])
    first = await model.complete(REQUEST)
    second = await model.complete(ChatRequest([Message.user("again")]))
    assert (first.text, second.text) == ("one", "two")
    assert first.model == "asked"
    assert second.model == "nw-large"
    assert [r.messages[0].text for r in model.requests] == ["Why is checkout failing?", "again"]
    assert (model.calls, model.remaining, model.provider) == (2, 0, "northwind")


async def test_a_script_that_runs_out_raises_assertion_error() -> None:
    """A call past the end of the script is a test failure, not a provider error."""
    model = ScriptedModel("northwind", "nw-large", [turn.answer("only")])
    await model.complete(REQUEST)
    with pytest.raises(AssertionError, match="the script ran out after 1 turns"):
        await model.complete(REQUEST)


@pytest.mark.parametrize(
    ("status", "error_type", "kind", "error_class"),
    [
        (429, None, errors.RateLimited, "rate_limited"),
        (503, None, errors.ProviderUnavailable, "provider_error"),
        (402, None, errors.QuotaExhausted, "quota_exhausted"),
        (429, "insufficient_quota", errors.QuotaExhausted, "quota_exhausted"),
        (401, None, errors.AuthenticationFailed, "auth"),
        (408, None, errors.ProviderTimeout, "timeout"),
        (404, None, errors.InvalidRequest, "invalid_request"),
    ],
)
async def test_fail_turns_are_classified_like_a_provider_would(
    status: int, error_type: str | None, kind: type[errors.ProviderError], error_class: str
) -> None:
    """turn.fail(status) raises the ProviderError subclass its status classifies to."""
    model = ScriptedModel("p", "m", [turn.fail(status, retry_after=8, error_type=error_type)])
    with pytest.raises(kind) as caught:
        await model.complete(REQUEST)
    assert (caught.value.status, caught.value.error_class) == (status, error_class)
    assert caught.value.retry_after == 8
    assert caught.value.message == f"{status} from the provider"


async def test_refuse_conn_error_and_timeout_turns() -> None:
    """refuse -> content_filter answer; conn_error -> provider_error (connection); timeout."""
    model = ScriptedModel("p", "m", [turn.refuse(), turn.conn_error(), turn.timeout()])
    assert (await model.complete(REQUEST)).finish_reason == "content_filter"
    with pytest.raises(errors.ProviderUnavailable) as conn:
        await model.complete(REQUEST)
    assert conn.value.reason == "connection"
    with pytest.raises(errors.ProviderTimeout):
        await model.complete(REQUEST)


async def test_hang_waits_until_cancelled_and_delay_sleeps_on_the_clock() -> None:
    """hang never answers; `delay` passes on the model's clock before the turn plays."""
    clock = FakeClock()
    model = ScriptedModel("p", "m", [turn.hang(), turn.answer("late", delay=30)], clock=clock)
    hung = asyncio.ensure_future(model.complete(REQUEST))
    await clock.settle()
    assert not hung.done()
    hung.cancel()
    with pytest.raises(asyncio.CancelledError):
        await hung
    response = await clock.run(model.complete(REQUEST))
    assert (response.text, clock.now()) == ("late", 30.0)


async def test_stream_turns_yield_pieces_then_a_finish_chunk_with_usage() -> None:
    """turn.stream yields text deltas, raw chunks as given, then finish reason and usage."""
    model = ScriptedModel(
        "p", "m", [turn.stream([ChatChunk(), "Roll ", "back."], usage=Usage(5, 2))]
    )
    chunks = [chunk async for chunk in model.stream(REQUEST)]
    assert [c.delta for c in chunks] == ["", "Roll ", "back.", ""]
    assert (chunks[-1].finish_reason, chunks[-1].usage) == ("stop", Usage(5, 2))


async def test_stream_endings_cut_stall_refuse_and_no_finish_reason() -> None:
    """then=cut raises after the pieces; refuse ends with content_filter; finish_reason=None
    ends without a finish chunk; stall goes silent."""
    clock = FakeClock()
    model = ScriptedModel(
        "p",
        "m",
        [
            turn.stream(["a"], then=turn.cut()),
            turn.stream(["a"], then=turn.refuse()),
            turn.stream(["a"], finish_reason=None),
            turn.stream(["a"], then=turn.stall()),
        ],
        clock=clock,
    )
    received: list[str] = []

    async def read_cut() -> None:
        async for chunk in model.stream(REQUEST):
            received.append(chunk.delta)  # noqa: PERF401 - keeps what came before the cut

    with pytest.raises(errors.ProviderUnavailable):
        await read_cut()
    assert received == ["a"]
    refused = [c async for c in model.stream(REQUEST)]
    assert refused[-1].finish_reason == "content_filter"
    unfinished = [c async for c in model.stream(REQUEST)]
    assert [c.finish_reason for c in unfinished] == [None]
    stalled = model.stream(REQUEST)
    assert (await anext(stalled)).delta == "a"
    waiting = asyncio.ensure_future(anext(stalled))
    await clock.settle()
    assert not waiting.done()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting


async def test_embedding_turns_answer_embed_calls_with_their_vectors() -> None:
    """embed() plays an embedding turn: its vectors, the request's model, the given usage (or
    an estimate with no output tokens); `embed_requests` holds what was received."""
    model = ScriptedModel(
        "openai",
        "embed-m",
        [turn.embedding([[0.1, 0.2]], usage=Usage(3)), turn.embedding([[1, 2], [3, 4]])],
    )
    first = await model.embed(EmbeddingRequest("refund policy", model="asked"))
    second = await model.embed(EmbeddingRequest(["abcdefgh", "ijklmnop"]))
    assert (first.data, first.model, first.usage) == ([[0.1, 0.2]], "asked", Usage(3))
    assert (second.data, second.model, second.usage) == (
        [[1.0, 2.0], [3.0, 4.0]],
        "embed-m",
        Usage(4),
    )
    assert [r.input for r in model.embed_requests] == ["refund policy", ["abcdefgh", "ijklmnop"]]
    assert (model.calls, model.remaining, model.requests) == (2, 0, [])


async def test_failure_turns_fail_embed_calls_like_chat_calls() -> None:
    """fail, conn_error and timeout turns raise the same classified errors from embed()."""
    model = ScriptedModel(
        "openai", "m", [turn.fail(429, retry_after=8), turn.conn_error(), turn.timeout()]
    )
    request = EmbeddingRequest("x")
    with pytest.raises(errors.RateLimited) as limited:
        await model.embed(request)
    assert limited.value.retry_after == 8
    with pytest.raises(errors.ProviderUnavailable):
        await model.embed(request)
    with pytest.raises(errors.ProviderTimeout):
        await model.embed(request)


async def test_one_script_serves_chat_and_embed_calls_in_order() -> None:
    """Chat and embeddings calls share the script; a turn of the wrong kind is a test
    failure (AssertionError), not a provider error."""
    model = ScriptedModel("p", "m", [turn.answer("hi"), turn.embedding([[1.0]]), turn.answer("x")])
    assert (await model.complete(REQUEST)).text == "hi"
    assert (await model.embed(EmbeddingRequest("x"))).data == [[1.0]]
    with pytest.raises(AssertionError, match=r"turn 3 \('answer'\) cannot play an embeddings call"):
        await model.embed(EmbeddingRequest("x"))
    assert (len(model.requests), len(model.embed_requests), model.calls) == (1, 2, 3)
    chat_model = ScriptedModel("p", "m", [turn.embedding([[1.0]])])
    with pytest.raises(AssertionError, match=r"cannot play a chat call"):
        await chat_model.complete(REQUEST)


async def test_prices_are_offered_per_model() -> None:
    """price_for reads `prices`; an unknown model has no price."""
    model = ScriptedModel("p", "m", [], prices={"m": (0.15, 0.6)})
    assert model.price_for(None) == (0.15, 0.6)
    assert model.price_for("other") is None


def test_isolated_health_is_fresh_and_on_a_fake_clock() -> None:
    """Each isolated_health has its own state and FakeClock; options reach Health."""
    first = isolated_health(breaker=Breaker(failures=2, open_for=5), key_by="provider")
    second = isolated_health()
    assert isinstance(first.clock, FakeClock)
    assert first.clock is not second.clock
    assert (first.breaker.failures, first.key_by) == (2, "provider")
    clock = FakeClock()
    assert isolated_health(clock=clock).clock is clock
