"""Provider secrets at rest: Fernet (AES-128-CBC with an HMAC-SHA256 tag) under a key taken from
`TURNOUT_SECRET_KEY`.

The variable holds either a Fernet key (32 url-safe base64 bytes, as `Fernet.generate_key()`
prints) or any passphrase, which PBKDF2-HMAC-SHA256 stretches into one. The salt is fixed on
purpose: every replica must derive the same key from the same passphrase, and the passphrase is
the secret. Nothing here logs or repeats a secret or the key.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import os
from typing import TYPE_CHECKING, Final

from turnout.errors import SecretKeyMissing

if TYPE_CHECKING:
    from collections.abc import Mapping

    from cryptography.fernet import Fernet

__all__ = ["SECRET_KEY_VARIABLE", "SecretBox"]

SECRET_KEY_VARIABLE: Final = "TURNOUT_SECRET_KEY"  # noqa: S105 (the variable's name, not a key)
_SALT: Final = b"turnout-secret-key-v1"
_ITERATIONS: Final = 300_000


@functools.lru_cache(maxsize=8)
def _fernet_key(value: str) -> bytes:
    try:
        if len(base64.urlsafe_b64decode(value.encode())) == 32:
            return value.encode()
    except (binascii.Error, ValueError):
        pass
    derived = hashlib.pbkdf2_hmac("sha256", value.encode(), _SALT, _ITERATIONS, dklen=32)
    return base64.urlsafe_b64encode(derived)


class SecretBox:
    """Encrypts and decrypts provider secrets. Without a key (None) it refuses both, with a
    `SecretKeyMissing` that names `TURNOUT_SECRET_KEY`."""

    __slots__ = ("_fernet",)

    def __init__(self, key: str | None) -> None:
        # The cryptography package is loaded only by a process that has a key to use.
        if key:
            from cryptography.fernet import Fernet  # noqa: PLC0415

            self._fernet: Fernet | None = Fernet(_fernet_key(key))
        else:
            self._fernet = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> SecretBox:
        """The box keyed by `TURNOUT_SECRET_KEY` from `environ` (default: the process's)."""
        env = os.environ if environ is None else environ
        return cls(env.get(SECRET_KEY_VARIABLE) or None)

    @property
    def has_key(self) -> bool:
        """Whether a key is set."""
        return self._fernet is not None

    def __repr__(self) -> str:
        return f"SecretBox(has_key={self.has_key})"

    def encrypt(self, plaintext: str) -> bytes:
        """The Fernet token of `plaintext`."""
        return self._require().encrypt(plaintext.encode())

    def decrypt(self, token: bytes) -> str:
        """The plaintext of a token `encrypt` made under the same key."""
        from cryptography.fernet import InvalidToken  # noqa: PLC0415 - loaded with the key

        try:
            return self._require().decrypt(token).decode()
        except InvalidToken:
            raise SecretKeyMissing(
                f"a stored secret cannot be decrypted with {SECRET_KEY_VARIABLE}: "
                "it was stored under another key"
            ) from None

    def _require(self) -> Fernet:
        if self._fernet is None:
            raise SecretKeyMissing(
                f"{SECRET_KEY_VARIABLE} is not set: it is needed to store or read a provider "
                "secret (a Fernet key or a passphrase)"
            )
        return self._fernet
