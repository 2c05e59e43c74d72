"""`GET /metrics`: the gateway's metrics in Prometheus text format."""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnout.gateway.observe.metrics import CONTENT_TYPE
from turnout.gateway.responses.respond import Reply

if TYPE_CHECKING:
    from turnout.gateway.handlers.settings import ServedExchange

__all__ = ["handle_metrics"]

_HEADERS = [(b"content-type", CONTENT_TYPE.encode())]


async def handle_metrics(exchange: ServedExchange) -> None:
    """200 with every metric of this process (or of every worker process), and the health
    state of every served project's keys."""
    settings = exchange.settings
    health = [runtime.health for runtime in settings.served.runtimes.values()]
    body = settings.observer.metrics.render(health)
    await exchange.reply(Reply(200, list(_HEADERS), body))
