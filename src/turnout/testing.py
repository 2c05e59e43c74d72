"""Test a route without a model: scripted chat clients, a fake clock and isolated health.

A `ScriptedModel` plays one scripted turn per call and records every request it received, so a
test can drive a `Route` through failures, refusals, hangs and streams without a network or an
API key. Time-based behaviour (breakers, cooldowns, hedges, backoff) runs on a `FakeClock`, so
a 60 s breaker passes in microseconds::

    from turnout import Route, Target, Message
    from turnout.testing import ScriptedModel, turn, isolated_health

    async def test_backup_answers_when_primary_fails() -> None:
        health = isolated_health()
        primary = ScriptedModel("northwind", "nw-large", [turn.fail(503)])
        backup = ScriptedModel("local", "llama-local", [turn.answer("Roll back deploy 412.")])
        route = Route("triage", [Target("primary", primary), Target("backup", backup)],
                      health=health)
        response = await health.clock.run(route.complete([Message.user("Why?")]))
        assert response.text == "Roll back deploy 412."
        assert response.routing.outcomes() == [("primary", "failed"), ("backup", "answered")]

The same models serve `Route.embed`: `turn.embedding([[0.1, 0.2]])` answers an embeddings call,
and `turn.fail(…)`, `turn.hang()`, `turn.conn_error()` and `turn.timeout()` fail one.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from turnout.errors import ProviderError
from turnout.routing.clock import Clock, FakeClock, LoopClock
from turnout.routing.health import DEFAULT_BREAKER, Breaker, Health
from turnout.vendors.classify import classify_status
from turnout.wire.model import (
    ChatChunk,
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    EmbeddingResponse,
    TextPart,
    Usage,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping, Sequence

__all__ = ["FakeClock", "IsolatedHealth", "ScriptedModel", "Turn", "isolated_health", "turn"]

TurnKind = Literal[
    "answer",
    "fail",
    "refuse",
    "hang",
    "conn_error",
    "timeout",
    "stream",
    "cut",
    "stall",
    "sleep",
    "embedding",
]
REFUSAL_TEXT = "I can't help with that."
_EMBED_ONLY: frozenset[TurnKind] = frozenset({"embedding"})
_CHAT_ONLY: frozenset[TurnKind] = frozenset({"answer", "refuse", "stream", "cut", "stall", "sleep"})


@dataclass(frozen=True, slots=True)
class Turn:
    """One scripted call (build turns with the `turn` namespace, not directly).

    `delay` (seconds, on the model's clock) passes before the turn plays.
    """

    kind: TurnKind
    text: str = ""
    usage: Usage | None = None
    finish_reason: str | None = "stop"
    status: int | None = None
    retry_after: float | None = None
    reset_after: float | None = None
    message: str | None = None
    error_type: str | None = None
    pieces: tuple[str | ChatChunk | Turn, ...] = ()
    then: Turn | None = None
    delay: float | None = None
    seconds: float = 0.0
    vectors: tuple[tuple[float, ...], ...] = ()


class turn:  # noqa: N801 - a lowercase namespace reads like the scripts it builds
    """Builders for scripted turns: `turn.answer("…")`, `turn.fail(429, retry_after=8)` …"""

    @staticmethod
    def answer(
        text: str,
        usage: Usage | None = None,
        finish_reason: str | None = "stop",
        *,
        delay: float | None = None,
    ) -> Turn:
        """Answer with `text`. Without `usage`, the usage is estimated (characters ÷ 4, ≥ 1)."""
        return Turn("answer", text=text, usage=usage, finish_reason=finish_reason, delay=delay)

    @staticmethod
    def fail(
        status: int,
        retry_after: float | None = None,
        message: str | None = None,
        error_type: str | None = None,
        *,
        reset_after: float | None = None,
        delay: float | None = None,
    ) -> Turn:
        """Fail with HTTP `status`, classified as a provider would (`classify_status`).

        `retry_after` is the Retry-After in seconds; `error_type` the vendor's error type
        (e.g. `insufficient_quota`); `reset_after` a vendor quota reset, seconds from now.
        """
        return Turn(
            "fail",
            status=status,
            retry_after=retry_after,
            message=message,
            error_type=error_type,
            reset_after=reset_after,
            delay=delay,
        )

    @staticmethod
    def embedding(
        vectors: Sequence[Sequence[float]],
        usage: Usage | None = None,
        *,
        delay: float | None = None,
    ) -> Turn:
        """Answer an embeddings call with `vectors` (one per input, in order). Without `usage`,
        the usage is estimated (input characters ÷ 4, ≥ 1; no output tokens)."""
        frozen = tuple(tuple(float(x) for x in vector) for vector in vectors)
        return Turn("embedding", vectors=frozen, usage=usage, delay=delay)

    @staticmethod
    def refuse(*, delay: float | None = None) -> Turn:
        """Answer with the finish reason `content_filter` (a refusal)."""
        return Turn("refuse", text=REFUSAL_TEXT, finish_reason="content_filter", delay=delay)

    @staticmethod
    def hang() -> Turn:
        """Never answer: wait until the call is cancelled."""
        return Turn("hang")

    @staticmethod
    def conn_error(*, delay: float | None = None) -> Turn:
        """Fail as a refused or reset connection (`provider_error`, reason `connection`)."""
        return Turn("conn_error", delay=delay)

    @staticmethod
    def timeout(*, delay: float | None = None) -> Turn:
        """Fail as the client's own read timeout (`timeout`)."""
        return Turn("timeout", delay=delay)

    @staticmethod
    def stream(
        pieces: Sequence[str | ChatChunk | Turn],
        then: Turn | None = None,
        *,
        usage: Usage | None = None,
        finish_reason: str | None = "stop",
        delay: float | None = None,
    ) -> Turn:
        """Stream `pieces`: a `str` is a text delta, a `ChatChunk` is sent as is (an empty one
        does not commit), `turn.sleep(s)` pauses, `turn.fail(…)` / `turn.cut()` break the stream
        there and `turn.stall()` goes silent there.

        `then` says how the stream ends: None = a last chunk with `finish_reason` (None = no
        finish reason at all) and `usage`; `turn.cut()` = the connection breaks;
        `turn.stall()` = it goes silent; `turn.refuse()` = a last chunk with `content_filter`.
        """
        return Turn(
            "stream",
            pieces=tuple(pieces),
            then=then,
            usage=usage,
            finish_reason=finish_reason,
            delay=delay,
        )

    @staticmethod
    def cut() -> Turn:
        """In a stream: the connection breaks (`provider_error`, reason `connection`)."""
        return Turn("cut")

    @staticmethod
    def stall() -> Turn:
        """In a stream: go silent until cancelled."""
        return Turn("stall")

    @staticmethod
    def sleep(seconds: float) -> Turn:
        """In a stream: pause `seconds` on the model's clock before the next piece."""
        return Turn("sleep", seconds=seconds)


class ScriptedModel:
    """A chat client that plays one scripted `Turn` per call (`complete`, `stream` or `embed`).

    `provider` names its account (part of the default health key) and `model` the model it
    answers as when the request names none. `prices` maps models to USD per 1M (input, output)
    tokens, read by `cost_budget` and `lowest-cost`. `clock` is what turn delays sleep on
    (default: the real clock). `requests` holds every chat request received and
    `embed_requests` every embeddings request, in order; one script serves both. A call after
    the script ran out, or a turn of the wrong kind (an `embedding` turn for a chat call, an
    answer or stream turn for an embeddings call), raises `AssertionError`.
    """

    def __init__(
        self,
        provider: str,
        model: str,
        turns: Sequence[Turn],
        *,
        prices: Mapping[str, tuple[float, float]] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._provider = provider
        self.model = model
        self.turns = list(turns)
        self.prices = dict(prices or {})
        self.clock: Clock = clock if clock is not None else LoopClock()
        self.requests: list[ChatRequest] = []
        self.embed_requests: list[EmbeddingRequest] = []
        self._played = 0

    def __repr__(self) -> str:
        return f"ScriptedModel({self._provider!r}, {self.model!r}, {len(self.turns)} turns)"

    @property
    def provider(self) -> str:
        """The account this model stands for."""
        return self._provider

    @property
    def calls(self) -> int:
        """How many calls it received (chat and embeddings)."""
        return self._played

    @property
    def remaining(self) -> int:
        """How many scripted turns are left."""
        return len(self.turns) - self._played

    def price_for(self, model: str | None) -> tuple[float, float] | None:
        """USD per 1M (input, output) tokens of `model` (its own model when None), or None."""
        return self.prices.get(model or self.model)

    def _next(self, request: ChatRequest | EmbeddingRequest) -> Turn:
        number = self._played
        if number >= len(self.turns):
            raise AssertionError(
                f"ScriptedModel {self._provider}/{self.model}: the script ran out after "
                f"{len(self.turns)} turns (call {number + 1})"
            )
        self._played += 1
        if isinstance(request, EmbeddingRequest):
            self.embed_requests.append(request)
        else:
            self.requests.append(request)
        step = self.turns[number]
        embedding = isinstance(request, EmbeddingRequest)
        if step.kind in (_CHAT_ONLY if embedding else _EMBED_ONLY):
            call = "an embeddings" if embedding else "a chat"
            raise AssertionError(
                f"ScriptedModel {self._provider}/{self.model}: turn {number + 1} "
                f"({step.kind!r}) cannot play {call} call"
            )
        return step

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """Play the next turn as a whole answer (a stream turn answers with its joined text)."""
        step = self._next(request)
        if step.delay:
            await self.clock.sleep(step.delay)
        if step.kind == "stream":
            return await self._joined(step, request)
        if step.kind in {"answer", "refuse"}:
            return self._response(step.text, step.finish_reason, step.usage, request)
        await self._misbehave(step)
        raise AssertionError(f"turn {step.kind!r} cannot end a call")  # pragma: no cover

    async def stream(self, request: ChatRequest) -> AsyncIterator[ChatChunk]:
        """Play the next turn as a stream: chunks, then a last chunk with finish reason and
        usage (see `turn.stream` for the pieces and endings)."""
        step = self._next(request)
        if step.delay:
            await self.clock.sleep(step.delay)
        model = request.model or self.model
        if step.kind in {"answer", "refuse"}:
            yield ChatChunk(delta=step.text, model=model)
            usage = step.usage or _estimate(request, step.text)
            yield ChatChunk(finish_reason=step.finish_reason, usage=usage, model=model)
            return
        if step.kind != "stream":
            await self._misbehave(step)
        text: list[str] = []
        for piece in step.pieces:
            if isinstance(piece, str):
                text.append(piece)
                yield ChatChunk(delta=piece, model=model)
            elif isinstance(piece, ChatChunk):
                text.append(piece.delta)
                yield piece
            else:
                await self._misbehave(piece)
        ending = step.then
        if ending is not None and ending.kind != "refuse":
            await self._misbehave(ending)
        finish = "content_filter" if ending is not None else step.finish_reason
        if finish is not None:
            usage = step.usage or _estimate(request, "".join(text))
            yield ChatChunk(finish_reason=finish, usage=usage, model=model)

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        """Play the next turn for an embeddings call: `turn.embedding(…)` answers with its
        vectors; `fail`, `hang`, `conn_error` and `timeout` turns fail as for `complete`."""
        step = self._next(request)
        if step.delay:
            await self.clock.sleep(step.delay)
        if step.kind != "embedding":
            await self._misbehave(step)
            raise AssertionError(f"turn {step.kind!r} cannot end a call")  # pragma: no cover
        texts = [request.input] if isinstance(request.input, str) else request.input
        chars = sum(len(text) for text in texts if isinstance(text, str))
        return EmbeddingResponse(
            data=[list(vector) for vector in step.vectors],
            model=request.model or self.model,
            usage=step.usage or Usage(max(1, chars // 4), 0),
            provider_request_id=f"{self._provider}-{self._played}",
        )

    async def _joined(self, step: Turn, request: ChatRequest) -> ChatResponse:
        text: list[str] = []
        for piece in step.pieces:
            if isinstance(piece, str):
                text.append(piece)
            elif isinstance(piece, ChatChunk):
                text.append(piece.delta)
            else:
                await self._misbehave(piece)
        if step.then is not None and step.then.kind != "refuse":
            await self._misbehave(step.then)
        finish = "content_filter" if step.then is not None else step.finish_reason
        return self._response("".join(text), finish, step.usage, request)

    async def _misbehave(self, step: Turn) -> None:
        """Play a turn that does not answer: raise its error, hang, or pause."""
        if step.kind == "sleep":
            await self.clock.sleep(step.seconds)
            return
        if step.kind in {"hang", "stall"}:
            await asyncio.get_running_loop().create_future()
        raise self._error(step)

    def _error(self, step: Turn) -> ProviderError:
        if step.kind == "fail":
            status = step.status or 500
            error_class = classify_status(
                status, error_type=step.error_type, message=step.message or ""
            )
            return ProviderError.for_class(
                error_class,
                step.message or f"{status} from the provider",
                status=status,
                retry_after=step.retry_after,
                reset_at=step.reset_after,
                error_type=step.error_type,
                provider=self._provider,
            )
        if step.kind == "timeout":
            return ProviderError.for_class(
                "timeout", "the read timed out", reason="timeout", provider=self._provider
            )
        message = "the stream was cut" if step.kind == "cut" else "the connection was refused"
        return ProviderError.for_class(
            "provider_error", message, reason="connection", provider=self._provider
        )

    def _response(
        self, text: str, finish_reason: str | None, usage: Usage | None, request: ChatRequest
    ) -> ChatResponse:
        return ChatResponse(
            content=[TextPart(text)],
            model=request.model or self.model,
            finish_reason=finish_reason,
            usage=usage or _estimate(request, text),
            provider_request_id=f"{self._provider}-{self._played}",
        )


def _estimate(request: ChatRequest, text: str) -> Usage:
    return Usage(max(1, request.prompt_chars // 4), max(1, len(text) // 4))


class IsolatedHealth(Health):
    """A `Health` whose clock is a `FakeClock` (what `isolated_health` returns)."""

    clock: FakeClock


def isolated_health(
    *,
    breaker: Breaker | None = DEFAULT_BREAKER,
    key_by: str = "provider_model",
    clock: FakeClock | None = None,
) -> IsolatedHealth:
    """A fresh `Health` on a fresh `FakeClock` (`health.clock`), so tests never share breaker
    state or real time. `breaker` and `key_by` are `Health`'s (defaults: `Breaker()`,
    `provider_model`); pass `clock` to share one fake clock between several registries."""
    return IsolatedHealth(breaker, key_by, clock if clock is not None else FakeClock())
