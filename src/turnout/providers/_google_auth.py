"""Google Cloud credentials for the `vertex` kind, through the optional `google-auth` library.

Rule 1: `google-auth` is imported only here and only when a `vertex` provider is built, so the
core import never loads it; without it, building one raises `ConfigError` naming the extra to
install (`pip install 'turnout[gcp]'`).
Rule 2: credentials come from a service-account JSON (`credentials_file`, a path, or
`credentials_json`, the JSON itself), else from application-default credentials
(`google.auth.default()`), always with the `cloud-platform` scope. A file or JSON is read when
the provider is built (a bad one is a `ConfigError` naming the field); application-default
credentials are looked up on the first refresh, off the event loop, since the lookup may ask
the metadata server.
Rule 3: google-auth's blocking HTTP goes through a small `urllib` transport of our own
(`UrllibRequest`), so the extra needs no `requests`; it runs only in a worker thread.
Rule 4: a refresh failure maps to an error class: refused credentials (google-auth's
`RefreshError`, not marked retryable) or none found are `auth`; an unreachable token endpoint
or a retryable refusal is `provider_error`. No message carries a token.
"""

from __future__ import annotations

import calendar
import importlib
import importlib.util
import threading
from typing import TYPE_CHECKING, Any

import orjson

from turnout.errors import AuthenticationFailed, ConfigError, ProviderError, ProviderUnavailable
from turnout.providers.transport import local_error

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = [
    "GCP_EXTRA",
    "SCOPE",
    "google_auth_installed",
    "google_credentials",
    "refresh_error",
]

SCOPE = "https://www.googleapis.com/auth/cloud-platform"
GCP_EXTRA = "pip install 'turnout[gcp]'"
"""How to install what a `vertex` provider needs."""
_TIMEOUT = 30.0


def google_auth_installed() -> bool:
    """Whether `google-auth` can be imported (Rule 1), without importing it."""
    try:
        return importlib.util.find_spec("google.auth") is not None
    except (ImportError, ValueError):
        return False


def _google_auth() -> Any:
    """Rule 1: the `google.auth` package, or a `ConfigError` naming the extra."""
    try:
        import google.auth  # noqa: PLC0415
        import google.auth.exceptions  # noqa: PLC0415
        import google.auth.transport  # noqa: PLC0415
    except ImportError as exc:
        rule = f"a vertex provider needs the google-auth library: {GCP_EXTRA}"
        raise ConfigError(f"kind: {rule}", [("kind", rule)]) from exc
    return google.auth


class _Response:
    """What google-auth reads of an HTTP response."""

    def __init__(self, status: int, headers: Mapping[str, str], data: bytes) -> None:
        self.status = status
        self.headers = headers
        self.data = data


def _urllib_request(google_auth: Any) -> Any:
    """Rule 3: a `google.auth.transport.Request` over `urllib` (blocking)."""
    # Imported here: urllib.request is a heavy import, needed only with a vertex provider.
    import urllib.error  # noqa: PLC0415
    import urllib.request  # noqa: PLC0415

    transport = google_auth.transport

    class UrllibRequest(transport.Request):  # type: ignore[misc, name-defined]
        def __call__(
            self,
            url: str,
            method: str = "GET",
            body: bytes | None = None,
            headers: Mapping[str, str] | None = None,
            timeout: float | None = None,
            **kwargs: Any,
        ) -> _Response:
            del kwargs
            request = urllib.request.Request(  # noqa: S310 (google-auth's own token URLs)
                url, data=body, headers=dict(headers or {}), method=method
            )
            try:
                with urllib.request.urlopen(request, timeout=timeout or _TIMEOUT) as reply:  # noqa: S310
                    return _Response(reply.status, dict(reply.headers), reply.read())
            except urllib.error.HTTPError as exc:
                return _Response(exc.code, dict(exc.headers or {}), exc.read())
            except (urllib.error.URLError, OSError, ValueError) as exc:
                raise google_auth.exceptions.TransportError(str(exc)) from exc

    return UrllibRequest()


def google_credentials(
    *, credentials_file: str | None = None, credentials_json: str | None = None
) -> Callable[[], tuple[str, float | None]]:
    """Rule 2: a blocking fetch of a fresh access token `(token, expiry in epoch seconds)`."""
    google_auth = _google_auth()
    request = _urllib_request(google_auth)
    credentials: Any = None
    if credentials_json is not None:
        credentials = _from_json(google_auth, credentials_json)
    elif credentials_file is not None:
        credentials = _from_file(google_auth, credentials_file)
    lock = threading.Lock()

    def fetch() -> tuple[str, float | None]:
        nonlocal credentials
        with lock:
            if credentials is None:
                credentials, _ = google_auth.default(scopes=[SCOPE], request=request)
            credentials.refresh(request)
            expiry = credentials.expiry
            when = None if expiry is None else float(calendar.timegm(expiry.utctimetuple()))
            return str(credentials.token), when

    return fetch


def _from_json(google_auth: Any, text: str, field: str = "credentials_json") -> Any:
    """Rule 2: credentials of the two types a config names (a service account, or an
    authorized user's refresh token); other types only through application-default
    credentials, as Google advises for credentials from elsewhere."""
    try:
        info = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        rule = f"must be a service-account JSON object (invalid JSON at {exc.pos})"
        raise ConfigError(f"{field}: {rule}", [(field, rule)]) from None
    kind = info.get("type") if isinstance(info, dict) else None
    try:
        if kind == "service_account":
            accounts: Any = importlib.import_module("google.oauth2.service_account")
            return accounts.Credentials.from_service_account_info(info, scopes=[SCOPE])
        if kind == "authorized_user":
            users: Any = importlib.import_module("google.oauth2.credentials")
            return users.Credentials.from_authorized_user_info(info, scopes=[SCOPE])
    except (google_auth.exceptions.GoogleAuthError, ValueError, TypeError, KeyError) as exc:
        rule = f"must be Google credentials JSON ({_first_line(exc)})"
        raise ConfigError(f"{field}: {rule}", [(field, rule)]) from None
    rule = (
        f"must be a service_account or authorized_user JSON (type {kind!r}); other "
        "credential types are read as application-default credentials"
    )
    raise ConfigError(f"{field}: {rule}", [(field, rule)])


def _from_file(google_auth: Any, path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError) as exc:
        rule = f"must name a readable JSON file ({type(exc).__name__}: {_first_line(exc)})"
        raise ConfigError(f"credentials_file: {rule}", [("credentials_file", rule)]) from None
    return _from_json(google_auth, text, "credentials_file")


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]


def refresh_error(exc: Exception, *, provider: str) -> ProviderError:
    """Rule 4: the error a call gets when no token could be had."""
    if isinstance(exc, ProviderError):
        return exc
    kind = type(exc).__name__
    text = _first_line(exc)
    if kind in ("RefreshError", "DefaultCredentialsError") and not getattr(exc, "retryable", False):
        return AuthenticationFailed(
            f'provider "{provider}" could not get an access token: {text}',
            status=401,
            reason="token refresh failed",
            provider=provider,
        )
    if kind in ("RefreshError", "TransportError"):
        return ProviderUnavailable(
            f'provider "{provider}" could not reach its token endpoint: {text}',
            reason="token endpoint",
            provider=provider,
        )
    return local_error(exc, provider=provider)
