"""The whole exception tree of turnout.

Every error turnout raises itself carries its HTTP `status` and `code` as class attributes: this
drawing is the table the gateway answers from. A provider's error keeps the provider's status.

::

    TurnoutError                       status, code                  when
    ├── ConfigError (also ValueError)  400 VALIDATION_FAILED         invalid options (409: a clash)
    │   └── SecretKeyMissing           503 SECRET_KEY_MISSING        a stored secret needs
    │                                                                TURNOUT_SECRET_KEY
    ├── RoutingError                   each subclass sets its own    no answer, for turnout's reason
    │   ├── RouteExhausted             503 UPSTREAM_POOL_EXHAUSTED   retryable failures left no
    │   │                              or as the failed calls say    target (transient)
    │   ├── RouteIneligible            400 route_ineligible          every target ineligible (fatal)
    │   ├── NoTargetAvailable          503 no_deployment_available   every target paused / no weight
    │   ├── EmbeddingsNotSupported     400 embeddings_not_supported  no target offers embeddings
    │   ├── PolicyDenied               403 POLICY_DENIED             a deny covers every target
    │   ├── NoRoute                    503 NO_ROUTE                  no route serves the model
    │   ├── UpstreamAmbiguous          503 UPSTREAM_AMBIGUOUS        implicit routes tie
    │   ├── ModelDenied                400 MODEL_DENIED              no grant, or outside the key
    │   ├── ModelNotAllowed            403 model_not_allowed         no model and not one key route
    │   ├── ConsumerNotAllowed         403 consumer_not_allowed      another project's consumer
    │   ├── InvalidApiKey              401 invalid_api_key           missing or unknown turnout key
    │   ├── NotFound                   404 NOT_FOUND                 no such endpoint or token count
    │   └── NotReady                   503 not_ready                 configuration not loaded yet
    ├── HttpError                      each subclass sets its own    a refusal of the HTTP exchange
    │   ├── MalformedBody              400 invalid_request           body not JSON or not the format
    │   ├── RequestTooLarge            413 request_too_large         body over max_body_bytes
    │   ├── MethodNotAllowed           405 method_not_allowed        the path takes other methods
    │   ├── BadHttpRequest             400 invalid_request           unparseable HTTP framing
    │   ├── RequestTimeout             408 request_timeout           headers or body sent too slowly
    │   ├── HeadersTooLarge            431 headers_too_large         too many header lines or bytes
    │   └── ShuttingDown               503 shutting_down             cut short by a server shutdown
    ├── ProviderError                  the provider's own status     one call failed; error class:
    │   ├── ProviderTimeout                                          timeout
    │   ├── RateLimited                                              rate_limited
    │   ├── QuotaExhausted                                           quota_exhausted
    │   ├── ProviderUnavailable                                      provider_error (5xx, a dropped
    │   │                                                            connection, unparseable body)
    │   ├── ContextLengthExceeded                                    context_length
    │   ├── ContentFiltered                                          content_filtered
    │   ├── AuthenticationFailed                                     auth
    │   └── InvalidRequest                                           invalid_request
    │       └── MalformedRequest       400 invalid_request           a codec refused a request body
    ├── StoreError                     each subclass sets its own    a stored object refused a write
    │   ├── ObjectNotFound             404 NOT_FOUND                 no such stored object
    │   ├── NameTaken                  409 NAME_TAKEN                a route/provider name is taken
    │   ├── FileManaged                409 FILE_MANAGED              the config file owns the object
    │   ├── StoreUnavailable           503 store_unavailable         the database did not answer
    │   ├── ModelRouteHasDependents    409 MODEL_ROUTE_HAS_          deleting or disabling a route
    │   │                                  DEPENDENTS                that others reference
    │   ├── ProviderHasDependents      409 PROVIDER_HAS_DEPENDENTS   deleting a provider in use
    │   └── ProjectDefaultRouteInherited
    │                                  409 PROJECT_DEFAULT_ROUTE_    clearing a default route that
    │                                      INHERITED                 consumers inherit
    ├── StreamBroken                   502 stream_broken             a committed stream failed
    └── StreamRejected                 502 stream_rejected           a finished stream was rejected
                                       or stream_refused             or refused

`RoutingError`'s subclasses fall in three groups: how the engine ended a routed request
(`RouteExhausted` … `NoRoute`), where the gateway's resolution refused to send a model
(`UpstreamAmbiguous`, `ModelDenied`, `ModelNotAllowed`, and `NoRoute`/`PolicyDenied` again), and
the gateway's refusals before any routing (`InvalidApiKey`, `NotFound`, `NotReady`). Only
`RouteExhausted` decides its status per request, from the calls that failed. `HttpError`'s
subclasses refuse the HTTP exchange itself (its framing, size, method, pace or body, or a
shutdown); they carry no routing record.

`ProviderError.for_class()` builds the subclass that matches an error class, so that code
which classifies (providers, the scripted models) never picks a class by hand.

`should_retry` says whether repeating the same request can help, for the official SDKs'
`x-should-retry` header: False for every refusal of turnout's own that a retry meets again
(`NoRoute`, `ModelDenied`, `PolicyDenied`, `RouteIneligible`, a malformed body, …) and for a
provider's deterministic error classes (`invalid_request`, `context_length`,
`content_filtered`, `auth`); True for a `RouteExhausted` that knows when a target can be asked
again (`retry_after`); None (the SDK decides by status) otherwise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final

if TYPE_CHECKING:
    from collections.abc import Sequence

    from turnout.record import AttemptEntry, RoutingRecord

__all__ = [
    "AuthenticationFailed",
    "BadHttpRequest",
    "ConfigError",
    "ConsumerNotAllowed",
    "ContentFiltered",
    "ContextLengthExceeded",
    "EmbeddingsNotSupported",
    "FileManaged",
    "HeadersTooLarge",
    "HttpError",
    "InvalidApiKey",
    "InvalidRequest",
    "MalformedBody",
    "MalformedRequest",
    "MethodNotAllowed",
    "ModelDenied",
    "ModelNotAllowed",
    "ModelRouteHasDependents",
    "NameTaken",
    "NoRoute",
    "NoTargetAvailable",
    "NotFound",
    "NotReady",
    "ObjectNotFound",
    "PolicyDenied",
    "ProjectDefaultRouteInherited",
    "ProviderError",
    "ProviderHasDependents",
    "ProviderTimeout",
    "ProviderUnavailable",
    "QuotaExhausted",
    "RateLimited",
    "RequestTimeout",
    "RequestTooLarge",
    "RouteExhausted",
    "RouteIneligible",
    "RoutingError",
    "SecretKeyMissing",
    "ShuttingDown",
    "StoreError",
    "StoreUnavailable",
    "StreamBroken",
    "StreamRejected",
    "TurnoutError",
    "UpstreamAmbiguous",
]


# Error classes of a call that a retry of the same request meets again.
_DETERMINISTIC: Final = frozenset({"invalid_request", "context_length", "content_filtered", "auth"})


class TurnoutError(Exception):
    """Base of every error turnout raises on purpose. A subclass states its answer in its class
    line (`status=`, `code=`, and `should_retry=False` for a refusal that a retry meets again),
    so that the classes below read as the table they are."""

    def __init_subclass__(
        cls,
        *,
        status: int | None = None,
        code: str | None = None,
        should_retry: bool | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        for name, value in (("status", status), ("code", code), ("should_retry", should_retry)):
            if value is not None:
                setattr(cls, name, value)


class ConfigError(TurnoutError, ValueError):
    """An invalid option or configuration. The message names the field and the rule.

    `errors` holds every problem found, each as `(path, message)`, when a validator collected
    several at once. `status` and `code` are what the planned admin API will answer with: 400
    `VALIDATION_FAILED` by default, 409 for a save that clashes with other objects (e.g.
    `route_grant_conflict`).
    """

    status: int = 400
    code: str = "VALIDATION_FAILED"

    def __init__(
        self,
        message: str,
        errors: Sequence[tuple[str, str]] = (),
        *,
        status: int | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.errors: tuple[tuple[str, str], ...] = tuple(errors)
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code


class SecretKeyMissing(ConfigError, status=503, code="SECRET_KEY_MISSING"):
    """A provider secret is to be stored or read but `TURNOUT_SECRET_KEY` is not set (or does
    not open it). A fault of the deployment, not of the request, that lasts until the variable
    is set: 503 (`turnout serve` refuses to start over a store holding secrets it cannot
    open)."""


class StoreError(TurnoutError):
    """A write or read of a stored object was refused. `status` and `code` are what the admin
    API answers with; `meta` is the error's `meta` object (empty by default)."""

    status: int = 400
    code: str = "VALIDATION_FAILED"

    def __init__(self, message: str, *, meta: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.meta: dict[str, Any] = dict(meta or {})


class ObjectNotFound(StoreError, status=404, code="NOT_FOUND"):
    """No stored object of that kind and id in the project."""


class NameTaken(StoreError, status=409, code="NAME_TAKEN"):
    """A route or provider name is already used in the project: routes and providers share
    one name space, ignoring case."""


class FileManaged(StoreError, status=409, code="FILE_MANAGED"):
    """The object came from the config file: it is read-only through the admin API."""


class StoreUnavailable(StoreError, status=503, code="store_unavailable"):
    """The database could not be reached, or did not answer within the call's bound."""


class ModelRouteHasDependents(StoreError, status=409, code="MODEL_ROUTE_HAS_DEPENDENTS"):
    """A route cannot be deleted or disabled while other objects reference it. `meta` counts
    them per kind: `{kind: {"count": n, "sample": [up to 5 ids]}}`."""


class ProviderHasDependents(StoreError, status=409, code="PROVIDER_HAS_DEPENDENTS"):
    """A provider cannot be deleted while routes or consumers use it; `meta` as for routes."""


class ProjectDefaultRouteInherited(StoreError, status=409, code="PROJECT_DEFAULT_ROUTE_INHERITED"):
    """The project's default route cannot be cleared while consumers inherit it (repointing it
    is allowed); `meta` is `{"consumers": {"count": n, "sample": [up to 5 ids]}}`."""


class _Refusal(TurnoutError):
    """An answer the gateway decided itself, with the `status` and `code` it answers with. Each
    subclass sets them in its class line; the `status=` and `code=` keywords stay for code
    outside the package that raises one of its own."""

    status: int = 400
    code: str = "invalid_request"
    should_retry: bool | None = None
    """Whether repeating the same request can help (None: no opinion; see the module)."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code


class RoutingError(_Refusal):
    """A request ended without an answer for a reason turnout decided, not a provider.

    `status` and `code` are what the gateway answers with; each subclass sets them (see the
    module's drawing), and turnout's own raise sites never override them. The `status=` and
    `code=` keywords stay for code outside the package that raises a `RoutingError` of its own.
    `routing` is the routing record, when routing had begun.
    """

    status: int = 503
    code: str = "route_exhausted"
    transient: ClassVar[bool] = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        routing: RoutingRecord | None = None,
    ) -> None:
        super().__init__(message, status=status, code=code)
        self.routing = routing

    @property
    def attempts(self) -> Sequence[AttemptEntry]:
        """The attempt entries of the routing record (empty without a record)."""
        return self.routing.attempts if self.routing is not None else ()


class RouteExhausted(RoutingError):
    """Retryable failures left no target to try (transient).

    The one routing error whose status is decided per request: by default 503
    `UPSTREAM_POOL_EXHAUSTED`; the engine passes the status and code that the failed calls
    call for (504 `upstream_timeout`, 502 `upstream_unreachable`, their one shared status, or
    503 `route_exhausted` when no call was made).
    `retry_after` (seconds or None) is the shortest time until a cooling, open or parked target
    can be asked again; `last_error` is `(status, message)` of the last call, if any.
    `should_retry` is True when `retry_after` is known: waiting that long can help.
    """

    status = 503
    code = "UPSTREAM_POOL_EXHAUSTED"
    transient: ClassVar[bool] = True

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        retry_after: float | None = None,
        last_error: tuple[int | None, str] | None = None,
        routing: RoutingRecord | None = None,
    ) -> None:
        super().__init__(message, status=status, code=code, routing=routing)
        self.retry_after = retry_after
        self.last_error = last_error
        if retry_after is not None:
            self.should_retry = True


class RouteIneligible(RoutingError, status=400, code="route_ineligible", should_retry=False):
    """Every target was ineligible for this request (fatal, 400 `route_ineligible`)."""


class NoTargetAvailable(
    RoutingError, status=503, code="no_deployment_available", should_retry=False
):
    """Every target is paused, or none has a positive weight (503 `no_deployment_available`)."""


class PolicyDenied(RoutingError, status=403, code="POLICY_DENIED", should_retry=False):
    """A deny binding or policy covers every target (403 `POLICY_DENIED`)."""


class NoRoute(RoutingError, status=503, code="NO_ROUTE", should_retry=False):
    """No route serves the model, or the credential filter left no target (503 `NO_ROUTE`)."""


class EmbeddingsNotSupported(
    RoutingError, status=400, code="embeddings_not_supported", should_retry=False
):
    """No target of the route offers embeddings (400 `embeddings_not_supported`)."""


class UpstreamAmbiguous(RoutingError, status=503, code="UPSTREAM_AMBIGUOUS", should_retry=False):
    """Implicit routes tie for the model and not exactly one is of its family (503
    `UPSTREAM_AMBIGUOUS`)."""


class ModelDenied(RoutingError, status=400, code="MODEL_DENIED", should_retry=False):
    """No access grant covers the caller and model, grants are not loaded yet, or the route or
    model is outside the key's ceiling (400 `MODEL_DENIED`: a 400, not a 403, so that coding
    tools don't ask the user to sign in again)."""


class ModelNotAllowed(RoutingError, status=403, code="model_not_allowed", should_retry=False):
    """The request names no model and the key has zero or several routes (403
    `model_not_allowed`)."""


class ConsumerNotAllowed(RoutingError, status=403, code="consumer_not_allowed", should_retry=False):
    """`x-turnout-consumer` names a consumer of another project than the caller's (403
    `consumer_not_allowed`)."""


class InvalidApiKey(RoutingError, status=401, code="invalid_api_key", should_retry=False):
    """The turnout key is missing or unknown where keys are required (401 `invalid_api_key`)."""


class HttpError(_Refusal):
    """The gateway refused the HTTP exchange itself: its framing, size, method, path, pace or
    body, or a shutdown that cut it short. No routing had begun, so there is no record.
    `status` and `code` are what the gateway answers with; each subclass sets them."""


class MalformedBody(HttpError, status=400, code="invalid_request", should_retry=False):
    """The caller's body is not JSON or does not fit the endpoint's format (400
    `invalid_request`); the message names the field, e.g. `messages: expected a list`."""


class RequestTooLarge(HttpError, status=413, code="request_too_large", should_retry=False):
    """The request body is over the gateway's `max_body_bytes` (413 `request_too_large`)."""


class NotFound(RoutingError, status=404, code="NOT_FOUND", should_retry=False):
    """Nothing answers what was asked: no endpoint at the path, or no target that can count
    the request's tokens (404 `NOT_FOUND`)."""


class MethodNotAllowed(HttpError, status=405, code="method_not_allowed", should_retry=False):
    """The path exists but takes other methods (405 `method_not_allowed`)."""


class NotReady(RoutingError, status=503, code="not_ready"):
    """The gateway is starting: its configuration is not loaded yet (503 `not_ready`)."""


class BadHttpRequest(HttpError, status=400, code="invalid_request", should_retry=False):
    """The request's HTTP framing cannot be parsed: a bad request line, header line,
    `Content-Length` or chunk size (400 `invalid_request`); the connection is closed."""


class RequestTimeout(HttpError, status=408, code="request_timeout"):
    """The caller sent its headers or its body too slowly (408 `request_timeout`); the
    connection is closed."""


class HeadersTooLarge(HttpError, status=431, code="headers_too_large", should_retry=False):
    """The request has more header lines or header bytes than the server accepts (431
    `headers_too_large`); the connection is closed."""


class ShuttingDown(HttpError, status=503, code="shutting_down"):
    """The gateway shut down before the request ended (503 `shutting_down`; after a stream
    has started, an in-stream error event)."""


class ProviderError(TurnoutError):
    """One call to one target failed.

    Attributes: `status` (HTTP status or None for transport failures; a subclass may set a
    default), `error_class` (the classification of the failed call),
    `message`, `retry_after` (seconds or None), `reset_at` (a vendor's quota reset time as seconds
    from now, or None), `error_type` (the vendor's error type or code, e.g. `insufficient_quota`),
    `reason` (short text for the routing record: `429`, `connection`, `timeout`), `provider`,
    `provider_request_id`, `body` (the vendor's raw error body, if any), and `routing` (set when
    the error ends a routed request).
    """

    status: int | None = None
    error_class: str = "invalid_request"
    _by_class: ClassVar[dict[str, type[ProviderError]]] = {}

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error_class: str | None = None,
        retry_after: float | None = None,
        reset_at: float | None = None,
        error_type: str | None = None,
        reason: str | None = None,
        provider: str | None = None,
        provider_request_id: str | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        if error_class is not None:
            self.error_class = error_class
        self.retry_after = retry_after
        self.reset_at = reset_at
        self.error_type = error_type
        self.reason = reason if reason is not None else (str(self.status) if self.status else None)
        self.provider = provider
        self.provider_request_id = provider_request_id
        self.body = body
        self.routing: RoutingRecord | None = None

    def __init_subclass__(cls, *, error_class: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if error_class is not None:
            cls.error_class = error_class
            ProviderError._by_class[error_class] = cls

    @classmethod
    def for_class(cls, error_class: str, message: str, **kwargs: Any) -> ProviderError:
        """Build the subclass matching `error_class` (an unknown class gives ProviderError)."""
        kind = ProviderError._by_class.get(error_class, ProviderError)
        return kind(message, error_class=error_class, **kwargs)

    @property
    def should_retry(self) -> bool | None:
        """False for an error class that the same request meets again (`invalid_request`,
        `context_length`, `content_filtered`, `auth`); else None (the status decides)."""
        return False if self.error_class in _DETERMINISTIC else None

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}" if self.reason else self.message


class ProviderTimeout(ProviderError, error_class="timeout"):
    """The call exceeded a deadline (connect, read, `timeout`, `first_token_timeout`) or got 408."""


class RateLimited(ProviderError, error_class="rate_limited"):
    """HTTP 429 that is not a credit signal."""


class QuotaExhausted(ProviderError, error_class="quota_exhausted"):
    """A vendor quota or credit signal (402, `insufficient_quota`, …): parks the health key."""


class ProviderUnavailable(ProviderError, error_class="provider_error"):
    """5xx, 409, a dropped connection, an upstream error event or an unparseable body."""


class ContextLengthExceeded(ProviderError, error_class="context_length"):
    """The prompt does not fit the model's context."""


class ContentFiltered(ProviderError, error_class="content_filtered"):
    """The vendor refused the request for a content-policy reason."""


class AuthenticationFailed(ProviderError, error_class="auth"):
    """HTTP 401 or 403."""


class InvalidRequest(ProviderError, error_class="invalid_request"):
    """A deterministic client error (400, 404, 413, 422, 501, …)."""


class MalformedRequest(InvalidRequest, status=400):
    """A request body turnout's codecs refuse before any call: not JSON, or a field without the
    shape its wire format needs (400, as the vendor would answer; the message names the field).
    The gateway answers a caller's malformed body with `MalformedBody`."""


class StreamBroken(TurnoutError):
    """A stream failed after commit: the caller has a partial answer and no failover happened.

    Only ever sent as an in-stream error event (502 `stream_broken`).
    """

    status: ClassVar[int] = 502
    code: ClassVar[str] = "stream_broken"

    def __init__(self, message: str, *, routing: RoutingRecord | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.routing = routing


class StreamRejected(TurnoutError):
    """A finished stream was refused (`content_filter`) or rejected by `accept` (transient).

    `code` is `stream_refused` or `stream_rejected`; `reason` the refusal or accept reason. The
    gateway answers it with 502.
    """

    status: ClassVar[int] = 502
    code: str = "stream_rejected"
    transient: ClassVar[bool] = True

    def __init__(
        self,
        message: str,
        *,
        code: str = "stream_rejected",
        reason: str | None = None,
        routing: RoutingRecord | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason
        self.routing = routing
