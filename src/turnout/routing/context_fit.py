"""Whether a chat request fits a target's context window.

The request's size is estimated without a tokenizer: its prompt characters ÷ 4 (the system
prompt, message text and tool-call arguments), plus the `max_tokens` it asks for, since the
answer shares the window with the prompt. The estimate is rough by design; it skips a target
only when the request plainly cannot fit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from turnout.wire.model import ChatRequest

__all__ = ["context_overflow", "estimated_tokens"]


def estimated_tokens(request: ChatRequest) -> int:
    """The tokens `request` is estimated to need: prompt characters ÷ 4, plus `max_tokens`."""
    return request.prompt_chars // 4 + (request.max_tokens or 0)


def context_overflow(window: int, request: ChatRequest) -> str | None:
    """Why `request` does not fit a context window of `window` tokens ("context window 8,192
    < estimated 12,400 tokens"), or None when it fits."""
    wanted = estimated_tokens(request)
    if wanted <= window:
        return None
    return f"context window {window:,} < estimated {wanted:,} tokens"
