"""The configuration file's shape (SPEC §7.1, §7.3): frozen pydantic models, one per object.

Shape rules live here (types, ranges, enumerations, unknown keys); rules that relate objects to
one another (a target's provider exists, pattern overlaps, fallback cycles, the static attempt
budget) live in `turnout.config.rules`, so that the file and the admin API share both.

Every model forbids unknown keys (the loader turns that into "unknown key … did you mean …")
and accepts AIControls' camelCase spellings as aliases (`failureThreshold`, `fallbackOnly` …).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

__all__ = [
    "BindingConfig",
    "BreakerConfig",
    "CacheConfig",
    "ConsumerConfig",
    "DataHandling",
    "DefaultsConfig",
    "FallbacksConfig",
    "FileConfig",
    "GrantConfig",
    "KeyConfig",
    "PolicyConfig",
    "Price",
    "ProviderConfig",
    "RequireConfig",
    "RouteConfig",
    "ServerConfig",
    "SubjectConfig",
    "TargetConfig",
]

ErrorClassName = Literal["provider_error", "timeout", "rate_limited", "quota_exhausted", "auth"]
ProviderKind = Literal["openai", "anthropic", "openai-compatible", "azure-openai", "mock"]
Preset = Literal["deepseek", "groq", "kimi", "zai", "xai", "ollama", "vllm"]
Seconds = Annotated[float, Field(gt=0)]


class _Model(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        str_strip_whitespace=True,
    )


class BreakerConfig(_Model):
    """`circuit_breaker`: on by default; `failure_window_seconds` null counts failures in a row."""

    enabled: bool = True
    failure_threshold: int = Field(3, ge=1, le=1000)
    cooldown_seconds: float = Field(60.0, gt=0, le=86_400)
    failure_window_seconds: float | None = Field(None, gt=0, le=86_400)


class DefaultsConfig(_Model):
    """`defaults`: the registry's breaker policy, health key choice and session pin TTL."""

    circuit_breaker: BreakerConfig = BreakerConfig()
    health_key_by: Literal["provider", "provider_model", "target"] = "provider_model"
    session_pin_ttl_seconds: float = Field(86_400.0, gt=0, alias="sessionPinTTLSeconds")


class ServerConfig(_Model):
    """`server`: where the gateway listens and how callers authenticate."""

    host: str = "127.0.0.1"
    port: int = Field(4000, ge=0, le=65_535)
    auth: Literal["keys", "open"] = "keys"
    max_body_bytes: int = Field(32 * 1024 * 1024, ge=1024)


class Price(_Model):
    """USD per 1M tokens."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)


class DataHandling(_Model):
    """What a provider promises about the data it receives (SPEC §6.3)."""

    zero_data_retention: bool = False
    no_prompt_training: bool = False
    jurisdiction: str | None = None


class ProviderConfig(_Model):
    """A provider: a vendor endpoint plus one credential (SPEC §4)."""

    name: str = Field(min_length=1, max_length=128)
    kind: ProviderKind
    api_key: str | None = None
    base_url: str | None = None
    preset: Preset | None = None
    wire: Literal["openai-chat", "anthropic-messages"] | None = None
    api_version: str | None = None
    credential_mode: Literal["org_key", "passthrough"] | None = None
    model_patterns: tuple[str, ...] = ()
    model_aliases: dict[str, str] = Field(default_factory=dict)
    prices: dict[str, Price] = Field(default_factory=dict)
    data_handling: DataHandling = DataHandling()
    connect_timeout: float = Field(10.0, gt=0, le=600)
    headers: dict[str, str] = Field(default_factory=dict)
    # `mock` providers only: what the built-in scripted provider answers (see providers.mock).
    script: tuple[dict[str, Any], ...] = ()


class TargetConfig(_Model):
    """One target of a route (SPEC §7.3)."""

    provider: str = Field(min_length=1)
    model: str | None = None
    name: str | None = None
    timeout: float = Field(600.0, gt=0)
    first_token_timeout: float = Field(120.0, gt=0)
    max_retries: int = Field(0, ge=0, le=9)
    weight: int = Field(1, ge=0, le=1_000_000)
    fallback_only: bool = False
    paused: bool = False
    health_key: str | None = None
    context_window: int | None = Field(None, gt=0)
    capabilities: tuple[Literal["tools", "vision", "json_schema", "embeddings"], ...] | None = None

    @property
    def display_name(self) -> str:
        """The target's name: `name`, else `provider:model`."""
        if self.name:
            return self.name
        return f"{self.provider}:{self.model}" if self.model else self.provider


class FallbacksConfig(_Model):
    """Escalation routes by how the route failed (SPEC §3.8)."""

    general: tuple[str, ...] = ()
    context: tuple[str, ...] = ()
    content: tuple[str, ...] = ()


class CacheConfig(_Model):
    """The per-route response cache (SPEC §5.5)."""

    enabled: bool = False
    ttl_seconds: int = Field(300, ge=1, le=86_400)


class RouteConfig(_Model):
    """A route (SPEC §7.3). `strategy` is checked by the engine's strategy rules."""

    name: str = Field(min_length=1, max_length=128)
    models: tuple[str, ...] = ()
    aliases: dict[str, dict[str, str]] = Field(default_factory=dict)
    targets: tuple[TargetConfig, ...] = Field(min_length=1)
    enabled: bool = True
    strategy: dict[str, Any] | str = Field(default_factory=lambda: {"type": "failover"})
    retry_on: tuple[ErrorClassName, ...] | None = None
    retryable_statuses: tuple[Annotated[int, Field(ge=100, le=599)], ...] | None = None
    fail_over_on_refusal: bool = True
    max_attempts: int = Field(10, ge=1, le=10)
    request_timeout: Seconds | None = None
    stream_idle_timeout: Seconds = 60.0
    commit_on_headers: bool = False
    cost_budget: float | None = Field(None, gt=0)
    hedge_after: Seconds | None = None
    when_all_unhealthy: Literal["probe_first", "probe_soonest", "try_all", "fail"] = "probe_first"
    circuit_breaker: BreakerConfig | None = None
    fallbacks: FallbacksConfig = FallbacksConfig()
    cache: CacheConfig = CacheConfig()
    allow_cross_provider: bool = False
    switch_family_on_quota: bool = True
    org_key_fallback_for_caller_credentials: bool = False


class RequireConfig(_Model):
    """Data-handling requirements on a key or binding (SPEC §6.3)."""

    zero_data_retention: bool = False
    no_prompt_training: bool = False
    jurisdiction: tuple[str, ...] = ()


class KeyConfig(_Model):
    """A caller key declared in the file: plaintext `key` (from `${VAR}`) or a stored `hash`."""

    name: str = Field(min_length=1)
    key: str | None = Field(None, min_length=8)
    hash: str | None = None
    user: str | None = None
    teams: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()
    agent: str | None = None
    agent_labels: dict[str, str] = Field(default_factory=dict)
    workload: str | None = None
    workload_blueprint: str | None = None
    routes: tuple[str, ...] = ()
    allowed_models: tuple[str, ...] = ()
    recording: Literal["full", "usage_only"] = "full"
    require: RequireConfig = RequireConfig()


class SubjectConfig(_Model):
    """One subject of a binding: exactly one field set."""

    everyone: bool | None = None
    user: str | None = None
    team: str | None = None
    group: str | None = None
    agent: str | None = None
    agent_label: str | None = None
    workload: str | None = None
    workload_blueprint: str | None = None
    key: str | None = None


class GrantConfig(_Model):
    """A model grant; `route` steers the grant's models through that route."""

    models: str = Field(min_length=1)
    route: str | None = None


class BindingConfig(_Model):
    """An access binding (SPEC §6.3)."""

    name: str = Field(min_length=1)
    mode: Literal["allow", "deny"] = "allow"
    enabled: bool = True
    subjects: tuple[SubjectConfig, ...] = Field(min_length=1)
    grants: tuple[GrantConfig, ...] = ()
    require: RequireConfig = RequireConfig()


class PolicyConfig(_Model):
    """A routing policy: deny targets by provider, family, route or jurisdiction."""

    name: str = Field(min_length=1)
    mode: Literal["enforce", "observe"] = "enforce"
    deny_when: dict[Literal["provider", "family", "route", "jurisdiction"], str | tuple[str, ...]]


class ConsumerConfig(_Model):
    """A stored caller object with an assignment (SPEC §8.3)."""

    name: str = Field(min_length=1)
    kind: Literal["agent", "chat", "discussion", "memory"]
    model_route: str | None = None
    provider: str | None = None
    model: str | None = None
    agent: str | None = None


class FileConfig(_Model):
    """The whole configuration file (SPEC §7.1)."""

    project: str = "default"
    server: ServerConfig = ServerConfig()
    store: str = "sqlite:///turnout.db"
    state: str = "memory"
    admin_keys: tuple[str, ...] = ()
    defaults: DefaultsConfig = DefaultsConfig()
    providers: tuple[ProviderConfig, ...] = ()
    routes: tuple[RouteConfig, ...] = ()
    keys: tuple[KeyConfig, ...] = ()
    bindings: tuple[BindingConfig, ...] = ()
    policies: tuple[PolicyConfig, ...] = ()
    consumers: tuple[ConsumerConfig, ...] = ()
