"""AWS Signature Version 4 for the `bedrock` kind, through botocore's own signer, with
credentials from the standard AWS chain.

Rule 1: botocore is imported only when a `bedrock` provider is made, and its absence is a
`ConfigError` naming the extra that brings it (`pip install 'turnout[aws]'`), so the core
import never pays for it.
Rule 2: explicit keys (`access_key_id` + `secret_access_key`, optional `session_token`) are
used as they are; without them the standard chain is read (environment, shared config and
credentials files with `profile`, container and instance roles). The chain is read on the
first call, in a worker thread, never on the event loop.
Rule 3: refreshable credentials (roles, SSO) are refreshed off the hot path: within
botocore's advisory window a background task refreshes them while calls keep signing with
the current ones; only credentials about to expire (under a minute left) make a call wait
for the refresh.
Rule 4: each call signs its method, URL, body and `content-type` (service `bedrock`, the
provider's region); the headers added are `authorization`, `x-amz-date` and, with temporary
credentials, `x-amz-security-token`.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from typing import TYPE_CHECKING, Any

from turnout.errors import AuthenticationFailed, ConfigError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["EXTRA_HINT", "AwsSigner", "require_botocore"]

logger = logging.getLogger("turnout.providers")
EXTRA_HINT = "pip install 'turnout[aws]'"
SERVICE = "bedrock"
_MANDATORY_SECONDS = 60


def require_botocore(field: str = "kind") -> Any:
    """Rule 1: the `botocore` package, or a `ConfigError` naming the extra."""
    try:
        return importlib.import_module("botocore")
    except ImportError:
        rule = f"the bedrock kind needs the aws extra (botocore): {EXTRA_HINT}"
        raise ConfigError(f"{field}: {rule}", [(field, rule)]) from None


class AwsSigner:
    """Signs Bedrock calls (Rules 2-4) for one provider."""

    def __init__(
        self,
        region: str,
        *,
        provider: str,
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
        session_token: str | None = None,
        profile: str | None = None,
    ) -> None:
        require_botocore()
        if bool(access_key_id) != bool(secret_access_key):
            rule = "access_key_id and secret_access_key are given together or not at all"
            raise ConfigError(f"access_key_id: {rule}", [("access_key_id", rule)])
        self.region = region
        self.provider = provider
        self._profile = profile
        self._source: Any = None
        self._frozen: Any = None
        self._refresh: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        if access_key_id and secret_access_key:
            from botocore.credentials import Credentials  # noqa: PLC0415 - Rule 1

            self._source = Credentials(access_key_id, secret_access_key, session_token)
            self._frozen = self._source.get_frozen_credentials()

    @property
    def secrets(self) -> tuple[str, ...]:
        """The secret parts of the credentials in use (to scrub from errors)."""
        frozen = self._frozen
        if frozen is None:
            return ()
        return tuple(s for s in (frozen.secret_key, frozen.token) if s)

    def _load(self) -> Any:
        from botocore.session import Session  # noqa: PLC0415 - Rule 1

        source = Session(profile=self._profile).get_credentials()
        if source is None:
            raise AuthenticationFailed(
                f"provider {self.provider!r} found no AWS credentials (set access_key_id and "
                "secret_access_key, or AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, a profile or "
                "a role); nothing was sent",
                status=401,
                reason="no aws credentials",
                provider=self.provider,
            )
        return source, source.get_frozen_credentials()

    async def credentials(self) -> Any:
        """The frozen credentials to sign with now (Rules 2 and 3)."""
        if self._frozen is None:
            async with self._lock:
                if self._frozen is None:
                    self._source, self._frozen = await asyncio.to_thread(self._load)
        source = self._source
        needed = getattr(source, "refresh_needed", None)
        if needed is None:
            return self._frozen
        if needed(_MANDATORY_SECONDS):
            self._frozen = await asyncio.to_thread(source.get_frozen_credentials)
        elif needed() and self._refresh is None:
            self._refresh = asyncio.get_running_loop().create_task(self._refresh_later())
        return self._frozen

    async def _refresh_later(self) -> None:
        try:
            self._frozen = await asyncio.to_thread(self._source.get_frozen_credentials)
        except Exception as exc:  # noqa: BLE001 - the next call retries; current keys still sign
            logger.warning(
                "provider %r: refreshing AWS credentials failed (%s); retrying on the next call",
                self.provider,
                type(exc).__name__,
            )
        finally:
            self._refresh = None

    async def sign(self, url: str, body: bytes, content_type: str) -> Mapping[str, str]:
        """Rule 4: the signature headers of a POST of `body` to `url`."""
        from botocore.auth import SigV4Auth  # noqa: PLC0415 - Rule 1
        from botocore.awsrequest import AWSRequest  # noqa: PLC0415 - Rule 1

        frozen = await self.credentials()
        request = AWSRequest(
            method="POST", url=url, data=body, headers={"content-type": content_type}
        )
        SigV4Auth(frozen, SERVICE, self.region).add_auth(request)
        signed = {"authorization": request.headers["Authorization"]}
        signed["x-amz-date"] = request.headers["X-Amz-Date"]
        token = request.headers.get("X-Amz-Security-Token")
        if token:
            signed["x-amz-security-token"] = token
        return signed

    async def aclose(self) -> None:
        """Cancel a background refresh."""
        task, self._refresh = self._refresh, None
        if task is not None:
            task.cancel()
