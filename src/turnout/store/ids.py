"""Prefixed random ids for stored objects: `proj_`, `aip_`, `route_` … and 24 hex digits.

96 random bits from `secrets` make a collision between two ids vanishingly rare, and the prefix
says what kind of object an id names wherever it shows up (logs, errors, routing records).
"""

from __future__ import annotations

import secrets
from typing import Final

__all__ = ["PREFIXES", "new_id"]

PREFIXES: Final = {
    "project": "proj_",
    "provider": "aip_",
    "route": "route_",
    "agent": "agent_",
    "chat": "chat_",
    "discussion": "disc_",
    "memory": "mem_",
    "key": "key_",
    "binding": "bind_",
    "policy": "pol_",
}
"""The id prefix of each kind of stored object (consumers by their `kind`)."""


def new_id(kind: str) -> str:
    """A new id for an object of `kind` (a key of `PREFIXES`): its prefix and 24 hex digits."""
    return PREFIXES[kind] + secrets.token_hex(12)
