"""`Target`: one entry of a route, and whether it can take a given request.

A chat request is ineligible on a target that lacks a needed capability, whose context window
it overflows, whose client speaks another wire format than the request's server tools (an
Anthropic `web_search`, say: no other family can run it, and translation would drop it
silently; `turnout.wire.tool_kinds` says which tools may be flattened or dropped instead),
whose wire format cannot honour the request's `response_format` (`turnout.wire.structured`),
or whose own `eligible` rule says no.
"""

from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any, Final

from turnout.errors import ConfigError
from turnout.routing.context_fit import context_overflow
from turnout.routing.target_facts import native_formats
from turnout.wire.model import EmbeddingRequest, ImagePart
from turnout.wire.structured import RESPONSE_FORMATS, response_format_kind
from turnout.wire.tool_kinds import required_foreign_tools, tool_kind

if TYPE_CHECKING:
    from collections.abc import Callable
    from collections.abc import Set as AbstractSet

    from turnout.routing.client import ChatClient
    from turnout.wire.model import ChatRequest

__all__ = [
    "CAPABILITIES",
    "NO_EMBEDDINGS",
    "Target",
    "ineligible_reason",
    "needed_capabilities",
    "serves_embeddings",
]

CAPABILITIES: Final = frozenset({"tools", "vision", "json_schema", "embeddings"})
"""What a target may declare in `capabilities`."""
NO_EMBEDDINGS: Final = "no embeddings"
"""The reason a target that cannot serve embeddings is ineligible for an embeddings request."""


@dataclass(frozen=True, slots=True, eq=False)
class Target:
    """One provider + model of a route, with its per-target options.

    - `client`: any `ChatClient` (a provider adapter, a `ScriptedModel`, another `Route`).
    - `model`: the wire model to ask for, replacing the request's model (None = keep it).
    - `timeout` (seconds, default 600): bounds a call until its whole answer, or a stream until
      its first token. `first_token_timeout` (seconds, default 120) bounds a stream's first
      token more tightly.
    - `max_retries` (default 0, a whole number ≥ 0): same-target retries of `rate_limited` and
      `provider_error`; the route holds the sum of 1 + `max_retries` over its targets to 10.
    - `weight` (default 1): for the `weighted` strategy and tie-breaks (0-1,000,000).
    - `fallback_only` (default False): tried only after every other target.
    - `paused` (default False): never called (recorded `paused`).
    - `health_key`: keep this target's health under its own key.
    - `context_window` (tokens): a request whose estimated prompt (characters ÷ 4) plus
      `max_tokens` exceeds it makes the target ineligible.
    - `capabilities`: a subset of `tools`, `vision`, `json_schema`, `embeddings` (None = assume
      all); a request needing one the target lacks makes it ineligible (an embeddings request
      needs `embeddings`, and a client with `embed`).
    - `eligible(request, context) -> reason | None`: your own rule; a reason skips the target.
      For `Route.embed` it receives the `EmbeddingRequest`.
    """

    name: str
    client: ChatClient
    model: str | None = None
    _: KW_ONLY
    timeout: float = 600.0
    first_token_timeout: float = 120.0
    max_retries: int = 0
    weight: int = 1
    fallback_only: bool = False
    paused: bool = False
    health_key: str | None = None
    context_window: int | None = None
    capabilities: AbstractSet[str] | None = None
    eligible: Callable[[ChatRequest, Any], str | None] | None = None

    def __post_init__(self) -> None:
        if self.capabilities is not None:
            object.__setattr__(self, "capabilities", frozenset(self.capabilities))
        _check_target(self)

    def __repr__(self) -> str:
        model = f", model={self.model!r}" if self.model else ""
        return f"Target({self.name!r}, {self.client!r}{model})"

    @property
    def has_eligibility_rules(self) -> bool:
        """True when requests must be checked against this target before calling it (it has
        `eligible`, `capabilities` or a `context_window`)."""
        return (
            self.eligible is not None
            or self.capabilities is not None
            or self.context_window is not None
        )


def _check_target(target: Target) -> None:
    where = f"target {target.name!r}"

    def fail(option: str, rule: str) -> None:
        raise ConfigError(f"{where}: {option} {rule}", [(option, rule)])

    if not isinstance(target.name, str) or not target.name:
        raise ConfigError(
            "a target needs a non-empty name", [("name", "must be a non-empty string")]
        )
    for option in ("timeout", "first_token_timeout"):
        value = getattr(target, option)
        if not _is_number(value) or value <= 0:
            fail(option, f"must be a number of seconds > 0 (got {value!r})")
    # Only the route can tell the upper bound: the total of its targets' attempts.
    retries = target.max_retries
    if not _is_whole(retries) or retries < 0:
        fail("max_retries", f"must be a whole number ≥ 0 (got {retries!r})")
    window = target.context_window
    if window is not None and (not _is_whole(window) or window <= 0):
        fail("context_window", f"must be a whole number of tokens > 0 (got {window!r})")
    if target.capabilities is not None and not target.capabilities <= CAPABILITIES:
        unknown = ", ".join(sorted(set(target.capabilities) - CAPABILITIES))
        fail("capabilities", f"has unknown {unknown} (allowed: {', '.join(sorted(CAPABILITIES))})")
    eligible: object = target.eligible
    if eligible is not None and not callable(eligible):
        fail("eligible", "must be a callable (request, context) -> reason | None")
    for flag in ("fallback_only", "paused"):
        if not isinstance(getattr(target, flag), bool):
            fail(flag, "must be true or false")
    if not hasattr(target.client, "complete") or not hasattr(target.client, "provider"):
        fail("client", "must be a chat client (complete, stream and provider)")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _is_whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def needed_capabilities(request: ChatRequest) -> frozenset[str]:
    """The capabilities `request` needs: `tools`, `vision` (an image part), `json_schema`."""
    needed: set[str] = set()
    if request.tools:
        needed.add("tools")
    if any(isinstance(part, ImagePart) for m in request.messages for part in m.content):
        needed.add("vision")
    if request.response_format and request.response_format.get("type") == "json_schema":
        needed.add("json_schema")
    return frozenset(needed)


def serves_embeddings(target: Target) -> bool:
    """True when `target` can serve embeddings: its client has `embed`, does not say
    `supports_embeddings = False`, and the target's declared `capabilities` (if any) include
    `embeddings`."""
    client = target.client
    if not hasattr(client, "embed") or getattr(client, "supports_embeddings", True) is False:
        return False
    return target.capabilities is None or "embeddings" in target.capabilities


def ineligible_reason(
    target: Target, request: ChatRequest | EmbeddingRequest, context: Any
) -> str | None:
    """Why `target` cannot take `request`, or None when it can.

    A chat request checks capabilities, the context window and the target's own `eligible`
    rule, in that order; an embeddings request checks that the target serves embeddings
    (`NO_EMBEDDINGS`), then its `eligible` rule.
    """
    if isinstance(request, EmbeddingRequest):
        if not serves_embeddings(target):
            return NO_EMBEDDINGS
        return _own_rule(target, request, context)
    if target.capabilities is not None:
        missing = needed_capabilities(request) - target.capabilities
        if missing:
            return f"it lacks {', '.join(sorted(missing))}"
    if request.server_features or request.tools or request.response_format is not None:
        crossing = _crossing_reason(target, request)
        if crossing is not None:
            return crossing
    if target.context_window is not None:
        overflow = context_overflow(target.context_window, request)
        if overflow is not None:
            return overflow
    if target.eligible is not None:
        return target.eligible(request, context)
    return None


def _crossing_reason(target: Target, request: ChatRequest) -> str | None:
    """Why the request cannot cross to the target's wire format: state only its own server
    keeps, tools only its own vendor runs, or a response format the target's cannot hold."""
    if request.server_features:
        needs = _server_state(target, request)
        if needs is not None:
            return needs
    if request.tools:
        foreign = _foreign_tools(target, request)
        if foreign:
            plural = "s" if len(foreign) > 1 else ""
            return f"it cannot carry the server tool{plural} {', '.join(foreign)}"
    if request.response_format is not None:
        return _unhonoured_format(target, request)
    return None


def _server_state(target: Target, request: ChatRequest) -> str | None:
    """Why a target that does not serve the request's own format natively cannot take a
    request needing what only that format's server does (`request.server_features`)."""
    formats = native_formats(target.client)
    if not formats or request.origin in formats:
        return None
    features = ", ".join(request.server_features)
    return f"it cannot serve {features}, which only the {request.origin} server itself keeps"


def _foreign_tools(target: Target, request: ChatRequest) -> list[str]:
    """The request's server tools that the target's wire formats cannot run, named for the
    reason (empty: none, or the client does not say which format it speaks)."""
    formats = native_formats(target.client)
    if not formats:
        return []
    return [
        f"{tool.name} ({tool_kind(tool)[1]})" for tool in required_foreign_tools(request, formats)
    ]


def _unhonoured_format(target: Target, request: ChatRequest) -> str | None:
    """Why a target whose wire formats cannot hold the request's `response_format` (a JSON
    schema changes what the answer must be) cannot take it; None when one can, or the client
    does not say which format it speaks."""
    formats = native_formats(target.client)
    if not formats or request.origin in formats:
        return None
    kind = response_format_kind(request)
    if kind is None or any(kind in RESPONSE_FORMATS.get(f, ()) for f in formats):
        return None
    return f"it cannot honour response_format {kind}"


def _own_rule(target: Target, request: EmbeddingRequest, context: Any) -> str | None:
    """The target's `eligible` rule, given an embeddings request (documented on `Target`)."""
    if target.eligible is None:
        return None
    rule: Callable[[Any, Any], str | None] = target.eligible
    return rule(request, context)
