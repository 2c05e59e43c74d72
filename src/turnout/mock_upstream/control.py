"""The mock upstream's control endpoints under `/_mock/`: its health, the request log, fault
scripts, and a reset of all three (with the kept Responses answers)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import orjson

if TYPE_CHECKING:
    from turnout.mock_upstream.exchange import Exchange
    from turnout.mock_upstream.faults import FaultBook
    from turnout.mock_upstream.log import RequestLog
    from turnout.mock_upstream.responses import StoredResponses

__all__ = ["ControlEndpoints"]


class ControlEndpoints:
    """`GET /_mock/health`, `GET|DELETE /_mock/requests`, `GET|POST|DELETE /_mock/scripts` and
    `POST /_mock/reset`, over the request `log`, the `faults` and the `kept` responses."""

    def __init__(self, log: RequestLog, faults: FaultBook, kept: StoredResponses) -> None:
        self.log = log
        self.faults = faults
        self.kept = kept
        self._started = time.monotonic()

    def __call__(self, exchange: Exchange) -> None:
        request = exchange.request
        route = (request.method, request.path.rstrip("/"))
        if route == ("GET", "/_mock/health"):
            uptime = time.monotonic() - self._started
            _json(exchange, 200, {"status": "ok", "requests": len(self.log), "uptime": uptime})
        elif route == ("GET", "/_mock/requests"):
            model = parse_qs(request.query).get("model", [None])[0]
            exchange.respond(200, self.log.to_json(model=model))
        elif route == ("DELETE", "/_mock/requests"):
            cleared = len(self.log)
            self.log.clear()
            _json(exchange, 200, {"cleared": cleared})
        elif route == ("GET", "/_mock/scripts"):
            _json(exchange, 200, dict(self.faults.pending()))
        elif route == ("POST", "/_mock/scripts"):
            self._post_script(exchange)
        elif route == ("DELETE", "/_mock/scripts"):
            self.faults.clear()
            _json(exchange, 200, {"cleared": True})
        elif route == ("POST", "/_mock/reset"):
            self.faults.clear()
            self.log.clear()
            self.kept.clear()
            _json(exchange, 200, {"reset": True})
        else:
            _json(exchange, 404, {"error": {"message": f"no control endpoint {route}"}})

    def _post_script(self, exchange: Exchange) -> None:
        try:
            body = orjson.loads(exchange.request.body)
            model, steps = body["model"], body["faults"]
        except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
            _json(exchange, 400, {"error": {"message": f"bad script: {exc}"}})
            return
        if not isinstance(model, str) or not isinstance(steps, list):
            message = "bad script: `model` must be a string and `faults` a list of specs"
            _json(exchange, 400, {"error": {"message": message}})
            return
        try:
            queued = self.faults.script(model, [str(step) for step in steps])
        except ValueError as exc:
            _json(exchange, 400, {"error": {"message": f"bad script: {exc}"}})
            return
        _json(exchange, 200, {"model": model, "queued": queued})


def _json(exchange: Exchange, status: int, payload: Any) -> None:
    exchange.respond(status, orjson.dumps(payload), content_type="application/json")
