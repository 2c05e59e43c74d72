"""Session ids and the family pins of cross-provider routes.

Where a session id comes from, first found wins: the `x-turnout-session-id`, `x-session-id` and
`x-claude-code-session-id` headers; the session inside Anthropic `metadata.user_id`; then the
OpenAI `user` field.

Claude Code fills `metadata.user_id` in one of two shapes (as observed in public proxies that
parse it; Anthropic does not document the field's content):
- up to v2.1.77, a string `user_<64 hex>_account_<account uuid, often empty>_session_<uuid>`,
  e.g. `user_5dd0…8e84_account__session_d2e70091-3007-41a3-a916-cb8b0d3098de`;
- from v2.1.78, a JSON string `{"device_id": "<hex>", "account_uuid": "", "session_id": "<uuid>"}`.
Both are parsed; a `user_id` with no session in it is a user, not a session, and yields none.
Some clients forward the first shape as OpenAI `user`: then its session part is the session id.

Pins: a session of a route with `allow_cross_provider` is pinned to the family that served its
first success. A pin lives `session_pin_ttl_seconds` (default 24 h) after the session's last
request: `pin` and `refresh` restart that TTL. Pins are kept in the state store, so every
replica sees them.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import orjson

from turnout.state.base import check_ttl
from turnout.wire.model import ChatRequest

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.state.base import StateStore
    from turnout.wire.model import WireFormat

__all__ = [
    "DEFAULT_PIN_TTL",
    "MAX_SESSION_ID_CHARS",
    "SESSION_HEADERS",
    "SessionPins",
    "pin_key",
    "session_from_user_id",
    "session_id_from",
]

SESSION_HEADERS = ("x-turnout-session-id", "x-session-id", "x-claude-code-session-id")
"""Headers naming a session, in the order they are read (lower case)."""
MAX_SESSION_ID_CHARS = 200
"""A longer session id is replaced by `sha256:<hex>` of it, to keep store keys small."""
DEFAULT_PIN_TTL = 86_400.0
"""`session_pin_ttl_seconds`' default: 24 h."""

_LEGACY_USER_ID = re.compile(r"_account_[0-9A-Za-z-]*_session_([0-9A-Za-z-]+)\Z")


def session_id_from(
    headers: Mapping[str, str],
    body: Mapping[str, Any] | ChatRequest | None,
    wire_format: WireFormat | None = None,
) -> str | None:
    """The request's session id, or None: the first found of the sources the module lists, in
    that order (session headers, Anthropic `metadata.user_id`, OpenAI `user`).

    `headers` maps header names to values; lower-case names are looked up first, then any
    spelling. `body` is the caller's decoded JSON body or the neutral request decoded from it;
    `wire_format` says which API it speaks (default: the request's `origin`). Blank values are
    skipped; an id longer than 200 characters is replaced by `sha256:<hex digest>`.
    """
    mixed = not all(map(str.islower, headers))  # names in other cases: look them all up
    for name in SESSION_HEADERS:
        value = _header(headers, name, mixed=mixed)
        if value:
            return _bounded(value)
    if isinstance(body, ChatRequest):
        wire_format = wire_format or body.origin
        user = body.user
    elif body is not None and wire_format == "anthropic-messages":
        metadata = body.get("metadata")
        user = metadata.get("user_id") if isinstance(metadata, dict) else None
    else:
        user = body.get("user") if body is not None else None
    if not isinstance(user, str) or not user.strip():
        return None
    session = session_from_user_id(user)
    if session is not None:
        return _bounded(session)
    if wire_format == "anthropic-messages":
        return None
    return _bounded(user.strip())


def session_from_user_id(user_id: str) -> str | None:
    """The session inside a Claude Code `metadata.user_id` (either shape), else None."""
    text = user_id.strip()
    if text.startswith("{"):
        try:
            obj = orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
        session = obj.get("session_id") if isinstance(obj, dict) else None
        if not isinstance(session, str):
            return None
        return session.strip() or None
    match = _LEGACY_USER_ID.search(text)
    return match.group(1) if match else None


def _header(headers: Mapping[str, str], name: str, *, mixed: bool) -> str | None:
    value = headers.get(name)
    if value is None and mixed:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value.strip() if isinstance(value, str) else None


def _bounded(session_id: str) -> str:
    if len(session_id) <= MAX_SESSION_ID_CHARS:
        return session_id
    return "sha256:" + hashlib.sha256(session_id.encode()).hexdigest()


class SessionPins:
    """Which family each session of a route is pinned to, shared through `state`.

    `ttl` is `session_pin_ttl_seconds` (seconds, default 86,400): how long a pin lives after
    the session's last `pin` or `refresh`.
    """

    def __init__(self, state: StateStore, ttl: float = DEFAULT_PIN_TTL) -> None:
        self.state = state
        self.ttl = check_ttl(ttl)

    async def get(self, route_id: str, session_id: str) -> str | None:
        """The family `session_id` is pinned to on `route_id`, or None."""
        value = await self.state.get(pin_key(route_id, session_id))
        return value.decode() if value else None

    async def pin(
        self, route_id: str, session_id: str, family: str, ttl: float | None = None
    ) -> None:
        """Pin the session to `family` (replacing any pin) for `ttl` seconds (default `ttl`)."""
        if not family:
            raise ValueError("a session pin needs a family")
        seconds = self.ttl if ttl is None else check_ttl(ttl)
        await self.state.set(pin_key(route_id, session_id), family.encode(), seconds)

    async def refresh(self, route_id: str, session_id: str, ttl: float | None = None) -> bool:
        """Restart the pin's TTL after a request; False when the session has no pin."""
        seconds = self.ttl if ttl is None else check_ttl(ttl)
        return await self.state.touch(pin_key(route_id, session_id), seconds)

    async def forget(self, route_id: str, session_id: str) -> None:
        """Remove the session's pin."""
        await self.state.delete(pin_key(route_id, session_id))


def pin_key(route_id: str, session_id: str) -> str:
    """The state-store key of a session's pin on a route (`pin:<route id, quoted>:<session>`)."""
    return f"pin:{quote(route_id, safe='')}:{session_id}"
