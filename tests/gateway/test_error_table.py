"""The one table of the gateway's own error statuses: each class of `turnout.errors` that
turnout raises itself carries its status and code, and the gateway answers each with them, in
the OpenAI and the Anthropic envelope alike."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import pytest

from turnout import errors
from turnout.gateway.client_formats import ANTHROPIC, OPENAI
from turnout.gateway.responses.respond import error_event, error_reply

if TYPE_CHECKING:
    from turnout.gateway.client_formats import ClientFormat

TABLE: list[tuple[type[errors.TurnoutError], int, str]] = [
    (errors.RouteExhausted, 503, "UPSTREAM_POOL_EXHAUSTED"),
    (errors.RouteIneligible, 400, "route_ineligible"),
    (errors.NoTargetAvailable, 503, "no_deployment_available"),
    (errors.EmbeddingsNotSupported, 400, "embeddings_not_supported"),
    (errors.PolicyDenied, 403, "POLICY_DENIED"),
    (errors.NoRoute, 503, "NO_ROUTE"),
    (errors.UpstreamAmbiguous, 503, "UPSTREAM_AMBIGUOUS"),
    (errors.ModelDenied, 400, "MODEL_DENIED"),
    (errors.ModelNotAllowed, 403, "model_not_allowed"),
    (errors.ConsumerNotAllowed, 403, "consumer_not_allowed"),
    (errors.InvalidApiKey, 401, "invalid_api_key"),
    (errors.MalformedBody, 400, "invalid_request"),
    (errors.RequestTooLarge, 413, "request_too_large"),
    (errors.NotFound, 404, "NOT_FOUND"),
    (errors.MethodNotAllowed, 405, "method_not_allowed"),
    (errors.NotReady, 503, "not_ready"),
    (errors.BadHttpRequest, 400, "invalid_request"),
    (errors.RequestTimeout, 408, "request_timeout"),
    (errors.HeadersTooLarge, 431, "headers_too_large"),
    (errors.ShuttingDown, 503, "shutting_down"),
    (errors.StreamBroken, 502, "stream_broken"),
    (errors.StreamRejected, 502, "stream_rejected"),
]
# The Anthropic envelope's `type` for each status above (OpenAI's comes from the class or 4xx/5xx).
ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "invalid_request_error",
    413: "request_too_large",
    431: "invalid_request_error",
    502: "api_error",
    503: "overloaded_error",
}
ROWS = [pytest.param(kind, status, code, id=kind.__name__) for kind, status, code in TABLE]


def test_every_routing_error_class_has_a_row() -> None:
    """A new `RoutingError` or `HttpError` subclass cannot ship without its row in this table."""
    exported = {getattr(errors, name) for name in errors.__all__}
    routing = {
        kind
        for kind in exported
        if isinstance(kind, type)
        and issubclass(kind, errors.RoutingError | errors.HttpError)
        and kind not in {errors.RoutingError, errors.HttpError}
    }
    assert routing == {
        kind for kind, _, _ in TABLE if issubclass(kind, errors.RoutingError | errors.HttpError)
    }


@pytest.mark.parametrize(("kind", "status", "code"), ROWS)
def test_each_class_carries_its_status_and_code(kind: type[Any], status: int, code: str) -> None:
    """The class, and an instance raised without arguments, have the row's status and code."""
    assert (kind.status, kind.code) == (status, code)
    error = kind("boom")
    assert (error.status, error.code) == (status, code)


@pytest.mark.parametrize("fmt", [OPENAI, ANTHROPIC], ids=["openai", "anthropic"])
@pytest.mark.parametrize(("kind", "status", "code"), ROWS)
def test_the_gateway_answers_each_with_its_status_in_both_envelopes(
    kind: type[Any], status: int, code: str, fmt: ClientFormat
) -> None:
    """`error_reply` answers with the row's status, and its code in the caller's envelope."""
    reply = error_reply(kind("boom"), fmt, request_id="req-1")
    assert reply.status == status
    body = orjson.loads(reply.body)
    if fmt is ANTHROPIC:
        assert body["type"] == "error"
        assert body["error"]["type"] == ANTHROPIC_TYPES[status]
    else:
        assert set(body) == {"error"}
    assert (body["error"]["code"], body["error"]["message"]) == (code, "boom")
    assert (b"x-request-id", b"req-1") in reply.headers


def test_route_exhausted_keeps_the_status_the_failed_calls_gave() -> None:
    """The one status not fixed by its class: RouteExhausted answers with the status and code
    the engine gave it (here 504 `upstream_timeout`)."""
    error = errors.RouteExhausted("slow", status=504, code="upstream_timeout")
    reply = error_reply(error, OPENAI, request_id="req-1")
    assert reply.status == 504
    assert orjson.loads(reply.body)["error"]["code"] == "upstream_timeout"


def test_a_malformed_request_is_a_400_invalid_request() -> None:
    """The codecs' `MalformedRequest` is an `InvalidRequest` whose class gives 400, while any
    other provider error's status is the provider's own (None until a call gives one)."""
    error = errors.MalformedRequest("messages: expected a list")
    assert isinstance(error, errors.InvalidRequest)
    assert (error.status, error.error_class, error.reason) == (400, "invalid_request", "400")
    assert errors.InvalidRequest("no status").status is None
    assert errors.InvalidRequest("upstream said so", status=422).status == 422


# What `x-should-retry` says for each class: "false" where the same request meets the same
# refusal again, None (no header: the SDK decides by status) where time can change the answer.
SHOULD_RETRY: dict[type[errors.TurnoutError], str | None] = {
    errors.RouteExhausted: None,
    errors.RouteIneligible: "false",
    errors.NoTargetAvailable: "false",
    errors.EmbeddingsNotSupported: "false",
    errors.PolicyDenied: "false",
    errors.NoRoute: "false",
    errors.UpstreamAmbiguous: "false",
    errors.ModelDenied: "false",
    errors.ModelNotAllowed: "false",
    errors.ConsumerNotAllowed: "false",
    errors.InvalidApiKey: "false",
    errors.MalformedBody: "false",
    errors.RequestTooLarge: "false",
    errors.NotFound: "false",
    errors.MethodNotAllowed: "false",
    errors.NotReady: None,
    errors.StreamBroken: None,
    errors.StreamRejected: None,
    errors.BadHttpRequest: "false",
    errors.RequestTimeout: None,
    errors.HeadersTooLarge: "false",
    errors.ShuttingDown: None,
}


def _header(reply: Any, name: bytes) -> str | None:
    found = [value.decode() for key, value in reply.headers if key == name]
    assert len(found) <= 1
    return found[0] if found else None


@pytest.mark.parametrize(("kind", "status", "code"), ROWS)
def test_x_should_retry_comes_from_the_class(kind: type[Any], status: int, code: str) -> None:
    """Each of turnout's own errors sends `x-should-retry: false` when a retry cannot help,
    and no header when it can (so an SDK stops retrying a 503 `NO_ROUTE`)."""
    reply = error_reply(kind("boom"), OPENAI, request_id="req-1")
    assert _header(reply, b"x-should-retry") == SHOULD_RETRY[kind]


@pytest.mark.parametrize(
    ("error_class", "expected"),
    [
        ("invalid_request", "false"),
        ("context_length", "false"),
        ("content_filtered", "false"),
        ("auth", "false"),
        ("timeout", None),
        ("rate_limited", None),
        ("provider_error", None),
        ("quota_exhausted", None),
    ],
)
def test_a_provider_error_is_final_only_for_a_deterministic_class(
    error_class: str, expected: str | None
) -> None:
    """A provider's error passed through says `x-should-retry: false` for the error classes
    a retry meets again (whatever its status), and nothing for the transient ones."""
    error = errors.ProviderError.for_class(error_class, "upstream said so", status=400)
    reply = error_reply(error, ANTHROPIC, request_id="req-1")
    assert _header(reply, b"x-should-retry") == expected
    # A class chosen without its subclass decides the same way.
    bare = errors.ProviderError("upstream said so", status=400, error_class=error_class)
    assert _header(error_reply(bare, OPENAI, request_id="r"), b"x-should-retry") == expected


def test_an_exhausted_route_that_knows_when_says_retry_after_and_true() -> None:
    """Every target cooling down, parked or open: `retry-after` is the shortest wait rounded
    up to whole seconds, with `x-should-retry: true`; without a wait, neither header."""
    waiting = errors.RouteExhausted("all cooling", retry_after=2.2)
    reply = error_reply(waiting, OPENAI, request_id="req-1")
    assert _header(reply, b"retry-after") == "3"
    assert _header(reply, b"x-should-retry") == "true"
    unknown = error_reply(errors.RouteExhausted("all failed"), OPENAI, request_id="req-1")
    assert _header(unknown, b"retry-after") is None
    assert _header(unknown, b"x-should-retry") is None


@pytest.mark.parametrize(("kind", "status", "code"), ROWS)
def test_the_openai_type_is_turnouts_own_word_never_the_status(
    kind: type[Any], status: int, code: str
) -> None:
    """In the OpenAI envelope, turnout's own errors are `route_exhausted`, `route_ineligible`
    or `invalid_request_error`, whatever their status (a 503 `NO_ROUTE` is no `server_error`);
    only a stream its upstream broke after the first token is `server_error`; an in-stream
    error event carries the same type."""
    expected = {
        errors.RouteExhausted: "route_exhausted",
        errors.RouteIneligible: "route_ineligible",
        errors.StreamBroken: "server_error",
    }.get(kind, "invalid_request_error")
    reply = error_reply(kind("boom"), OPENAI, request_id="req-1")
    assert orjson.loads(reply.body)["error"]["type"] == expected
    event = error_event(kind("boom"), OPENAI, request_id="req-1")
    data = event.decode().removeprefix("data: ").strip()
    assert orjson.loads(data)["error"]["type"] == expected


def test_a_provider_error_keeps_the_providers_type_in_the_openai_envelope() -> None:
    """A provider's error passed through carries the provider's own type; one without a type
    (a timeout, a dropped connection) is `invalid_request_error`, not a status-derived one."""
    typed = errors.ProviderError.for_class(
        "provider_error", "Overloaded", status=529, error_type="overloaded_error"
    )
    untyped = errors.ProviderError.for_class("timeout", "no answer within 5 s")
    typed_body = orjson.loads(error_reply(typed, OPENAI, request_id="r").body)
    untyped_body = orjson.loads(error_reply(untyped, OPENAI, request_id="r").body)
    assert typed_body["error"]["type"] == "overloaded_error"
    assert untyped_body["error"]["type"] == "invalid_request_error"
