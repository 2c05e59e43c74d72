"""Bedrock calls are signed exactly as AWS Signature Version 4 says.

A small reference signer is written here from AWS's published description of the algorithm and
first checked against the worked example AWS publishes (a GET of `/test.txt` from
`examplebucket`, signed on 2013-05-24 with the documentation's example keys). The signer
turnout's Bedrock provider uses must then produce the same signature as the reference for a
Bedrock request at a fixed time.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit

import botocore.auth

from turnout.providers._aws_auth import AwsSigner

if TYPE_CHECKING:
    from collections.abc import Mapping

    import pytest

EXAMPLE_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
EXAMPLE_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def reference_signature(
    *,
    secret: str,
    method: str,
    path: str,
    headers: Mapping[str, str],
    body: bytes,
    amz_date: str,
    region: str,
    service: str,
) -> tuple[str, str]:
    """(signed header names, signature) by the published steps: canonical request (every
    service but S3 encodes the already-encoded path once more), string to sign, the derived
    signing key, the HMAC."""
    canonical_path = path if service == "s3" else quote(path, safe="/-_.~")
    names = sorted(name.lower() for name in headers)
    canonical_headers = "".join(f"{n}:{' '.join(headers[n].split())}\n" for n in names)
    signed = ";".join(names)
    canonical = "\n".join(
        [method, canonical_path, "", canonical_headers, signed, hashlib.sha256(body).hexdigest()]
    )
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    to_sign = "\n".join(
        ["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = _hmac(("AWS4" + secret).encode(), amz_date[:8])
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    return signed, hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def test_the_reference_reproduces_the_published_example() -> None:
    """AWS's worked GET example signs to the signature its documentation prints."""
    signed, signature = reference_signature(
        secret=EXAMPLE_SECRET,
        method="GET",
        path="/test.txt",
        headers={
            "host": "examplebucket.s3.amazonaws.com",
            "range": "bytes=0-9",
            "x-amz-content-sha256": EMPTY_SHA256,
            "x-amz-date": "20130524T000000Z",
        },
        body=b"",
        amz_date="20130524T000000Z",
        region="us-east-1",
        service="s3",
    )
    assert signed == "host;range;x-amz-content-sha256;x-amz-date"
    assert signature == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"


async def test_a_bedrock_call_is_signed_like_the_reference(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Bedrock signer's Authorization header matches the reference, field by field."""
    moment = dt.datetime(2026, 12, 1, 12, 30, 45)  # botocore's naive UTC
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *_, **__: moment)
    signer = AwsSigner(
        "us-west-2",
        provider="aws",
        access_key_id=EXAMPLE_KEY_ID,
        secret_access_key=EXAMPLE_SECRET,
    )
    url = "https://bedrock-runtime.us-west-2.amazonaws.com/model/amazon.nova-pro-v1%3A0/converse"
    body = b'{"messages":[{"role":"user","content":[{"text":"hi"}]}]}'
    headers = await signer.sign(url, body, "application/json")
    await signer.aclose()
    amz_date = "20261201T123045Z"
    assert headers["x-amz-date"] == amz_date
    parts = urlsplit(url)
    signed, signature = reference_signature(
        secret=EXAMPLE_SECRET,
        method="POST",
        path=parts.path,
        headers={"content-type": "application/json", "host": parts.netloc, "x-amz-date": amz_date},
        body=body,
        amz_date=amz_date,
        region="us-west-2",
        service="bedrock",
    )
    assert headers["authorization"] == (
        f"AWS4-HMAC-SHA256 Credential={EXAMPLE_KEY_ID}/20261201/us-west-2/bedrock/aws4_request, "
        f"SignedHeaders={signed}, Signature={signature}"
    )
