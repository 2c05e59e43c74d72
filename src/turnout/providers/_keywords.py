"""The keyword arguments every provider kind takes besides its own, and the rules that read them:
an unknown keyword is a `TypeError`, as Python raises for a parameter it does not know, and the
HTTP options come either as one `HttpOptions` or as their loose keywords, never both."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypedDict

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
    "http_options",
    "refuse_unknown_keywords",
]

CredentialMode = Literal["org_key", "passthrough"]
CREDENTIAL_MODES: tuple[CredentialMode, ...] = ("org_key", "passthrough")


class ProviderKeywords(TypedDict, total=False):
    """The keyword arguments every provider kind takes besides its own (`HttpProvider` says
    what each one means)."""

    model: str | None
    prices: Mapping[str, Any] | None
    model_aliases: Mapping[str, str] | None
    credential_mode: CredentialMode
    provider_id: str | None
    catalog: Callable[[str], ModelInfo | None] | None


class HttpProviderKeywords(ProviderKeywords, total=False):
    """`ProviderKeywords` plus those of the kinds that call over HTTP: `transport`, and
    `headers`, `timeouts` and `max_connections`, each the field of `HttpOptions` of that name
    (they were keywords before `HttpOptions` and still are; a new HTTP option goes in
    `HttpOptions` only)."""

    transport: Transport | None
    headers: Mapping[str, str] | None
    timeouts: HttpTimeouts | None
    max_connections: int


def refuse_unknown_keywords(
    owner: object, keywords: Mapping[str, object], allowed: frozenset[str]
) -> None:
    """A `TypeError` for a keyword `owner`'s constructor does not take, as Python raises for
    one that names no parameter (keywords gathered with `**` would otherwise pass unseen)."""
    unknown = sorted(keywords.keys() - allowed)
    if unknown:
        where = type(owner).__init__.__qualname__
        raise TypeError(f"{where}() got an unexpected keyword argument {unknown[0]!r}")


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
