"""Turning tracing on for `turnout serve`: the OpenTelemetry SDK with its exporter, sampler and
resource, from `server.tracing` and the standard `OTEL_*` variables.

Rule 1: tracing is on when `server.tracing` names an exporter other than `none`, or, with no
`server.tracing`, when `OTEL_TRACES_EXPORTER` names `otlp` or `console`. `OTEL_SDK_DISABLED=true`
turns it off whatever the file says.
Rule 2: the SDK is imported only when tracing is on; without the `turnout[otel]` extra that is a
start-up error naming the extra and what asked for tracing.
Rule 3: each serving process installs its own tracer provider (a worker after its fork: the
batch exporter's thread does not survive one) and shuts it down when it stops, which sends
what is still queued.
Rule 4: what the file leaves unset, the SDK reads from the environment as usual: the OTLP
endpoint and headers, the sampler, the batch sizes, resource attributes and propagators.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, cast

from turnout.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from turnout.schema import TracingConfig

__all__ = ["EXTRA", "TracingSettings", "install_tracing"]

EXTRA: Final = "turnout[otel]"
"""The extra that brings the SDK and the OTLP exporter."""
EXPORTER_ENV: Final = "OTEL_TRACES_EXPORTER"
_EXPORTERS: Final = ("otlp", "console")


@dataclass(frozen=True, slots=True)
class TracingSettings:
    """Tracing as a serving process turns it on: the `exporter` (`otlp` or `console`), the
    collector's base URL (`endpoint`; None: the environment's), the `service_name`, the
    `sample_ratio` (None: the environment's sampler), and `source`, the key or variable that
    asked for it."""

    exporter: Literal["otlp", "console"]
    endpoint: str | None = None
    service_name: str = "turnout"
    sample_ratio: float | None = None
    source: str = "server.tracing.exporter"

    @classmethod
    def of(cls, config: TracingConfig | None, env: Mapping[str, str]) -> TracingSettings | None:
        """Rule 1: the settings when tracing is on, else None. An `OTEL_TRACES_EXPORTER` that
        turnout cannot serve raises `ConfigError` naming the variable."""
        if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            return None
        service = env.get("OTEL_SERVICE_NAME") or "turnout"
        if config is not None:
            if config.exporter == "none":
                return None
            return cls(
                config.exporter,
                config.endpoint,
                config.service_name or service,
                config.sample_ratio,
            )
        names = [n.strip() for n in env.get(EXPORTER_ENV, "").split(",") if n.strip()]
        if not names or names == ["none"]:
            return None
        for name in names:
            if name in _EXPORTERS:
                exporter = cast("Literal['otlp', 'console']", name)
                return cls(exporter, service_name=service, source=EXPORTER_ENV)
        raise ConfigError(
            f"{EXPORTER_ENV}={','.join(names)}: turnout serve exports to otlp or console",
            [(EXPORTER_ENV, "must name otlp, console or none")],
        )

    def check_sdk(self) -> None:
        """Rule 2: raise `ConfigError` naming the extra when the SDK or exporter is missing."""
        needed = ["opentelemetry.sdk"]
        if self.exporter == "otlp":
            needed.append("opentelemetry.exporter.otlp.proto.http")
        if all(_importable(name) for name in needed):
            return
        message = (
            f"tracing is on ({self.source}) but the OpenTelemetry SDK is not installed: "
            f"pip install '{EXTRA}'"
        )
        raise ConfigError(message, [(self.source, f"needs the {EXTRA} extra")])


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def install_tracing(settings: TracingSettings) -> Callable[[], None]:
    """Rule 3: install the SDK's tracer provider for this process; returns its shutdown."""
    settings.check_sdk()
    # Rule 2: the SDK is imported here only, once tracing is known to be on.
    from opentelemetry import trace  # noqa: PLC0415
    from opentelemetry.sdk.resources import Resource  # noqa: PLC0415
    from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415
    from opentelemetry.sdk.trace.export import (  # noqa: PLC0415
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SpanExporter,
    )
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased  # noqa: PLC0415

    resource = Resource.create({"service.name": settings.service_name})
    ratio = settings.sample_ratio
    sampler = None if ratio is None else ParentBased(TraceIdRatioBased(ratio))
    provider = TracerProvider(resource=resource, sampler=sampler)
    exporter: SpanExporter
    if settings.exporter == "console":
        exporter = ConsoleSpanExporter()
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415
            OTLPSpanExporter,
        )

        endpoint = settings.endpoint
        exporter = OTLPSpanExporter(
            endpoint=None if endpoint is None else f"{endpoint.rstrip('/')}/v1/traces"
        )
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider.shutdown
