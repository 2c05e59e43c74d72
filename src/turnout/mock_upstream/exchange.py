"""What a handler of the mock upstream sees of one request: the `Exchange` protocol.

The socket server (`http.HttpExchange`) and the in-process mock provider
(`turnout.providers.mock`) both implement it, so one handler plays every fault for both.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["Exchange", "Request"]


@dataclass(slots=True)
class Request:
    """A parsed request: `headers` has lower-case names (repeats joined with `, `)."""

    method: str
    path: str
    _: KW_ONLY
    query: str
    headers: dict[str, str]
    body: bytes
    keep_alive: bool = True


class Exchange(Protocol):
    """One request and the ways to answer it."""

    request: Request

    @property
    def closed(self) -> bool:
        """True once the client is gone."""
        ...

    def respond(
        self,
        status: int,
        body: bytes,
        *,
        content_type: str = "application/json",
        headers: Iterable[tuple[str, str]] = (),
    ) -> None:
        """Send a whole response."""
        ...

    def start_stream(
        self,
        status: int = 200,
        *,
        content_type: str = "text/event-stream",
        headers: Iterable[tuple[str, str]] = (),
    ) -> None:
        """Send the status and headers of a streamed response."""
        ...

    async def send(self, data: bytes) -> None:
        """Send one piece of a streamed body."""
        ...

    def end_stream(self) -> None:
        """Finish a streamed body."""
        ...

    def cut_body(self, status: int, head: Iterable[tuple[str, str]], body: bytes) -> None:
        """Send the headers of a whole response (full length) and only part of `body`."""
        ...

    def reset(self) -> None:
        """Reset the connection before any response byte."""
        ...

    def drop(self) -> None:
        """Close the connection now, whatever was sent."""
        ...

    async def hold(self, limit: float) -> None:
        """Wait until the client goes away or `limit` seconds pass."""
        ...
