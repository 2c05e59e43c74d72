"""`GET /healthz` (liveness) and `GET /readyz` (readiness with detail) (SPEC §5.1)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnout.gateway.responses.respond import json_reply

if TYPE_CHECKING:
    from turnout.gateway.server.exchange import Exchange, GatewaySettings

__all__ = ["handle_healthz", "readiness"]

_OK = json_reply(200, {"status": "ok"})


async def handle_healthz(exchange: Exchange) -> None:
    """200 `{"status": "ok"}` while the process serves."""
    await exchange.reply(_OK)


def readiness(settings: GatewaySettings | None) -> tuple[int, dict[str, object]]:
    """`/readyz`'s status and body: 503 before the configuration is loaded; then 200, with
    `status: degraded` while the shared state store is unreachable (the gateway serves on local
    state then: a failing store never fails a call) and the store's own detail under `state`."""
    if settings is None:
        return 503, {"status": "starting", "config": "not loaded"}
    runtime = settings.runtime
    state = runtime.state
    return 200, {
        "status": "ready" if state.healthy else "degraded",
        "config": "loaded",
        "project": runtime.project,
        "routes": len(runtime.routes),
        # The store describes itself with any password redacted.
        "state": state.describe(),
        # Bindings load with the configuration; grants are enforced while resolving (§6.3).
        "bindings": "loaded",
    }
