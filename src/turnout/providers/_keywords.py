"""The keyword arguments every provider kind takes besides its own, and the rules that read them:
an unknown keyword is a `TypeError`, as Python raises for a parameter it does not know, and the
HTTP options come either as one `HttpOptions` or as their loose keywords, never both."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypedDict

from turnout.errors import ConfigError
from turnout.providers.http1 import default_transport
from turnout.providers.transport import HttpOptions

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from turnout.providers.transport import HttpTimeouts, Transport
    from turnout.routing.model_info import ModelInfo

__all__ = [
    "CREDENTIAL_MODES",
    "CredentialMode",
    "HttpProviderKeywords",
    "ProviderKeywords",
    "credential_mode_of",
    "http_options",
    "refuse_unknown_keywords",
    "transport_for",
]

CredentialMode = Literal["org_key", "passthrough"]
CREDENTIAL_MODES: tuple[CredentialMode, ...] = ("org_key", "passthrough")


class ProviderKeywords(TypedDict, total=False):
    """The keyword arguments every provider kind takes besides its own.

    `model` (used when neither the target nor the request names one; default none), `prices`
    (USD per 1M input/output tokens by model, `(input, output)` or `{"input": …, "output": …}`,
    optionally with `cache_read` and `cache_write`), `catalog` (`name -> ModelInfo | None`:
    what the model catalog says of a model, its price asked when `prices` has none; default
    none), `model_aliases` (requested -> wire model), `credential_mode`: `org_key` (default:
    the provider's own `api_key`, or none) or `passthrough` (no key of its own: each call
    carries the caller's credential through `with_credential`; `api_key` is ignored; Rule 4
    of `turnout.providers.base`), and `provider_id` (the stored provider's id, the routing
    record's `served_provider_id`; default None).
    """

    model: str | None
    prices: Mapping[str, Any] | None
    model_aliases: Mapping[str, str] | None
    credential_mode: CredentialMode
    provider_id: str | None
    catalog: Callable[[str], ModelInfo | None] | None


class HttpProviderKeywords(ProviderKeywords, total=False):
    """`ProviderKeywords` plus those of the kinds that call over HTTP: `transport` (an
    alternative `Transport`, e.g. for tests; default a pooled HTTP/1.1 client made from the
    options), and `headers`, `timeouts` and `max_connections`, each setting the field of
    `HttpOptions` of that name when no `options` are given (they were keywords before
    `HttpOptions` and still are; a new HTTP option goes in `HttpOptions` only)."""

    transport: Transport | None
    headers: Mapping[str, str] | None
    timeouts: HttpTimeouts | None
    max_connections: int


def refuse_unknown_keywords(
    owner: object, keywords: Mapping[str, object], allowed: frozenset[str]
) -> None:
    """A `TypeError` for a keyword `owner`'s constructor does not take, as Python raises for
    one that names no parameter (keywords gathered with `**` would otherwise pass unseen); it
    names the class built, whichever class's constructor it inherits."""
    unknown = sorted(keywords.keys() - allowed)
    if unknown:
        where = type(owner).__name__
        raise TypeError(f"{where}.__init__() got an unexpected keyword argument {unknown[0]!r}")


def http_options(options: HttpOptions | None, keywords: HttpProviderKeywords) -> HttpOptions:
    """`options`, or one made of the `headers`, `timeouts` and `max_connections` keywords
    (one left out, or None, keeps the field's default); options and those keywords together
    are a `TypeError`, since which should win is anyone's guess."""
    loose: dict[str, Any] = {
        "headers": keywords.get("headers"),
        "timeouts": keywords.get("timeouts"),
        "max_connections": keywords.get("max_connections"),
    }
    given = {name: value for name, value in loose.items() if value is not None}
    if options is None:
        return HttpOptions(**given)
    if given:
        names = ", ".join(given)
        raise TypeError(f"{names}: give these in `options` or as keywords, not both")
    return options


def credential_mode_of(keywords: ProviderKeywords) -> CredentialMode:
    """The `credential_mode` keyword (default `org_key`); any other value is a `ConfigError`
    under `credential_mode`."""
    mode = keywords.get("credential_mode", "org_key")
    if mode not in CREDENTIAL_MODES:
        rule = f"must be one of {', '.join(CREDENTIAL_MODES)} (got {mode!r})"
        raise ConfigError(f"credential_mode: {rule}", [("credential_mode", rule)])
    return mode


def transport_for(provider: str, options: HttpOptions, transport: Transport | None) -> Transport:
    """`transport`, or (None) a pooled HTTP/1.1 client made from `options` for `provider`."""
    if transport is not None:
        return transport
    return default_transport(
        provider=provider,
        timeouts=options.timeouts,
        max_connections=options.max_connections,
        max_response_bytes=options.max_response_bytes,
    )
