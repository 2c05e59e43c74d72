"""`GET /healthz` (liveness) and `GET /readyz` (readiness with detail) (SPEC §5.1)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnout.gateway.respond import json_reply

if TYPE_CHECKING:
    from turnout.gateway.handlers.exchange import Exchange, GatewaySettings

__all__ = ["handle_healthz", "readiness"]

_OK = json_reply(200, {"status": "ok"})


async def handle_healthz(exchange: Exchange) -> None:
    """200 `{"status": "ok"}` while the process serves."""
    await exchange.reply(_OK)


def readiness(settings: GatewaySettings | None) -> tuple[int, dict[str, object]]:
    """`/readyz`'s status and body: 200 once the configuration is loaded, else 503."""
    if settings is None:
        return 503, {"status": "starting", "config": "not loaded"}
    runtime = settings.runtime
    return 200, {
        "status": "ready",
        "config": "loaded",
        "project": runtime.project,
        "routes": len(runtime.routes),
        # The scheme only: a state URL may hold a password.
        "state": runtime.config.state.split(":", 1)[0],
        # Bindings load with the configuration; grants are enforced while resolving (§6.3).
        "bindings": "loaded",
    }
