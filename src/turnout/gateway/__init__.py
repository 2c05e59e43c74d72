"""The gateway: ASGI app, resolution, responses (SPEC §5, §6)."""

from __future__ import annotations
