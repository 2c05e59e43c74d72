"""One streamed answer's events as neutral chunks: Rule 2 and Rule 7 of
`turnout.providers.base`, apart from the call that reads the bytes.

`EventChunks` takes the bytes of one SSE reply as they arrive and gives the chunks of the events
they complete; `decode_event` turns one event into chunks, with a decoder's error named for the
provider; `check_finished` refuses a stream that ended without a finish reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from turnout.errors import ProviderError, ProviderUnavailable
from turnout.wire.model import ChatChunk
from turnout.wire.sse import SSEDecoder

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from turnout.providers._wire import RelayDecoder, StreamDecoder, Wire
    from turnout.wire.sse import SSEEvent

    Named = Callable[[ProviderError, str | None], ProviderError]

__all__ = ["EventChunks", "check_finished", "decode_event"]


def decode_event(
    decoder: StreamDecoder, event: SSEEvent, request_id: str | None, named: Named
) -> list[ChatChunk]:
    """The chunks of `event`, each carrying `request_id`; an error the decoder raises comes out
    through `named` (the provider's name and request id on it, its secrets scrubbed)."""
    try:
        chunks = decoder.feed(event)
    except ProviderError as exc:
        raise named(exc, request_id) from None
    for chunk in chunks:
        chunk.provider_request_id = request_id
    return chunks


def check_finished(decoder: StreamDecoder, provider: str, request_id: str | None) -> None:
    """Rule 2: a stream that ended without a finish reason raises `ProviderUnavailable`."""
    if decoder.finish_reason is None:
        raise ProviderUnavailable(
            "the stream ended early: no finish reason",
            reason="stream ended early",
            provider=provider,
            provider_request_id=request_id,
        )


class EventChunks:
    """The chunks of one SSE reply in `wire`'s format, read as its bytes arrive (`feed`, then
    `flush` at its end). With `relay` (Rule 7: the caller forwards the events' bytes), each run
    of plain content events of one read comes as one opaque chunk of their bytes, when the
    wire's decoder tells them apart. An event over `max_event_bytes` raises `EventTooLarge`."""

    def __init__(
        self,
        wire: Wire,
        *,
        relay: bool,
        max_event_bytes: int,
        request_id: str | None,
        named: Named,
    ) -> None:
        self.decoder = wire.decoder()
        self._format = wire.format
        self._events = SSEDecoder(max_event_bytes=max_event_bytes)
        self._relay = (
            cast("RelayDecoder", self.decoder) if relay and hasattr(self.decoder, "plain") else None
        )
        self._request_id = request_id
        self._named = named

    def feed(self, data: bytes) -> Iterator[ChatChunk]:
        """The chunks of the events `data` completes."""
        events = self._events.feed(data)
        if self._relay is not None:
            yield from self._relayed(self._relay, events)
            return
        for event in events:
            yield from self._decode(event)

    def flush(self) -> Iterator[ChatChunk]:
        """The chunks of an event the reply's end completes."""
        for event in self._events.flush():
            yield from self._decode(event)

    def _decode(self, event: SSEEvent) -> list[ChatChunk]:
        return decode_event(self.decoder, event, self._request_id, self._named)

    def _relayed(self, decoder: RelayDecoder, events: list[SSEEvent]) -> Iterator[ChatChunk]:
        """Rule 7: each run of plain content events as one opaque chunk, every other event
        decoded (in order: a run is handed over before the event that ends it is decoded, so
        an error event raises after it)."""
        run: list[bytes] = []
        plain = decoder.plain
        for event in events:
            if plain(event):
                run.append(event.raw)
                continue
            if run:
                yield self._opaque(decoder, run)
                run = []
            yield from self._decode(event)
        if run:
            yield self._opaque(decoder, run)

    def _opaque(self, decoder: RelayDecoder, run: list[bytes]) -> ChatChunk:
        return ChatChunk(
            model=decoder.model,
            id=decoder.id,
            provider_request_id=self._request_id,
            raw=run[0] if len(run) == 1 else b"".join(run),
            raw_format=self._format,
            opaque=True,
        )
