"""Spans for tests: one global OpenTelemetry SDK tracer provider per test process, with the SDK's
in-memory exporter. Its sampler records only inside `collected_spans()`, so the tests that run
after the first tracing test pay for a dropped span, not a recorded one."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.trace import Link, SpanKind, TraceState
    from opentelemetry.util.types import Attributes


class _Switch(Sampler):
    """Records every span while `on`, none otherwise."""

    def __init__(self) -> None:
        self.on = False

    def should_sample(  # noqa: PLR0917 - the SDK's signature
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Attributes = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        decision = Decision.RECORD_AND_SAMPLE if self.on else Decision.DROP
        return SamplingResult(decision, attributes if self.on else None)

    def get_description(self) -> str:
        return "the tests' switch"


_SWITCH = _Switch()
_EXPORTER = InMemorySpanExporter()
_installed: list[TracerProvider] = []


def _install() -> None:
    if not _installed:
        provider = TracerProvider(sampler=_SWITCH)
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        trace.set_tracer_provider(provider)
        _installed.append(provider)


@contextmanager
def collected_spans() -> Iterator[InMemorySpanExporter]:
    """Record spans until the block ends; the exporter holds those that ended."""
    _install()
    _EXPORTER.clear()
    _SWITCH.on = True
    try:
        yield _EXPORTER
    finally:
        _SWITCH.on = False
        _EXPORTER.clear()


def attributes(span: ReadableSpan) -> dict[str, Any]:
    """A span's attributes as a plain dict (sequences as tuples)."""
    return {
        name: tuple(v) if isinstance(v, list | tuple) else v
        for name, v in (span.attributes or {}).items()
    }


def named(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    """The spans called `name`, in the order they ended."""
    return [span for span in spans if span.name == name]
