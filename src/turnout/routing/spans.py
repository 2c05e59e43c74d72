"""OpenTelemetry spans of routed requests, made through the OpenTelemetry API alone.

A request gets a span `route <name>` (kind INTERNAL), a child of whatever span is current when
the request starts (the caller's own, if any), unless the code that serves the request offered
its own span for it (`offer_span`: the gateway's span of an HTTP request), which the request then
takes as its own. Each call to a target gets a child span `<operation> <model>` of the request's
span (kind CLIENT) with the GenAI semantic-convention attributes
(`gen_ai.provider.name`, the current spelling of what older conventions called `gen_ai.system`)
and turnout's own (`turnout.*`). The API is a no-op facade that does no I/O: the application
(or `turnout serve`) chooses the SDK and exporter, or none.

Rule 1: nothing is built unless a tracer provider records: the route span is started through
the API's tracer, and when it does not record (no provider configured, or sampled out) the
request keeps no trace, its calls start no span and no attribute is ever computed.
Rule 2: attributes are names, counts and ids only: route, target, provider and model names,
token counts, statuses, outcome and error-class words. Never a prompt, an answer, a header, a
key or an error message (which may quote either).
Rule 3: every span started ends once: a call's when it is settled or cancelled, a committed
stream's when the stream ends; the route span when the request closes, which first ends any
call span still open (as its entry then reads). An offered span is taken by one request only,
which writes the route's attributes on it and leaves its end to the code that offered it.
Rule 4: a failed call, and a request that ended without an answer, get status ERROR with the
error class as its description and as `error.type`; refused, rejected, lost and cancelled
calls are not errors.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span

    from turnout.record import AttemptEntry, RoutingRecord
    from turnout.routing.attempt import Call
    from turnout.routing.request_state import RequestState

__all__ = ["RequestTrace", "current_call", "end_call", "offer_span", "start_request"]

_TRACER: Final = trace.get_tracer("turnout")
"""The API's tracer: a proxy that follows the global tracer provider once one is set."""

_SEMCONV_PROVIDERS: Final = {"azure-openai": "azure.ai.openai", "xai": "x_ai"}
"""Vendor names whose well-known `gen_ai.provider.name` is spelled otherwise."""
_OFFERED: Final = otel_context.create_key("turnout.offered_span")


class _Offer:
    """A span offered to the next request that starts in its context (taken once)."""

    __slots__ = ("span", "taken")

    def __init__(self, span: Span) -> None:
        self.span = span
        self.taken = False


def offer_span(span: Span) -> Context:
    """A context where `span` is current and the first request started in it takes `span` as
    its own instead of starting a route span (Rule 3); the offerer ends it."""
    return trace.set_span_in_context(span, otel_context.set_value(_OFFERED, _Offer(span)))


class RequestTrace:
    """The spans of one traced request: its route span, the context its calls start in, and
    every call that started a span (those whose `span` is still set are open)."""

    __slots__ = ("calls", "context", "owned", "span")

    def __init__(self, span: Span, *, owned: bool = True) -> None:
        self.span = span
        self.owned = owned
        # Calls start under the request's span, where no offer is left for a nested route.
        self.context: Context = trace.set_span_in_context(
            span, otel_context.set_value(_OFFERED, None)
        )
        self.calls: list[Call] = []

    def start_call(self, call: Call, entry: AttemptEntry, *, embedding: bool) -> None:
        """Start `call`'s span, a child of the request's span. Only a traced request calls this
        (Rule 1), so the attributes are given at the start, where a sampler sees them (and the
        SDK copies them once instead of twice)."""
        operation = "embeddings" if embedding else "chat"
        model = call.model
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": operation,
            "gen_ai.provider.name": _provider_name(call),
            "turnout.route": call.route.name,
            "turnout.target": call.target.name,
            "turnout.provider": call.provider,
            "turnout.attempt": entry.index,
            "turnout.hedge": call.hedge,
        }
        if model:
            attributes["gen_ai.request.model"] = model
        span = _TRACER.start_span(
            f"{operation} {model}" if model else operation,
            context=self.context,
            kind=SpanKind.CLIENT,
            attributes=attributes,
        )
        if span.is_recording():
            call.span = span
            self.calls.append(call)

    def finish(self, state: RequestState, error: BaseException | None) -> None:
        """Rule 3: end the calls still open, then the route span, as the record now reads."""
        for call in self.calls:
            if call.span is not None:
                end_call(call)
        record = state.record
        answered = record.answered is not None and error is None
        ending = record.error
        cancelled = not answered and ending is not None and ending["code"] == "cancelled"
        outcome = "answered" if answered else "cancelled" if cancelled else "failed"
        attributes: dict[str, Any] = {
            "turnout.outcome": outcome,
            "turnout.all_failed": outcome == "failed",
            "turnout.attempts": state.calls,
        }
        if record.fallback_route is not None:
            attributes["turnout.fallback_route"] = record.fallback_route
        span = self.span
        if answered:
            attributes["turnout.answered"] = record.answered
            if record.served_model is not None:
                attributes["gen_ai.response.model"] = record.served_model
        elif outcome == "failed":
            error_class = _error_class(record)
            attributes["turnout.class"] = error_class
            attributes["error.type"] = error_class
            span.set_status(Status(StatusCode.ERROR, error_class))
        span.set_attributes(attributes)
        if self.owned:
            span.end()


def start_request(state: RequestState) -> RequestTrace | None:
    """The request's span: the one offered in the current context, else a route span started
    in it; None when it does not record (Rule 1), which is all the cost of tracing when off."""
    route = state.route
    offer = otel_context.get_value(_OFFERED)
    owned = not isinstance(offer, _Offer) or offer.taken
    if owned:
        span = _TRACER.start_span(f"route {route.name}", kind=SpanKind.INTERNAL)
    else:
        assert isinstance(offer, _Offer)
        offer.taken = True
        span = offer.span
    if not span.is_recording():
        return None
    attributes: dict[str, Any] = {
        "turnout.route": route.name,
        "gen_ai.operation.name": "embeddings" if state.embedding else "chat",
    }
    model = state.request.model
    if model is not None:
        attributes["gen_ai.request.model"] = model
    span.set_attributes(attributes)
    return RequestTrace(span, owned=owned)


def end_call(call: Call, *, model: str | None = None, finish: str | None = None) -> None:
    """End `call`'s span, if it has one still open, as its entry reads now: the outcome, the
    usage, the model and finish reason of an answer (`model` and `finish` for a stream, else
    the call's answer), the class and status of a failure (Rules 2 and 4)."""
    span = call.span
    if span is None:
        return
    call.span = None
    entry = call.entry
    assert entry is not None
    attributes: dict[str, Any] = {"turnout.outcome": entry.outcome}
    usage = entry.usage
    if usage is not None:
        attributes["gen_ai.usage.input_tokens"] = usage.input_tokens
        attributes["gen_ai.usage.output_tokens"] = usage.output_tokens
    answer = call.response if call.response is not None else call.embedding
    if answer is not None:
        model = model or answer.model
        if call.response is not None:
            finish = finish or call.response.finish_reason
    if model:
        attributes["gen_ai.response.model"] = model
    if finish:
        attributes["gen_ai.response.finish_reasons"] = (finish,)
    if entry.outcome == "failed":
        error_class = entry.error_class or "provider_error"
        attributes["turnout.class"] = error_class
        attributes["error.type"] = error_class
        if entry.status is not None:
            attributes["http.response.status_code"] = entry.status
        span.set_status(Status(StatusCode.ERROR, error_class))
    span.set_attributes(attributes)
    span.end()


class _Current:
    """While its block runs, a call's span is the current span."""

    __slots__ = ("span", "token")

    def __init__(self, span: Span) -> None:
        self.span = span
        self.token: object = None

    def __enter__(self) -> None:
        scope = otel_context.set_value(_OFFERED, None)
        self.token = otel_context.attach(trace.set_span_in_context(self.span, scope))

    def __exit__(self, *exc: object) -> None:
        otel_context.detach(self.token)  # type: ignore[arg-type]


_UNTRACED: Final = contextlib.nullcontext()


def current_call(call: Call) -> contextlib.AbstractContextManager[None]:
    """A block in which `call`'s span is current, when it has one (so a route used as a target
    nests its own span under the call's); else a block that does nothing."""
    span = call.span
    return _UNTRACED if span is None else _Current(span)


def _provider_name(call: Call) -> str:
    """The well-known GenAI provider name of the call's vendor, else its provider id."""
    vendor = call.route.facts[call.index].vendor
    if vendor is None:
        return call.provider
    return _SEMCONV_PROVIDERS.get(vendor, vendor)


def _error_class(record: RoutingRecord) -> str:
    error = record.error
    code = None if error is None else error.get("code")
    return str(code) if code else "error"
