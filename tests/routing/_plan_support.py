"""Shared pieces of the per-request plan tests: a scripted vendor that takes the caller's own
credential (a passthrough provider's stand-in), and plan builders."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnout.routing.plan import CallerCredential, RequestPlan, TargetPlan, TargetRule
from turnout.testing import ScriptedModel
from turnout.wire.model import Message

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping

    from turnout.routing.clock import Clock
    from turnout.routing.route import Route
    from turnout.wire.model import (
        ChatChunk,
        ChatRequest,
        ChatResponse,
        EmbeddingRequest,
        EmbeddingResponse,
    )

QUESTION = [Message.user("Why is checkout failing?")]
SECRET = "sk-caller-own-1234"
CALLER = TargetRule(caller_credential=True)
FALLBACK = TargetRule(fallback=True)
OWN = TargetRule()


def scripted(provider: str, *turns: object, clock: Clock | None = None) -> ScriptedModel:
    """A scripted model whose provider is `provider` (turn delays on `clock`)."""
    return ScriptedModel(provider, f"{provider}-m", list(turns), clock=clock)  # type: ignore[arg-type]


class Passthrough:
    """A scripted vendor reached with the caller's credential: `with_credential` binds one
    call; `seen` lists the credential each call carried (None: called without binding)."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model
        self.seen: list[str | None] = []

    @property
    def provider(self) -> str:
        return self.model.provider

    def with_credential(self, credential: CallerCredential) -> _Bound:
        return _Bound(self, credential.reveal())

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.seen.append(None)
        return await self.model.complete(request)

    def stream(self, request: ChatRequest) -> AsyncIterator[ChatChunk]:
        self.seen.append(None)
        return self.model.stream(request)

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        self.seen.append(None)
        return await self.model.embed(request)


class _Bound:
    """One call's view of a `Passthrough`, carrying the caller's credential."""

    def __init__(self, owner: Passthrough, secret: str) -> None:
        self.owner = owner
        self.secret = secret

    @property
    def provider(self) -> str:
        return self.owner.provider

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.owner.seen.append(self.secret)
        return await self.owner.model.complete(request)

    def stream(self, request: ChatRequest) -> AsyncIterator[ChatChunk]:
        self.owner.seen.append(self.secret)
        return self.owner.model.stream(request)

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResponse:
        self.owner.seen.append(self.secret)
        return await self.owner.model.embed(request)


def plan_of(
    routes: Mapping[Route, Mapping[int, TargetRule]], *, credential: bool = True, **_: Any
) -> RequestPlan:
    """A plan over `routes` (route -> index -> rule), carrying SECRET unless told not to."""
    plans = {route: TargetPlan(route, rules) for route, rules in routes.items()}
    return RequestPlan(plans, CallerCredential(SECRET) if credential else None)
