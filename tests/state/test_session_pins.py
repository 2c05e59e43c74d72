"""Session ids (the order of their sources, Claude Code's metadata.user_id) and family pins."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import pytest

from turnout.state.memory import MemoryState
from turnout.state.sessions import SessionPins, session_from_user_id, session_id_from
from turnout.wire import anthropic_messages, openai_chat

if TYPE_CHECKING:
    from turnout.routing.clock import FakeClock
    from turnout.state.base import StateStore

SESSION = "d2e70091-3007-41a3-a916-cb8b0d3098de"
LEGACY_USER_ID = f"user_{'5d' * 32}_account__session_{SESSION}"
JSON_USER_ID = orjson.dumps(
    {"device_id": "ab" * 32, "account_uuid": "", "session_id": SESSION}
).decode()
MESSAGES: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]


def anthropic_body(user_id: str) -> dict[str, Any]:
    """A Messages body with `metadata.user_id`."""
    return {"model": "m", "max_tokens": 8, "messages": MESSAGES, "metadata": {"user_id": user_id}}


# ---- where the id comes from -----------------------------------------------------------------


def test_headers_win_in_spec_order() -> None:
    """x-turnout-session-id beats x-session-id, which beats x-claude-code-session-id."""
    headers = {
        "x-claude-code-session-id": "cc",
        "x-session-id": "generic",
        "x-turnout-session-id": "ours",
    }
    assert session_id_from(headers, {"user": "u"}, "openai-chat") == "ours"
    del headers["x-turnout-session-id"]
    assert session_id_from(headers, {"user": "u"}, "openai-chat") == "generic"
    del headers["x-session-id"]
    assert session_id_from(headers, {"user": "u"}, "openai-chat") == "cc"


def test_header_names_match_in_any_case_and_blank_values_are_skipped() -> None:
    """A plain dict with capitalised names still matches; a blank header falls through."""
    headers = {"X-Turnout-Session-Id": "  ", "X-Session-Id": " s-1 "}
    assert session_id_from(headers, None) == "s-1"


def test_headers_beat_the_body() -> None:
    """A session header wins over a session inside metadata.user_id."""
    body = anthropic_body(LEGACY_USER_ID)
    assert session_id_from({"x-session-id": "h"}, body, "anthropic-messages") == "h"


@pytest.mark.parametrize("user_id", [LEGACY_USER_ID, JSON_USER_ID])
def test_claude_code_user_id_yields_its_session(user_id: str) -> None:
    """Both Claude Code shapes of metadata.user_id give the session uuid."""
    assert session_id_from({}, anthropic_body(user_id), "anthropic-messages") == SESSION


def test_user_id_with_an_account_uuid_yields_the_session() -> None:
    """The legacy shape with a filled-in account uuid still parses."""
    user_id = f"user_{'ab' * 32}_account_0f7a5c3e-1111-4222-8333-444455556666_session_{SESSION}"
    assert session_from_user_id(user_id) == SESSION


@pytest.mark.parametrize(
    "user_id", ["user-1234", "user_abc_session_x", '{"device_id": "x"}', "{broken", '"s"']
)
def test_anthropic_user_id_without_a_session_is_not_one(user_id: str) -> None:
    """A plain user id (or one with no session part) is a user, not a session."""
    assert session_id_from({}, anthropic_body(user_id), "anthropic-messages") is None


def test_openai_user_is_the_last_source() -> None:
    """With nothing else, the OpenAI `user` field is the session id."""
    body = {"model": "m", "messages": MESSAGES, "user": "end-user-42"}
    assert session_id_from({}, body, "openai-chat") == "end-user-42"
    assert session_id_from({}, {"model": "m", "messages": MESSAGES}, "openai-chat") is None


def test_openai_user_in_claude_code_shape_yields_the_session() -> None:
    """A Claude Code user id forwarded as OpenAI `user` gives its session part."""
    assert session_id_from({}, {"user": LEGACY_USER_ID}, "openai-chat") == SESSION


def test_decoded_requests_work_like_bodies() -> None:
    """A neutral request decoded by either codec gives the same id as its body."""
    anthropic = anthropic_messages.decode_request(anthropic_body(JSON_USER_ID))
    assert session_id_from({}, anthropic) == SESSION
    openai = openai_chat.decode_request({"model": "m", "messages": MESSAGES, "user": "u-7"})
    assert session_id_from({}, openai) == "u-7"


def test_very_long_ids_are_hashed() -> None:
    """An id over 200 characters becomes a stable sha256 digest."""
    long_id = "s" * 500
    first = session_id_from({"x-session-id": long_id}, None)
    assert first == session_id_from({"x-session-id": long_id}, None)
    assert first is not None
    assert first.startswith("sha256:")
    assert len(first) == 7 + 64


# ---- pins ------------------------------------------------------------------------------------


async def test_pin_is_read_back_per_route(state: StateStore) -> None:
    """A session pinned on one route reads its family there and nothing on another route."""
    pins = SessionPins(state)
    await pins.pin("route-1", SESSION, "anthropic")
    assert await pins.get("route-1", SESSION) == "anthropic"
    assert await pins.get("route-2", SESSION) is None


async def test_repinning_moves_the_session(state: StateStore) -> None:
    """A later pin (a switch of family on quota) replaces the earlier one."""
    pins = SessionPins(state)
    await pins.pin("r", "s", "anthropic")
    await pins.pin("r", "s", "openai")
    assert await pins.get("r", "s") == "openai"
    await pins.forget("r", "s")
    assert await pins.get("r", "s") is None


async def test_route_and_session_separators_do_not_collide(state: StateStore) -> None:
    """Route "a:b" with session "c" and route "a" with session "b:c" are different pins."""
    pins = SessionPins(state)
    await pins.pin("a:b", "c", "openai")
    assert await pins.get("a", "b:c") is None


async def test_pins_are_shared_between_replicas(
    state_pair: tuple[StateStore, StateStore],
) -> None:
    """A pin made by one replica is read by another."""
    await SessionPins(state_pair[0]).pin("r", "s", "google")
    assert await SessionPins(state_pair[1]).get("r", "s") == "google"


async def test_pin_lives_its_ttl_after_the_last_request(fake_clock: FakeClock) -> None:
    """Each refresh restarts the TTL; a pin left alone for the TTL is gone."""
    pins = SessionPins(MemoryState(fake_clock), ttl=100)
    await pins.pin("r", "s", "anthropic")
    fake_clock.advance(90)
    assert await pins.refresh("r", "s")
    fake_clock.advance(90)
    assert await pins.get("r", "s") == "anthropic"
    fake_clock.advance(10)
    assert await pins.get("r", "s") is None
    assert await pins.refresh("r", "s") is False


def test_pins_refuse_a_bad_ttl() -> None:
    """session_pin_ttl_seconds must be > 0."""
    with pytest.raises(ValueError, match="TTL"):
        SessionPins(MemoryState(), ttl=0)
