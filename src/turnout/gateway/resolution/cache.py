"""The response cache in front of a chat route (`docs/configuration.md`, Cache).

A chat request whose resolved route has `cache.enabled` visits the cache after the key, ceiling
and grant checks (`Runtime.resolve`) and before the credential filter and any call.

Rule 1: a hit makes no call: the stored answer goes back in the caller's format, whole or as an
SSE stream (the caller's `stream` flag decides, not how the answer was first produced), with a
routing record of its own (`hit_record`): `cache: "hit"`, no attempts, cost 0. Sending it is
the responses' part (`turnout.gateway.responses.cached`).
Rule 2: a miss routes as usual (`cache: "miss"`) and stores the answer when it is finished: a
whole answer before it is sent, a stream once the route ended it cleanly. Errors, refusals,
rejected, broken and abandoned streams are never stored (`CachedAnswer.is_cacheable`).
Rule 3: a `usage_only` key reads the cache and never writes it.
Rule 4: the cache never fails a call: a read that raises is a miss and a write that raises is
skipped; the first failure is logged as a warning, the next ones at debug level only, until the
store works again.
Rule 5: the key is `cache_key` of the project, the route, the requested model, the wire model
each of the route's targets would receive, and the request (not its `stream` flag or format).
The wire models are those of the route serving the caller's endpoint; a (route, model) pair's
are worked out once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from turnout.errors import InvalidRequest
from turnout.providers import facts_of
from turnout.record import RoutingRecord
from turnout.routing.request_state import new_request_id
from turnout.routing.stream import RoutedStream
from turnout.state.cache import AnswerCollector, CachedAnswer, cache_key

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator

    from turnout.access.keys import Caller
    from turnout.gateway.runtime.route_entry import Resolution
    from turnout.routing.route import Route
    from turnout.state.cache import ResponseCache
    from turnout.wire.model import ChatChunk, ChatRequest, ChatResponse

__all__ = ["CacheVisit", "ChatCache", "hit_record"]

logger = logging.getLogger(__name__)

_WIRE_CACHE_SIZE = 4096


class ChatCache:
    """The response cache as the gateway uses it: `responses` (the `ResponseCache` over the
    runtime's state store) behind Rules 3-5."""

    __slots__ = ("_failing", "_wires", "responses")

    def __init__(self, responses: ResponseCache) -> None:
        self.responses = responses
        self._failing = False
        self._wires: dict[tuple[Route, str | None], tuple[str | None, ...]] = {}

    async def look_up(
        self,
        resolution: Resolution,
        request: ChatRequest,
        caller: Caller,
        *,
        session_id: str | None = None,
    ) -> CacheVisit:
        """Look `request` up on the resolved route (whose `cache.enabled` the caller checked)."""
        config = resolution.entry.config
        assert config is not None, "only configured routes have a cache"
        route = resolution.route
        key = cache_key(
            caller.project,
            route.name,
            resolution.requested_model,
            self.wire_models(route, request.model),
            request,
        )
        return CacheVisit(
            cache=self,
            key=key,
            ttl=float(config.cache.ttl_seconds),
            writes=caller.recording != "usage_only",
            answer=await self.get(key),
            resolution=resolution,
            request=request,
            session_id=session_id,
        )

    def wire_models(self, route: Route, model: str | None) -> tuple[str | None, ...]:
        """The model each target of `route` would send upstream for a request of `model`: the
        target's model, else the request's, through the provider's default and aliases."""
        found = self._wires.get((route, model))
        if found is None:
            found = tuple(
                _wire_model(target.client, target.model or model) for target in route.targets
            )
            if len(self._wires) < _WIRE_CACHE_SIZE:
                self._wires[(route, model)] = found
        return found

    async def get(self, key: str) -> CachedAnswer | None:
        """The answer under `key`; None on a miss or when the store fails (Rule 4)."""
        try:
            answer = await self.responses.get(key)
        except Exception as exc:  # noqa: BLE001 - Rule 4: the cache never fails a call
            self._failed("read", exc)
            return None
        self._failing = False
        return answer

    async def put(self, key: str, answer: CachedAnswer, ttl: float) -> bool:
        """Store `answer` when it is finished; False when it is not or the store failed."""
        try:
            stored = await self.responses.put(key, answer, ttl)
        except Exception as exc:  # noqa: BLE001 - Rule 4: the cache never fails a call
            self._failed("write", exc)
            return False
        self._failing = False
        return stored

    def _failed(self, action: str, exc: Exception) -> None:
        if self._failing:
            logger.debug("response cache %s failed again: %r", action, exc)
            return
        self._failing = True
        logger.warning(
            "response cache %s failed (%r): serving without the cache until it works again",
            action,
            exc,
        )


def _wire_model(client: object, model: str | None) -> str | None:
    wire_model = facts_of(client).wire_model
    if wire_model is None:
        return model
    try:
        chosen: str | None = wire_model(model)
    except InvalidRequest:
        return model
    return chosen


@dataclass(slots=True)
class CacheVisit:
    """One chat request's visit to the cache: its `key`, the route's `ttl` (seconds), whether
    the caller `writes` (Rule 3), and the stored `answer` (None on a miss)."""

    cache: ChatCache
    key: str
    ttl: float
    writes: bool
    answer: CachedAnswer | None
    resolution: Resolution
    request: ChatRequest
    session_id: str | None = None

    @staticmethod
    def missed(exc: BaseException) -> None:
        """Rule 2 for a failed request: its record (when routing began) is a miss."""
        record: RoutingRecord | None = getattr(exc, "routing", None)
        if record is not None:
            record.cache = "miss"

    async def store(self, response: ChatResponse) -> None:
        """Rule 2 for a whole answer: mark its record a miss and store it when finished."""
        record = response.routing
        if record is not None:
            record.cache = "miss"
        if not self.writes:
            return
        answer = CachedAnswer.from_response(response)
        if record is not None and record.served_model:
            # The model the caller was shown (`answer_reply`), so a hit shows the same.
            answer = replace(answer, model=record.served_model)
        await self.cache.put(self.key, answer, self.ttl)

    def tap(self, stream: RoutedStream) -> RoutedStream:
        """Rule 2 for a stream: mark its record a miss and, for a caller that writes, store
        the answer once the route ended the stream cleanly."""
        stream.routing.cache = "miss"
        if not self.writes:
            return stream
        return RoutedStream(stream.routing, self._collect(stream))

    async def _collect(self, stream: RoutedStream) -> AsyncGenerator[ChatChunk, None]:
        collector = AnswerCollector()
        try:
            async for chunk in stream:
                collector.add(chunk)
                yield chunk
            # Only reached when the route ended the stream itself: a broken or refused stream
            # raised, an abandoned one was closed at a `yield`.
            answer = collector.answer(stream.routing.served_provider)
            if answer.model is None:
                answer = replace(answer, model=stream.routing.served_model)
            await self.cache.put(self.key, answer, self.ttl)
        finally:
            await stream.aclose()


def hit_record(
    resolution: Resolution,
    answer: CachedAnswer,
    *,
    session_id: str | None = None,
    request_id: str | None = None,
) -> RoutingRecord:
    """The routing record of a cache hit: the route, who served the stored answer, no
    attempts, cost 0 and no usage (the body still reports the usage the answer took when it
    was produced; this request used none). `request_id` is the caller's, else a new one."""
    route = resolution.route
    return RoutingRecord(
        request_id or new_request_id(),
        route.name,
        route.route_id,
        route.strategy.type,
        "cache hit",
        requested_model=resolution.requested_model,
        session_id=session_id,
        served_provider=answer.provider,
        served_model=answer.model,
        cache="hit",
        remaining_attempts=route.retry.max_attempts,
        cost=0.0,
    )
