"""The routing record: what one routed request did (field by field in `docs/concepts.md`).

A `RoutingRecord` names the route, who answered and with which model, usage and cost, and holds
one `AttemptEntry` per call (same-target retries and hedges are separate entries) plus one per
target that was skipped or never tried, in the order they happened.

Rule 1: `index` of an entry is its 1-based position in `attempts`; entries are only appended.
Rule 2: only the serving call is billed (`usage`, `cost`); every other call's usage is summed in
`discarded_usage`.
Rule 3: `error_class` is None on the answering entry and on entries that are not calls.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, NamedTuple

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "CALL_OUTCOMES",
    "OUTCOMES",
    "SKIP_OUTCOMES",
    "AttemptEntry",
    "FinishedRequest",
    "RoutingRecord",
    "Usage",
]


@dataclass(slots=True, frozen=True)
class Usage:
    """Token usage of one call. The cache counts are part of `input_tokens`, and
    `reasoning_tokens` (the model's thinking, as the vendor reports it apart: OpenAI's
    `reasoning_tokens`, Gemini's `thoughtsTokenCount`) is part of `output_tokens`, billed as
    output: none of them is to be added to its total. Anthropic counts thinking in its output
    tokens without a separate count, so its `reasoning_tokens` stays 0."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def __init__(
        self,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        reasoning_tokens: int = 0,
    ) -> None:
        # Made on every call: the slots are set directly, at half the cost of the frozen
        # dataclass's own __init__ (object.__setattr__ per field). Same fields, same order.
        _set_input(self, input_tokens)
        _set_output(self, output_tokens)
        _set_cache_read(self, cache_read_tokens)
        _set_cache_write(self, cache_write_tokens)
        _set_reasoning(self, reasoning_tokens)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        """The record's `usage` shape."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "reasoning_tokens": self.reasoning_tokens,
        }


_set_input, _set_output, _set_cache_read, _set_cache_write, _set_reasoning = (
    vars(Usage)[name].__set__
    for name in (
        "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
        "reasoning_tokens",
    )
)  # fmt: skip


OUTCOMES: Final = (
    "answered",
    "failed",
    "refused",
    "rejected",
    "ineligible",
    "cooling_down",
    "breaker_open",
    "parked",
    "paused",
    "policy_skipped",
    "lost_race",
    "not_tried",
    "cancelled",
)
"""Every outcome word an attempt entry can end as."""

CALL_OUTCOMES: Final = frozenset(
    {"answered", "failed", "refused", "rejected", "lost_race", "cancelled"}
)
"""Outcomes of entries that are calls (the others are skips)."""

SKIP_OUTCOMES: Final = frozenset({"cooling_down", "breaker_open", "parked"})
"""Outcomes of a health skip; their reason is the seconds left."""


_SECONDS: dict[int, str] = {}
"""The text of whole epoch seconds met lately (`2026-01-01T00:00:00`): most times of a batch
share their second."""


def epoch_parts(epoch: float) -> tuple[str, int]:
    """`epoch` seconds as the ISO 8601 UTC text of its whole second (`2026-01-01T00:00:00`) and
    its microseconds, both exactly as `datetime.fromtimestamp(epoch, UTC)` has them (its
    microseconds rounded half to even, a carry into the second)."""
    fraction, whole = math.modf(epoch)
    micro = round(fraction * 1e6)
    if micro >= 1_000_000:
        micro -= 1_000_000
        whole += 1.0
    elif micro < 0:
        micro += 1_000_000
        whole -= 1.0
    second = int(whole)
    text = _SECONDS.get(second)
    if text is None:
        if len(_SECONDS) >= 4096:
            _SECONDS.clear()
        text = _SECONDS[second] = dt.datetime.fromtimestamp(second, dt.UTC).isoformat()[:19]
    return text, micro


def iso_utc(epoch: float) -> str:
    """`epoch` seconds as ISO 8601 UTC with milliseconds (`2026-01-01T00:00:00.000Z`), the
    microseconds cut as `isoformat(timespec="milliseconds")` cuts them."""
    text, micro = epoch_parts(epoch)
    return f"{text}.{micro // 1000:03d}Z"


@dataclass(slots=True, eq=False)
class AttemptEntry:
    """One line of a routing record: a call, or a target that was skipped or not tried.

    `index` is 1-based; `target_index` is 0-based in the route's target list. `model` is the wire
    model asked for. `status` is the HTTP status of a failed call (None without one); `reason` says
    what happened in a few stable words: a failure (`429 rate limited, Retry-After 2 s`,
    `connection reset`, `timed out after 30 s`), the accept or eligibility reason, a skip with
    the time left (`cooling down, 60 s left`), why a target was not tried (`max_attempts`), and
    what a translation to the target's wire format dropped (`dropped logprobs, n`, joined to
    the rest with `; `); `retry_after` is in seconds. `started_wall` is the epoch time the entry
    began (None for a target never reached); `started_at` renders it as ISO 8601 UTC.
    `duration_ms` is whole milliseconds (None for entries that are not calls). `hedge` is True
    for a call started beside a running one. `shadow` holds the decisions of observe-mode
    policies that would have skipped the target (it was called anyway). `family_switch` is set
    on the first call of a cross-provider route's pass outside the family the request preferred:
    `quota` (a quota failure moved the session to the other family) or `outage` (the preferred
    family had no target left that could serve; the session keeps its pin); None otherwise.
    """

    index: int
    target: str
    target_index: int
    outcome: str
    provider: str | None = None
    model: str | None = None
    call_id: str | None = None
    endpoint: str | None = None
    started_wall: float | None = None
    hedge: bool = False
    error_class: str | None = None
    status: int | None = None
    reason: str | None = None
    retry_after: float | None = None
    duration_ms: int | None = None
    committed: bool = False
    provider_request_id: str | None = None
    usage: Usage | None = None
    shadow: tuple[str, ...] = ()
    family_switch: str | None = None

    @property
    def started_at(self) -> str | None:
        """When the entry began, ISO 8601 UTC (None for a target never reached)."""
        return None if self.started_wall is None else iso_utc(self.started_wall)

    @property
    def is_call(self) -> bool:
        """True when this entry is a call to the target (not a skip)."""
        return self.outcome in CALL_OUTCOMES

    def as_dict(self) -> dict[str, Any]:
        """The entry as JSON-ready values, under its documented field names."""
        return {
            "index": self.index,
            "call_id": self.call_id,
            "target": self.target,
            "target_index": self.target_index,
            "provider": self.provider,
            "model": self.model,
            "endpoint": self.endpoint,
            "outcome": self.outcome,
            "error_class": self.error_class,
            "status": self.status,
            "reason": self.reason,
            "retry_after": self.retry_after,
            "started_at": self.started_at,
            "duration_ms": self.duration_ms,
            "committed": self.committed,
            "provider_request_id": self.provider_request_id,
            "usage": None if self.usage is None else self.usage.as_dict(),
            "hedge": self.hedge,
            "shadow": list(self.shadow),
            "family_switch": self.family_switch,
        }


@dataclass(slots=True, eq=False)
class RoutingRecord:
    """Everything one routed request did.

    `answered` is the serving target's name (None when nothing answered) and `target_index` its
    0-based position; `served_provider` / `served_model` say who served. `fallbacks` counts the
    distinct targets passed (failed or skipped) before the serving one; `hedges` the hedge calls
    started. `fallback_route` / `fallback_kind` (`general`, `context`, `content`) name the
    fallback route that served or was last tried. `credential_fallback` is True when an org-key
    target served a caller that brought its own credential. `usage` and `cost`
    (USD, None without a price) are the serving call's; `price_source` says where its price
    came from (`config`: the provider's own `prices`; `catalog`: the model catalog; None
    without a cost); `discarded_usage` sums every other call's usage.
    `remaining_attempts` is what is left of the request's `max_attempts`. `error` describes how
    a failed request ended (`status`, `code`, `message`), None on success.
    """

    request_id: str
    route: str
    route_id: str
    strategy: str
    strategy_reason: str
    requested_model: str | None = None
    session_id: str | None = None
    answered: str | None = None
    target_index: int | None = None
    served_provider: str | None = None
    served_provider_id: str | None = None
    served_model: str | None = None
    fallbacks: int = 0
    hedges: int = 0
    fallback_route: str | None = None
    fallback_kind: str | None = None
    cache: str | None = None
    credential_fallback: bool = False
    conversation_id: str | None = None
    visited_models: list[str] = field(default_factory=list)
    remaining_attempts: int = 0
    usage: Usage | None = None
    discarded_usage: Usage | None = None
    cost: float | None = None
    price_source: str | None = None
    error: dict[str, Any] | None = None
    attempts: list[AttemptEntry] = field(default_factory=list)

    def add(self, entry: AttemptEntry) -> AttemptEntry:
        """Append `entry` (its `index` is set to its 1-based position) and return it."""
        self.attempts.append(entry)
        entry.index = len(self.attempts)
        return entry

    def outcomes(self) -> list[tuple[str, str]]:
        """`(target, outcome)` per entry, in order: a compact view for tests and logs."""
        return [(entry.target, entry.outcome) for entry in self.attempts]

    def as_dict(self) -> dict[str, Any]:
        """The record as JSON-ready values, under its documented field names."""
        return {
            "request_id": self.request_id,
            "route": self.route,
            "route_id": self.route_id,
            "strategy": self.strategy,
            "strategy_reason": self.strategy_reason,
            "requested_model": self.requested_model,
            "answered": self.answered,
            "target_index": self.target_index,
            "served_provider": self.served_provider,
            "served_provider_id": self.served_provider_id,
            "served_model": self.served_model,
            "fallbacks": self.fallbacks,
            "hedges": self.hedges,
            "fallback_route": self.fallback_route,
            "fallback_kind": self.fallback_kind,
            "cache": self.cache,
            "session_id": self.session_id,
            "credential_fallback": self.credential_fallback,
            "conversation_id": self.conversation_id,
            "visited_models": list(self.visited_models),
            "remaining_attempts": self.remaining_attempts,
            "usage": None if self.usage is None else self.usage.as_dict(),
            "discarded_usage": (
                None if self.discarded_usage is None else self.discarded_usage.as_dict()
            ),
            "cost": self.cost,
            "price_source": self.price_source,
            "error": None if self.error is None else dict(self.error),
            "attempts": [entry.as_dict() for entry in self.attempts],
        }

    def format_table(self) -> str:
        """The record as a small table, one line per attempt entry::

        route 'triage': answered by local (llama-local), hedges 0
          primary   failed       429 rate limited
          local     answered
        """
        title = (
            f"route '{self.route}': answered by {self.answered or 'nobody'} "
            f"({self.served_model or ''}), hedges {self.hedges}"
        )
        if self.fallback_route is not None:
            title += f", fallback route '{self.fallback_route}' ({self.fallback_kind})"
        lines = [title]
        lines.extend(
            f"  {entry.target:<9} {entry.outcome:<12} {entry.reason or ''}".rstrip()
            for entry in self.attempts
        )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format_table()


class FinishedRequest(NamedTuple):
    """One request the gateway finished, as it is handed to the audit: its routing record (the
    object the gateway finished, or plain JSON; never a key or a credential), when it ended
    (`at`, epoch seconds), the caller's project and key name, the endpoint (path), the status
    sent (499 when the caller left), the outcome (`answered`, `failed`, `cancelled`, `refused`),
    the time it took (`latency_ms`) and, when its usage entry's id was minted already, that id
    (None: minted when the entry is made)."""

    record: Mapping[str, Any] | RoutingRecord
    at: float
    project: str | None
    key_name: str | None
    endpoint: str
    status: int
    outcome: str
    latency_ms: int
    usage_id: str | None = None
