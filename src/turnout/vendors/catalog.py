"""The vendor catalog: one frozen `VendorEntry` per vendor, holding what classification needs
to know about a vendor's errors, and the vendor's defaults.

Every entry also carries the common signals (OpenAI-style `insufficient_quota`,
`context_length_exceeded`, Anthropic's "credit balance is too low", …), because OpenAI-compatible
servers copy them; an unknown vendor gets only the common signals (`GENERIC`).
Matching is case-insensitive: error types exactly, messages by substring.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from types import MappingProxyType
from typing import TYPE_CHECKING

from turnout.vendors.google_errors import GoogleError, read_google_error

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

__all__ = [
    "GENERIC",
    "VENDORS",
    "VendorEntry",
    "vendor_entry",
    "zai_reset_after",
]


@dataclass(frozen=True, slots=True)
class VendorEntry:
    """What turnout knows about one vendor.

    - `quota_types` / `quota_messages`: error types (or codes) and message fragments that mean
      exhausted quota or credit, on any status;
    - `credit_429`: the vendor reports exhausted credit with HTTP 429; then a 429 matching
      `credit_types` / `credit_messages` is `quota_exhausted` (those match nothing on other
      statuses, and a 429 matching none of them stays `rate_limited`);
    - `context_types` / `context_messages`, `content_types` / `content_messages`: context-length
      and content-filter reasons, read on a 400, 403, 413 or 422;
    - `reset_parser(message, now_wall)`: seconds from now until the vendor's quota resets, read
      from its error message, or None;
    - `embeddings`: the vendor serves an embeddings endpoint; `base_url`: its public API base
      (None when each account has its own); `family`: `openai`, `anthropic`, `gemini` or
      `none`; `key_env`: the environment variable its key is conventionally kept in (read by
      the library when no key is given; None for keyless servers);
    - `error_reader(decoded_body)`: the vendor's structured error (Google's `google.rpc.Status`
      details: quota or rate limit, retry delay, a refused key), whose verdict comes before
      the message signals (None: messages only).
    """

    name: str
    family: str = "none"
    base_url: str | None = None
    embeddings: bool = False
    credit_429: bool = False
    quota_types: frozenset[str] = frozenset()
    quota_messages: tuple[str, ...] = ()
    credit_types: frozenset[str] = frozenset()
    credit_messages: tuple[str, ...] = ()
    context_types: frozenset[str] = frozenset()
    context_messages: tuple[str, ...] = ()
    content_types: frozenset[str] = frozenset()
    content_messages: tuple[str, ...] = ()
    reset_parser: Callable[[str, float], float | None] | None = field(default=None, repr=False)
    key_env: str | None = None
    error_reader: Callable[[object], GoogleError | None] | None = field(default=None, repr=False)

    def read_error(self, data: object) -> GoogleError | None:
        """The vendor's structured error in a decoded body, or None (never raises)."""
        if self.error_reader is None:
            return None
        try:
            return self.error_reader(data)
        except (TypeError, ValueError, AttributeError, RecursionError):
            return None

    def is_quota(self, error_type: str | None, message: str) -> bool:
        """A quota or credit signal, whatever the status."""
        return _matches(error_type, message, self.quota_types, self.quota_messages)

    def is_credit_429(self, error_type: str | None, message: str) -> bool:
        """A 429 from this vendor that means exhausted credit (only with `credit_429`)."""
        return self.credit_429 and _matches(
            error_type, message, self.credit_types, self.credit_messages
        )

    def is_context_length(self, error_type: str | None, message: str) -> bool:
        """The error names a context-length reason."""
        return _matches(error_type, message, self.context_types, self.context_messages)

    def is_content_filtered(self, error_type: str | None, message: str) -> bool:
        """The error names a content-filter or content-policy reason."""
        return _matches(error_type, message, self.content_types, self.content_messages)

    def reset_after(self, message: str, now_wall: float) -> float | None:
        """Seconds until the quota resets, from the error message (None when unknown)."""
        if self.reset_parser is None:
            return None
        try:
            return self.reset_parser(message, now_wall)
        except (ValueError, OverflowError):
            return None


def _matches(
    error_type: str | None, message: str, types: frozenset[str], fragments: tuple[str, ...]
) -> bool:
    if error_type is not None and error_type.lower() in types:
        return True
    if not fragments or not message:
        return False
    text = message.lower()
    return any(fragment in text for fragment in fragments)


# ---- reset-time parsers --------------------------------------------------------------------

_ZAI_ZONE = timezone(timedelta(hours=8))
_ZAI_RESET = re.compile(
    r"(?:reset at|将在)\s*(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(Z|[+-]\d{2}:?\d{2})?",
    re.IGNORECASE,
)


def zai_reset_after(message: str, now_wall: float) -> float | None:
    """Z.ai's usage-limit message ("… Your limit will reset at 2026-09-04 19:01:25", or the
    Chinese "您的限额将在 … 重置") as seconds from `now_wall` (epoch seconds).

    A time without a zone is read as China Standard Time (UTC+8), where Z.ai runs; an explicit
    `Z` or offset is honoured. A time not in the future gives None (the park falls back to its
    default instead of parking nothing on a clock or zone mismatch).
    """
    found = _ZAI_RESET.search(message)
    if found is None:
        return None
    day, clock, zone = found.groups()
    try:
        moment = datetime.fromisoformat(f"{day}T{clock}")
    except ValueError:
        return None
    if zone is None:
        moment = moment.replace(tzinfo=_ZAI_ZONE)
    else:
        moment = moment.replace(tzinfo=UTC if zone.upper() == "Z" else _offset(zone))
    seconds = moment.timestamp() - now_wall
    return seconds if seconds > 0 else None


def _offset(text: str) -> timezone:
    digits = text[1:].replace(":", "")
    delta = timedelta(hours=int(digits[:2]), minutes=int(digits[2:4]))
    return timezone(-delta if text[0] == "-" else delta)


# ---- the entries ---------------------------------------------------------------------------

_COMMON_QUOTA_TYPES = ("insufficient_quota", "billing_error", "exceeded_current_quota_error")
_COMMON_QUOTA_MESSAGES = ("exceeded your current quota", "credit balance is too low")
_COMMON_CONTEXT_TYPES = ("context_length_exceeded",)
_COMMON_CONTEXT_MESSAGES = (
    "maximum context length",
    "context_length_exceeded",
    "context window",
    "prompt is too long",
)
_COMMON_CONTENT_TYPES = ("content_filter", "content_policy_violation")
_COMMON_CONTENT_MESSAGES = (
    "content management policy",
    "content_policy_violation",
    "content filtering policy",
    "flagged as potentially violating",
)


def _entry(
    name: str,
    *,
    quota_types: Iterable[str] = (),
    quota_messages: Iterable[str] = (),
    credit_types: Iterable[str] = (),
    credit_messages: Iterable[str] = (),
    context_types: Iterable[str] = (),
    context_messages: Iterable[str] = (),
    content_types: Iterable[str] = (),
    content_messages: Iterable[str] = (),
    family: str = "none",
    base_url: str | None = None,
    embeddings: bool = False,
    credit_429: bool = False,
    reset_parser: Callable[[str, float], float | None] | None = None,
    key_env: str | None = None,
    error_reader: Callable[[object], GoogleError | None] | None = None,
) -> VendorEntry:
    """An entry with the common signals added to the vendor's own (all lower-cased)."""

    def kinds(*groups: Iterable[str]) -> frozenset[str]:
        return frozenset(item.lower() for group in groups for item in group)

    def fragments(*groups: Iterable[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(item.lower() for group in groups for item in group))

    return VendorEntry(
        name=name,
        family=family,
        base_url=base_url,
        embeddings=embeddings,
        credit_429=credit_429,
        quota_types=kinds(_COMMON_QUOTA_TYPES, quota_types),
        quota_messages=fragments(_COMMON_QUOTA_MESSAGES, quota_messages),
        credit_types=kinds(credit_types),
        credit_messages=fragments(credit_messages),
        context_types=kinds(_COMMON_CONTEXT_TYPES, context_types),
        context_messages=fragments(_COMMON_CONTEXT_MESSAGES, context_messages),
        content_types=kinds(_COMMON_CONTENT_TYPES, content_types),
        content_messages=fragments(_COMMON_CONTENT_MESSAGES, content_messages),
        reset_parser=reset_parser,
        key_env=key_env,
        error_reader=error_reader,
    )


_GEMINI_CONTEXT = (
    "input token count",
    "exceeds the maximum number of tokens allowed",
)
_GEMINI_CONTENT = ("violates our policies", "prohibited content")

GENERIC = _entry("generic")
"""The entry for an unknown vendor: the common signals only."""

_ENTRIES = (
    _entry(
        "openai",
        family="openai",
        base_url="https://api.openai.com/v1",
        embeddings=True,
        content_messages=("rejected as a result of our safety system",),
    ),
    _entry(
        "anthropic",
        family="anthropic",
        base_url="https://api.anthropic.com",
        quota_messages=("purchase credits",),
        content_messages=("output blocked by content filtering",),
    ),
    _entry(
        # The family follows the provider's `wire`; openai-chat is the common one.
        "azure-openai",
        family="openai",
        embeddings=True,
        content_types=("responsibleaipolicyviolation",),
    ),
    _entry(
        "gemini",
        family="gemini",
        base_url="https://generativelanguage.googleapis.com",
        embeddings=True,
        key_env="GEMINI_API_KEY",
        error_reader=read_google_error,
        context_messages=_GEMINI_CONTEXT,
        content_messages=_GEMINI_CONTENT,
    ),
    _entry(
        # Vertex AI: Google's error envelope, with Claude's own errors on its Claude endpoints
        # (`turnout.vendors.vertex_errors`); the family follows the model's publisher.
        "vertex",
        family="gemini",
        error_reader=read_google_error,
        quota_messages=("purchase credits",),
        context_messages=_GEMINI_CONTEXT,
        content_messages=(*_GEMINI_CONTENT, "output blocked by content filtering"),
    ),
    _entry(
        "deepseek",
        key_env="DEEPSEEK_API_KEY",
        base_url="https://api.deepseek.com/v1",
        quota_messages=("insufficient balance",),
    ),
    _entry(
        "groq",
        key_env="GROQ_API_KEY",
        base_url="https://api.groq.com/openai/v1",
        context_messages=("reduce the length of the messages",),
    ),
    _entry(
        "kimi",
        key_env="MOONSHOT_API_KEY",
        base_url="https://api.moonshot.ai/v1",
        credit_429=True,
        quota_messages=("exceeded current quota",),
        credit_messages=("insufficient balance", "recharge"),
        context_messages=("exceeded model token limit", "model max length exceeded"),
        content_messages=("considered high risk",),
    ),
    _entry(
        "zai",
        key_env="ZAI_API_KEY",
        base_url="https://api.z.ai/api/paas/v4",
        embeddings=True,
        credit_429=True,
        quota_types=("1113",),
        quota_messages=("account is in arrears", "no resource package"),
        credit_types=("1308", "1310"),
        credit_messages=("usage limit reached", "will reset at", "insufficient balance"),
        content_types=("1301",),
        content_messages=("unsafe or sensitive content",),
        reset_parser=zai_reset_after,
    ),
    _entry(
        "xai",
        key_env="XAI_API_KEY",
        base_url="https://api.x.ai/v1",
        credit_429=True,
        credit_messages=("used all available credits", "monthly spending limit"),
        context_messages=("maximum prompt length",),
    ),
    _entry("ollama", base_url="http://127.0.0.1:11434/v1", embeddings=True),
    _entry("vllm", base_url="http://127.0.0.1:8000/v1", embeddings=True),
    _entry(
        "mistral",
        base_url="https://api.mistral.ai/v1",
        embeddings=True,
        key_env="MISTRAL_API_KEY",
        context_messages=("too large for model with",),
    ),
    _entry(
        "together",
        base_url="https://api.together.xyz/v1",
        embeddings=True,
        key_env="TOGETHER_API_KEY",
        quota_messages=("credit limit",),
    ),
    _entry(
        "fireworks",
        base_url="https://api.fireworks.ai/inference/v1",
        embeddings=True,
        key_env="FIREWORKS_API_KEY",
    ),
    _entry(
        "openrouter",
        base_url="https://openrouter.ai/api/v1",
        key_env="OPENROUTER_API_KEY",
        quota_messages=("requires more credits", "insufficient credits"),
    ),
    _entry(
        # Google's OpenAI-compatible endpoint: Google's error details, OpenAI's shapes.
        "gemini-openai",
        base_url="https://generativelanguage.googleapis.com/v1beta/openai",
        embeddings=True,
        key_env="GEMINI_API_KEY",
        error_reader=read_google_error,
        context_messages=_GEMINI_CONTEXT,
        content_messages=_GEMINI_CONTENT,
    ),
    _entry("cerebras", base_url="https://api.cerebras.ai/v1", key_env="CEREBRAS_API_KEY"),
    _entry("perplexity", base_url="https://api.perplexity.ai", key_env="PERPLEXITY_API_KEY"),
    _entry("lmstudio", base_url="http://127.0.0.1:1234/v1", embeddings=True),
    _entry(
        # AWS Bedrock: errors read by `turnout.vendors.aws_errors` first.
        "bedrock",
        quota_types=("servicequotaexceededexception",),
        context_messages=("too long", "context window", "context length", "too many tokens"),
        content_messages=("blocked by guardrail",),
    ),
    _entry("mock", embeddings=True),
)

VENDORS: Mapping[str, VendorEntry] = MappingProxyType({entry.name: entry for entry in _ENTRIES})
"""Every known vendor by name (read-only)."""


def vendor_entry(name: str | None) -> VendorEntry:
    """The catalog entry for `name` (case-insensitive); `GENERIC` for None or an unknown name."""
    if name is None:
        return GENERIC
    return VENDORS.get(name.lower(), GENERIC)
