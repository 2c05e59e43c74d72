"""The one table of the gateway's own error statuses: each class of `turnout.errors` that
turnout raises itself carries its status and code, and the gateway answers each with them, in
the OpenAI and the Anthropic envelope alike."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import pytest

from turnout import errors
from turnout.gateway.responses.client_formats import ANTHROPIC, OPENAI
from turnout.gateway.responses.respond import error_reply

if TYPE_CHECKING:
    from turnout.gateway.responses.client_formats import ClientFormat

TABLE: list[tuple[type[errors.TurnoutError], int, str]] = [
    (errors.RouteExhausted, 503, "UPSTREAM_POOL_EXHAUSTED"),
    (errors.RouteIneligible, 400, "route_ineligible"),
    (errors.NoDeploymentAvailable, 503, "no_deployment_available"),
    (errors.EmbeddingsNotSupported, 400, "embeddings_not_supported"),
    (errors.PolicyDenied, 403, "POLICY_DENIED"),
    (errors.NoRoute, 503, "NO_ROUTE"),
    (errors.UpstreamAmbiguous, 503, "UPSTREAM_AMBIGUOUS"),
    (errors.ModelDenied, 400, "MODEL_DENIED"),
    (errors.ModelNotAllowed, 403, "model_not_allowed"),
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
    """A new `RoutingError` subclass cannot ship without its row in this table."""
    exported = {getattr(errors, name) for name in errors.__all__}
    routing = {
        kind
        for kind in exported
        if isinstance(kind, type)
        and issubclass(kind, errors.RoutingError)
        and kind is not errors.RoutingError
    }
    assert routing == {kind for kind, _, _ in TABLE if issubclass(kind, errors.RoutingError)}


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
