"""`POST /v1/responses` (OpenAI's Responses API, routed like chat) and `GET` / `DELETE
/v1/responses/{id}` (a stored response, at the provider that created it).

Rule 1: a Responses request is routed exactly as a chat request is (`handle_chat` with the
Responses client format): a target that serves the Responses API itself (`supports_responses`,
the `openai` kind) receives the caller's bytes with only `model` replaced, every other target a
translation, and the answer comes back in the Responses format either way.
Rule 2: when a target that serves the Responses API itself answers a request that did not say
`store: false`, the response's id is remembered in the shared state store for `RESPONSE_TTL`
seconds with the provider that made it and the caller's key (a stream's id once it ended
cleanly). A translated answer is never stored anywhere, so its id is not remembered.
Rule 4: a function the caller declared inside a `namespace` tool reached a target of another
format under its flat name (`turnout.wire.tool_kinds`); a call of it in a translated answer,
whole or streamed, goes back to the caller as that function with its `namespace`.
Rule 3: `GET` / `DELETE /v1/responses/{id}` go to the provider remembered for the id, with the
provider's own key (or, for a passthrough provider, the caller's own credential); an id that is
unknown, expired, or was created by another key is 404 in OpenAI's error envelope. `DELETE`
forgets the id once the provider deleted the response.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import orjson

from turnout.errors import NotFound
from turnout.gateway.exchange import request_id_header
from turnout.gateway.handlers.chat import handle_chat
from turnout.gateway.responses.respond import JSON, Reply, header_value
from turnout.providers import facts_of
from turnout.routing.plan import CallerCredential
from turnout.routing.stream import RoutedStream
from turnout.wire.openai_responses import namespaced_tools
from turnout.wire.tool_kinds import restored_call, restored_delta

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Mapping

    from turnout.gateway.handlers.settings import ServedExchange
    from turnout.record import RoutingRecord
    from turnout.wire.model import ChatResponse

__all__ = [
    "RESPONSE_PATHS",
    "RESPONSE_TTL",
    "ResponseIds",
    "handle_responses",
    "handle_stored_response",
]

RESPONSE_PATHS = ("/v1/responses/", "/responses/")
"""The path prefixes of `GET` / `DELETE /v1/responses/{id}` (with and without `/v1`)."""
RESPONSE_TTL = 30 * 24 * 3600.0
"""Seconds a response id is remembered (OpenAI keeps a stored response 30 days)."""
_NATIVE = "openai-responses"


def _key(project: str, response_id: str) -> str:
    return f"responses:{project}:{response_id}"


class ResponseIds:
    """Rule 2: remembers, per served response, the provider that created it; Rule 4: puts
    namespaced calls of a translated answer back under their namespace (`names`: flat name
    -> namespace and name, from the caller's tools)."""

    __slots__ = ("_names", "_stored")

    def __init__(self, *, stored: bool, names: Mapping[str, tuple[str, str]] | None = None) -> None:
        self._stored = stored
        self._names = names or {}

    async def answered(self, exchange: ServedExchange, response: ChatResponse) -> None:
        """Remember a whole answer's id when a Responses server made it (Rule 2), else put
        its namespaced calls back (Rule 4)."""
        if response.raw_format == _NATIVE:
            if response.id:
                await self._remember(exchange, response.id, response.routing)
        elif self._names and response.tool_calls:
            names = self._names
            response.tool_calls = [restored_call(call, names) for call in response.tool_calls]

    def watch(self, exchange: ServedExchange, stream: RoutedStream) -> RoutedStream:
        """Remember a stream's id once it ended cleanly, when a Responses server made it;
        put the namespaced calls of a translated stream back."""
        if not self._stored and not self._names:
            return stream
        return RoutedStream(stream.routing, self._follow(exchange, stream))

    async def _follow(
        self, exchange: ServedExchange, stream: RoutedStream
    ) -> AsyncGenerator[Any, None]:
        ident: str | None = None
        names = self._names
        try:
            async for chunk in stream:
                if ident is None and chunk.id and chunk.raw_format == _NATIVE:
                    ident = chunk.id
                if names and chunk.tool_calls and chunk.raw_format != _NATIVE:
                    chunk.tool_calls = [restored_delta(d, names) for d in chunk.tool_calls]
                yield chunk
            if ident is not None:
                await self._remember(exchange, ident, stream.routing)
        finally:
            await stream.aclose()

    async def _remember(
        self, exchange: ServedExchange, response_id: str, record: RoutingRecord | None
    ) -> None:
        if not self._stored or record is None or record.served_provider is None:
            return
        runtime = exchange.runtime
        value = {"provider": record.served_provider, "key": exchange.key_name()}
        await runtime.state.set(
            _key(runtime.project, response_id), orjson.dumps(value), RESPONSE_TTL
        )


async def handle_responses(exchange: ServedExchange) -> None:
    """Rule 1 and 2: route a Responses request and remember who created its response."""
    stored = _asks_store(exchange.body)
    names = _namespaced(exchange.body)
    await handle_chat(exchange, watch=ResponseIds(stored=stored, names=names))


def _namespaced(body: bytes) -> dict[str, tuple[str, str]]:
    """Rule 4: the caller's namespaced functions by flat name (read only when the body
    mentions a namespace; a malformed body is left for the decoder to refuse)."""
    if b'"namespace"' not in body:
        return {}
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return {}
    return namespaced_tools(value) if isinstance(value, dict) else {}


def _asks_store(body: bytes) -> bool:
    """False only when the caller said `store: false` (OpenAI stores by default). The body
    was already read as JSON by the time this is asked, and is parsed again only for a
    `store` key."""
    if b'"store"' not in body:
        return True
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return False
    return not (isinstance(value, dict) and value.get("store") is False)


async def handle_stored_response(exchange: ServedExchange) -> None:
    """Rule 3: `GET` or `DELETE` a stored response at the provider that created it."""
    exchange.caller()
    method: Literal["GET", "DELETE"] = "DELETE" if exchange.method == "DELETE" else "GET"
    response_id = exchange.path.split("/responses/", 1)[1]
    runtime = exchange.runtime
    found = await runtime.state.get(_key(runtime.project, response_id)) if response_id else None
    entry = _entry(found)
    provider: Any = None if entry is None else runtime.providers.get(entry["provider"])
    if (
        entry is None
        or entry.get("key") != exchange.key_name()
        or provider is None
        or not facts_of(provider).supports_responses
    ):
        raise NotFound(
            f"no response {response_id!r}: turnout keeps only the ids of responses a Responses "
            "server created for this key"
        )
    if facts_of(provider).credential_mode == "passthrough":
        own = exchange.credentials().own_credential
        if own is not None:
            credential = CallerCredential(own.secret, bearer=own.header == "authorization")
            provider = provider.with_credential(credential)
    body = await provider.stored_response(method, response_id)
    if method == "DELETE":
        await runtime.state.delete(_key(runtime.project, response_id))
    headers = [
        JSON,
        request_id_header(exchange.reply_id()),
        (b"x-turnout-target", header_value(provider.name)),
    ]
    await exchange.reply(Reply(200, headers, body))


def _entry(found: bytes | None) -> dict[str, Any] | None:
    if found is None:
        return None
    try:
        value = orjson.loads(found)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) and isinstance(value.get("provider"), str) else None
