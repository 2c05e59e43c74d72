"""Routes and their targets, fallbacks and cache."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from turnout.schema._base import ErrorClassName, Model, Seconds
from turnout.schema._server import BreakerConfig

__all__ = ["CacheConfig", "FallbacksConfig", "RouteConfig", "TargetConfig"]


class TargetConfig(Model):
    """One target of a route: a provider, the model to ask it for, and per-target options."""

    provider: str = Field(min_length=1, description="The name of a provider of the file.")
    model: str | None = Field(
        None,
        description="The model sent to the provider, replacing the one requested. Null keeps "
        "the requested model.",
    )
    name: str | None = Field(
        None,
        description="The target's name in routing records and headers; unique within the "
        "route. Default: `provider:model`.",
    )
    timeout: float = Field(
        600.0,
        gt=0,
        description="Seconds one call may take: until the whole answer, or for a stream until "
        "its first token. A timed-out target is not retried; the route moves on.",
    )
    first_token_timeout: float = Field(
        120.0,
        gt=0,
        description="Seconds a stream may wait for its first token (the tighter of this and "
        "`timeout` applies).",
    )
    max_retries: int = Field(
        0,
        ge=0,
        description="Extra calls to this same target after `rate_limited` or `provider_error`, "
        "before the route moves on. A route's targets allow at most 10 attempts in all: the "
        "sum of 1 + `max_retries` over them is at most 10.",
    )
    weight: int = Field(
        1,
        ge=0,
        le=1_000_000,
        description="Share of starts under the `weighted` strategy (0 never starts, but stays a "
        "failover target); breaks ties under the ranking strategies.",
    )
    fallback_only: bool = Field(False, description="Try this target only after every other target.")
    paused: bool = Field(False, description="Never call this target; it is recorded as `paused`.")
    health_key: str | None = Field(
        None, description="Keep this target's health under its own key instead of the default."
    )
    context_window: int | None = Field(
        None,
        gt=0,
        le=1_000_000_000_000,
        description="Tokens. A request whose estimated prompt (characters / 4) plus "
        "`max_tokens` exceeds it skips the target as `ineligible`. Null: the model catalog's "
        "window for the target's model, when the catalog knows it.",
    )
    capabilities: tuple[Literal["tools", "vision", "json_schema", "embeddings"], ...] | None = (
        Field(
            None,
            description="What the target can do. A request that needs a missing one skips the "
            "target as `ineligible`. Null: assume everything.",
        )
    )

    @property
    def display_name(self) -> str:
        """The target's name: `name`, else `provider:model`."""
        if self.name:
            return self.name
        return f"{self.provider}:{self.model}" if self.model else self.provider


class FallbacksConfig(Model):
    """Routes to escalate to after this route failed, by how it failed. At most 3 in total; at
    most 3 hops per request. A request hops along one kind only: a route reached by a context
    hop goes on to its own `context` fallbacks, never its `general` or `content` ones. So the
    fallbacks of one kind may form no cycle, while two kinds may link two routes both ways."""

    general: tuple[str, ...] = Field(
        (),
        description="Tried when retryable failures left no target of the route to try.",
    )
    context: tuple[str, ...] = Field(
        (), description="Tried when a call failed because the prompt is too long for the model."
    )
    content: tuple[str, ...] = Field(
        (), description="Tried when a call failed on the vendor's content policy."
    )


class CacheConfig(Model):
    """The route's response cache for chat answers (off by default)."""

    enabled: bool = Field(
        False,
        description="Answer a repeated request from the cache, without a call and at cost 0.",
    )
    ttl_seconds: int = Field(300, ge=1, le=86_400, description="Seconds a cached answer is kept.")


class RouteConfig(Model):
    """A route: a named, ordered list of targets, plus how requests walk it."""

    name: str = Field(
        min_length=1,
        max_length=128,
        description="The route's name; callers may also ask for it as the model.",
    )
    models: tuple[str, ...] = Field(
        (),
        description="Model patterns this route serves: exact names or globs with one `*` at "
        "the start, the end or both (`gpt-4o-mini`, `claude-*`); case-insensitive.",
    )
    aliases: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="Model names that select this route, each mapping a target name (or "
        "provider name) to the model that target gets. Targets without an entry are left out.",
    )
    targets: tuple[TargetConfig, ...] = Field(
        min_length=1, description="The targets, in try order."
    )
    enabled: bool = Field(True, description="A disabled route serves nothing.")
    strategy: dict[str, Any] | str = Field(
        default_factory=lambda: {"type": "failover"},
        description="Where a request starts: a type name, or `{type: …}` with the type's "
        "options beside it. See the strategy section.",
    )
    retry_on: tuple[ErrorClassName, ...] | None = Field(
        None,
        description="Error classes that fail over to the next target. Null: `provider_error`, "
        "`timeout`, `rate_limited`, `quota_exhausted`; add `auth` to fail over on 401/403.",
    )
    retryable_statuses: tuple[Annotated[int, Field(ge=100, le=599)], ...] | None = Field(
        None,
        description="HTTP statuses that count as `provider_error`. Null: every 5xx except 501, "
        "and 409.",
    )
    fail_over_on_refusal: bool = Field(
        True,
        description="A 200 answer that the vendor's content filter cut short moves on to the "
        "next target; false returns it as it is.",
    )
    max_attempts: int = Field(
        10,
        ge=1,
        le=10,
        description="Most calls one request may make, retries and fallback routes included.",
    )
    request_timeout: Seconds | None = Field(
        None,
        description="Seconds for the whole request until commit: until the answer is ready, "
        "or a stream's first token. Null: no limit beyond each call's own.",
    )
    stream_idle_timeout: Seconds = Field(
        60.0,
        description="Seconds a stream may go silent after its first token; then it ends with "
        "`stream_broken`.",
    )
    commit_on_headers: bool = Field(
        False,
        description="Send 200 and the stream headers at once, with a keep-alive comment every "
        "15 s until the first token. A failure before it then arrives as an in-stream error.",
    )
    cost_budget: float | None = Field(
        None,
        gt=0,
        description="USD per request. A target whose estimated cost would pass it is not "
        "called (`not_tried`). Needs prices and `max_tokens`.",
    )
    hedge_after: Seconds | None = Field(
        None,
        description="Seconds after which a slow call gets the next target started beside it; "
        "the first accepted answer wins. Null: no hedging.",
    )
    when_all_unhealthy: Literal["probe_first", "probe_soonest", "try_all", "fail"] = Field(
        "probe_first",
        description="What to do when every target would be skipped for its health: call the "
        "first anyway, call the one that recovers soonest, try them all, or fail at once.",
    )
    circuit_breaker: BreakerConfig | None = Field(
        None,
        description="This route's own threshold and cooldown for its skip decisions. Null: "
        "`defaults.circuit_breaker`.",
    )
    fallbacks: FallbacksConfig = Field(
        FallbacksConfig(), description="Routes to escalate to after this route failed."
    )
    cache: CacheConfig = Field(CacheConfig(), description="The response cache.")
    allow_cross_provider: bool = Field(
        False,
        description="Let targets of another provider family serve this route's requests on "
        "`/v1/messages`, and pin each session to the family that first answered it.",
    )
    switch_family_on_quota: bool = Field(
        True,
        description="On a cross-provider route, move a session's pin to the other family when "
        "its family runs out of quota.",
    )
    org_key_fallback_for_caller_credentials: bool = Field(
        False,
        description="When a caller's own credential fails on the passthrough targets, go on to "
        "the route's targets that use the provider's own key.",
    )
