"""The gateway: ASGI app, resolution, responses (its HTTP API: `docs/gateway-api.md`)."""

from __future__ import annotations
