"""Shared state: one protocol, a per-process and a Redis backend, and what is built on them.

- `StateStore` (protocol), `MemoryState` (per process, the default), `RedisState` (shared by
  replicas; a failing Redis degrades to local state and never fails a call);
- `HealthPublisher`: cooldowns, parks and breaker trips shared between replicas;
- `SessionPins` and `session_id_from`: session ids and the family pins of cross-provider routes;
- `ResponseCache`, `CachedAnswer`, `cache_key`: the response cache.

`RedisState` is imported on first use, so importing this package does not load the `redis`
client, and `MemoryState` needs no Redis server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnout.state.base import StateStore, Subscription
from turnout.state.cache import CachedAnswer, ResponseCache, cache_key
from turnout.state.health import HealthNotice, HealthPublisher
from turnout.state.memory import MemoryState
from turnout.state.sessions import SessionPins, session_id_from

if TYPE_CHECKING:
    from turnout.state.redis import RedisState

__all__ = [
    "CachedAnswer",
    "HealthNotice",
    "HealthPublisher",
    "MemoryState",
    "RedisState",
    "ResponseCache",
    "SessionPins",
    "StateStore",
    "Subscription",
    "cache_key",
    "session_id_from",
]


def __getattr__(name: str) -> Any:
    if name == "RedisState":
        from turnout.state.redis import RedisState  # noqa: PLC0415  (redis loads on first use)

        return RedisState
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
