"""What the gateway sends back: routing headers, the `routing` body object, and errors (see
`docs/gateway-api.md`).

Every routed response carries `x-request-id`, `x-turnout-route`, `x-turnout-target`,
`x-turnout-model`, `x-turnout-attempts` (one `target;outcome=…;class=…;status=…;ms=…` item per
attempt entry), `x-turnout-fallback-route`/`-kind` when a fallback route served,
`x-turnout-cache` (`hit` or `miss`, on routes with the response cache only: the record's
`cache` is set there alone) and, on whole answers with a price, `x-turnout-cost`. Errors carry
the headers known so far.

Exceptions become HTTP responses in ONE place: `_TABLE` below, read top to bottom, first
matching class wins. The status and code of an error turnout raises itself are its class's
(see `turnout.errors`); a provider's error keeps the provider's status. Whether a retry can
help (`x-should-retry`) is the error's own `should_retry`, never worked out here. Anything the
table does not name is a 500 with the request id and a log line; the caller never sees a
traceback.
"""

from __future__ import annotations

import logging
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import orjson

from turnout.errors import (
    HttpError,
    MalformedBody,
    ProviderError,
    RouteExhausted,
    RouteIneligible,
    RoutingError,
    StreamBroken,
    StreamRejected,
)
from turnout.gateway.exchange import Header, Reply, request_id_header

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from turnout.gateway.client_formats import ClientFormat
    from turnout.record import AttemptEntry, RoutingRecord

__all__ = [
    "CACHE_HIT",
    "CACHE_MISS",
    "JSON",
    "Header",
    "Problem",
    "Reply",
    "attempts_header",
    "error_event",
    "error_reply",
    "format_cost",
    "header_value",
    "internal_problem",
    "json_reply",
    "problem_for",
    "request_id_header",
    "routed_reply",
    "routing_headers",
    "routing_object",
    "splice_routing",
]

logger = logging.getLogger("turnout.gateway")

JSON: Header = (b"content-type", b"application/json")
CACHE_MISS: Header = (b"x-turnout-cache", b"miss")
CACHE_HIT: Header = (b"x-turnout-cache", b"hit")
_SHOULD_RETRY: dict[bool, Header] = {
    True: (b"x-should-retry", b"true"),
    False: (b"x-should-retry", b"false"),
}
# Characters kept as they are in a header value; everything else is percent-encoded, so a
# name or model from a config file or an upstream can never break the header block.
_SAFE = " !\"#$%&'()*+-./:<>?@[]^_`{|}~"
_ITEM_SAFE = "!#$%&'()*+-./:<>?@[]^_`{|}~"
_SEPARATORS = re.compile("[;,= ]")
# Route, target and model names repeat from request to request: their header forms are kept
# (bounded; request ids, which never repeat, are not cached).
_CACHE_SIZE = 4096
_VALUES: dict[str, bytes] = {}
_TOKENS: dict[str, str] = {}


@dataclass(frozen=True, slots=True)
class Problem:
    """An error as the caller sees it: status, code, message, envelope `type` (None = the
    format's default), `param`, `meta`, `retry_after` seconds (sent rounded up), and
    `should_retry` (the error class's word for `x-should-retry`; None sends no header)."""

    status: int
    code: str | None
    message: str
    type: str | None = None
    param: str | None = None
    meta: dict[str, Any] | None = None
    retry_after: float | None = None
    should_retry: bool | None = None


def header_value(text: str) -> bytes:
    """`text` as a header value: printable ASCII as is, anything else percent-encoded."""
    cached = _VALUES.get(text)
    if cached is not None:
        return cached
    if text.isascii() and text.isprintable():
        value = text.encode()
    else:
        value = quote(text, safe=_SAFE).encode()
    if len(_VALUES) < _CACHE_SIZE:
        _VALUES[text] = value
    return value


def _item_token(text: str) -> str:
    cached = _TOKENS.get(text)
    if cached is not None:
        return cached
    token = text
    if not (text.isascii() and text.isprintable()) or _SEPARATORS.search(text):
        token = quote(text, safe=_ITEM_SAFE)
    if len(_TOKENS) < _CACHE_SIZE:
        _TOKENS[text] = token
    return token


def _attempt_item(entry: AttemptEntry) -> str:
    item = f"{_item_token(entry.target)};outcome={entry.outcome}"
    if entry.error_class is not None:
        item += f";class={entry.error_class}"
    if entry.status is not None:
        item += f";status={entry.status}"
    if entry.duration_ms is not None:
        item += f";ms={entry.duration_ms}"
    return item


def attempts_header(record: RoutingRecord) -> bytes:
    """`x-turnout-attempts`: one item per attempt entry, comma separated."""
    return ",".join(_attempt_item(entry) for entry in record.attempts).encode()


def format_cost(cost: float) -> bytes:
    """USD with up to 10 decimals, trailing zeros dropped (`0.000015`, `0`)."""
    return (f"{cost:.10f}".rstrip("0").rstrip(".") or "0").encode()


def routing_headers(
    record: RoutingRecord,
    *,
    target: str | None,
    model: str | None,
    with_cost: bool,
) -> list[Header]:
    """The routing headers of a response. `target`/`model` are who served (None on
    an error); `with_cost` adds `x-turnout-cost` when the record has a cost."""
    headers: list[Header] = [
        request_id_header(record.request_id),
        (b"x-turnout-route", header_value(record.route)),
    ]
    if target is not None:
        headers.append((b"x-turnout-target", header_value(target)))
    if model is not None:
        headers.append((b"x-turnout-model", header_value(model)))
    if record.attempts:
        headers.append((b"x-turnout-attempts", attempts_header(record)))
    if record.fallback_route is not None:
        headers.append((b"x-turnout-fallback-route", header_value(record.fallback_route)))
        headers.append((b"x-turnout-fallback-kind", header_value(record.fallback_kind or "")))
    if record.cache is not None:
        headers.append(CACHE_HIT if record.cache == "hit" else CACHE_MISS)
    if with_cost and record.cost is not None:
        headers.append((b"x-turnout-cost", format_cost(record.cost)))
    return headers


def routing_object(record: RoutingRecord) -> dict[str, Any]:
    """The `routing` object of a whole answer's body."""
    routing: dict[str, Any] = {
        "request_id": record.request_id,
        "route_id": record.route_id,
        "route": record.route,
        "target_index": record.target_index,
        "fallbacks": record.fallbacks,
        "credential_fallback": record.credential_fallback,
        "attempts": [
            {
                "target": entry.target,
                "target_index": entry.target_index,
                "provider": entry.provider,
                "model": entry.model,
                "outcome": entry.outcome,
                "error_class": entry.error_class,
                "status": entry.status,
                "reason": entry.reason,
                "duration_ms": entry.duration_ms,
                **({"shadow": list(entry.shadow)} if entry.shadow else {}),
            }
            for entry in record.attempts
        ],
    }
    if record.fallback_route is not None:
        routing["fallback_route"] = record.fallback_route
        routing["fallback_kind"] = record.fallback_kind
    if record.cache is not None:
        routing["cache"] = record.cache
    if record.cost is not None:
        routing["cost"] = record.cost
        routing["price_source"] = record.price_source
    if record.served_provider_id is not None:  # a provider from the store
        routing["served_provider_id"] = record.served_provider_id
    return routing


def splice_routing(raw: bytes, routing: dict[str, Any], model: str | None) -> bytes:
    """An upstream's JSON object body with `routing` added (and `model` set when it has none).

    The bytes are spliced before the final `}` when the body is an object without `routing`
    and with a `model`; otherwise it is parsed and dumped again.
    """
    end = raw.rstrip()
    if (
        end.endswith(b"}")
        and raw.lstrip().startswith(b"{")
        and b'"routing"' not in raw
        and b'"model"' in raw
    ):
        head = end[:-1].rstrip()
        glue = b'"routing":' if head.endswith(b"{") else b',"routing":'
        return head + glue + orjson.dumps(routing) + b"}"
    body = orjson.loads(raw)
    if not isinstance(body, dict):
        body = {"response": body}
    if model is not None and not body.get("model"):
        body["model"] = model
    body["routing"] = routing
    return orjson.dumps(body)


def routed_reply(
    record: RoutingRecord, model: str, raw: bytes | None, encode: Callable[[], dict[str, Any]]
) -> Reply:
    """A whole routed answer: `raw` (the upstream's own body, when the caller takes it as it
    is) with `routing` spliced in, else the body `encode` makes with `routing` added; and the
    routing headers, `model` being the model that served."""
    routing = routing_object(record)
    if raw is not None:
        body = splice_routing(raw, routing, model)
    else:
        encoded = encode()
        encoded["routing"] = routing
        body = orjson.dumps(encoded)
    headers = routing_headers(record, target=record.answered, model=model, with_cost=True)
    return Reply(200, [JSON, *headers], body)


def json_reply(status: int, body: Any, headers: Sequence[Header] = ()) -> Reply:
    """A JSON response."""
    return Reply(status, [JSON, *headers], orjson.dumps(body))


# -- errors


def _summary(record: RoutingRecord | None) -> list[dict[str, Any]]:
    if record is None:
        return []
    return [
        {
            "target": entry.target,
            "outcome": entry.outcome,
            "error_class": entry.error_class,
            "status": entry.status,
            "reason": entry.reason,
        }
        for entry in record.attempts
    ]


def _exhausted(exc: RouteExhausted) -> Problem:
    last = None
    if exc.last_error is not None:
        last = {"status": exc.last_error[0], "message": exc.last_error[1]}
    meta = {
        "route": exc.routing.route if exc.routing is not None else None,
        "attempts": _summary(exc.routing),
        "last_error": last,
        "retry_after": exc.retry_after,
    }
    return Problem(
        exc.status,
        exc.code,
        exc.message,
        "route_exhausted",
        meta=meta,
        retry_after=exc.retry_after,
        should_retry=exc.should_retry,
    )


def _ineligible(exc: RouteIneligible) -> Problem:
    return Problem(
        exc.status, exc.code, exc.message, "route_ineligible", should_retry=exc.should_retry
    )


def _routing(exc: RoutingError | HttpError) -> Problem:
    record = exc.routing if isinstance(exc, RoutingError) else None
    meta = {"attempts": _summary(record)} if record is not None else None
    return Problem(
        exc.status,
        exc.code,
        exc.message,
        param=_param(exc),
        meta=meta,
        should_retry=exc.should_retry,
    )


def _param(exc: RoutingError | HttpError) -> str | None:
    """The field a decoding error names (`messages[2].content: expected …`), as OpenAI's
    `param`."""
    if not isinstance(exc, MalformedBody):
        return None
    field, found, _ = exc.message.partition(": expected ")
    return field if found and field != "request body" else None


def _provider(exc: ProviderError) -> Problem:
    status = exc.status
    if status is None or not 400 <= status <= 599:
        status = 504 if exc.error_class == "timeout" else 502
    meta = {
        "provider": exc.provider,
        "provider_request_id": exc.provider_request_id,
        "error_class": exc.error_class,
        "attempts": _summary(exc.routing),
    }
    return Problem(
        status,
        exc.error_class,
        exc.message,
        exc.error_type,
        meta=meta,
        retry_after=exc.retry_after,
        should_retry=exc.should_retry,
    )


def _stream(exc: StreamRejected) -> Problem:
    return Problem(exc.status, exc.code, exc.message)


def _stream_broken(exc: StreamBroken) -> Problem:
    # The upstream failed, not the caller's request: OpenAI's envelope says `server_error`
    # (Anthropic's derives `api_error` from the status).
    return Problem(exc.status, exc.code, exc.message, "server_error")


_TABLE: tuple[tuple[type[BaseException], Callable[[Any], Problem]], ...] = (
    (RouteExhausted, _exhausted),  # type route_exhausted, meta with the attempts
    (RouteIneligible, _ineligible),  # type route_ineligible
    (RoutingError, _routing),  # every other error of turnout's own: its class's status and code
    (HttpError, _routing),  # a refusal of the HTTP exchange: the same, without a record
    (ProviderError, _provider),  # passed through: its own status and message
    (StreamBroken, _stream_broken),  # after commit: only ever an in-stream event
    (StreamRejected, _stream),
)


def problem_for(exc: BaseException) -> Problem | None:
    """The caller-facing form of `exc`, or None for an unexpected exception (a 500)."""
    for kind, convert in _TABLE:
        if isinstance(exc, kind):
            return convert(exc)
    return None


def internal_problem(exc: BaseException, request_id: str) -> Problem:
    """A 500 for an unexpected exception, logged with the request id (never shown)."""
    logger.error("request %s failed unexpectedly", request_id, exc_info=exc)
    return Problem(500, "internal_error", f"internal error (request {request_id})")


def error_reply(exc: BaseException, fmt: ClientFormat, *, request_id: str) -> Reply:
    """The whole error response for `exc` in the caller's format, with the routing headers
    known so far, `x-request-id`, `Retry-After` (seconds, rounded up) when there is one, and
    `x-should-retry` when the error's class has a word on it."""
    problem = problem_for(exc) or internal_problem(exc, request_id)
    record: RoutingRecord | None = getattr(exc, "routing", None)
    if record is not None:
        headers = routing_headers(record, target=None, model=None, with_cost=False)
    else:
        headers = [request_id_header(request_id)]
    if problem.retry_after is not None and problem.retry_after > 0:
        headers.append((b"retry-after", str(math.ceil(problem.retry_after)).encode()))
    if problem.should_retry is not None:
        headers.append(_SHOULD_RETRY[problem.should_retry])
    body = fmt.error_body(
        problem.status,
        problem.message,
        code=problem.code,
        type=problem.type,
        param=problem.param,
        meta=problem.meta,
    )
    return json_reply(problem.status, body, headers)


def error_event(
    exc: BaseException, fmt: ClientFormat, *, request_id: str, sequence_number: int = 0
) -> bytes:
    """The in-stream error event for `exc` in the caller's format (a stream's headers are
    already sent, so only the envelope says what happened); in a format whose events are
    numbered, it is number `sequence_number`."""
    problem = problem_for(exc) or internal_problem(exc, request_id)
    numbered = fmt.numbered_error_event
    if numbered is not None:
        return numbered(
            problem.status, problem.message, problem.code, problem.type, sequence_number
        )
    return fmt.error_event(problem.status, problem.message, problem.code, problem.type)
