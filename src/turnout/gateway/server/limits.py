"""What the gateway's HTTP server allows a caller: sizes, waits and connection counts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from turnout.schema import ServerConfig

__all__ = ["CONNECTION_CAP", "DESCRIPTOR_RESERVE", "ServerLimits", "default_max_connections"]

CONNECTION_CAP: Final = 4096
"""The most connections a worker keeps open when the configuration does not say."""

DESCRIPTOR_RESERVE: Final = 64
"""Descriptors kept free under the open-file limit for everything but callers' connections
(the providers' pools, the listening socket, log files): a worker at its connection cap can
still accept (and close) a connection and call upstream."""


def default_max_connections() -> int:
    """`CONNECTION_CAP`, or fewer: the process's open-file soft limit minus
    `DESCRIPTOR_RESERVE` (at least 1)."""
    try:
        import resource  # noqa: PLC0415 - POSIX only
    except ImportError:  # pragma: no cover - Windows
        return CONNECTION_CAP
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return CONNECTION_CAP
    return max(1, min(CONNECTION_CAP, soft - DESCRIPTOR_RESERVE))


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """The server's limits (sizes in bytes, times in float seconds).

    - `max_header_count` (100) and `max_header_bytes` (64 KiB, request line included): past
      either, 431 and the connection closes.
    - `header_timeout` (10): the whole head must arrive within it, from the accept or from the
      end of the previous response.
    - `body_timeout` (30): the longest silence of a body the app is waiting for.
    - `min_body_rate` (500, bytes per second; 0: none): a body must arrive at this average
      rate, after `body_timeout` of slack: N bytes have `body_timeout` + N / rate seconds.
    - `keepalive_timeout` (5): how long an idle connection waits for its next request.
    - `max_connections` (4096): connections open at once; past it a new connection replaces
      the idlest idle one, or is closed at accept (`connections`).
    - `max_connections_per_address` (None: half of `max_connections`): connections one peer
      address may hold (`per_address`).
    - `shutdown_grace` (30): how long requests in flight may take to finish at shutdown.
    """

    max_header_count: int = 100
    max_header_bytes: int = 64 * 1024
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    keepalive_timeout: float = 5.0
    max_connections: int = CONNECTION_CAP
    shutdown_grace: float = 30.0
    min_body_rate: int = 500
    max_connections_per_address: int | None = None

    @property
    def per_address(self) -> int:
        """The connections one peer address may hold (at most `max_connections`)."""
        share = self.max_connections_per_address
        if share is None:
            return max(1, self.max_connections // 2)
        return min(share, self.max_connections)

    @classmethod
    def from_config(cls, server: ServerConfig) -> ServerLimits:
        """The limits of a configuration's `server:` section (`max_connections` unset: see
        `default_max_connections`)."""
        cap = server.max_connections
        return cls(
            max_header_count=server.max_header_count,
            max_header_bytes=server.max_header_bytes,
            header_timeout=server.header_timeout,
            body_timeout=server.body_timeout,
            keepalive_timeout=server.keepalive_timeout,
            max_connections=cap if cap is not None else default_max_connections(),
            shutdown_grace=server.shutdown_grace_seconds,
            min_body_rate=server.min_body_rate,
            max_connections_per_address=server.max_connections_per_address,
        )
