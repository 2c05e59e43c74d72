"""The response cache: finished answers stored by request key in the state store.

An entry holds the neutral answer (content parts, tool calls, finish reason, usage, the provider
and model that served), not a wire body, so a hit can be re-encoded in whichever format the
caller speaks and streamed to a streaming caller (`CachedAnswer.to_chunks`).

Rule 1: only finished answers are stored: finish reason `stop`, `length` or `tool_calls`. Errors,
refusals (`content_filter`) and unfinished answers (`None`, `error`) are refused.
Rule 2: a TTL is 1 to 86,400 seconds (`cache.ttl_seconds`, default 300).
Rule 3: an entry that cannot be read back (corrupt, or from another encoding version) is a miss.
Rule 4: the cache never raises because the store is unreachable: the store degrades instead.
Rule 5: a streamed answer is collected chunk by chunk (`AnswerCollector`) into the same
`CachedAnswer` a whole answer gives; whether it may be stored is decided once it ended.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import orjson

from turnout.routing.clock import Clock, LoopClock
from turnout.state.cache_key import KEY_VERSION, cache_key
from turnout.wire.model import (
    ChatChunk,
    ChatResponse,
    DocumentPart,
    ImagePart,
    NativeBlock,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolCallDelta,
    Usage,
)

if TYPE_CHECKING:
    from turnout.state.base import StateStore
    from turnout.wire.model import Part

__all__ = [
    "CACHEABLE_FINISH_REASONS",
    "DEFAULT_CACHE_TTL",
    "MAX_CACHE_TTL",
    "AnswerCollector",
    "CachedAnswer",
    "ResponseCache",
    "cache_key",
]

logger = logging.getLogger(__name__)

CACHEABLE_FINISH_REASONS = frozenset({"stop", "length", "tool_calls"})
"""Finish reasons of answers that may be cached."""
DEFAULT_CACHE_TTL = 300.0
"""`cache.ttl_seconds`' default."""
MAX_CACHE_TTL = 86_400.0
"""The longest `cache.ttl_seconds` (the shortest is 1)."""
_PREFIX = "cache:"
_OTHER_PARTS: dict[str, Any] = {
    "image": ImagePart,
    "document": DocumentPart,
    "native": NativeBlock,
}


@dataclass(frozen=True, slots=True)
class CachedAnswer:
    """A finished answer as the cache keeps it.

    `content` holds text and thinking parts (others too, rarely); `provider` / `model` say who
    served; `stored_at` is when it was stored (UTC epoch seconds, set by `ResponseCache.put`).
    """

    content: tuple[Part, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str = "stop"
    usage: Usage | None = None
    provider: str | None = None
    model: str | None = None
    stored_at: float | None = None

    @classmethod
    def from_response(cls, response: ChatResponse, provider: str | None = None) -> CachedAnswer:
        """The cacheable part of `response`; `provider` defaults to the routing record's
        served provider, and the model to the response's (else the record's)."""
        record = response.routing
        if provider is None and record is not None:
            provider = record.served_provider
        model = response.model or (record.served_model if record is not None else None)
        return cls(
            content=tuple(response.content),
            tool_calls=tuple(response.tool_calls),
            finish_reason=response.finish_reason or "",
            usage=response.usage,
            provider=provider,
            model=model,
        )

    @property
    def text(self) -> str:
        """The concatenated text parts (thinking excluded)."""
        return "".join(p.text for p in self.content if isinstance(p, TextPart))

    @property
    def is_cacheable(self) -> bool:
        """True for a finished answer (finish reason `stop`, `length` or `tool_calls`)."""
        return self.finish_reason in CACHEABLE_FINISH_REASONS

    def to_response(self) -> ChatResponse:
        """The answer as a neutral response (no raw body: the gateway encodes it afresh)."""
        return ChatResponse(
            content=list(self.content),
            model=self.model,
            tool_calls=list(self.tool_calls),
            finish_reason=self.finish_reason,
            usage=self.usage,
        )

    def to_chunks(self) -> list[ChatChunk]:
        """The answer as a stream: thinking, text and tool-call chunks, then a last chunk with
        the finish reason and usage."""
        chunks: list[ChatChunk] = []
        for part in self.content:
            if isinstance(part, ThinkingPart) and (part.text or part.signature):
                chunks.append(ChatChunk(thinking=part.text, thinking_signature=part.signature))
            elif isinstance(part, TextPart) and part.text:
                chunks.append(ChatChunk(delta=part.text))
        for index, call in enumerate(self.tool_calls):
            delta = ToolCallDelta(index, call.id, call.name, call.arguments, call.namespace)
            chunks.append(ChatChunk(tool_calls=[delta]))
        chunks.append(ChatChunk(finish_reason=self.finish_reason, usage=self.usage))
        for chunk in chunks:
            chunk.model = self.model
        return chunks

    def encode(self) -> bytes:
        """Compact orjson bytes (short keys, parts as tagged arrays)."""
        usage = self.usage
        return orjson.dumps(
            {
                "v": KEY_VERSION,
                "c": [_encode_part(part) for part in self.content],
                "t": [_encode_call(c) for c in self.tool_calls],
                "f": self.finish_reason,
                "u": None
                if usage is None
                else [
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cache_read_tokens,
                    usage.cache_write_tokens,
                    usage.reasoning_tokens,
                ],
                "p": self.provider,
                "m": self.model,
                "s": self.stored_at,
            }
        )

    @classmethod
    def decode(cls, data: bytes) -> CachedAnswer:
        """The answer in `data`; `ValueError` when it is not one (or another version's)."""
        try:
            obj = orjson.loads(data)
            version = obj.get("v") if isinstance(obj, dict) else None
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"not a cached answer: {exc}") from exc
        if version != KEY_VERSION:
            raise ValueError(f"not a cached answer of version {KEY_VERSION} ({version!r})")
        try:
            usage = obj["u"]
            return cls(
                content=tuple(_decode_part(part) for part in obj["c"]),
                tool_calls=tuple(_decode_call(call) for call in obj["t"]),
                finish_reason=str(obj["f"]),
                usage=None if usage is None else Usage(*(int(n) for n in usage)),
                provider=obj["p"],
                model=obj["m"],
                stored_at=obj["s"],
            )
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ValueError(f"not a cached answer: {exc}") from exc


class AnswerCollector:
    """A streamed answer put back together (Rule 5): `add` each chunk the route yields, then
    `answer()` is the `CachedAnswer` the stream amounts to.

    Text and thinking deltas join into parts in the order they came; tool-call deltas join by
    their `index` (id and name from the first delta that has them); the finish reason, usage
    and model are the last ones a chunk carried.
    """

    __slots__ = ("_calls", "_parts", "finish_reason", "model", "usage")

    def __init__(self) -> None:
        self._parts: list[list[Any]] = []  # [kind, [texts], signature]
        self._calls: dict[int, list[Any]] = {}  # index -> [id, name, [argument pieces], namespace]
        self.finish_reason: str | None = None
        self.usage: Usage | None = None
        self.model: str | None = None

    def add(self, chunk: ChatChunk) -> None:
        """Take in one chunk."""
        if chunk.thinking or chunk.thinking_signature:
            part = self._part("k")
            if chunk.thinking:
                part[1].append(chunk.thinking)
            if chunk.thinking_signature:
                part[2] = chunk.thinking_signature
        if chunk.delta:
            self._part("t")[1].append(chunk.delta)
        for delta in chunk.tool_calls:
            call = self._calls.setdefault(delta.index, [None, None, [], None])
            call[0] = call[0] or delta.id
            call[1] = call[1] or delta.name
            call[3] = call[3] or delta.namespace
            if delta.arguments:
                call[2].append(delta.arguments)
        if chunk.finish_reason is not None:
            self.finish_reason = chunk.finish_reason
        if chunk.usage is not None:
            self.usage = chunk.usage
        if chunk.model is not None:
            self.model = chunk.model

    def _part(self, kind: str) -> list[Any]:
        parts = self._parts
        if not parts or parts[-1][0] != kind:
            parts.append([kind, [], None])
        return parts[-1]

    def answer(self, provider: str | None = None) -> CachedAnswer:
        """What the chunks so far amount to, served by `provider`."""
        content: list[Part] = [
            ThinkingPart("".join(texts), signature) if kind == "k" else TextPart("".join(texts))
            for kind, texts, signature in self._parts
        ]
        calls = tuple(
            ToolCall(ident or "", name or "", "".join(pieces) or "{}", namespace=namespace)
            for ident, name, pieces, namespace in self._calls.values()
        )
        return CachedAnswer(
            content=tuple(content),
            tool_calls=calls,
            finish_reason=self.finish_reason or "",
            usage=self.usage,
            provider=provider,
            model=self.model,
        )


class ResponseCache:
    """Finished answers by `cache_key`, kept in `state` (memory, or Redis when shared).

    `clock` stamps `stored_at` (default: the loop clock). Reads and writes never raise for an
    unreachable store.
    """

    key = staticmethod(cache_key)

    def __init__(self, state: StateStore, *, clock: Clock | None = None) -> None:
        self.state = state
        self.clock: Clock = clock if clock is not None else LoopClock()

    async def get(self, key: str) -> CachedAnswer | None:
        """The answer stored under `key`, or None (a miss)."""
        data = await self.state.get(_PREFIX + key)
        if data is None:
            return None
        try:
            return CachedAnswer.decode(data)
        except ValueError as exc:
            logger.debug("cache entry %s unreadable (%s): treated as a miss", key[:12], exc)
            return None

    async def put(
        self, key: str, answer: CachedAnswer | ChatResponse, ttl: float = DEFAULT_CACHE_TTL
    ) -> bool:
        """Store `answer` under `key` for `ttl` seconds (1 to 86,400, default 300).

        Returns False, storing nothing, for an answer that is not finished (Rule 1).
        """
        if isinstance(ttl, bool) or not (1 <= ttl <= MAX_CACHE_TTL):
            raise ValueError(f"a cache TTL must be 1 to 86400 seconds (got {ttl!r})")
        if isinstance(answer, ChatResponse):
            answer = CachedAnswer.from_response(answer)
        if not answer.is_cacheable:
            return False
        stored = CachedAnswer(
            answer.content,
            answer.tool_calls,
            answer.finish_reason,
            answer.usage,
            answer.provider,
            answer.model,
            self.clock.wall(),
        )
        await self.state.set(_PREFIX + key, stored.encode(), float(ttl))
        return True

    async def delete(self, key: str) -> None:
        """Drop the entry under `key`."""
        await self.state.delete(_PREFIX + key)


def _encode_part(part: Part) -> list[Any]:
    if isinstance(part, TextPart):
        return ["t", part.text]
    if isinstance(part, ThinkingPart):
        return ["k", part.text, part.signature, part.redacted, part.data]
    values = {
        field.name: getattr(part, field.name)
        for field in fields(part)
        if field.name != "type" and getattr(part, field.name) is not None
    }
    return ["x", part.type, values]


def _decode_part(item: list[Any]) -> Part:
    tag = item[0]
    if tag == "t":
        return TextPart(str(item[1]))
    if tag == "k":
        return ThinkingPart(str(item[1]), item[2], bool(item[3]), item[4])
    if tag == "x" and item[1] in _OTHER_PARTS:
        part: Part = _OTHER_PARTS[item[1]](**item[2])
        return part
    raise ValueError(f"unknown part tag {tag!r}")


def _encode_call(call: ToolCall) -> list[str]:
    """A tool call as `[id, name, arguments]`, with its namespace last when it has one."""
    encoded = [call.id, call.name, call.arguments]
    if call.namespace is not None:
        encoded.append(call.namespace)
    return encoded


def _decode_call(encoded: list[Any]) -> ToolCall:
    ident, name, arguments, *rest = encoded
    namespace = str(rest[0]) if rest else None
    return ToolCall(str(ident), str(name), str(arguments), namespace=namespace)
