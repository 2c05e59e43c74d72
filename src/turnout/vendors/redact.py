"""Secrets scrubbed from text that came from an upstream, before a caller or a record sees it.

An upstream may echo what it was sent, its credential included, in an error message. `redact`
replaces each known secret (a provider's key, its header values, the caller's credential) and
anything shaped like one: `sk-…` keys (OpenAI, Anthropic `sk-ant-…`, DeepSeek …), xAI, Groq
and Google API keys, AWS access key ids, `Bearer <token>`, and a long token after a word such
as `key`, `token`, `secret` or `password`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["REDACTED", "redact", "secrets_of"]

REDACTED = "[redacted]"
"""What a secret is replaced with."""

_MIN_SECRET = 8
"""Known secrets shorter than this are not scrubbed: they would hit ordinary words."""

_SHAPES = re.compile(
    r"\b(?:sk|xai)-[A-Za-z0-9_\-]{16,}"  # OpenAI, Anthropic sk-ant-, DeepSeek, xAI
    r"|\bgsk_[A-Za-z0-9]{16,}"  # Groq
    r"|\bAIza[0-9A-Za-z_\-]{30,}"  # Google
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"  # AWS access key ids
)
# Separators are bounded (and never two open-ended runs side by side), so no text makes the
# patterns backtrack more than a few characters.
_BEARER = re.compile(r"(?i)\b(bearer|basic) {1,4}[A-Za-z0-9._~+/=\-]{8,}")
_NAMED = re.compile(
    r"(?i)\b((?:api[_\- ]?)?(?:key|token|secret|password|credential)s?)"
    r"([\"']?[ \t]{0,4}[:=][ \t]{0,4}[\"']?| {1,4})"
    r"[A-Za-z0-9._~+/=\-]{20,}"
)


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with each of `secrets` (those of at least 8 characters, longest first) and every
    key- or token-shaped string replaced by `[redacted]`."""
    if not text:
        return text
    for secret in sorted(secrets, key=len, reverse=True):
        if len(secret) >= _MIN_SECRET and secret in text:
            text = text.replace(secret, REDACTED)
    text = _SHAPES.sub(REDACTED, text)
    text = _BEARER.sub(lambda match: f"{match.group(1)} {REDACTED}", text)
    return _NAMED.sub(lambda match: f"{match.group(1)}{match.group(2)}{REDACTED}", text)


def secrets_of(values: Iterable[str]) -> tuple[str, ...]:
    """The secrets in header values or keys: each value, and the token of a `Bearer <token>`
    or `Basic <token>` value, keeping those of at least 8 characters."""
    found: list[str] = []
    for value in values:
        scheme, _, token = value.partition(" ")
        if token and scheme.lower() in ("bearer", "basic"):
            found.append(token.strip())
        found.append(value)
    return tuple(dict.fromkeys(secret for secret in found if len(secret) >= _MIN_SECRET))
