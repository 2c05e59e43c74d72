"""A Google service-account JSON made for one test run: a fresh RSA key (never a real
account's), its `token_uri` pointed at the mock upstream's OAuth token endpoint."""

from __future__ import annotations

import functools

import orjson
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

PROJECT = "test-project"


@functools.cache
def _private_key_pem() -> str:
    """One RSA key per test run (made once: 2048-bit generation is the slow part)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def service_account_json(token_uri: str) -> str:
    """The JSON of a service account whose tokens come from `token_uri`."""
    info = {
        "type": "service_account",
        "project_id": PROJECT,
        "private_key_id": "test-key-1",
        "private_key": _private_key_pem(),
        "client_email": f"turnout-test@{PROJECT}.iam.gserviceaccount.com",
        "client_id": "100000000000000000001",
        "token_uri": token_uri,
    }
    return orjson.dumps(info).decode()
