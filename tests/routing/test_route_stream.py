"""Streaming through a route: the commit point and what happens on each side."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import TYPE_CHECKING

import pytest

from turnout import errors
from turnout.record import RoutingRecord
from turnout.routing.route import Route, Target
from turnout.testing import FakeClock, ScriptedModel, isolated_health, turn
from turnout.wire import openai_chat
from turnout.wire.model import ChatChunk, Message, Usage

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from turnout.wire.model import ChatRequest

QUESTION = [Message.user("Why is checkout failing?")]


def scripted(name: str, *turns: object, clock: FakeClock | None = None) -> ScriptedModel:
    """A scripted model whose provider is `name`."""
    return ScriptedModel(name, f"{name}-m", list(turns), clock=clock)  # type: ignore[arg-type]


async def collect(stream: AsyncIterator[ChatChunk], into: list[ChatChunk]) -> list[ChatChunk]:
    """Read a stream to its end, keeping every chunk in `into` (even when it raises)."""
    async for chunk in stream:
        into.append(chunk)  # noqa: PERF401 - `into` keeps what arrived before an error
    return into


def text(chunks: list[ChatChunk]) -> str:
    """The text the caller received."""
    return "".join(chunk.delta for chunk in chunks)


async def test_a_failure_before_the_first_token_fails_over() -> None:
    """a fails before any chunk; b streams; the last chunk carries usage and the record."""
    health = isolated_health()
    route = Route(
        "r",
        [
            Target("a", scripted("a", turn.fail(503))),
            Target("b", scripted("b", turn.stream(["Roll ", "back."], usage=Usage(3, 2)))),
        ],
        health=health,
    )
    chunks = await health.clock.run(collect(route.stream(QUESTION), []))
    assert text(chunks) == "Roll back."
    last = chunks[-1]
    assert last.finish_reason == "stop"
    assert last.usage == Usage(3, 2)
    assert isinstance(last.routing, RoutingRecord)
    assert last.routing.outcomes() == [("a", "failed"), ("b", "answered")]
    assert last.routing.attempts[1].committed
    assert last.routing.usage == Usage(3, 2)


async def test_chunks_without_content_do_not_commit() -> None:
    """An empty (role-only) chunk then a cut is still before commit: the route fails over."""
    health = isolated_health()
    route = Route(
        "r",
        [
            Target("a", scripted("a", turn.stream([ChatChunk()], then=turn.cut()))),
            Target("b", scripted("b", turn.stream(["ok"]))),
        ],
        health=health,
    )
    chunks = await health.clock.run(collect(route.stream(QUESTION), []))
    assert text(chunks) == "ok"
    assert chunks[-1].routing is not None
    assert chunks[-1].routing.attempts[0].reason == "connection reset"


async def test_a_break_after_the_first_token_is_stream_broken() -> None:
    """After the first token there is no failover: a cut raises StreamBroken."""
    health = isolated_health()
    backup = scripted("b", turn.stream(["never"]))
    seen: list[RoutingRecord] = []
    route = Route(
        "r",
        [
            Target("a", scripted("a", turn.stream(["Roll ", "ba"], then=turn.cut()))),
            Target("b", backup),
        ],
        on_routed=seen.append,
        health=health,
    )
    received: list[ChatChunk] = []
    with pytest.raises(errors.StreamBroken) as caught:
        await health.clock.run(collect(route.stream(QUESTION), received))
    assert text(received) == "Roll ba"
    assert backup.calls == 0
    record = caught.value.routing
    assert record is not None
    assert record.outcomes() == [("a", "failed"), ("b", "not_tried")]
    assert record.attempts[0].committed
    assert seen == [record]
    assert health.snapshot().get(("a", "a-m")).failures == 1  # type: ignore[union-attr]


async def test_a_stream_broken_after_content_is_billed_on_an_estimate() -> None:
    """A cut after content the provider never counted: the record bills the target that sent
    it, on an estimate of the prompt and the text sent, and the entry says so."""
    health = isolated_health()
    route = Route(
        "r",
        [Target("a", scripted("a", turn.stream(["x" * 40, "y" * 40], then=turn.cut())))],
        health=health,
    )
    with pytest.raises(errors.StreamBroken) as caught:
        await health.clock.run(collect(route.stream(QUESTION), []))
    record = caught.value.routing
    assert record is not None
    prompt = len("Why is checkout failing?") // 4
    assert (record.answered, record.served_provider, record.usage) == (None, "a", Usage(prompt, 20))
    assert "usage estimated" in (record.attempts[0].reason or "")


async def test_a_stream_broken_after_content_is_billed_on_the_usage_reported() -> None:
    """A cut after the provider reported usage that covers the text sent: that usage is billed
    as reported, not estimated."""
    health = isolated_health()
    counted = ChatChunk(delta="Roll ", usage=Usage(11, 7))
    route = Route(
        "r",
        [Target("a", scripted("a", turn.stream([counted, "ba"], then=turn.cut())))],
        health=health,
    )
    with pytest.raises(errors.StreamBroken) as caught:
        await health.clock.run(collect(route.stream(QUESTION), []))
    record = caught.value.routing
    assert record is not None
    assert record.usage == Usage(11, 7)
    assert "usage estimated" not in (record.attempts[0].reason or "")


async def test_a_committed_stream_that_goes_silent_breaks_after_the_idle_timeout() -> None:
    """A stall after the first token ends as StreamBroken after stream_idle_timeout."""
    health = isolated_health()
    route = Route(
        "r",
        [Target("a", scripted("a", turn.stream(["Roll"], then=turn.stall())))],
        stream_idle_timeout=7,
        health=health,
    )
    with pytest.raises(errors.StreamBroken) as caught:
        await health.clock.run(collect(route.stream(QUESTION), []))
    assert health.clock.now() == 7.0
    assert caught.value.routing is not None
    assert caught.value.routing.attempts[0].reason == (
        "silent for 7 s after the first token; usage estimated"
    )


async def test_first_token_timeout_bounds_the_wait_for_the_first_token() -> None:
    """A stream silent before its first token times out at first_token_timeout and fails over."""
    health = isolated_health()
    route = Route(
        "r",
        [
            Target("a", scripted("a", turn.stream([], then=turn.stall())), first_token_timeout=4),
            Target("b", scripted("b", turn.stream(["ok"]))),
        ],
        health=health,
    )
    chunks = await health.clock.run(collect(route.stream(QUESTION), []))
    assert health.clock.now() == 4.0
    assert chunks[-1].routing is not None
    assert chunks[-1].routing.attempts[0].error_class == "timeout"


async def test_a_stream_ending_without_finish_reason_before_commit_is_provider_error() -> None:
    """No content and no finish reason: provider_error before commit, so it fails over."""
    health = isolated_health()
    route = Route(
        "r",
        [
            Target("a", scripted("a", turn.stream([], finish_reason=None))),
            Target("b", scripted("b", turn.stream(["ok"]))),
        ],
        health=health,
    )
    chunks = await health.clock.run(collect(route.stream(QUESTION), []))
    assert chunks[-1].routing is not None
    assert chunks[-1].routing.attempts[0].error_class == "provider_error"


async def test_a_stream_ending_without_finish_reason_after_commit_is_broken() -> None:
    """Content, then the end with no finish reason: StreamBroken, never a silent success."""
    health = isolated_health()
    route = Route(
        "r", [Target("a", scripted("a", turn.stream(["half"], finish_reason=None)))], health=health
    )
    with pytest.raises(errors.StreamBroken):
        await health.clock.run(collect(route.stream(QUESTION), []))


async def test_a_refusal_at_the_end_of_a_committed_stream_is_stream_refused() -> None:
    """A committed stream ending with content_filter raises StreamRejected(stream_refused)."""
    health = isolated_health()
    route = Route(
        "r", [Target("a", scripted("a", turn.stream(["I"], then=turn.refuse())))], health=health
    )
    with pytest.raises(errors.StreamRejected) as caught:
        await health.clock.run(collect(route.stream(QUESTION), []))
    assert caught.value.code == "stream_refused"
    assert caught.value.transient
    assert caught.value.routing is not None
    assert caught.value.routing.attempts[0].outcome == "refused"


async def test_accept_runs_at_the_end_of_a_committed_stream() -> None:
    """accept rejecting the finished stream raises StreamRejected(stream_rejected)."""
    health = isolated_health()
    route = Route(
        "r",
        [Target("a", scripted("a", turn.stream(["Roll back."]))), Target("b", scripted("b"))],
        accept=lambda r: None if "because" in r.text else "it gives no reason",
        health=health,
    )
    with pytest.raises(errors.StreamRejected) as caught:
        await health.clock.run(collect(route.stream(QUESTION), []))
    assert (caught.value.code, caught.value.reason) == ("stream_rejected", "it gives no reason")


async def test_hedged_streams_let_the_first_stream_with_a_token_win() -> None:
    """a stalls before its first token; b starts after hedge_after and wins; a lost_race."""
    health = isolated_health()
    route = Route(
        "r",
        [
            Target("a", scripted("a", turn.stream([], then=turn.stall()))),
            Target("b", scripted("b", turn.stream(["fast"]))),
        ],
        hedge_after=2,
        health=health,
    )
    chunks = await health.clock.run(collect(route.stream(QUESTION), []))
    assert text(chunks) == "fast"
    assert chunks[-1].routing is not None
    assert chunks[-1].routing.outcomes() == [("a", "lost_race"), ("b", "answered")]
    assert chunks[-1].routing.hedges == 1


async def test_closing_a_committed_stream_early_records_cancelled() -> None:
    """The caller stops reading after the first chunk: the call is cancelled, on_routed runs."""
    clock = FakeClock()
    health = isolated_health(clock=clock)
    seen: list[RoutingRecord] = []
    route = Route(
        "r",
        [Target("a", scripted("a", turn.stream(["one ", turn.sleep(1), "two"]), clock=clock))],
        on_routed=seen.append,
        health=health,
    )
    stream = route.stream(QUESTION)
    first = await clock.run(anext(stream))
    assert first.delta == "one "
    await stream.aclose()
    assert len(seen) == 1
    assert seen[0].attempts[0].outcome == "cancelled"
    assert seen[0].attempts[0].committed


async def test_cancelling_the_reader_before_commit_cancels_the_call() -> None:
    """The reader's task is cancelled while waiting for the first token: `cancelled`."""
    clock = FakeClock()
    health = isolated_health(clock=clock)
    seen: list[RoutingRecord] = []
    route = Route(
        "r",
        [Target("a", scripted("a", turn.stream([], then=turn.stall())))],
        on_routed=seen.append,
        health=health,
    )
    task = asyncio.ensure_future(collect(route.stream(QUESTION), []))
    await clock.settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen[0].attempts[0].outcome == "cancelled"
    assert not seen[0].attempts[0].committed


async def test_a_stream_answer_turn_and_a_complete_over_a_stream_turn_interoperate() -> None:
    """complete() over a stream turn joins its text; stream() over an answer turn streams it."""
    health = isolated_health()
    client = scripted("a", turn.stream(["a", "b"]), turn.answer("whole"))
    route = Route("r", [Target("a", client)], health=health)
    response = await health.clock.run(route.complete(QUESTION))
    chunks = await health.clock.run(collect(route.stream(QUESTION), []))
    assert (response.text, text(chunks)) == ("ab", "whole")


async def test_the_stream_holds_its_routing_record_at_the_first_chunk() -> None:
    """route.stream(...).routing already lists the failed attempt when the first chunk arrives."""
    health = isolated_health()
    route = Route(
        "r",
        [
            Target("a", scripted("a", turn.fail(429))),
            Target("b", scripted("b", turn.stream(["Roll ", "back."]))),
        ],
        health=health,
    )
    stream = route.stream(QUESTION)
    assert stream.routing.route == "r"

    async def first_then_rest() -> tuple[list[tuple[str, str]], ChatChunk | None]:
        first = await anext(stream)
        seen = [(entry.target, entry.outcome) for entry in stream.routing.attempts]
        last = None
        async for chunk in stream:
            last = chunk
        assert first.delta == "Roll "
        return seen, last

    seen, last = await health.clock.run(first_then_rest())
    assert seen[0] == ("a", "failed")
    assert seen[1][0] == "b"
    assert last is not None
    assert last.routing is stream.routing


class _Recording(ScriptedModel):
    """A scripted model that keeps whether each stream call was asked to relay."""

    def __init__(self, *turns: object) -> None:
        super().__init__("a", "a-m", list(turns))  # type: ignore[arg-type]
        self.relays: list[bool] = []

    async def stream(self, request: ChatRequest) -> AsyncIterator[ChatChunk]:
        self.relays.append(request.source is not None and request.source.relay)
        async for chunk in super().stream(request):
            yield chunk


def _relaying() -> ChatRequest:
    """A caller's own body that asks a same-format client to relay its stream."""
    body = b'{"model": "m", "stream": true, "messages": [{"role": "user", "content": "Hi"}]}'
    request = openai_chat.decode_request(body)
    assert request.source is not None
    request.source = dataclasses.replace(request.source, relay=True)
    return request


@pytest.mark.parametrize(("accept", "relay"), [(None, True), (lambda r: None, False)])
async def test_a_route_that_reads_the_text_does_not_relay(accept: object, relay: bool) -> None:
    """The wish to relay reaches the client, unless the route's `accept` reads the text."""
    health = isolated_health()
    model = _Recording(turn.stream(["Roll back."]))
    route = Route("r", [Target("a", model)], accept=accept, health=health)  # type: ignore[arg-type]
    await health.clock.run(collect(route.stream(_relaying()), []))
    assert model.relays == [relay]
