"""A stored provider's secrets: every credential field sealed together in its `secret` column.

Rule 1: the secret fields (`SECRET_FIELDS`: an API key, a cloud service-account JSON, AWS
keys) never reach the database in plaintext: they are sealed as one JSON object with the
store's key (`TURNOUT_SECRET_KEY`), and the provider's settings keep only a `MASK` marker for
each one present, so reading or listing a provider needs no key and shows no secret.
Rule 2: a secret sealed before several fields were kept is the bare API key; it still reads as
`{"api_key": …}`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Mapping

    from turnout.store.secret_box import SecretBox

__all__ = ["MASK", "SECRET_FIELDS", "seal", "unseal"]

MASK: Final = "********"
"""What a stored secret reads as."""

SECRET_FIELDS: Final = ("api_key", "credentials_json", "secret_access_key", "session_token")
"""The provider fields that are credentials, stored sealed."""

_FORMAT: Final = "turnout.provider-secrets.v1"


def seal(box: SecretBox, values: Mapping[str, str]) -> bytes | None:
    """Rule 1: the sealed form of `values` (None when there is none)."""
    if not values:
        return None
    return box.encrypt(json.dumps({"format": _FORMAT, "secrets": dict(values)}))


def unseal(box: SecretBox, token: bytes) -> dict[str, str]:
    """The secrets sealed in `token` (Rule 2 for an older bare key)."""
    text = box.decrypt(token)
    try:
        data = json.loads(text)
    except ValueError:
        return {"api_key": text}
    if isinstance(data, dict) and data.get("format") == _FORMAT:
        secrets = data.get("secrets")
        if isinstance(secrets, dict):
            return {str(k): str(v) for k, v in secrets.items() if k in SECRET_FIELDS}
    return {"api_key": text}
