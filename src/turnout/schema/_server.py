"""Server, tracing, defaults and the circuit breaker."""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field

from turnout.schema._base import Model, Seconds

__all__ = ["BreakerConfig", "DefaultsConfig", "ServerConfig", "TracingConfig"]


class BreakerConfig(Model):
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


class DefaultsConfig(Model):
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


class TracingConfig(Model):
    """OpenTelemetry traces of the gateway: a span per request, the route's span under it and
    a span per upstream call (`docs/observability.md`). Needs the `turnout[otel]` extra. The
    standard `OTEL_*` variables apply where a key here is not set (`OTEL_SERVICE_NAME`,
    `OTEL_EXPORTER_OTLP_ENDPOINT` and `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_TRACES_SAMPLER`,
    `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_PROPAGATORS`)."""

    exporter: Literal["otlp", "console", "none"] = Field(
        "otlp",
        description="Where spans go: `otlp` (OTLP over HTTP, to a collector), `console` "
        "(one JSON object per span on standard output, for a look), or `none` (tracing off, "
        "even when `OTEL_TRACES_EXPORTER` is set).",
    )
    endpoint: str | None = Field(
        None,
        description="The collector's base URL for `otlp`, such as `http://127.0.0.1:4318`; "
        "spans are posted to its `/v1/traces`. Null: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, "
        "else `OTEL_EXPORTER_OTLP_ENDPOINT`, else `http://localhost:4318`.",
    )
    service_name: str | None = Field(
        None,
        description="The `service.name` of every span. Null: `OTEL_SERVICE_NAME`, else `turnout`.",
    )
    sample_ratio: float | None = Field(
        None,
        ge=0,
        le=1,
        description="The share of new traces recorded (0 to 1); a request that continues a "
        "caller's trace follows the caller's sampling decision. Null: `OTEL_TRACES_SAMPLER`, "
        "else every trace.",
    )


class ServerConfig(Model):
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
    min_body_rate: int = Field(
        500,
        ge=0,
        description="The slowest a request body may arrive, in bytes per second on average, "
        "after a first `body_timeout` of slack (default 500; 0: no minimum): a body of N bytes "
        "has `body_timeout` + N / `min_body_rate` seconds. A body slower than that gets 408 "
        "`request_timeout` and the connection is closed, however often its bytes come.",
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
        "process's open-file limit minus 64, at most 4096). At the cap, a new connection "
        "takes the place of the idlest idle one (no request running; the longest since its "
        "accept, its last request's head or its last response), and is closed at once when "
        "none is idle; a WARNING line says the cap was reached.",
    )
    max_connections_per_address: int | None = Field(
        None,
        ge=1,
        description="The most connections one peer address may hold, per worker process "
        "(default: half of `max_connections`). Past it, a new connection from that address "
        "takes the place of that address's idlest idle connection, or is closed at once; it "
        "never pushes out another address's. Behind a proxy or load balancer every caller "
        "shares its address: raise it to `max_connections` there.",
    )
    shutdown_grace_seconds: float = Field(
        30.0,
        ge=0,
        le=3600,
        description="On SIGTERM, seconds the requests in flight have to finish (default 30); "
        "then open streams end with an in-stream `shutting_down` error event, unfinished "
        "answers get 503, and the process exits.",
    )
    tracing: TracingConfig | None = Field(
        None,
        description="OpenTelemetry traces (off by default). Null: on only when the "
        "`OTEL_TRACES_EXPORTER` variable names `otlp` or `console`. Read at start; a reload "
        "does not change it.",
    )
