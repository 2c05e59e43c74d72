"""Where Vertex AI's bodies differ from the vendors' own APIs: Claude's `rawPredict` body and
Gemini's `contents` roles.

Rule 1: a Claude body for Vertex is an Anthropic Messages body without `model` (the model is in
the URL), with `anthropic_version: "vertex-2023-10-16"` (a caller's own `anthropic_version`
is kept), and the caller's `anthropic-beta` header values as the `anthropic_beta` list (merged
with one already in the body, in order, without repeats). Nothing else changes: a caller's
`cache_control`, `thinking` and unknown fields reach Vertex as sent; when nothing needs
changing the bytes are the caller's own.
Rule 2: Vertex requires a `role` on every entry of a Gemini body's `contents` (Google's own API
takes a missing one as `user`): a forwarded entry without one gets `"user"`.
No I/O; an invalid body raises `MalformedRequest`, as the codecs do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnout.wire._body import rewrite

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["VERTEX_ANTHROPIC_VERSION", "gemini_body", "raw_predict_body", "split_betas"]

VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"
"""The `anthropic_version` Vertex's Claude endpoints require in the body."""


def split_betas(values: Iterable[str]) -> list[str]:
    """`anthropic-beta` header values (each comma-separated) as one list, without repeats."""
    out: list[str] = []
    for value in values:
        for item in value.split(","):
            beta = item.strip()
            if beta and beta not in out:
                out.append(beta)
    return out


def raw_predict_body(body: bytes, *, betas: Iterable[str] = ()) -> bytes:
    """Rule 1: an Anthropic Messages body (`body`) as Vertex's `rawPredict` takes it."""
    wanted = split_betas(betas)

    def edit(payload: dict[str, Any]) -> bool:
        changed = "model" in payload
        payload.pop("model", None)
        if "anthropic_version" not in payload:
            payload["anthropic_version"] = VERTEX_ANTHROPIC_VERSION
            changed = True
        if wanted:
            held = payload.get("anthropic_beta")
            current = [b for b in held if isinstance(b, str)] if isinstance(held, list) else []
            merged = split_betas([*current, *wanted])
            if merged != held:
                payload["anthropic_beta"] = merged
                changed = True
        return changed

    return rewrite(body, edit)


def gemini_body(body: bytes) -> bytes:
    """Rule 2: a Gemini body with a `role` on every `contents` entry."""

    def edit(payload: dict[str, Any]) -> bool:
        contents = payload.get("contents")
        changed = False
        if isinstance(contents, list):
            for entry in contents:
                if isinstance(entry, dict) and not entry.get("role"):
                    entry["role"] = "user"
                    changed = True
        return changed

    return rewrite(body, edit)
