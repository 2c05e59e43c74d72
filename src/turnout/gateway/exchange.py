"""What every room of the gateway may know of one HTTP request: its side of the exchange.

The server makes the exchanges; the handlers, the response writers and the cache answer them
through `Exchange` alone, so they run (and are tested) without a server. This module is the
gateway's ground floor: it imports nothing from the gateway's other rooms.

Rule 1: a response is started once (`start`) and ended once (`end`); `reply` does both. After
`end`, nothing more is sent.
Rule 2: `gone` is set when the caller disconnected before the response ended.
Rule 3: `request_id` is the caller's `x-request-id` when it is a valid one (None otherwise);
`adopt` gives it to the routing record, and every response echoes the record's id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from turnout.gateway.client_formats import ClientFormat
    from turnout.record import RoutingRecord

__all__ = ["Exchange", "Header", "Reply", "request_id_header"]

Header = tuple[bytes, bytes]


class Reply(NamedTuple):
    """A whole HTTP response: status, headers (byte pairs) and body."""

    status: int
    headers: list[Header]
    body: bytes


def request_id_header(request_id: str) -> Header:
    """`x-request-id` as a header pair. A request id is turnout's hex or a caller's id of
    visible ASCII (checked on the way in): it goes out as it is, and is not cached as names
    are, since it never repeats."""
    return (b"x-request-id", request_id.encode())


class Exchange(Protocol):
    """One request as the code that answers it sees it: lower-case `headers`, the `body` once
    read and the caller's wire format `fmt`; the response side (`start`, `write`, `end`,
    `reply`) and what it has sent so far (`started`, `ended`, `status`).

    `record` is the routing record adopted (Rule 3) and `failure` what the request was
    answered with an error for; both are set while it is answered."""

    record: RoutingRecord | None
    failure: BaseException | None

    @property
    def headers(self) -> Mapping[str, str]:
        """The request's headers, by lower-case name (a header sent twice is comma-joined)."""
        ...

    @property
    def body(self) -> bytes:
        """The request's body, once read."""
        ...

    @property
    def fmt(self) -> ClientFormat:
        """The wire format the caller speaks."""
        ...

    @property
    def request_id(self) -> str | None:
        """Rule 3: the caller's request id, if it sent a valid one."""
        ...

    @property
    def started(self) -> bool:
        """Whether the status line went out."""
        ...

    @property
    def ended(self) -> bool:
        """Rule 1: whether the response ended."""
        ...

    @property
    def gone(self) -> bool:
        """Rule 2: whether the caller left before the response ended."""
        ...

    @property
    def status(self) -> int:
        """The status sent (0 before `start`)."""
        ...

    def adopt(self, record: RoutingRecord | None) -> None:
        """Rule 3: keep `record` and give it the caller's request id, if any."""
        ...

    async def start(self, status: int, headers: Sequence[Header]) -> None:
        """Send the status line and headers."""
        ...

    async def write(self, data: bytes) -> None:
        """Send part of the body."""
        ...

    async def end(self, data: bytes = b"") -> None:
        """Send the last part of the body."""
        ...

    async def reply(self, reply: Reply) -> None:
        """Send a whole response (with its `content-length`)."""
        ...
