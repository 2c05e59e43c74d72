"""An upstream's error status as the error a call raises (Rules 3, 4 and 6 of
`turnout.providers.base`): the common classification of `transport.error_for_status`, and,
for a key of the provider's own, words saying whose key was refused."""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnout.errors import ProviderError, ProviderUnavailable
from turnout.providers.transport import error_for_status, request_id_of

if TYPE_CHECKING:
    from collections.abc import Collection, Mapping

__all__ = ["status_error"]


def status_error(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    *,
    provider: str,
    vendor: str | None,
    secrets: Collection[str],
    own_key: bool,
) -> ProviderError:
    """The error of a reply with a status outside 2xx from `provider` (`vendor`'s words read,
    `secrets` scrubbed). With `own_key` an `auth` error says the provider's configured key was
    refused; a status below 400 is `ProviderUnavailable` ("unexpected HTTP status")."""
    if status < 400:
        return ProviderUnavailable(
            f"unexpected HTTP status {status}",
            status=status,
            reason=str(status),
            provider=provider,
            provider_request_id=request_id_of(headers),
        )
    error = error_for_status(
        status, headers, body, provider=provider, vendor=vendor, secrets=secrets
    )
    if error.error_class == "auth" and own_key:
        # The key refused is turnout's own, never the caller's: say so, so that nobody reads
        # the vendor's "incorrect API key" as the caller's fault.
        error.message = f'provider "{provider}" rejected its configured key: {error.message}'
        error.args = (error.message,)
    return error
