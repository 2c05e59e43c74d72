"""The presets of the `openai-compatible` provider kind, and which servers need no key.

A preset names a vendor catalog entry (its base URL, the environment variable its key is
conventionally kept in, quota signals and embeddings support).
"""

from __future__ import annotations

import ipaddress
from typing import Literal, get_args
from urllib.parse import urlsplit

__all__ = ["KEYLESS_PRESETS", "PRESETS", "Preset", "is_loopback"]

Preset = Literal[
    "deepseek",
    "groq",
    "kimi",
    "zai",
    "xai",
    "ollama",
    "vllm",
    "mistral",
    "together",
    "fireworks",
    "openrouter",
    "gemini-openai",
    "cerebras",
    "perplexity",
    "lmstudio",
]
"""A preset's name: the type of an `openai-compatible` provider's `preset` setting."""

PRESETS: tuple[Preset, ...] = get_args(Preset)
"""The presets of `OpenAICompatible` (each names a vendor catalog entry)."""

KEYLESS_PRESETS = frozenset({"ollama", "vllm", "lmstudio"})
"""Presets whose servers need no key by nature (local model servers)."""


def is_loopback(base_url: str) -> bool:
    """True when `base_url` points at this machine (127.0.0.0/8, ::1 or `localhost`)."""
    host = urlsplit(base_url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
