"""The configuration file's shape (SPEC §7.1, §7.3): frozen pydantic models, one per object.

Shape rules live here (types, ranges, enumerations, unknown keys); rules that relate objects to
one another (a target's provider exists, pattern overlaps, fallback cycles, the static attempt
budget) live in `turnout.config.rules`, so that the file and the admin API share both.

Every model forbids unknown keys (the loader turns that into "unknown key … did you mean …")
and accepts AIControls' camelCase spellings as aliases (`failureThreshold`, `fallbackOnly` …).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field
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
    """The circuit breaker: retryable failures in a row open it, and after the cooldown one
    probe call is let through (half-open); a success closes it, a failure reopens it."""

    enabled: bool = Field(
        True,
        description="Turn the breaker on or off. Off also turns quota parking off; cooldowns "
        "from Retry-After stay on.",
    )
    failure_threshold: int = Field(
        3,
        ge=1,
        le=1000,
        description="Retryable failures in a row of one health key that open the breaker.",
    )
    cooldown_seconds: float = Field(
        60.0,
        gt=0,
        le=86_400,
        description="Seconds the breaker stays open before it lets one probe call through.",
    )
    failure_window_seconds: float | None = Field(
        None,
        gt=0,
        le=86_400,
        description="Count only failures newer than this many seconds. Null counts every "
        "failure in a row; a success resets the count either way.",
    )


class DefaultsConfig(_Model):
    """Settings shared by every route: the health registry's breaker policy, how targets map
    to health keys, and how long a session stays pinned."""

    circuit_breaker: BreakerConfig = Field(
        BreakerConfig(),
        description="The breaker policy of the one health registry. Health views use it, and "
        "every route that sets no `circuit_breaker` of its own.",
    )
    health_key_by: Literal["provider", "provider_model", "target"] = Field(
        "provider_model",
        description="What breaker, cooldown and parking state is kept under: the provider, the "
        "provider and the model asked for, or the route and target name.",
    )
    session_pin_ttl_seconds: float = Field(
        86_400.0,
        gt=0,
        alias="sessionPinTTLSeconds",
        # The generated camelCase spelling is accepted too, as it is for every other key.
        validation_alias=AliasChoices("sessionPinTTLSeconds", "sessionPinTtlSeconds"),
        description="Seconds a session keeps its pin (its provider family on a cross-provider "
        "route, its start target under `lowest-latency`) after its last request.",
    )


class ServerConfig(_Model):
    """Where the gateway listens and how callers authenticate."""

    host: str = Field("127.0.0.1", description="The address `turnout serve` binds.")
    port: int = Field(
        4000, ge=0, le=65_535, description="The TCP port `turnout serve` binds; 0 picks a free one."
    )
    auth: Literal["keys", "open"] = Field(
        "keys",
        description="`keys`: every request needs a caller key from `keys`. `open`: no key is "
        "needed and every caller is anonymous; meant for local use.",
    )
    max_body_bytes: int = Field(
        32 * 1024 * 1024,
        ge=1024,
        description="The largest request body in bytes (default 32 MiB); a larger one gets "
        "413 `request_too_large`.",
    )
    max_header_count: int = Field(
        100,
        ge=1,
        le=10_000,
        description="The most header lines a request may have (default 100); more get 431 "
        "`headers_too_large` and the connection is closed.",
    )
    max_header_bytes: int = Field(
        64 * 1024,
        ge=1024,
        le=16 * 1024 * 1024,
        description="The largest request line plus headers, in bytes (default 64 KiB); a "
        "larger head gets 431 `headers_too_large` and the connection is closed.",
    )
    header_timeout: Seconds = Field(
        10.0,
        description="Seconds a caller has to send a request's whole head (request line and "
        "headers), counted from the connection's accept or from the end of the previous "
        "response (default 10); past it the connection is closed, with 408 `request_timeout` "
        "when part of a head arrived.",
    )
    body_timeout: Seconds = Field(
        30.0,
        description="Seconds a request body may go without a byte while the gateway waits for "
        "it (default 30); past it the connection is closed, with 408 `request_timeout` when "
        "nothing was answered yet.",
    )
    keepalive_timeout: Seconds = Field(
        5.0,
        description="Seconds an idle keep-alive connection is kept open for the caller's next "
        "request (default 5).",
    )
    max_connections: int | None = Field(
        None,
        ge=1,
        description="The most connections open at once, per worker process (default: the "
        "process's open-file limit minus 64, at most 4096). Over it, a new connection is "
        "closed at once and a WARNING line says the cap was reached.",
    )
    shutdown_grace_seconds: float = Field(
        30.0,
        ge=0,
        le=3600,
        description="On SIGTERM, seconds the requests in flight have to finish (default 30); "
        "then open streams end with an in-stream `shutting_down` error event, unfinished "
        "answers get 503, and the process exits.",
    )


class Price(_Model):
    """What one model costs, in USD per 1M tokens."""

    input: float = Field(ge=0, description="USD per 1M input (prompt) tokens.")
    output: float = Field(ge=0, description="USD per 1M output (completion) tokens.")


class DataHandling(_Model):
    """What a provider promises about the data it receives. Policies and requirements are
    checked against it; a field left unset meets no requirement."""

    zero_data_retention: bool = Field(
        False, description="The provider keeps no prompts or answers after the call."
    )
    no_prompt_training: bool = Field(
        False, description="The provider does not train models on prompts or answers."
    )
    jurisdiction: str | None = Field(
        None, description="Where the provider processes data, e.g. `EU` or `US`."
    )


class ProviderConfig(_Model):
    """A provider: a vendor endpoint plus one credential (an account). Its `kind` gives the
    wire format it speaks and its family."""

    name: str = Field(
        min_length=1,
        max_length=128,
        description="The provider's name. Targets refer to it; it names the provider's "
        "implicit route. Providers and routes share one name space, ignoring case.",
    )
    kind: ProviderKind = Field(
        description="The adapter: `openai`, `anthropic`, `openai-compatible` (any server "
        "speaking OpenAI Chat Completions), `azure-openai`, or `mock` (built in, scripted, no "
        "network).",
    )
    api_key: str | None = Field(
        None,
        description='The provider\'s own credential, usually `"${OPENAI_API_KEY}"`. Without '
        "one, `credential_mode` says what calls authenticate with.",
    )
    base_url: str | None = Field(
        None,
        description="The API base URL. Default: the vendor's public API, or the preset's. "
        "Required for `azure-openai`, and for `openai-compatible` without a `preset`.",
    )
    preset: Preset | None = Field(
        None,
        description="`openai-compatible` only: a known vendor, which gives the base URL and "
        "how its errors and quota signals read.",
    )
    wire: Literal["openai-chat", "anthropic-messages"] | None = Field(
        None,
        description="The wire format spoken. Required for `azure-openai` (it also decides the "
        "family); for `mock` the default is `openai-chat`.",
    )
    api_version: str | None = Field(
        None,
        description="`azure-openai` only: the `api-version` query parameter (default "
        "`2024-10-21`).",
    )
    credential_mode: Literal["org_key", "passthrough"] | None = Field(
        None,
        description="`org_key`: calls use this provider's own credential. `passthrough`: "
        "calls use the caller's own provider credential, and only callers that send one are "
        "served. Default: `org_key` when there is an `api_key` or none is needed (`mock`, the "
        "`ollama` and `vllm` presets, a server on loopback), else `passthrough`.",
    )
    model_patterns: tuple[str, ...] = Field(
        (),
        description="Models this provider serves through its implicit route while it is in "
        "no enabled route. Empty: its family's default patterns (`gpt-*`, `claude-*` …), and "
        "it serves in its family's route too; with patterns of its own it does not.",
    )
    model_aliases: dict[str, str] = Field(
        default_factory=dict,
        description="Requested model to the model sent on the wire, for this provider.",
    )
    prices: dict[str, Price] = Field(
        default_factory=dict,
        description="Prices by exact model name. They give the routing record its `cost` and "
        "rank targets under `lowest-cost`.",
    )
    data_handling: DataHandling = Field(
        DataHandling(),
        description="What the provider promises about data; checked against policies and "
        "requirements.",
    )
    connect_timeout: float = Field(
        10.0,
        gt=0,
        le=600,
        description="Seconds to open a connection to the provider. A call that cannot connect "
        "in time fails as `timeout`.",
    )
    headers: dict[str, str] = Field(
        default_factory=dict, description="Extra HTTP headers sent with every call."
    )
    # `mock` providers only: what the built-in scripted provider answers (see providers.mock).
    script: tuple[dict[str, Any], ...] = Field(
        (),
        description="`mock` only: one step per call, in order, e.g. `{status: 503, "
        "retry_after: 8}` or `{ok: true}`; the steps use the mock upstream's fault names.",
    )
    max_response_bytes: int = Field(
        32 * 1024 * 1024,
        ge=1024,
        description="The largest answer taken from the provider, in bytes after "
        "decompression (default 32 MiB), and the largest single event of a stream. A larger "
        "one fails the call as `provider_error` and the route moves on; streams are relayed as "
        "they arrive, never held whole.",
    )


class TargetConfig(_Model):
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
        description="Tokens. A request whose estimated prompt (characters / 4) plus "
        "`max_tokens` exceeds it skips the target as `ineligible`.",
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


class FallbacksConfig(_Model):
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


class CacheConfig(_Model):
    """The route's response cache for chat answers (off by default)."""

    enabled: bool = Field(
        False,
        description="Answer a repeated request from the cache, without a call and at cost 0.",
    )
    ttl_seconds: int = Field(300, ge=1, le=86_400, description="Seconds a cached answer is kept.")


class RouteConfig(_Model):
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


class RequireConfig(_Model):
    """Data-handling requirements on a key or binding: a target whose provider does not
    promise them is skipped (`policy_skipped`)."""

    zero_data_retention: bool = Field(
        False, description="Only providers that promise `zero_data_retention`."
    )
    no_prompt_training: bool = Field(
        False, description="Only providers that promise `no_prompt_training`."
    )
    jurisdiction: tuple[str, ...] = Field(
        (),
        description="Only providers whose `jurisdiction` is one of these (ignoring case). "
        "Empty: any.",
    )


class KeyConfig(_Model):
    """A caller key declared in the file: plaintext `key` (from `${VAR}`) or a stored `hash`,
    with the identity and limits of the caller it stands for. A declared key may be any
    non-empty string (`sk-1234` included): only the keys turnout generates have a fixed form
    (`tk_` and 43 random characters)."""

    name: str = Field(min_length=1, description="The key's name in logs, bindings and errors.")
    key: str | None = Field(
        None,
        min_length=1,
        description='The key itself, usually `"${APP_KEY}"`: any non-empty string. Set exactly '
        "one of `key` and `hash`.",
    )
    hash: str | None = Field(
        None,
        description="The key's stored form: `sha256:` and 64 hex digits, as `turnout keys "
        "create` prints it.",
    )
    user: str | None = Field(None, description="The user this key speaks for.")
    teams: tuple[str, ...] = Field((), description="The caller's teams.")
    groups: tuple[str, ...] = Field((), description="The caller's groups.")
    agent: str | None = Field(None, description="The agent this key speaks for.")
    agent_labels: dict[str, str] = Field(
        default_factory=dict, description="Labels of the agent, name to value."
    )
    workload: str | None = Field(None, description="The workload this key speaks for.")
    workload_blueprint: str | None = Field(None, description="The blueprint of that workload.")
    routes: tuple[str, ...] = Field(
        (),
        description="The only routes this key may call. Empty: no limit. With exactly one, a "
        "request without a model goes there.",
    )
    allowed_models: tuple[str, ...] = Field(
        (),
        description="Model patterns this key may ask for. Empty: no limit. Outside them: 400 "
        "`MODEL_DENIED`.",
    )
    recording: Literal["full", "usage_only"] = Field(
        "full",
        description="`usage_only`: this key's answers are never written to the response "
        "cache (it may still read it).",
    )
    require: RequireConfig = Field(
        RequireConfig(),
        description="Data-handling requirements on every target that serves this key.",
    )


class SubjectConfig(_Model):
    """One subject of a binding, the callers it covers: exactly one field set."""

    everyone: bool | None = Field(None, description="`true` covers every caller.")
    user: str | None = Field(None, description="Callers whose key has this `user`.")
    team: str | None = Field(None, description="Callers whose key lists this team.")
    group: str | None = Field(None, description="Callers whose key lists this group.")
    agent: str | None = Field(None, description="Callers whose key has this `agent`.")
    agent_label: str | None = Field(
        None,
        description="`name=value`: callers whose agent has that label value; `name` alone: any "
        "value.",
    )
    workload: str | None = Field(None, description="Callers whose key has this `workload`.")
    workload_blueprint: str | None = Field(
        None, description="Callers whose key has this `workload_blueprint`."
    )
    key: str | None = Field(None, description="The caller using the key of this name.")


class GrantConfig(_Model):
    """A model grant; `route` steers the grant's models through that route."""

    models: str = Field(min_length=1, description="A model pattern: the models this grant covers.")
    route: str | None = Field(
        None,
        description="Send these models through this route (it must serve them). Null: the "
        "route the model would get anyway.",
    )


class BindingConfig(_Model):
    """An access binding: who (subjects) may use which models (grants), and through which
    route. While no enabled allow binding grants any model, everyone may use every model."""

    name: str = Field(min_length=1, description="The binding's name, used in errors and ties.")
    mode: Literal["allow", "deny"] = Field(
        "allow",
        description="`allow` grants the models (and may steer them); `deny` refuses them with "
        "403 `POLICY_DENIED`, whatever allows them.",
    )
    enabled: bool = Field(True, description="A disabled binding has no effect.")
    subjects: tuple[SubjectConfig, ...] = Field(
        min_length=1, description="The callers this binding covers."
    )
    grants: tuple[GrantConfig, ...] = Field((), description="The models it grants or denies.")
    require: RequireConfig = Field(
        RequireConfig(),
        description="Data-handling requirements on every target that serves a request this "
        "binding granted.",
    )


class PolicyConfig(_Model):
    """A routing policy: skip targets by provider, family, route or jurisdiction."""

    name: str = Field(min_length=1, description="The policy's name, in routing records.")
    mode: Literal["enforce", "observe"] = Field(
        "enforce",
        description="`enforce` skips the targets it matches (`policy_skipped`); `observe` only "
        "records that it would have, and calls them.",
    )
    deny_when: dict[
        Literal["provider", "family", "route", "jurisdiction"], str | tuple[str, ...]
    ] = Field(
        description="Conditions on a target, all of which must hold; a list matches any "
        "of its values. `family` and `jurisdiction` ignore case.",
    )


class ConsumerConfig(_Model):
    """Planned: a stored caller object with an assignment. The gateway does not read consumers
    yet, so a file that lists them is refused."""

    name: str = Field(min_length=1, description="Planned: the consumer's name.")
    kind: Literal["agent", "chat", "discussion", "memory"] = Field(
        description="Planned: what kind of caller it is."
    )
    model_route: str | None = Field(None, description="Planned: the route it is assigned.")
    provider: str | None = Field(
        None, description="Planned: a provider it is pinned to instead of a route."
    )
    model: str | None = Field(None, description="Planned: the model asked of that provider.")
    agent: str | None = Field(None, description="Planned: the agent it belongs to.")


class FileConfig(_Model):
    """The whole configuration file."""

    project: str = Field("default", description="The project every object of the file belongs to.")
    server: ServerConfig = Field(ServerConfig(), description="The gateway's listener and auth.")
    store: str = Field(
        "sqlite:///turnout.db",
        description="Not supported yet: the database for configuration, audit and usage, "
        "which nothing reads until the control plane is built. A file that sets it is refused.",
    )
    state: str = Field(
        "memory",
        description="Shared state (session pins, response cache): `memory`, or a `redis://` or "
        "`rediss://` URL to share it between replicas.",
    )
    admin_keys: tuple[str, ...] = Field(
        (),
        description="Not supported yet: keys for the admin API, which is not built yet. A file "
        "that sets it is refused.",
    )
    defaults: DefaultsConfig = Field(
        DefaultsConfig(), description="Settings shared by every route."
    )
    providers: tuple[ProviderConfig, ...] = Field((), description="The providers.")
    routes: tuple[RouteConfig, ...] = Field((), description="The routes.")
    keys: tuple[KeyConfig, ...] = Field(
        (), description="Caller keys, checked when `server.auth` is `keys`."
    )
    bindings: tuple[BindingConfig, ...] = Field(
        (), description="Access bindings: who may use which models, through which route."
    )
    policies: tuple[PolicyConfig, ...] = Field(
        (), description="Routing policies, checked for every target before it is called."
    )
    consumers: tuple[ConsumerConfig, ...] = Field(
        (),
        description="Not supported yet: stored callers with an assignment, which the gateway "
        "does not read yet. A file that sets it is refused.",
    )
