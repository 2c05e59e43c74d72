"""`GET /healthz` (liveness) and `GET /readyz` (readiness with detail)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnout.gateway.responses.respond import json_reply

if TYPE_CHECKING:
    from turnout.gateway.exchange import Exchange
    from turnout.gateway.handlers.settings import GatewaySettings
    from turnout.gateway.runtime.live import Runtime
    from turnout.gateway.runtime.status import ControlStatus

__all__ = ["handle_healthz", "readiness"]

_OK = json_reply(200, {"status": "ok"})


async def handle_healthz(exchange: Exchange) -> None:
    """200 `{"status": "ok"}` while the process serves."""
    await exchange.reply(_OK)


async def readiness(
    settings: GatewaySettings | None, status: ControlStatus | None = None
) -> tuple[int, dict[str, object]]:
    """`/readyz`'s status and body: 503 before the configuration is loaded; then 200, with
    `status: degraded` and its `reason` while the shared state store is unreachable (the gateway
    serves on local state then: a failing store never fails a call) and the store's own detail
    under `state`; likewise while the store (the database) does not answer, while a store
    version is refused, and after a refused reload of the config file (`status`: the fields
    `store`, `refused_version` and `reload`). The shared state store is asked each time
    (`StateStore.probe`: bounded, and at most about once a second for a shared store), so an
    outage shows here before any call meets it.
    `health` says whether health is shared with other replicas (and its counts): while the
    store is down, each process keeps its own health, and the status stays 200 because the
    process still serves every request.
    `routes` and `health` cover every project the replica serves (`health`'s counts summed),
    and `served` gives each project's own (by name)."""
    if settings is None:
        return 503, {"status": "starting", "config": "not loaded"}
    runtime = settings.runtime
    runtimes = list(settings.served.runtimes.values())
    state = runtime.state
    healthy = await state.probe()
    detail = state.describe()  # with any password redacted
    reasons = [] if healthy else [f"shared state: {detail.get('detail', 'unreachable')}"]
    if status is not None:
        reasons.extend(status.problems())
    body: dict[str, object] = {"status": "degraded" if reasons else "ready"}
    if reasons:
        body["reason"] = "; ".join(reasons)
    body.update(
        {
            "config": "loaded",
            # The store's version the runtimes were built from (null: served without a store).
            "config_version": settings.served.version,
            "project": runtime.project,
            "projects": len(settings.served.runtimes),
            "routes": sum(len(served.routes) for served in runtimes),
            "state": detail,
            "health": _health_detail(runtimes),
            "served": {served.project: _project_detail(served) for served in runtimes},
            # Bindings load with the configuration; grants are enforced while resolving.
            "bindings": "loaded",
            **(status.describe() if status is not None else {}),
        }
    )
    return 200, body


def _health_detail(runtimes: list[Runtime]) -> dict[str, object]:
    """Whether health is shared, and the counts of every served project's sharing summed."""
    total: dict[str, object] = {"shared": False}
    for runtime in runtimes:
        shared = runtime.shared_health
        if shared is None:
            continue
        for name, value in shared.describe().items():
            known = total.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and isinstance(known, int):
                total[name] = known + value
            elif name not in total or name == "shared":
                total[name] = value  # the first project's replica id
    return total


def _project_detail(runtime: Runtime) -> dict[str, object]:
    """One served project's part: its routes and, with shared state, its health sharing."""
    shared = runtime.shared_health
    return {
        "routes": len(runtime.routes),
        "health": {"shared": False} if shared is None else shared.describe(),
    }
