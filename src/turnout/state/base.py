"""The shared-state protocol: what sessions, the response cache and health publication need.

One protocol, two backends: `MemoryState` (per process, the default) and `RedisState` (shared by
every gateway replica). Keys and channels are plain strings chosen by the layer on top
(`pin:…`, `cache:…`, `health:…`); a backend adds its own namespace prefix. Values and messages
are bytes.

A backend never raises because its storage is unreachable: a failing shared store degrades to
local state and says so through `healthy` and `describe()`. Invalid arguments (a TTL
that is not a positive number of seconds) are programming errors and raise `ValueError` (or
`TypeError` for a TTL that is not a number).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

__all__ = ["StateStore", "Subscription", "check_ttl"]


@runtime_checkable
class Subscription(Protocol):
    """Messages published on one channel after the subscription was made, in order.

    Iterate it with `async for`; iteration ends after `aclose()`. A subscription that falls
    behind loses its oldest messages rather than slowing publishers down.
    """

    def __aiter__(self) -> AsyncIterator[bytes]: ...

    async def __anext__(self) -> bytes: ...

    async def aclose(self) -> None:
        """Stop receiving; a pending `__anext__` ends the iteration."""
        ...


@runtime_checkable
class StateStore(Protocol):
    """Namespaced key/value storage with TTLs, plus publish/subscribe.

    Times are float seconds. `healthy` is False while a shared backend is unreachable and the
    store serves on local state; `describe()` gives the detail for `/readyz`.
    """

    @property
    def healthy(self) -> bool:
        """True while the backend serves from its own storage."""
        ...

    def describe(self) -> dict[str, Any]:
        """JSON-ready status: `backend`, `healthy`, `detail` (and backend-specific fields)."""
        ...

    async def probe(self) -> bool:
        """Check the backend now, for readiness, and return `healthy`: bounded in time and
        cheap to call often (a shared backend asks its server at most about once a second)."""
        ...

    async def get(self, key: str) -> bytes | None:
        """The value under `key`, or None when absent or expired."""
        ...

    async def set(self, key: str, value: bytes, ttl: float) -> None:
        """Store `value` under `key` for `ttl` seconds (> 0), replacing any value."""
        ...

    async def delete(self, key: str) -> None:
        """Remove `key` (absent keys are fine)."""
        ...

    async def touch(self, key: str, ttl: float) -> bool:
        """Make `key` expire `ttl` seconds from now; False when the key is absent."""
        ...

    async def scan(self, prefix: str, *, limit: int = 1000) -> list[str]:
        """Up to `limit` live keys starting with `prefix` (no order promised)."""
        ...

    async def claim(self, key: str, value: bytes, ttl: float) -> float:
        """Take `key` (storing `value`) for `ttl` seconds unless someone holds it: 0.0 when this
        call took it, else the seconds (> 0) the holder keeps it. A lease: exactly one caller
        among all that share the backend takes it, until it expires or is `unclaim`ed."""
        ...

    async def unclaim(self, key: str, value: bytes) -> None:
        """Free `key` if it still holds `value` (a lease that expired and was taken by
        another is left alone)."""
        ...

    async def publish(self, channel: str, message: bytes) -> None:
        """Send `message` to every current subscriber of `channel` (fire and forget)."""
        ...

    async def subscribe(self, channel: str) -> Subscription:
        """Subscribe to `channel`; messages published after this returns are delivered."""
        ...

    async def close(self) -> None:
        """Release connections and end every subscription. Idempotent."""
        ...


def check_ttl(ttl: float) -> float:
    """`ttl` as a float; `TypeError` for a non-number, `ValueError` unless finite and > 0."""
    if isinstance(ttl, bool) or not isinstance(ttl, int | float):
        raise TypeError(f"a TTL must be a number of seconds (got {ttl!r})")
    if not (math.isfinite(ttl) and ttl > 0):
        raise ValueError(f"a TTL must be a finite number of seconds > 0 (got {ttl!r})")
    return float(ttl)
