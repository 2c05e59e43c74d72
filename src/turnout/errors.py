"""The whole exception tree of turnout.

::

    TurnoutError
    ├── ConfigError (also ValueError)      invalid options; names the field and the rule
    │                                      (`.status`/`.code`: 400 VALIDATION_FAILED, or 409)
    ├── RoutingError                       how a routed request ended without an answer
    │   ├── RouteExhausted                 transient: retryable failures left no target
    │   ├── RouteIneligible                fatal: every target ineligible for this request
    │   ├── NoDeploymentAvailable          every target paused / no positive weight
    │   ├── PolicyDenied                   a deny covers every target
    │   └── NoRoute                        no route serves the model (gateway)
    ├── ProviderError                      one call failed; `.error_class` says how
    │   ├── ProviderTimeout                timeout
    │   ├── RateLimited                    rate_limited
    │   ├── QuotaExhausted                 quota_exhausted
    │   ├── ProviderUnavailable            provider_error (5xx, connection, unparseable body)
    │   ├── ContextLengthExceeded          context_length
    │   ├── ContentFiltered                content_filtered
    │   ├── AuthenticationFailed           auth
    │   └── InvalidRequest                 invalid_request
    ├── StreamBroken                       a committed stream failed
    └── StreamRejected                     a finished stream was refused or rejected

`ProviderError.for_class()` builds the subclass that matches an error class, so that code
which classifies (providers, the scripted models) never picks a class by hand.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from collections.abc import Sequence

    from turnout.record import AttemptEntry, RoutingRecord

__all__ = [
    "AuthenticationFailed",
    "ConfigError",
    "ContentFiltered",
    "ContextLengthExceeded",
    "InvalidRequest",
    "NoDeploymentAvailable",
    "NoRoute",
    "PolicyDenied",
    "ProviderError",
    "ProviderTimeout",
    "ProviderUnavailable",
    "QuotaExhausted",
    "RateLimited",
    "RouteExhausted",
    "RouteIneligible",
    "RoutingError",
    "StreamBroken",
    "StreamRejected",
    "TurnoutError",
]


class TurnoutError(Exception):
    """Base of every error turnout raises on purpose."""


class ConfigError(TurnoutError, ValueError):
    """An invalid option or configuration. The message names the field and the rule.

    `errors` holds every problem found, each as `(path, message)`, when a validator collected
    several at once. `status` and `code` are what the admin API answers with: 400
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


class RoutingError(TurnoutError):
    """A routed request ended without an accepted answer.

    `status` and `code` are what the gateway answers with; `routing` is the routing record.
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
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status
        if code is not None:
            self.code = code
        self.routing = routing

    @property
    def attempts(self) -> Sequence[AttemptEntry]:
        """The attempt entries of the routing record (empty without a record)."""
        return self.routing.attempts if self.routing is not None else ()


class RouteExhausted(RoutingError):
    """Retryable failures left no target to try (transient).

    `retry_after` (seconds or None) is the shortest time until a cooling, open or parked target
    can be asked again; `last_error` is `(status, message)` of the last call, if any.
    """

    transient: ClassVar[bool] = True

    def __init__(
        self,
        message: str,
        *,
        status: int = 503,
        code: str = "UPSTREAM_POOL_EXHAUSTED",
        retry_after: float | None = None,
        last_error: tuple[int | None, str] | None = None,
        routing: RoutingRecord | None = None,
    ) -> None:
        super().__init__(message, status=status, code=code, routing=routing)
        self.retry_after = retry_after
        self.last_error = last_error


class RouteIneligible(RoutingError):
    """Every target was ineligible for this request (fatal, 400 `route_ineligible`)."""

    status = 400
    code = "route_ineligible"


class NoDeploymentAvailable(RoutingError):
    """Every target is paused, or none has a positive weight (503 `no_deployment_available`)."""

    status = 503
    code = "no_deployment_available"


class PolicyDenied(RoutingError):
    """A deny binding or policy covers every target (403 `POLICY_DENIED`)."""

    status = 403
    code = "POLICY_DENIED"


class NoRoute(RoutingError):
    """No route serves the model, or the credential filter left no target (503 `NO_ROUTE`)."""

    status = 503
    code = "NO_ROUTE"


class ProviderError(TurnoutError):
    """One call to one target failed.

    Attributes: `status` (HTTP status or None for transport failures), `error_class` (its class),
    `message`, `retry_after` (seconds or None), `reset_at` (a vendor's quota reset time as seconds
    from now, or None), `error_type` (the vendor's error type or code, e.g. `insufficient_quota`),
    `reason` (short text for the routing record: `429`, `connection`, `timeout`), `provider`,
    `provider_request_id`, `body` (the vendor's raw error body, if any), and `routing` (set when
    the error ends a routed request).
    """

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
        self.status = status
        if error_class is not None:
            self.error_class = error_class
        self.retry_after = retry_after
        self.reset_at = reset_at
        self.error_type = error_type
        self.reason = reason if reason is not None else (str(status) if status else None)
        self.provider = provider
        self.provider_request_id = provider_request_id
        self.body = body
        self.routing: RoutingRecord | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "error_class" in cls.__dict__:
            ProviderError._by_class[cls.error_class] = cls

    @classmethod
    def for_class(cls, error_class: str, message: str, **kwargs: Any) -> ProviderError:
        """Build the subclass matching `error_class` (an unknown class gives ProviderError)."""
        kind = ProviderError._by_class.get(error_class, ProviderError)
        return kind(message, error_class=error_class, **kwargs)

    def __str__(self) -> str:
        return f"{self.reason}: {self.message}" if self.reason else self.message


class ProviderTimeout(ProviderError):
    """The call exceeded a deadline (connect, read, `timeout`, `first_token_timeout`) or got 408."""

    error_class = "timeout"


class RateLimited(ProviderError):
    """HTTP 429 that is not a credit signal."""

    error_class = "rate_limited"


class QuotaExhausted(ProviderError):
    """A vendor quota or credit signal (402, `insufficient_quota`, …): parks the health key."""

    error_class = "quota_exhausted"


class ProviderUnavailable(ProviderError):
    """5xx, 409, a dropped connection, an upstream error event or an unparseable body."""

    error_class = "provider_error"


class ContextLengthExceeded(ProviderError):
    """The prompt does not fit the model's context."""

    error_class = "context_length"


class ContentFiltered(ProviderError):
    """The vendor refused the request for a content-policy reason."""

    error_class = "content_filtered"


class AuthenticationFailed(ProviderError):
    """HTTP 401 or 403."""

    error_class = "auth"


class InvalidRequest(ProviderError):
    """A deterministic client error (400, 404, 413, 422, 501, …)."""

    error_class = "invalid_request"


class StreamBroken(TurnoutError):
    """A stream failed after commit: the caller has a partial answer and no failover happened."""

    def __init__(self, message: str, *, routing: RoutingRecord | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.routing = routing


class StreamRejected(TurnoutError):
    """A finished stream was refused (`content_filter`) or rejected by `accept` (transient).

    `code` is `stream_refused` or `stream_rejected`; `reason` the refusal or accept reason.
    """

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
