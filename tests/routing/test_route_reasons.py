"""Attempt entries say what happened in words (`turnout.routing.reasons`): a failure, a skip,
what a translation to the target's wire format dropped; the answering entry never carries an
error class."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from turnout import errors
from turnout.errors import ProviderError
from turnout.routing.reasons import (
    dropped_reason,
    failure_reason,
    joined,
    skip_reason,
    timeout_reason,
)
from turnout.routing.route import Route, Target
from turnout.testing import ScriptedModel, isolated_health, turn
from turnout.wire.model import ChatRequest, Message

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from turnout.record import AttemptEntry, RoutingRecord
    from turnout.testing import IsolatedHealth
    from turnout.wire.model import ChatChunk, ChatResponse, WireFormat

QUESTION = [Message.user("Why is checkout failing?")]


def _model(name: str, *turns: Any, clock: Any = None) -> ScriptedModel:
    return ScriptedModel(name, f"{name}-m", list(turns), clock=clock)


async def _record(route: Route, health: IsolatedHealth, request: Any = QUESTION) -> RoutingRecord:
    """The record of one request answered whole."""
    response = await health.clock.run(route.complete(request))
    assert response.routing is not None
    return response.routing


def _reasons(record: RoutingRecord) -> list[tuple[str, str | None, str | None]]:
    """(outcome, error_class, reason) per entry."""
    return [(e.outcome, e.error_class, e.reason) for e in record.attempts]


# ---- the words ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "error_class", "words"),
    [
        (errors.RateLimited("slow down", status=429, retry_after=2), "rate_limited",
         "429 rate limited, Retry-After 2 s"),
        (errors.RateLimited("slow down", status=429, retry_after=0.5), "rate_limited",
         "429 rate limited, Retry-After 0.5 s"),
        (errors.ProviderUnavailable("busy", status=503), "provider_error", "503 upstream error"),
        (errors.ProviderUnavailable("oops", status=500), "provider_error", "500 upstream error"),
        (errors.QuotaExhausted("credit", status=402), "quota_exhausted", "402 quota exhausted"),
        (errors.AuthenticationFailed("no", status=401), "auth", "401 key rejected"),
        (errors.InvalidRequest("bad", status=400), "invalid_request", "400 invalid request"),
        (errors.ProviderTimeout("slow", status=408), "timeout", "408 timed out"),
        (ProviderError("peer reset", reason="connection"), "provider_error", "connection reset"),
        (ProviderError("cannot connect: [Errno 111] Connection refused", reason="connection"),
         "provider_error", "connection refused"),
        (ProviderError("idle", reason="read timeout"), "timeout", "read timed out"),
        (ProviderError("no tcp", reason="connect timeout"), "timeout", "connect timed out"),
        (ProviderError("cut", reason="stream_ended"), "provider_error", "stream ended early"),
        (ProviderError("event", reason="overloaded_error"), "provider_error",
         "upstream error (overloaded_error)"),
        (ProviderError("inner", status=503, reason="route_exhausted"), "provider_error",
         "503 upstream error (route_exhausted)"),
        (ProviderError("odd"), "provider_error", "upstream error"),
    ],
)  # fmt: skip
def test_a_failure_in_words(error: ProviderError, error_class: str, words: str) -> None:
    """Status and class in words, the Retry-After when there is one; transport failures by
    what happened to the connection."""
    assert failure_reason(error, error_class) == words


def test_timeouts_skips_drops_and_joins_in_words() -> None:
    """A call's own deadline, a health skip, dropped fields, and two reasons joined."""
    assert timeout_reason(30, first_token=False) == "timed out after 30 s"
    assert timeout_reason(5, first_token=True) == "no first token within 5 s"
    assert skip_reason("cooling_down", "60 s") == "cooling down, 60 s left"
    assert skip_reason("breaker_open", "3 s") == "breaker open, 3 s left"
    assert dropped_reason(["logprobs", "n"]) == "dropped logprobs, n"
    assert dropped_reason([]) is None
    assert joined("503 upstream error", "dropped n") == "503 upstream error; dropped n"
    assert joined(None, "dropped n") == "dropped n"
    assert joined("x", None) == "x"


# ---- failures and skips through a route -----------------------------------------------------


async def test_a_call_cut_by_its_timeout_says_how_long_it_waited() -> None:
    """A whole call silent past its `timeout` of 30 s: `timed out after 30 s`."""
    health = isolated_health()
    silent = _model("silent", turn.hang())
    route = Route(
        "r",
        [Target("silent", silent, timeout=30), Target("b", _model("b", turn.answer("ok")))],
        health=health,
    )
    record = await _record(route, health)
    assert _reasons(record)[0] == ("failed", "timeout", "timed out after 30 s")


async def test_a_stream_without_a_first_token_says_so() -> None:
    """A stream with no first token within its `first_token_timeout` of 5 s says so."""
    health = isolated_health()
    slow = _model("slow", turn.stream(["late"], delay=9), clock=health.clock)
    backup = _model("b", turn.stream(["ok"]))
    route = Route(
        "r",
        [Target("slow", slow, first_token_timeout=5), Target("b", backup)],
        health=health,
    )
    stream = route.stream(QUESTION)
    chunks = await health.clock.run(_collect(stream))
    assert "".join(chunk.delta for chunk in chunks) == "ok"
    assert _reasons(stream.routing)[0] == ("failed", "timeout", "no first token within 5 s")


async def _collect(stream: AsyncIterator[ChatChunk]) -> list[ChatChunk]:
    return [chunk async for chunk in stream]


async def test_failures_and_skips_in_words() -> None:
    """A 429 with Retry-After 60, a refused connection and a 503 with Retry-After 2 in words;
    the next request finds the first target cooling down and says for how long."""
    health = isolated_health()
    route = Route(
        "r",
        [
            Target("a", _model("a", turn.fail(429, retry_after=60))),
            Target("b", _model("b", turn.conn_error(), turn.conn_error())),
            Target("c", _model("c", turn.fail(503, retry_after=2), turn.fail(503))),
            Target("d", _model("d", turn.answer("ok"), turn.answer("ok"))),
        ],
        health=isolated_health(breaker=None, clock=health.clock),
    )
    record = await _record(route, health)
    assert _reasons(record) == [
        ("failed", "rate_limited", "429 rate limited, Retry-After 60 s"),
        ("failed", "provider_error", "connection refused"),
        ("failed", "provider_error", "503 upstream error, Retry-After 2 s"),
        ("answered", None, None),
    ]
    health.clock.advance(10)
    again = await _record(route, health)
    assert _reasons(again)[0] == ("cooling_down", None, "cooling down, 50 s left")


# ---- the answering entry has no error class -------------------------------------------------


async def test_a_retried_then_answered_target_answers_without_an_error_class() -> None:
    """The retry that answers is an entry of its own, without the first call's class."""
    health = isolated_health()
    flaky = _model("flaky", turn.fail(503), turn.answer("second time"))
    route = Route("r", [Target("flaky", flaky, max_retries=1)], health=health)
    record = await _record(route, health)
    assert _reasons(record) == [
        ("failed", "provider_error", "503 upstream error"),
        ("answered", None, None),
    ]


async def test_a_hedge_winner_answers_without_an_error_class() -> None:
    """The hedge that wins is `answered` with no class; the slow call lost the race."""
    health = isolated_health()
    slow = _model("slow", turn.answer("slow", delay=5), clock=health.clock)
    fast = _model("fast", turn.answer("fast", delay=1), clock=health.clock)
    route = Route("r", [Target("slow", slow), Target("fast", fast)], health=health, hedge_after=1)
    record = await _record(route, health)
    assert _reasons(record) == [("lost_race", None, None), ("answered", None, None)]


async def test_a_fallback_route_answers_without_an_error_class() -> None:
    """A general fallback route's answer has no class, after the first route's failure."""
    health = isolated_health()
    spare = Route("spare", [Target("s", _model("s", turn.answer("spare")))], health=health)
    route = Route(
        "r",
        [Target("a", _model("a", turn.fail(503))), Target("b", _model("b", turn.fail(500)))],
        health=health,
        fallbacks={"general": [spare]},
    )
    record = await _record(route, health)
    assert _reasons(record)[-1] == ("answered", None, None)
    assert record.fallback_route == "spare"


# ---- what a translation dropped -------------------------------------------------------------


class _Speaks:
    """A scripted model that says which wire format it speaks, as a provider adapter does."""

    def __init__(self, model: ScriptedModel, wire_format: WireFormat) -> None:
        self.inner = model
        self.wire_format = wire_format

    @property
    def provider(self) -> str:
        return self.inner.provider

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return await self.inner.complete(request)

    def stream(self, request: ChatRequest) -> AsyncIterator[ChatChunk]:
        return self.inner.stream(request)


def _from_openai(**extra: Any) -> ChatRequest:
    """A request as the OpenAI codec decodes it, carrying `extra` fields."""
    return ChatRequest(messages=QUESTION, origin="openai-chat", extra=extra)


async def test_the_answering_entry_names_the_fields_a_translation_dropped() -> None:
    """An OpenAI request with logprobs and n, answered by an Anthropic-format target: the
    answering entry says `dropped logprobs, n`; the failing one adds it after its own words."""
    health = isolated_health()
    claude_a = _Speaks(_model("claude-a", turn.fail(503)), "anthropic-messages")
    claude_b = _Speaks(_model("claude-b", turn.answer("ok")), "anthropic-messages")
    route = Route("r", [Target("a", claude_a), Target("b", claude_b)], health=health)
    record = await _record(route, health, _from_openai(logprobs=True, n=2))
    assert _reasons(record) == [
        ("failed", "provider_error", "503 upstream error; dropped logprobs, n"),
        ("answered", None, "dropped logprobs, n"),
    ]


async def test_a_target_of_the_requests_own_format_drops_nothing() -> None:
    """The same request answered by an OpenAI-format target (or one that does not say its
    format) has no reason; a request built in code names nothing either."""
    health = isolated_health()
    gpt = _Speaks(_model("gpt", turn.answer("ok"), turn.answer("ok")), "openai-chat")
    plain = _model("plain", turn.answer("ok"))
    route = Route("r", [Target("gpt", gpt)], health=health)
    assert _reasons(await _record(route, health, _from_openai(logprobs=True))) == [
        ("answered", None, None)
    ]
    claude = _Speaks(_model("claude", turn.answer("ok")), "anthropic-messages")
    coded = Route("coded", [Target("claude", claude)], health=health)
    assert _reasons(await _record(coded, health, ChatRequest(messages=QUESTION))) == [
        ("answered", None, None)
    ]
    untold = Route("untold", [Target("plain", plain)], health=health)
    assert _reasons(await _record(untold, health, _from_openai(logprobs=True))) == [
        ("answered", None, None)
    ]


async def test_a_retry_and_a_stream_keep_the_dropped_fields() -> None:
    """A same-target retry is translated too, and a streamed answer names the drop."""
    health = isolated_health()
    claude = _Speaks(
        _model("claude", turn.fail(503), turn.answer("ok"), turn.stream(["hi"])),
        "anthropic-messages",
    )
    route = Route("r", [Target("claude", claude, max_retries=1)], health=health)
    record = await _record(route, health, _from_openai(n=2))
    assert [entry.reason for entry in record.attempts] == [
        "503 upstream error; dropped n",
        "dropped n",
    ]
    stream = route.stream(_from_openai(n=2))
    await health.clock.run(_collect(stream))
    answered: AttemptEntry = stream.routing.attempts[-1]
    assert (answered.outcome, answered.reason) == ("answered", "dropped n")
