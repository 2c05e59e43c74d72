"""What an attempt entry says in words: the `reason` of a failed call, of a health skip, of a
call whose request was translated with fields dropped, and the notes a call carries to its
entry.

Rule 1: reasons are short, stable phrases: `429 rate limited, Retry-After 2 s`, `503 upstream
error`, `connection reset`, `no first token within 5 s`, `timed out after 30 s`, `cooling
down, 60 s left`, `breaker open, probe in flight on another replica`, `dropped logprobs, n`;
several are joined with `; `.
Rule 2: they are built only when a call fails, a target is skipped or a request is translated
across wire formats, never for a call that answers in its own format.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from turnout.wire.model import ChatRequest
from turnout.wire.translate import untranslatable

if TYPE_CHECKING:
    from collections.abc import Iterable

    from turnout.errors import ProviderError
    from turnout.record import AttemptEntry
    from turnout.routing.attempt import RoutedRequest
    from turnout.routing.health_state import Skip
    from turnout.wire.model import WireFormat

__all__ = [
    "DroppedFields",
    "EntryNotes",
    "dropped_reason",
    "failure_reason",
    "health_skip_reason",
    "joined",
    "skip_reason",
    "timeout_reason",
]

_CLASS_WORDS: Final = {
    "timeout": "timed out",
    "quota_exhausted": "quota exhausted",
    "rate_limited": "rate limited",
    "provider_error": "upstream error",
    "context_length": "context too long",
    "content_filtered": "content filtered",
    "auth": "key rejected",
    "invalid_request": "invalid request",
    "cancelled": "cancelled",
}
# A provider's own short reasons for failures without an HTTP status.
_TRANSPORT_WORDS: Final = {
    "connect timeout": "connect timed out",
    "read timeout": "read timed out",
    "timeout": "timed out",
    "stream_ended": "stream ended early",
    "stream ended early": "stream ended early",
    "unparseable body": "unparseable body",
    "stream error": "upstream stream error",
}
_SKIP_WORDS: Final = {
    "cooling_down": "cooling down",
    "breaker_open": "breaker open",
    "parked": "parked",
}

_PROBE_WORDS: Final = {"here": "probe in flight", "elsewhere": "probe in flight on another replica"}


def failure_reason(error: ProviderError, error_class: str) -> str:
    """The words for a call that failed with `error`, classified `error_class`."""
    words = _CLASS_WORDS.get(error_class, error_class.replace("_", " "))
    status, reason = error.status, error.reason
    if status is not None:
        text = f"{status} {words}"
        if reason and reason != str(status):
            text += f" ({reason})"
    elif reason == "connection":
        refused = "refused" in error.message.lower()
        text = "connection refused" if refused else "connection reset"
    elif reason in _TRANSPORT_WORDS:
        text = _TRANSPORT_WORDS[reason]
    elif reason:
        text = f"{words} ({reason})"
    else:
        text = words
    if error.retry_after:
        text += f", Retry-After {_seconds(error.retry_after)}"
    return text


def timeout_reason(seconds: float, *, first_token: bool) -> str:
    """The words for a call cut by its own deadline of `seconds` (a stream's: its first token)."""
    if first_token:
        return f"no first token within {_seconds(seconds)}"
    return f"timed out after {_seconds(seconds)}"


def skip_reason(outcome: str, left: str) -> str:
    """The words for a health skip `outcome` with `left` (`60 s`) until it ends."""
    return f"{_SKIP_WORDS.get(outcome, outcome)}, {left} left"


def health_skip_reason(skip: Skip, now: float) -> str:
    """The words for `skip` at `now`: the seconds left (`breaker open, 60 s left`), or, while
    the key's probe is in flight, where (`breaker open, probe in flight on another replica`):
    the probe's lease says when it would give up, not when the key is back."""
    if skip.probe is None:
        return skip_reason(skip.outcome, skip.reason(now))
    where = _PROBE_WORDS[skip.probe]
    return f"{_SKIP_WORDS.get(skip.outcome, skip.outcome)}, {where}"


def dropped_reason(names: Iterable[str]) -> str | None:
    """`dropped logprobs, n` for what a translation dropped; None when it dropped nothing."""
    listed = ", ".join(names)
    return f"dropped {listed}" if listed else None


def joined(first: str | None, second: str | None) -> str | None:
    """Two reasons as one (`503 upstream error; dropped logprobs`), either may be missing."""
    if first is None or second is None:
        return first if second is None else second
    return f"{first}; {second}"


def _seconds(value: float) -> str:
    return f"{round(value, 2):g} s"


@dataclass(frozen=True, slots=True)
class EntryNotes:
    """What a call writes on its attempt entry when it starts, beyond the usual fields:
    `shadow` (observe-mode policy decisions), `family_switch` (the first call of a pass in
    another provider family: `quota` or `outage`) and `dropped` (what a translation to the
    target's wire format dropped, as a reason). A call without any carries None instead."""

    shadow: tuple[str, ...] = ()
    family_switch: str | None = None
    dropped: str | None = None

    @classmethod
    def of(
        cls, shadow: tuple[str, ...], family_switch: str | None, dropped: str | None
    ) -> EntryNotes | None:
        """The notes, or None when there is nothing to note."""
        if not shadow and family_switch is None and dropped is None:
            return None
        return cls(shadow, family_switch, dropped)

    def write(self, entry: AttemptEntry) -> None:
        """Write the notes on `entry`."""
        if self.shadow:
            entry.shadow = self.shadow
        if self.family_switch is not None:
            entry.family_switch = self.family_switch
        if self.dropped is not None:
            entry.reason = self.dropped

    def for_retry(self) -> EntryNotes | None:
        """The notes of a same-target retry: the same, but no family switch (it is not the
        first call in the other family)."""
        return EntryNotes.of(self.shadow, None, self.dropped)


class DroppedFields:
    """What a request that came in one wire format loses on the way to targets that speak
    another (`turnout.wire.translate.untranslatable`), as a reason: worked out on the first
    call to a target of each format, for one route pass."""

    __slots__ = ("_found", "_origin", "_request")

    def __init__(self, request: ChatRequest, origin: WireFormat) -> None:
        self._request = request
        self._origin = origin
        self._found: dict[WireFormat, str | None] = {}

    @classmethod
    def of(cls, request: RoutedRequest, translated: frozenset[str]) -> DroppedFields | None:
        """The dropped fields of `request` on a route whose targets translate requests that
        came in one of the `translated` formats; None when nothing is translated."""
        if not translated or not isinstance(request, ChatRequest):
            return None
        origin = request.origin
        if origin is None or origin not in translated:
            return None
        return cls(request, origin)

    @property
    def origin(self) -> WireFormat:
        """The wire format the request came in."""
        return self._origin

    def reason(self, wire_format: WireFormat | None) -> str | None:
        """`dropped logprobs, n` for a target speaking `wire_format`; None when the target
        speaks the request's own format, does not say, or nothing is dropped."""
        if wire_format is None or wire_format == self._origin:
            return None
        found = self._found
        if wire_format not in found:
            found[wire_format] = dropped_reason(untranslatable(self._request, wire_format))
        return found[wire_format]
