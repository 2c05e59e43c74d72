"""The gateway's log lines: one access line per request, and a WARNING line per failover,
fallback-route hop, breaker transition and park.

Rule 1: every line is a logger call whose message is a fixed event word (`access`, `failover`,
`fallback_route`, `health`) with its fields in `extra["fields"]`; the text format appends them
as `name=value`, the JSON format writes one object per line under the same names.
Rule 2: fields come only from the routing record, the health event and the exchange's status,
path and key name: never a header, a body or a credential, so no secret reaches a line.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import sys
from typing import TYPE_CHECKING, Any, Final

import orjson

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import TextIO

    from turnout.record import AttemptEntry, RoutingRecord
    from turnout.routing.health import HealthEvent

__all__ = [
    "ACCESS",
    "EVENTS",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "JsonFormatter",
    "TextFormatter",
    "configure_logging",
    "configure_logging_from_env",
    "log_access",
    "log_failover",
    "log_fallback_route",
    "log_health",
]

LOG_LEVELS: Final = ("debug", "info", "warning", "error")
LOG_FORMATS: Final = ("text", "json")
LEVEL_ENV: Final = "TURNOUT_LOG_LEVEL"
FORMAT_ENV: Final = "TURNOUT_LOG_FORMAT"

ACCESS = logging.getLogger("turnout.access")
"""One INFO line per request."""
EVENTS = logging.getLogger("turnout.events")
"""Failovers, fallback-route hops and health transitions."""


def _iso(epoch: float) -> str:
    moment = dt.datetime.fromtimestamp(epoch, dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _fields(record: logging.LogRecord) -> Mapping[str, Any]:
    fields: Mapping[str, Any] | None = getattr(record, "fields", None)
    return fields if fields is not None else {}


def _text_value(value: Any) -> str:
    if value is None:
        return "-"
    text = str(value)
    if not text or any(c in text for c in ' "='):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


class TextFormatter(logging.Formatter):
    """`TIME LEVEL LOGGER EVENT name=value …` (values with spaces quoted; None as `-`)."""

    def format(self, record: logging.LogRecord) -> str:
        head = f"{_iso(record.created)} {record.levelname} {record.name} {record.getMessage()}"
        pairs = " ".join(f"{name}={_text_value(value)}" for name, value in _fields(record).items())
        line = f"{head} {pairs}" if pairs else head
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: `time`, `level`, `logger`, `event`, then the event's fields
    (and `exception` when there is one)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _iso(record.created),
            "level": record.levelname,
            "logger": record.name,
            "event": record.getMessage(),
        }
        line.update(_fields(record))
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


def configure_logging(
    level: str = "info", fmt: str = "text", *, stream: TextIO | None = None
) -> logging.Handler:
    """Send the `turnout` loggers' lines at `level` and above to `stream` (stderr) in `fmt`
    (`text` or `json`), replacing a handler an earlier call installed. The choice is also put
    in the environment, so the worker processes of `--workers N` log the same way."""
    if level not in LOG_LEVELS:
        raise ValueError(f"log level must be one of {', '.join(LOG_LEVELS)} (got {level!r})")
    if fmt not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {', '.join(LOG_FORMATS)} (got {fmt!r})")
    os.environ[LEVEL_ENV] = level
    os.environ[FORMAT_ENV] = fmt
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger("turnout")
    for old in [h for h in root.handlers if getattr(h, "turnout_owned", False)]:
        root.removeHandler(old)
    handler.turnout_owned = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level.upper())
    root.propagate = False
    return handler


def configure_logging_from_env() -> None:
    """In a worker process: configure as the parent did (`configure_logging`), if it did."""
    level = os.environ.get(LEVEL_ENV)
    if level is not None:
        configure_logging(level, os.environ.get(FORMAT_ENV, "text"))


def log_health(event: HealthEvent, key: str) -> None:
    """A WARNING line for a breaker transition or a park, INFO for a cooldown."""
    level = logging.INFO if event.to == "cooling_down" else logging.WARNING
    if not EVENTS.isEnabledFor(level):
        return
    seconds = None if event.until is None else round(max(0.0, event.until - event.at), 3)
    fields = {"key": key, "to": event.to, "failures": event.failures, "seconds": seconds}
    EVENTS.log(level, "health", extra={"fields": fields})


def log_failover(record: RoutingRecord, entry: AttemptEntry, to: AttemptEntry) -> None:
    """A WARNING line: the route moved on from `entry` to `to`."""
    if not EVENTS.isEnabledFor(logging.WARNING):
        return
    fields = {
        "request_id": record.request_id,
        "route": record.route,
        "from_target": entry.target,
        "provider": entry.provider,
        "model": entry.model,
        "outcome": entry.outcome,
        "class": entry.error_class,
        "status": entry.status,
        "reason": entry.reason,
        "to_target": to.target,
        "attempt": entry.index,
    }
    EVENTS.warning("failover", extra={"fields": fields})


def log_fallback_route(record: RoutingRecord) -> None:
    """A WARNING line: the request went on to a fallback route."""
    if not EVENTS.isEnabledFor(logging.WARNING):
        return
    fields = {
        "request_id": record.request_id,
        "route": record.route,
        "fallback_route": record.fallback_route,
        "kind": record.fallback_kind,
        "answered": record.answered,
    }
    EVENTS.warning("fallback_route", extra={"fields": fields})


def log_access(fields: Mapping[str, Any]) -> None:
    """The request's INFO access line (`fields` in the documented order)."""
    ACCESS.info("access", extra={"fields": fields})
