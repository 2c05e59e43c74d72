"""`POST /v1/chat/completions` and `POST /v1/messages`: one routed chat request.

The body is decoded with the caller's codec into a neutral request that keeps the caller's own
bytes (`source`, with the parsed body, so they are not parsed again), so a target of the same
format receives them with only `model` replaced; a stream that nothing here reads (no response
cache on the route) asks such a target to relay its plain content events undecoded; the answer
comes back as the upstream's own bytes with the `routing` object spliced in, or is
re-encoded when the serving target spoke another format. A route with `cache.enabled` answers
from the response cache when it can (`turnout.gateway.resolution.cache`); a session on a
cross-provider route reads its family pin before the call and is pinned after a success
(`turnout.gateway.runtime.pins`).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from turnout.errors import InvalidRequest, MalformedBody
from turnout.gateway.resolution.consumers import CONSUMER_HEADER
from turnout.gateway.resolution.lookups import chat_cache
from turnout.gateway.responses.cached import serve_hit
from turnout.gateway.responses.respond import routed_reply
from turnout.gateway.responses.streaming import stream_answer
from turnout.state.sessions import SESSION_HEADERS, session_id_from
from turnout.wire.model import RawBody

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from turnout.gateway.client_formats import ClientFormat
    from turnout.gateway.exchange import Reply
    from turnout.gateway.handlers.settings import ServedExchange
    from turnout.gateway.resolution.cache import CacheVisit
    from turnout.routing.stream import RoutedStream
    from turnout.wire.model import ChatRequest, ChatResponse

__all__ = [
    "AnswerWatch",
    "answer_reply",
    "decode_body",
    "handle_chat",
    "parse_json",
    "session_of",
]


class AnswerWatch(Protocol):
    """What an endpoint does with a routed answer besides sending it (the Responses endpoint
    remembers who created a response): `answered` sees a whole answer before it is sent,
    `watch` wraps a stream before it is relayed."""

    async def answered(self, exchange: ServedExchange, response: ChatResponse) -> None: ...

    def watch(self, exchange: ServedExchange, stream: RoutedStream) -> RoutedStream: ...


def parse_json(body: bytes) -> dict[str, Any]:
    """The request body as a JSON object, or `MalformedBody` (400 `invalid_request`)."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise MalformedBody(f"request body: invalid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise MalformedBody("request body: expected a JSON object")
    return value


def decode_body(exchange: ServedExchange) -> tuple[ChatRequest, dict[str, Any]]:
    """The caller's body as a neutral request whose `source` is the caller's own bytes (with
    the headers a same-format target must receive, the parsed body, and for a stream the wish
    to `relay` its plain content events undecoded), and the parsed body."""
    fmt = exchange.fmt
    obj = parse_json(exchange.body)
    try:
        request = fmt.decode(obj)
    except InvalidRequest as exc:
        raise MalformedBody(exc.message) from exc
    request.source = RawBody(
        fmt.name,
        exchange.body,
        _forwarded(exchange.headers, fmt),
        parsed=obj,
        relay=request.stream,
    )
    return request, obj


def _forwarded(headers: Mapping[str, str], fmt: ClientFormat) -> tuple[tuple[str, str], ...]:
    if not fmt.forwarded_headers:
        return ()
    return tuple((name, headers[name]) for name in fmt.forwarded_headers if name in headers)


def session_of(headers: Mapping[str, str], request: ChatRequest | None) -> str | None:
    """The request's session id (`session_id_from`; where it is read from:
    `docs/gateway-api.md`, Session id), skipping the search when no header names one and the
    body has no user (the common case)."""
    user = request.user if request is not None else None
    if user is None and not any(name in headers for name in SESSION_HEADERS):
        return None
    return session_id_from(headers, request)


def _include_usage(obj: Mapping[str, Any]) -> bool:
    options = obj.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


async def handle_chat(exchange: ServedExchange, *, watch: AnswerWatch | None = None) -> None:
    """Authenticate, decode, resolve, route, and answer (whole or streamed). A request that
    needs what only its own format's server keeps (`server_features`) skips the cache: its
    answer depends on state the cache key cannot see."""
    caller = exchange.caller()
    request, obj = decode_body(exchange)
    runtime = exchange.runtime
    resolution = runtime.resolve(
        request.model,
        endpoint=exchange.fmt.endpoint,
        caller=caller,
        consumer=exchange.headers.get(CONSUMER_HEADER),
    )
    session_id = session_of(exchange.headers, request)
    route = resolution.route
    visit: CacheVisit | None = None
    config = resolution.entry.config
    cacheable = config is not None and config.cache.enabled and not request.server_features
    if cacheable:  # after the key, ceiling and grant checks
        visit = await chat_cache(runtime).look_up(
            resolution, request, caller, session_id=session_id
        )
        if visit.answer is not None:
            await serve_hit(exchange, visit, include_usage=_include_usage(obj))
            return
    plan = runtime.plan_for(
        resolution, caller, exchange.credentials, endpoint=exchange.fmt.endpoint
    )
    plan = await runtime.pins.before(plan, session_id, request)  # the session's pinned family first
    if request.stream:
        if visit is not None:  # the response cache stores the content: decode it all
            _decoded(request)
        await stream_answer(
            exchange,
            route,
            request,
            session_id=session_id,
            plan=plan,
            include_usage=_include_usage(obj),
            commit_on_headers=resolution.entry.commit_on_headers,
            pins=runtime.pins,
            keepalive_seconds=exchange.settings.keepalive_seconds,
            tap=_taps(exchange, visit, watch),
        )
        return
    try:
        response = await route.complete(request, session_id=session_id, plan=plan)
    except Exception as exc:
        if visit is not None:
            visit.missed(exc)
        raise
    exchange.adopt(response.routing)
    await runtime.pins.after(plan, session_id, response.routing, request)
    if watch is not None:  # before the cache: a watch may put the answer in the caller's terms
        await watch.answered(exchange, response)
    if visit is not None:
        await visit.store(response)
    await exchange.reply(answer_reply(exchange.fmt, response))


def _decoded(request: ChatRequest) -> None:
    """A stream whose content is read here (by the response cache) is decoded whole: its
    plain content events are not relayed undecoded."""
    source = request.source
    if source is not None and source.relay:
        request.source = dataclasses.replace(source, relay=False)


def _taps(
    exchange: ServedExchange, visit: CacheVisit | None, watch: AnswerWatch | None
) -> Callable[[RoutedStream], RoutedStream] | None:
    """The endpoint's watch, then the cache's tap, as one (the cache keeps what the watch
    made of the stream)."""
    if watch is None:
        return None if visit is None else visit.tap
    cache_tap = None if visit is None else visit.tap

    def tap(stream: RoutedStream) -> RoutedStream:
        stream = watch.watch(exchange, stream)
        return stream if cache_tap is None else cache_tap(stream)

    return tap


def answer_reply(fmt: ClientFormat, response: ChatResponse) -> Reply:
    """A whole answer for the caller: the upstream's bytes with `routing` spliced in when the
    serving target spoke `fmt`, else re-encoded; `model` is the model that served."""
    record = response.routing
    assert record is not None, "a routed answer carries its routing record"
    model = record.served_model or response.model or ""
    raw = response.raw if response.raw_format == fmt.name else None
    return routed_reply(record, model, raw, lambda: fmt.encode(response, model))
