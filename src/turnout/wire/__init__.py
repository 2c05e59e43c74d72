"""Neutral request/response model and the wire-format codecs.

The package offers the neutral model (`turnout.wire.model`) as its own, and `CODECS`, every
format's `Codec` by wire format (its modules are imported here, and each registers its own).
"""

from __future__ import annotations

from turnout.wire import (  # noqa: F401 - imported to register their codecs
    anthropic_messages,
    bedrock_converse,
    gemini,
    model,
    openai_chat,
    openai_responses,
)
from turnout.wire.codec import CODECS, Codec
from turnout.wire.model import *  # noqa: F403 - the neutral model, offered as the package's

__all__ = ["CODECS", "Codec"]
__all__ += model.__all__
