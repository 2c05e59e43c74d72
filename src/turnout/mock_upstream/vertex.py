"""The mock upstream's Vertex AI face: Gemini and Claude under `/v1/projects/…`, bearer tokens,
and an OAuth token endpoint that issues them.

Rule 1: a Vertex path is `/v1/projects/{project}/locations/{location}/publishers/{publisher}/
models/{model}:{method}`; `google` models answer as the Gemini face does (`generateContent`,
`streamGenerateContent`), `anthropic` ones as the Messages face does (`rawPredict`,
`streamRawPredict`), the model taken from the path (a Claude body on Vertex has none).
Rule 2: every Vertex request must carry `Authorization: Bearer <token>` with a token this mock
issued (or the fixed test token it was started with); anything else is refused as Google
refuses it (401 `UNAUTHENTICATED`), before any fault plays.
Rule 3: `POST /token` is an OAuth 2 token endpoint for the JWT-bearer grant that a
service-account JSON uses (its `token_uri` pointed here): a form with
`grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` and a signed `assertion` whose claims
name an issuer, an audience and a scope gets a new access token (`expires_in` 3600). The
signature is not checked (the mock knows no public key); the shape is.
Rule 4: on the Claude endpoints, a rate-limit or quota fault answers in Google's envelope (as
Vertex's own quota does); other faults in Anthropic's error shape.
"""

from __future__ import annotations

import base64
import binascii
import secrets
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import orjson

from turnout.mock_upstream import gemini
from turnout.mock_upstream.vendors import ErrorReply, error_reply
from turnout.wire.gemini import error_body

if TYPE_CHECKING:
    from turnout.mock_upstream.faults import Fault

__all__ = [
    "ENDPOINTS",
    "JWT_BEARER",
    "TokenIssuer",
    "bearer_refusal",
    "claude_error",
    "is_vertex",
]

ENDPOINTS = {":rawPredict": "messages", ":streamRawPredict": "messages"}
"""Path suffix -> endpoint name, for the Claude endpoints (the Gemini ones are the Gemini
face's)."""
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_PREFIX = "/v1/projects/"


def is_vertex(path: str) -> bool:
    """Rule 1: whether `path` is a Vertex model path."""
    return path.startswith(_PREFIX) and "/publishers/" in path and "/models/" in path


class TokenIssuer:
    """Rule 3: the access tokens this mock issued, and the fixed one it accepts (`fixed`)."""

    def __init__(self, fixed: str | None = None, *, expires_in: int = 3600) -> None:
        self.fixed = fixed
        self.expires_in = expires_in
        self._issued: set[str] = set()
        self._lock = threading.Lock()

    @property
    def issued(self) -> int:
        """How many tokens were issued."""
        return len(self._issued)

    def accepts(self, token: str) -> bool:
        """Whether `token` is one this mock issued (or the fixed one)."""
        if self.fixed is not None and secrets.compare_digest(token, self.fixed):
            return True
        with self._lock:
            return token in self._issued

    def grant(self, form: bytes) -> tuple[int, bytes]:
        """The status and JSON body answering a token request's form body."""
        fields = parse_qs(form.decode("utf-8", errors="replace"))
        grant = fields.get("grant_type", [""])[0]
        if grant != JWT_BEARER:
            return _oauth_error("unsupported_grant_type", f"grant_type {grant!r} is not served")
        claims = _claims(fields.get("assertion", [""])[0])
        if claims is None:
            return _oauth_error("invalid_grant", "the assertion is not a signed JWT")
        missing = [name for name in ("iss", "aud", "scope") if not claims.get(name)]
        if missing:
            return _oauth_error("invalid_grant", f"the assertion has no {', '.join(missing)}")
        token = "ya29.mock-" + secrets.token_urlsafe(24)
        with self._lock:
            self._issued.add(token)
        body = {"access_token": token, "expires_in": self.expires_in, "token_type": "Bearer"}
        return 200, orjson.dumps(body)


def _oauth_error(code: str, description: str) -> tuple[int, bytes]:
    return 400, orjson.dumps({"error": code, "error_description": description})


def _claims(assertion: str) -> dict[str, Any] | None:
    """The claims of a three-part JWT, or None."""
    parts = assertion.split(".")
    if len(parts) != 3 or not all(parts):
        return None
    try:
        raw = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        claims = orjson.loads(raw)
    except (binascii.Error, ValueError):
        return None
    return claims if isinstance(claims, dict) else None


def bearer_refusal(headers: dict[str, str], issuer: TokenIssuer) -> ErrorReply | None:
    """Rule 2: the refusal of a Vertex request without a token this mock accepts."""
    value = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    if scheme.lower() == "bearer" and token and issuer.accepts(token.strip()):
        return None
    message = (
        "Request had invalid authentication credentials. Expected OAuth 2 access token, login "
        "cookie or other valid authentication credential."
    )
    return ErrorReply(401, orjson.dumps(error_body(401, message)))


def claude_error(fault: Fault, *, model: str, request_id: str) -> ErrorReply:
    """Rule 4: the error answer of `fault` on a Claude endpoint."""
    if fault.quota or fault.status == 429:
        return gemini.error_reply(fault, model=model)
    return error_reply(fault, api="anthropic", model=model, request_id=request_id)
