"""The gateway's span of each API request (`POST /v1/chat/completions` and the other POST
endpoints): offered to the engine as the request's span (`turnout.routing.spans`), so the route's
attributes are written on it and each upstream call's span is its child.

Rule 1: requests get spans only when a tracer provider was installed before the gateway started
(`is_tracing`: `turnout serve` with tracing on, or an application that embeds the gateway);
otherwise the observer keeps no `RequestSpans` and a request costs nothing.
Rule 2: the caller's trace is continued: the span's parent is what the configured propagators
(W3C `traceparent` by default, `OTEL_PROPAGATORS`) read from the request's headers.
Rule 3: the span is current (and offered) while the handler runs; it ends once the response
ended (a stream's last event) or failed.
Rule 4: attributes are the method, the endpoint's path, the status, the request id, the key's
name, the route, the outcome words and the cache marker; never a header value, a body or a key.
Status ERROR for a 5xx answer or a request whose every call failed.
Rule 5: calls to providers carry no `traceparent`: vendors do not join the caller's trace, and
its ids have no business leaving the gateway's network.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from opentelemetry import context, propagate, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from turnout.routing.spans import offer_span

if TYPE_CHECKING:
    from collections.abc import Mapping

    from opentelemetry.trace import Span

    from turnout.record import RoutingRecord

__all__ = ["OpenSpan", "RequestSpans", "is_tracing"]

_OFF: Final = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)


def is_tracing() -> bool:
    """True when a tracer provider is installed (the API's own stand-ins mean none is)."""
    return not isinstance(trace.get_tracer_provider(), _OFF)


class OpenSpan:
    """A request's span while the request runs, and the context token that made it current."""

    __slots__ = ("span", "token")

    def __init__(self, span: Span, token: object) -> None:
        self.span = span
        self.token = token


class RequestSpans:
    """Starts and ends the span of each request (see the module rules)."""

    __slots__ = ("_tracer",)

    def __init__(self) -> None:
        self._tracer = trace.get_tracer("turnout.gateway")

    def start(self, method: str, path: str, headers: Mapping[str, str]) -> OpenSpan:
        """Rules 2 and 3: the request's span, a child of the caller's trace, made current."""
        span = self._tracer.start_span(
            f"{method} {path}",
            context=propagate.extract(headers),
            kind=SpanKind.SERVER,
            attributes={"http.request.method": method, "url.path": path},
        )
        return OpenSpan(span, context.attach(offer_span(span)))

    def end(
        self,
        opened: OpenSpan,
        status: int,
        *,
        gone: bool,
        record: RoutingRecord | None,
        caller_id: str | None,
        key: str | None,
    ) -> None:
        """Rule 4: the span's closing attributes and status; then it ends. `status` is the
        status sent (499 when the caller left: `gone`), `record` the request's routing record,
        `caller_id` the caller's request id and `key` the key's name."""
        context.detach(opened.token)  # type: ignore[arg-type]
        span = opened.span
        if span.is_recording():
            attributes = _closing(status, gone, record, caller_id, key)
            span.set_attributes(attributes)
            if status >= 500 or attributes.get("turnout.all_failed"):
                span.set_status(Status(StatusCode.ERROR, attributes.get("turnout.class")))
        span.end()


def _closing(
    status: int, gone: bool, record: RoutingRecord | None, caller_id: str | None, key: str | None
) -> dict[str, Any]:
    attributes: dict[str, Any] = {"http.response.status_code": status}
    request_id = record.request_id if record is not None else caller_id
    if request_id is not None:  # without a record, only the caller's id is known
        attributes["turnout.request_id"] = request_id
    if key is not None:
        attributes["turnout.key"] = key
    if record is None:
        return attributes
    error = record.error
    if gone or (error is not None and error.get("code") == "cancelled"):
        outcome = "cancelled"
    elif record.answered is not None or error is None:
        outcome = "answered"
    else:
        outcome = "failed"
    attributes["turnout.route"] = record.route
    attributes["turnout.outcome"] = outcome
    attributes["turnout.all_failed"] = outcome == "failed"
    if outcome == "failed" and error is not None:
        attributes["turnout.class"] = str(error.get("code") or "error")
    if record.cache is not None:
        attributes["turnout.cache"] = record.cache
    return attributes
